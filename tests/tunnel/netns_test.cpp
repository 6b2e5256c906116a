// System tests in network namespaces (root): `strait gateway` against Debian's real
// wireguard-go, each side initiating in turn (ping, a 100 MB TCP transfer compared by
// SHA-256, `wg show` / `wg set` against Strait's UAPI socket), and Strait <-> Strait with the
// same pod CIDR 10.200.0.0/16 on both sides reaching each other through remapped prefixes.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tunnel/netns_lab.h"

namespace strait::tunnel {
namespace {

using namespace std::chrono_literals;
using testing::NetnsLab;
using testing::WgKeys;
using testing::wgKeys;

constexpr size_t kTransferBytes = 100 * 1000 * 1000;

class NetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason = NetnsLab::unavailableReason();
    if (!reason.empty()) GTEST_SKIP() << reason;
    strait_ = e2e::straitBinary();
    ASSERT_FALSE(strait_.empty()) << "strait binary not found (STRAIT_BIN)";
    lab_ = std::make_unique<NetnsLab>();
    ASSERT_EQ(lab_->setUp(), "");
  }

  // Starts `strait gateway` in `ns` with `config` as its file; waits for its UAPI socket.
  void startGateway(const std::string& ns, const std::string& iface, const std::string& config,
                    std::vector<std::string> extra = {}) {
    std::string path = lab_->file(iface + ".conf");
    EXPECT_TRUE(e2e::writeFile(path, config));
    std::vector<std::string> argv = {strait_, "gateway", "--config", path, "--interface", iface};
    argv.insert(argv.end(), extra.begin(), extra.end());
    e2e::BackgroundProcess& p = lab_->spawn(ns, argv, iface);
    ASSERT_TRUE(lab_->waitForUapi(iface, 30s)) << "gateway did not come up: " << p.stderrText();
  }

  // Starts wireguard-go in `ns` as `iface` with address `address` and one peer.
  void startWireguardGo(const std::string& ns, const std::string& iface, const WgKeys& self,
                        const std::string& peerPublic, const std::string& endpoint,
                        const std::string& allowed, const std::string& address) {
    lab_->spawn(ns, {"wireguard-go", iface}, iface, {{"WG_PROCESS_FOREGROUND", "1"}});
    ASSERT_TRUE(lab_->waitForUapi(iface, 30s)) << "wireguard-go did not start";
    std::string keyFile = lab_->file(iface + ".key");
    ASSERT_TRUE(e2e::writeFile(keyFile, self.privateKey + "\n"));
    std::vector<std::string> set = {"wg",       "set",         iface,   "private-key",
                                    keyFile,    "listen-port", "51820", "peer",
                                    peerPublic, "allowed-ips", allowed};
    if (!endpoint.empty()) {
      set.push_back("endpoint");
      set.push_back(endpoint);
    }
    auto r = lab_->exec(ns, set);
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    r = lab_->exec(ns, {"ip", "addr", "add", address, "dev", iface});
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    r = lab_->exec(ns, {"ip", "link", "set", iface, "up"});
    ASSERT_EQ(r.exitCode, 0) << r.describe();
  }

  void expectPing(const std::string& ns, const std::string& address) {
    // The first echo may wait for a handshake: retry within a generous deadline.
    bool ok = e2e::waitFor(
        [&] {
          return lab_->exec(ns, {"ping", "-c", "1", "-W", "2", address}).exitCode == 0;
        },
        30s, 200ms);
    ASSERT_TRUE(ok) << "no echo reply from " << address << " in " << ns;
    auto r = lab_->exec(ns, {"ping", "-c", "5", "-i", "0.2", "-W", "2", address});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_NE(r.out.find(" 0% packet loss"), std::string::npos) << r.out;
  }

