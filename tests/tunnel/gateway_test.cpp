// tunnel::Gateway in network namespaces (root): two gateway namespaces joined by a veth pair
// (10.99.0.1 <-> 10.99.0.2), each with the SAME pod address plan: a "pod" namespace
// 10.244.0.5/24 behind the gateway's 10.244.0.1 (the probe source). Each side sees the other's
// 10.244.0.0/16 as 10.240.0.0/16. The Gateways run in this test process; everything they
// create must be inside their namespace and gone when they are destroyed.
#include "tunnel/gateway.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "tunnel/netns_lab.h"

namespace strait::tunnel {
namespace {

using namespace std::chrono_literals;
using testing::NetnsLab;

constexpr const char* kPodCidr = "10.244.0.0/16";
constexpr const char* kSeenAs = "10.240.0.0/16";
constexpr const char* kGatewayPodAddress = "10.244.0.1";  // probe source and target
constexpr const char* kPodAddress = "10.244.0.5";
constexpr const char* kRemotePodAsSeen = "10.240.0.5";

IpPrefix prefix(const std::string& text) {
  auto p = IpPrefix::parse(text);
  EXPECT_TRUE(p.ok()) << text;
  return p.ok() ? *p : IpPrefix{};
}

// Sends one UAPI request on `socketPath` as `wg` does; returns the response.
std::string uapiRequest(const std::string& socketPath, const std::string& request) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, socketPath.c_str(), sizeof sa.sun_path - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close(fd);
    return "connect failed: " + std::string(strerror(errno));
  }
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buf[4096];
  while (response.find("errno=") == std::string::npos ||
         response.substr(response.size() >= 2 ? response.size() - 2 : 0) != "\n\n") {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return response;
}

std::string uapiGet(const std::string& socketPath) { return uapiRequest(socketPath, "get=1\n\n"); }

std::string hexKey(const PublicKey& k) { return toHex(Bytes(k.data(), k.size())); }

class GatewayTest : public ::testing::Test {
 protected:
  struct Side {
    std::string ns, pod, iface;
    PrivateKey key;
    std::unique_ptr<Gateway> gateway;
    std::string underlay;  // the address its UDP socket is reached at
  };

  void SetUp() override {
    std::string reason = NetnsLab::unavailableReason();
    if (!reason.empty()) GTEST_SKIP() << reason;
    lab_ = std::make_unique<NetnsLab>();
    ASSERT_EQ(lab_->setUp(), "");
    a_.ns = lab_->a();
    b_.ns = lab_->b();
    a_.underlay = "10.99.0.1";
    b_.underlay = "10.99.0.2";
    a_.iface = lab_->ifname("gA");
    b_.iface = lab_->ifname("gB");
    ASSERT_NO_FATAL_FAILURE(addPod(a_, "Pa", "a"));
    ASSERT_NO_FATAL_FAILURE(addPod(b_, "Pb", "b"));
  }

  void TearDown() override {
    a_.gateway.reset();
    b_.gateway.reset();
  }