  // Sends `bytes` random bytes over TCP from `from` to `toAddress`:5001 (in `to`) with socat
  // and compares SHA-256 of what was sent and what arrived.
  void expectTransfer(const std::string& from, const std::string& to, const std::string& toAddress,
                      size_t bytes) {
    std::string src = lab_->file("payload.bin"), sum = lab_->file("received.sha256");
    auto r = e2e::runCommand(
        {"sh", "-c",
         "head -c " + std::to_string(bytes) + " /dev/urandom > " + src + " && sha256sum " + src});
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    std::string sent = r.out.substr(0, 64);
    e2e::BackgroundProcess& receiver = lab_->spawn(
        to, {"sh", "-c", "socat -u TCP-LISTEN:5001,reuseaddr STDOUT | sha256sum > " + sum},
        "receiver");
    ASSERT_TRUE(e2e::waitFor(
        [&] {
          return lab_->exec(to, {"ss", "-ltn"}).out.find(":5001 ") != std::string::npos;
        },
        20s));
    auto t0 = std::chrono::steady_clock::now();
    r = lab_->exec(from, {"socat", "-u", "FILE:" + src, "TCP:" + toAddress + ":5001"}, 300s);
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    ASSERT_TRUE(e2e::waitFor([&] { return !receiver.running(); }, 60s));
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string got = e2e::readFile(sum).substr(0, 64);
    EXPECT_EQ(got, sent) << "the transfer arrived altered or incomplete";
    std::printf("transfer %s -> %s: %zu bytes in %.2f s (%.0f Mbit/s, informative only)\n",
                from.c_str(), to.c_str(), bytes, secs, bytes * 8 / secs / 1e6);
  }

  std::string strait_;
  std::unique_ptr<NetnsLab> lab_;
};

std::string gatewayConfig(const WgKeys& self, const std::string& address, const WgKeys& peer,
                          const std::string& endpoint, const std::string& allowed,
                          const std::string& extraPeerLines = "") {
  std::string c = "[Interface]\nPrivateKey = " + self.privateKey +
                  "\nListenPort = 51820\nAddress = " + address +
                  "\n\n[Peer]\nPublicKey = " + peer.publicKey + "\nAllowedIPs = " + allowed + "\n";
  if (!endpoint.empty()) c += "Endpoint = " + endpoint + "\n";
  return c + extraPeerLines;
}