  // A pod namespace behind `side`'s namespace: veth, 10.244.0.5 in the pod, 10.244.0.1 on
  // the gateway side, forwarding on.
  void addPod(Side& side, const std::string& suffix, const std::string& letter) {
    side.pod = lab_->addNamespace(suffix);
    ASSERT_FALSE(side.pod.empty());
    std::string gw = lab_->ifname("h" + letter), pod = lab_->ifname("p" + letter);
    std::vector<std::vector<std::string>> steps = {
        {"ip", "link", "add", gw, "type", "veth", "peer", "name", pod},
        {"ip", "link", "set", gw, "netns", side.ns},
        {"ip", "link", "set", pod, "netns", side.pod},
        {"ip", "-n", side.ns, "addr", "add", std::string(kGatewayPodAddress) + "/24", "dev", gw},
        {"ip", "-n", side.pod, "addr", "add", std::string(kPodAddress) + "/24", "dev", pod},
        {"ip", "-n", side.ns, "link", "set", gw, "up"},
        {"ip", "-n", side.pod, "link", "set", pod, "up"},
        {"ip", "-n", side.pod, "route", "add", "default", "via", kGatewayPodAddress},
        {"ip", "netns", "exec", side.ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
    };
    for (const auto& s : steps) {
      e2e::CommandResult r = e2e::runCommand(s);
      ASSERT_EQ(r.exitCode, 0) << s[1] << " " << s[2] << " " << s[3] << ": " << r.describe();
    }
  }

  GatewayOptions optionsFor(Side& side) {
    side.key = generatePrivateKey();
    GatewayOptions o;
    o.netnsPath = "/run/netns/" + side.ns;
    o.interfaceName = side.iface;
    o.listenPort = 0;
    o.uapiDir = lab_->dir();
    o.privateKey = side.key;
    o.probeSource = kGatewayPodAddress;
    o.probeInterval = 200ms;
    return o;
  }

  void start(Side& side) {
    auto g = Gateway::start(optionsFor(side));
    ASSERT_TRUE(g.ok()) << g.error().message;
    side.gateway = std::move(*g);
  }

  // `remote` as a peer of the other side: its pod CIDR remapped, its UDP endpoint, its
  // gateway's pod address probed.
  GatewayPeer peerOf(const Side& remote) {
    GatewayPeer p;
    p.publicKey = remote.gateway->publicKey();
    p.endpoint = Endpoint{*IpAddress::parse(remote.underlay), remote.gateway->listenPort()};
    p.cidr = prefix(kPodCidr);
    p.seenAs = prefix(kSeenAs);
    p.probeTarget = kGatewayPodAddress;
    return p;
  }

  void startBothAndPeer() {
    ASSERT_NO_FATAL_FAILURE(start(a_));
    ASSERT_NO_FATAL_FAILURE(start(b_));
    auto st = a_.gateway->upsertPeer("b", peerOf(b_));
    ASSERT_TRUE(st.ok()) << st.error().message;
    st = b_.gateway->upsertPeer("a", peerOf(a_));
    ASSERT_TRUE(st.ok()) << st.error().message;
  }

  bool waitUp(Side& side, const std::string& peer, std::chrono::milliseconds deadline = 20s) {
    return e2e::waitFor(
        [&] {
          auto s = side.gateway->peerStatus(peer);
          return s && s->up;
        },
        deadline, 50ms);
  }

  std::string routes(const std::string& ns) {
    return e2e::runCommand({"ip", "-n", ns, "-4", "route", "show"}).out;
  }

  bool linkExists(const std::string& ns, const std::string& iface) {
    return e2e::runCommand({"ip", "-n", ns, "link", "show", "dev", iface}).exitCode == 0;
  }

  std::string uapiPath(const Side& side) { return lab_->dir() + "/" + side.iface + ".sock"; }

  std::unique_ptr<NetnsLab> lab_;
  Side a_, b_;
};

// Handshake, probe answered with an RTT, up on both sides; the pods (same address on both
// sides) reach each other through the remapped prefix by ICMP and UDP, and the receiving pod
// sees the sender under the remapped prefix; byte counters follow the traffic.
TEST_F(GatewayTest, TunnelComesUpAcrossOverlappingPodCidrs) {
  ASSERT_NO_FATAL_FAILURE(startBothAndPeer());
  ASSERT_TRUE(waitUp(a_, "b")) << "a never saw b up";
  ASSERT_TRUE(waitUp(b_, "a")) << "b never saw a up";
  auto s = a_.gateway->peerStatus("b");
  ASSERT_TRUE(s);
  EXPECT_GT(s->lastHandshakeUnix, 0);
  EXPECT_LE(std::abs(s->lastHandshakeUnix - static_cast<int64_t>(time(nullptr))), 30);
  ASSERT_TRUE(s->rtt && s->lastProbeAnswer);
  EXPECT_GT(s->rtt->count(), 0);
  EXPECT_LT(*s->rtt, 1s);
  EXPECT_LE(std::chrono::system_clock::now() - *s->lastProbeAnswer, 2s);
  EXPECT_EQ(a_.gateway->peerNames(), std::vector<std::string>{"b"});

  // Every piece is in the gateway's namespace, none in this one.
  EXPECT_TRUE(linkExists(a_.ns, a_.iface));
  EXPECT_NE(routes(a_.ns).find(std::string(kSeenAs) + " dev " + a_.iface), std::string::npos)
      << routes(a_.ns);
  EXPECT_EQ(e2e::runCommand({"ip", "link", "show", "dev", a_.iface}).exitCode, 1);
  EXPECT_NE(
      lab_->exec(a_.ns, {"ss", "-uln"}).out.find(":" + std::to_string(a_.gateway->listenPort())),
      std::string::npos);

  uint64_t txBefore = s->txBytes, rxBefore = s->rxBytes;
  auto r = lab_->exec(a_.pod,
                      {"ping", "-c", "5", "-i", "0.2", "-W", "2", "-s", "1000", kRemotePodAsSeen});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find(" 0% packet loss"), std::string::npos) << r.out;

  // UDP: b's pod answers with the address it saw the datagram come from.
  e2e::BackgroundProcess& echo = lab_->spawn(
      b_.pod, {"socat", "UDP4-RECVFROM:5002,fork", "SYSTEM:echo $SOCAT_PEERADDR"}, "udpecho");
  std::string answer;
  ASSERT_TRUE(e2e::waitFor(
      [&] {
        answer =
            lab_->exec(a_.pod,
                       {"sh", "-c",
                        std::string("echo hi | socat -T 1 - UDP4:") + kRemotePodAsSeen + ":5002"},
                       5s)
                .out;
        return !answer.empty();
      },
      20s, 100ms))
      << echo.stderrText();
  EXPECT_EQ(answer, std::string(kRemotePodAsSeen) + "\n")
      << "b's pod should see a's pod 10.244.0.5 as 10.240.0.5";

  auto after = a_.gateway->peerStatus("b");
  ASSERT_TRUE(after);
  EXPECT_GE(after->txBytes, txBefore + 5 * 1000);
  EXPECT_GE(after->rxBytes, rxBefore + 5 * 1000);
  auto bSide = b_.gateway->peerStatus("a");
  ASSERT_TRUE(bSide);
  EXPECT_GE(bSide->rxBytes, 5 * 1000u);
}

// `up` needs the remote gateway's kernel to answer the probe through the tunnel, not only a
// fresh handshake.
TEST_F(GatewayTest, UpFollowsProbeAnswers) {
  ASSERT_NO_FATAL_FAILURE(startBothAndPeer());
  ASSERT_TRUE(waitUp(a_, "b"));
  auto r = lab_->exec(b_.ns, {"sysctl", "-qw", "net.ipv4.icmp_echo_ignore_all=1"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_TRUE(e2e::waitFor([&] { return !a_.gateway->peerStatus("b")->up; }, 10s, 50ms))
      << "still up although b's kernel ignores echo requests";
  auto s = a_.gateway->peerStatus("b");
  EXPECT_GT(s->lastHandshakeUnix, time(nullptr) - 60) << "the handshake is fresh";
  r = lab_->exec(b_.ns, {"sysctl", "-qw", "net.ipv4.icmp_echo_ignore_all=0"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_TRUE(waitUp(a_, "b"));
}

// A port change through the UAPI socket rebinds inside the gateway's namespace.
TEST_F(GatewayTest, UapiListenPortChangeStaysInTheNamespace) {
  ASSERT_NO_FATAL_FAILURE(start(a_));
  uint16_t before = a_.gateway->listenPort();
  std::string response = uapiRequest(uapiPath(a_), "set=1\nlisten_port=0\n\n");
  ASSERT_NE(response.find("errno=0"), std::string::npos) << response;
  uint16_t after = a_.gateway->listenPort();
  ASSERT_NE(after, before);
  std::string sockets = lab_->exec(a_.ns, {"ss", "-uln"}).out;
  EXPECT_NE(sockets.find(":" + std::to_string(after) + " "), std::string::npos) << sockets;
  EXPECT_EQ(sockets.find(":" + std::to_string(before) + " "), std::string::npos) << sockets;
  EXPECT_EQ(e2e::runCommand({"ss", "-uln"}).out.find(":" + std::to_string(after) + " "),
            std::string::npos)
      << "bound in the test's own namespace";
}

// `wg show` (wireguard-tools) lists the peer through the gateway's UAPI socket.
TEST_F(GatewayTest, WgShowListsThePeer) {
  if (e2e::runCommand({"sh", "-c", "command -v wg"}).exitCode != 0) GTEST_SKIP() << "no wg";
  GatewayOptions o = optionsFor(a_);
  o.uapiDir = "/var/run/wireguard";  // where `wg` looks
  auto g = Gateway::start(o);
  ASSERT_TRUE(g.ok()) << g.error().message;
  a_.gateway = std::move(*g);
  ASSERT_NO_FATAL_FAILURE(start(b_));
  ASSERT_TRUE(a_.gateway->upsertPeer("b", peerOf(b_)).ok());
  ASSERT_TRUE(b_.gateway->upsertPeer("a", peerOf(a_)).ok());
  ASSERT_TRUE(waitUp(a_, "b"));

  auto r = e2e::runCommand({"wg", "show", a_.iface, "dump"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  std::string bKey = keyToBase64(b_.gateway->publicKey());
  EXPECT_NE(r.out.find(keyToBase64(a_.gateway->publicKey())), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(bKey + "\t(none)\t10.99.0.2:" + std::to_string(b_.gateway->listenPort()) +
                       "\t" + kSeenAs + "\t"),
            std::string::npos)
      << r.out;
  r = e2e::runCommand({"wg", "show", a_.iface, "latest-handshakes"});
  EXPECT_EQ(r.out.find(bKey + "\t0"), std::string::npos) << "no handshake listed: " << r.out;

  std::string socketPath = "/var/run/wireguard/" + a_.iface + ".sock";
  a_.gateway.reset();
  struct stat st {};
  EXPECT_NE(stat(socketPath.c_str(), &st), 0) << socketPath << " left behind";
}

// removePeer takes the device peer and the route away; a changed seenAs moves the route.
TEST_F(GatewayTest, RemovePeerRemovesItsRoute) {
  ASSERT_NO_FATAL_FAILURE(startBothAndPeer());
  std::string route = std::string(kSeenAs) + " dev " + a_.iface;
  ASSERT_NE(routes(a_.ns).find(route), std::string::npos) << routes(a_.ns);

  GatewayPeer moved = peerOf(b_);
  moved.seenAs = prefix("10.241.0.0/16");
  ASSERT_TRUE(a_.gateway->upsertPeer("b", moved).ok());
  std::string table = routes(a_.ns);
  EXPECT_EQ(table.find(route), std::string::npos) << table;
  EXPECT_NE(table.find("10.241.0.0/16 dev " + a_.iface), std::string::npos) << table;
  EXPECT_NE(uapiGet(uapiPath(a_)).find("allowed_ip=10.241.0.0/16"), std::string::npos);

  EXPECT_TRUE(a_.gateway->removePeer("b"));
  table = routes(a_.ns);
  EXPECT_EQ(table.find(a_.iface), std::string::npos) << "route left: " << table;
  EXPECT_EQ(uapiGet(uapiPath(a_)).find("public_key="), std::string::npos);
  EXPECT_TRUE(a_.gateway->peerNames().empty());
  EXPECT_FALSE(a_.gateway->peerStatus("b"));
  EXPECT_FALSE(a_.gateway->removePeer("b"));
}

// A new private key on one side ends the tunnel until the other side learns the new public
// key; upsertPeer with it replaces the old peer and a new handshake brings it back.
TEST_F(GatewayTest, KeyRotationHandshakesAgain) {
  ASSERT_NO_FATAL_FAILURE(startBothAndPeer());
  ASSERT_TRUE(waitUp(a_, "b"));
  ASSERT_TRUE(waitUp(b_, "a"));
  PublicKey oldKey = a_.gateway->publicKey();

  PrivateKey rotated = generatePrivateKey();
  auto st = a_.gateway->setPrivateKey(rotated);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(a_.gateway->publicKey(), *publicKeyOf(rotated));
  EXPECT_NE(a_.gateway->publicKey(), oldKey);
  EXPECT_TRUE(e2e::waitFor([&] { return !a_.gateway->peerStatus("b")->up; }, 10s, 50ms))
      << "b still answers a's probes although it does not know a's new key";

  int64_t rotatedAt = time(nullptr);
  st = b_.gateway->upsertPeer("a", peerOf(a_));
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_TRUE(waitUp(a_, "b")) << "no new handshake after the rotation";
  ASSERT_TRUE(waitUp(b_, "a"));
  EXPECT_GE(a_.gateway->peerStatus("b")->lastHandshakeUnix, rotatedAt);
  std::string dump = uapiGet(uapiPath(b_));
  EXPECT_NE(dump.find("public_key=" + hexKey(a_.gateway->publicKey())), std::string::npos) << dump;
  EXPECT_EQ(dump.find("public_key=" + hexKey(oldKey)), std::string::npos)
      << "the old key is still a peer: " << dump;
  auto r = lab_->exec(a_.pod, {"ping", "-c", "2", "-W", "2", kRemotePodAsSeen});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
}

// Bad peers are refused with a message naming the field, and leave nothing behind.
TEST_F(GatewayTest, BadPeersAreRefused) {
  ASSERT_NO_FATAL_FAILURE(start(a_));
  ASSERT_NO_FATAL_FAILURE(start(b_));
  GatewayPeer good = peerOf(b_);
  ASSERT_TRUE(a_.gateway->upsertPeer("b", good).ok());
  std::string before = routes(a_.ns);

  struct Case {
    std::string name;
    std::function<void(GatewayPeer&)> change;
    std::string expect;
  };
  PublicKey otherKey = *publicKeyOf(generatePrivateKey());
  std::vector<Case> cases = {
      {"v6",
       [](GatewayPeer& p) {
         p.cidr = prefix("fd00::/64");
         p.seenAs.reset();
         p.probeTarget = "";
       },
       "cidr \"fd00::/64\" must be an IPv4 prefix"},
      {"hostbits", [](GatewayPeer& p) { p.cidr.address = *IpAddress::parse("10.7.0.1"); },
       "has bits set past its length"},
      {"zero",
       [](GatewayPeer& p) {
         p.cidr = prefix("0.0.0.0/0");
         p.seenAs.reset();
         p.probeTarget = "";
       },
       "length of 1 to 32"},
      {"length", [](GatewayPeer& p) { p.seenAs = prefix("10.241.0.0/24"); },
       "seenAs 10.241.0.0/24 cannot remap 10.244.0.0/16"},
      {"same", [](GatewayPeer& p) { p.seenAs = p.cidr; }, "seenAs 10.244.0.0/16 cannot remap"},
      {"badprobe", [](GatewayPeer& p) { p.probeTarget = "10.244.0.300"; },
       "probeTarget \"10.244.0.300\""},
      {"outside", [](GatewayPeer& p) { p.probeTarget = "10.9.0.1"; },
       "probeTarget 10.9.0.1 is not inside the peer's cidr 10.244.0.0/16"},
      {"v6probe", [](GatewayPeer& p) { p.probeTarget = "fd00::1"; },
       "probeTarget fd00::1 must be an IPv4"},
      {"nokey", [](GatewayPeer& p) { p.publicKey = PublicKey{}; }, "publicKey is unset"},
      {"port", [](GatewayPeer& p) { p.endpoint->port = 0; }, "endpoint"},
      {"overlap",
       [&](GatewayPeer& p) {
         p.publicKey = otherKey;
         p.cidr = prefix("10.1.0.0/17");
         p.seenAs = prefix("10.240.128.0/17");
         p.probeTarget = "";
       },
       "10.240.128.0/17 (its cidr as seen here) overlaps 10.240.0.0/16 of peer \"b\""},
      {"samekey", [](GatewayPeer& p) { p.seenAs = prefix("10.242.0.0/16"); },
       "already belongs to peer \"b\""},
      {"unmapped",
       [&](GatewayPeer& p) {
         p.publicKey = otherKey;
         p.seenAs.reset();
       },
       "contains this gateway's probe source 10.244.0.1"},
  };
  for (const Case& c : cases) {
    GatewayPeer p = good;
    c.change(p);
    auto st = a_.gateway->upsertPeer(c.name, p);
    ASSERT_FALSE(st.ok()) << c.name << " accepted";
    EXPECT_NE(st.error().message.find(c.expect), std::string::npos)
        << c.name << ": " << st.error().message;
    EXPECT_NE(st.error().message.find("peer \"" + c.name + "\""), std::string::npos)
        << st.error().message;
  }
  GatewayPeer own = good;
  own.publicKey = a_.gateway->publicKey();
  own.seenAs = prefix("10.243.0.0/16");
  auto st = a_.gateway->upsertPeer("own", own);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("this gateway's own key"), std::string::npos);
  EXPECT_FALSE(a_.gateway->upsertPeer("", good).ok());
  EXPECT_EQ(a_.gateway->peerNames(), std::vector<std::string>{"b"});
  EXPECT_EQ(routes(a_.ns), before);
  st = a_.gateway->setPrivateKey(PrivateKey{});
  EXPECT_FALSE(st.ok());
}

// Bad options stop start() with a message naming what was wrong, and leave nothing behind.
TEST_F(GatewayTest, BadOptionsAreRefusedAndLeaveNothing) {
  GatewayOptions o = optionsFor(a_);
  o.probeSource = "10.9.9.9";  // not an address of a's namespace
  auto g = Gateway::start(o);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("probe source 10.9.9.9 is not an address of the gateway's "
                                   "namespace"),
            std::string::npos)
      << g.error().message;
  EXPECT_FALSE(linkExists(a_.ns, a_.iface)) << "interface left behind";
  struct stat st {};
  EXPECT_NE(stat(uapiPath(a_).c_str(), &st), 0) << "UAPI socket left behind";

  o = optionsFor(a_);
  o.probeSource = "10.244.0";
  g = Gateway::start(o);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("probe source \"10.244.0\" must be an IPv4 address"),
            std::string::npos)
      << g.error().message;

  o = optionsFor(a_);
  o.netnsPath = "/run/netns/" + lab_->ifname("missing");
  g = Gateway::start(o);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find(o.netnsPath), std::string::npos) << g.error().message;

  o = optionsFor(a_);
  o.interfaceName = "an-interface-name-too-long";
  g = Gateway::start(o);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("1 to 15 characters"), std::string::npos);

  // A second gateway on the same interface is refused; the first keeps running.
  ASSERT_NO_FATAL_FAILURE(start(a_));
  o = optionsFor(a_);
  o.uapiDir = lab_->dir() + "/other";
  g = Gateway::start(o);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("interface " + a_.iface +
                                   " already exists in the network "
                                   "namespace /run/netns/" +
                                   a_.ns),
            std::string::npos)
      << g.error().message;
  EXPECT_TRUE(linkExists(a_.ns, a_.iface));
  EXPECT_NE(uapiGet(uapiPath(a_)).find("errno=0"), std::string::npos);
}

// Destroying a Gateway removes its interface, its routes and its UAPI socket.
TEST_F(GatewayTest, DestroyLeavesNothingBehind) {
  ASSERT_NO_FATAL_FAILURE(startBothAndPeer());
  ASSERT_TRUE(waitUp(a_, "b"));
  ASSERT_TRUE(linkExists(a_.ns, a_.iface));
  uint16_t port = a_.gateway->listenPort();
  a_.gateway.reset();
  EXPECT_TRUE(e2e::waitFor([&] { return !linkExists(a_.ns, a_.iface); }, 5s, 20ms))
      << "interface left behind";
  EXPECT_EQ(routes(a_.ns).find(kSeenAs), std::string::npos) << routes(a_.ns);
  struct stat st {};
  EXPECT_NE(stat(uapiPath(a_).c_str(), &st), 0) << "UAPI socket left behind";
  EXPECT_EQ(lab_->exec(a_.ns, {"ss", "-uln"}).out.find(":" + std::to_string(port) + " "),
            std::string::npos)
      << "UDP port still bound";
  // The same interface can be created again at once.
  ASSERT_NO_FATAL_FAILURE(start(a_));
  EXPECT_TRUE(linkExists(a_.ns, a_.iface));
}

}  // namespace
}  // namespace strait::tunnel