TEST_F(NetnsTest, StraitInitiatesToWireguardGo) {
  WgKeys s = wgKeys(), w = wgKeys();
  std::string straitIf = lab_->ifname("s"), wgIf = lab_->ifname("w");
  // Only Strait knows an endpoint, so only Strait can initiate.
  ASSERT_NO_FATAL_FAILURE(
      startWireguardGo(lab_->b(), wgIf, w, s.publicKey, "", "10.100.0.1/32", "10.100.0.2/24"));
  ASSERT_NO_FATAL_FAILURE(
      startGateway(lab_->a(), straitIf,
                   gatewayConfig(s, "10.100.0.1/24", w, "10.99.0.2:51820", "10.100.0.2/32")));
  ASSERT_NO_FATAL_FAILURE(expectPing(lab_->a(), "10.100.0.2"));
  expectTransfer(lab_->a(), lab_->b(), "10.100.0.2", kTransferBytes);

  // `wg show` reads Strait's UAPI socket.
  auto show = lab_->exec(lab_->a(), {"wg", "show", straitIf});
  ASSERT_EQ(show.exitCode, 0) << show.describe();
  EXPECT_NE(show.out.find("interface: " + straitIf), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("public key: " + s.publicKey), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("listening port: 51820"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("peer: " + w.publicKey), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("endpoint: 10.99.0.2:51820"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("allowed ips: 10.100.0.2/32"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("latest handshake:"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("MiB sent"), std::string::npos) << "100 MB went out: " << show.out;

  // `wg set` changes Strait's configuration.
  auto set =
      lab_->exec(lab_->a(), {"wg", "set", straitIf, "peer", w.publicKey, "persistent-keepalive",
                             "7", "allowed-ips", "10.100.0.2/32,10.100.0.77/32"});
  ASSERT_EQ(set.exitCode, 0) << set.describe();
  show = lab_->exec(lab_->a(), {"wg", "show", straitIf});
  EXPECT_NE(show.out.find("persistent keepalive: every 7 seconds"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("10.100.0.77/32"), std::string::npos) << show.out;
  auto dump = lab_->exec(lab_->a(), {"wg", "show", straitIf, "dump"});
  EXPECT_NE(dump.out.find(w.publicKey), std::string::npos) << dump.out;
}

// `strait gateway --metrics-listen`: /metrics counts the peer, the bytes a ping moved and the
// handshake's time; promtool (when present) accepts it.
TEST_F(NetnsTest, GatewayMetricsFollowTheTunnel) {
  WgKeys s = wgKeys(), w = wgKeys();
  std::string straitIf = lab_->ifname("s"), wgIf = lab_->ifname("w");
  ASSERT_NO_FATAL_FAILURE(
      startWireguardGo(lab_->b(), wgIf, w, s.publicKey, "", "10.100.0.1/32", "10.100.0.2/24"));
  ASSERT_NO_FATAL_FAILURE(
      startGateway(lab_->a(), straitIf,
                   gatewayConfig(s, "10.100.0.1/24", w, "10.99.0.2:51820", "10.100.0.2/32"),
                   {"--metrics-listen", "127.0.0.1:9464"}));
  ASSERT_NO_FATAL_FAILURE(expectPing(lab_->a(), "10.100.0.2"));
  std::string text;
  ASSERT_TRUE(e2e::waitFor(
      [&] {
        auto r = lab_->exec(lab_->a(), {"curl", "-sS", "http://127.0.0.1:9464/metrics"});
        text = r.out;
        return r.exitCode == 0;
      },
      10s));
  auto value = [&](const std::string& series) -> double {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    }
    return -1;
  };
  const std::string peer = "{peer=\"" + w.publicKey + "\"}";
  EXPECT_EQ(value("strait_tunnel_peers"), 1) << text;
  EXPECT_GT(value("strait_tunnel_received_bytes_total" + peer), 0) << text;
  EXPECT_GT(value("strait_tunnel_sent_bytes_total" + peer), 0) << text;
  EXPECT_GT(value("strait_tunnel_last_handshake_timestamp_seconds" + peer), 1.7e9) << text;
  EXPECT_GE(value("strait_tunnel_handshakes_completed_total"), 1) << text;
  EXPECT_GE(value("strait_tunnel_sent_packets_total"), 6) << text;  // the pings
  if (e2e::runCommand({"sh", "-c", "command -v promtool"}).exitCode == 0) {
    auto lint = e2e::runCommand({"promtool", "check", "metrics"}, {}, 30s, text);
    EXPECT_EQ(lint.exitCode, 0) << lint.describe() << text;
  }
}

TEST_F(NetnsTest, WireguardGoInitiatesToStrait) {
  WgKeys s = wgKeys(), w = wgKeys();
  std::string straitIf = lab_->ifname("s"), wgIf = lab_->ifname("w");
  // Strait has no endpoint for the peer: it learns it from the initiation.
  ASSERT_NO_FATAL_FAILURE(
      startGateway(lab_->a(), straitIf, gatewayConfig(s, "10.100.0.1/24", w, "", "10.100.0.2/32")));
  ASSERT_NO_FATAL_FAILURE(startWireguardGo(lab_->b(), wgIf, w, s.publicKey, "10.99.0.1:51820",
                                           "10.100.0.1/32", "10.100.0.2/24"));
  ASSERT_NO_FATAL_FAILURE(expectPing(lab_->b(), "10.100.0.1"));
  expectTransfer(lab_->b(), lab_->a(), "10.100.0.1", kTransferBytes);
  auto show = lab_->exec(lab_->a(), {"wg", "show", straitIf});
  EXPECT_NE(show.out.find("endpoint: 10.99.0.2:51820"), std::string::npos)
      << "endpoint learned from the initiator: " << show.out;
  EXPECT_NE(show.out.find("MiB received"), std::string::npos) << show.out;
}

TEST_F(NetnsTest, StraitToStraitWithOverlappingPodCidrs) {
  WgKeys ka = wgKeys(), kb = wgKeys();
  std::string ifA = lab_->ifname("s"), ifB = lab_->ifname("t");
  // Both clusters use 10.200.0.0/16 for pods. A sees B's pods as 10.201.0.0/16, B sees A's
  // as 10.202.0.0/16. Pod 10.200.1.5 exists on both sides (the gateway address), pod
  // 10.200.7.7 only in B.
  ASSERT_NO_FATAL_FAILURE(
      startGateway(lab_->a(), ifA,
                   gatewayConfig(ka, "10.200.1.5/32", kb, "10.99.0.2:51820", "10.201.0.0/16",
                                 "Remap = 10.200.0.0/16 -> 10.201.0.0/16\n")));
  ASSERT_NO_FATAL_FAILURE(
      startGateway(lab_->b(), ifB,
                   gatewayConfig(kb, "10.200.1.5/32", ka, "10.99.0.1:51820", "10.202.0.0/16",
                                 "Remap = 10.200.0.0/16 -> 10.202.0.0/16\n")));
  auto r = lab_->exec(lab_->b(), {"ip", "addr", "add", "10.200.7.7/32", "dev", "lo"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();

  ASSERT_NO_FATAL_FAILURE(
      expectPing(lab_->a(), "10.201.1.5"));  // A's pod 10.200.1.5 -> B's pod 10.200.1.5
  ASSERT_NO_FATAL_FAILURE(expectPing(lab_->a(), "10.201.7.7"));  // host part kept
  ASSERT_NO_FATAL_FAILURE(expectPing(lab_->b(), "10.202.1.5"));  // and the other way
  // TCP through both translations (checksums must be right or nothing arrives).
  expectTransfer(lab_->a(), lab_->b(), "10.201.7.7", 20 * 1000 * 1000);
  // B saw A's pod under the remapped prefix.
  e2e::BackgroundProcess& listener = lab_->spawn(
      lab_->b(), {"socat", "-u", "TCP-LISTEN:5002,reuseaddr", "SYSTEM:echo $SOCAT_PEERADDR"},
      "peeraddr");
  ASSERT_TRUE(e2e::waitFor(
      [&] {
        return lab_->exec(lab_->b(), {"ss", "-ltn"}).out.find(":5002 ") != std::string::npos;
      },
      20s));
  r = lab_->exec(lab_->a(), {"sh", "-c", "echo hi | socat -u STDIN TCP:10.201.7.7:5002"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  ASSERT_TRUE(e2e::waitFor([&] { return !listener.running(); }, 20s));
  EXPECT_NE(listener.stdoutText().find("10.202.1.5"), std::string::npos)
      << "B should see A's pod as 10.202.1.5: " << listener.stdoutText() << listener.stderrText();
}

}  // namespace
}  // namespace strait::tunnel

namespace strait::tunnel {
namespace {

// A bad configuration stops `strait gateway` before it touches the network: exit code 2
// and a message naming the file, the line and the key. Needs no root.
TEST(GatewayCommand, BadConfigNamesFileLineAndKey) {
  std::string strait = e2e::straitBinary();
  ASSERT_FALSE(strait.empty()) << "strait binary not found (STRAIT_BIN)";
  e2e::TempDir dir("strait-gw");
  std::string path = dir.file("bad.conf");
  ASSERT_TRUE(e2e::writeFile(
      path, "[Interface]\nPrivateKey = " + testing::wgKeys().privateKey + "\nListenPrt = 51820\n"));
  auto r = e2e::runCommand({strait, "gateway", "--config", path, "--interface", "stbad0"});
  EXPECT_EQ(r.exitCode, 2) << r.describe();
  EXPECT_NE(r.err.find(path + ":3: unknown key ListenPrt in [Interface]"), std::string::npos)
      << r.err;
  r = e2e::runCommand({strait, "gateway", "--config", dir.file("missing.conf")});
  EXPECT_EQ(r.exitCode, 2) << r.describe();
  EXPECT_NE(r.err.find("cannot read config file"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strait::tunnel
