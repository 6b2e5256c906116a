// Two in-process devices over real UDP sockets on 127.0.0.1: handshakes either way, data,
// the allowed-IPs source check, replayed/altered packets, cookie replies under a handshake
// flood, rekeying under traffic with shortened timers, and endpoint roaming.
#include "tunnel/device.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "e2e/cluster_fixture.h"
#include "tunnel/cookie.h"
#include "tunnel/device_harness.h"

namespace strait::tunnel {
namespace {

using namespace std::chrono_literals;
using testing::connect;
using testing::seqOf;
using testing::TestDevice;
using testing::udpPacket;

constexpr auto kDeadline = 20s;

// Sends packet `seq` from a to b and expects b to deliver it unchanged.
void expectDelivered(TestDevice& from, TestDevice& to, const char* src, const char* dst,
                     uint32_t seq) {
  auto p = udpPacket(src, dst, seq);
  from.inject(p);
  auto got = to.deliver(kDeadline);
  ASSERT_TRUE(got) << "packet " << seq << " not delivered";
  EXPECT_EQ(*got, p);
}

TEST(Device, EitherSideInitiatesAndDataFlows) {
  for (bool aInitiates : {true, false}) {
    TestDevice a, b;
    a.start();
    b.start();
    connect(a, b, "10.0.0.1/32", "10.0.0.2/32", aInitiates, !aInitiates);
    if (aInitiates) {
      expectDelivered(a, b, "10.0.0.1", "10.0.0.2", 1);
      expectDelivered(b, a, "10.0.0.2", "10.0.0.1", 2);
    } else {
      expectDelivered(b, a, "10.0.0.2", "10.0.0.1", 1);
      expectDelivered(a, b, "10.0.0.1", "10.0.0.2", 2);
    }
    TestDevice& initiator = aInitiates ? a : b;
    TestDevice& responder = aInitiates ? b : a;
    EXPECT_EQ(initiator.device->counters().handshakesInitiated, 1u);
    EXPECT_EQ(responder.device->counters().handshakesInitiated, 0u);
    EXPECT_EQ(initiator.device->counters().handshakesCompleted, 1u);
    EXPECT_TRUE(e2e::waitFor([&] { return responder.device->counters().handshakesCompleted == 1; },
                             kDeadline));
    DeviceSnapshot s = responder.device->snapshot();
    ASSERT_EQ(s.peers.size(), 1u);
    EXPECT_EQ(s.peers[0].endpoint, initiator.endpoint()) << "responder learned the endpoint";
    EXPECT_GT(s.peers[0].lastHandshakeSeconds, 0);
    EXPECT_GT(s.peers[0].rxBytes, 0u);
  }
}

TEST(Device, PacketsFromSourcesOutsideAllowedIpsAreDropped) {
  TestDevice a, b;
  a.start();
  b.start();
  connect(a, b, "10.0.0.1/32", "10.0.0.2/32");
  expectDelivered(a, b, "10.0.0.1", "10.0.0.2", 1);
  // b sends with a source a does not allow for b.
  b.inject(udpPacket("10.0.0.99", "10.0.0.1", 2));
  EXPECT_TRUE(e2e::waitFor([&] { return a.device->counters().notAllowedSource == 1; }, kDeadline));
  EXPECT_FALSE(a.deliver(200ms));
  // No peer for the destination: counted, not sent.
  a.inject(udpPacket("10.0.0.1", "10.7.7.7", 3));
  EXPECT_TRUE(e2e::waitFor([&] { return a.device->counters().noRoute == 1; }, kDeadline));
}

// A UDP relay between two devices that, for every transport packet carrying data from the
// first, also sends a replayed copy and a copy with one ciphertext byte flipped.
class TamperingRelay {
 public:
  explicit TamperingRelay(Endpoint target) : target_(target) {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    socklen_t len = sizeof sa;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    endpoint_ = Endpoint::fromSockaddr(reinterpret_cast<sockaddr*>(&sa));
    thread_ = std::thread([this] { run(); });
  }
  ~TamperingRelay() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  Endpoint endpoint() const { return endpoint_; }
  std::atomic<int> replays{0}, alterations{0};

 private:
  void sendTo(const Endpoint& e, const uint8_t* d, size_t n) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(e.port);
    std::memcpy(&sa.sin_addr, e.address.bytes.data(), 4);
    sendto(fd_, d, n, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  }
  void run() {
    std::vector<uint8_t> buf(65536);
    std::optional<Endpoint> source;
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      sockaddr_storage from{};
      socklen_t len = sizeof from;
      ssize_t n =
          recvfrom(fd_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n <= 0) continue;
      Endpoint f = Endpoint::fromSockaddr(reinterpret_cast<sockaddr*>(&from));
      if (f == target_) {
        if (source) sendTo(*source, buf.data(), static_cast<size_t>(n));
        continue;
      }
      source = f;
      sendTo(target_, buf.data(), static_cast<size_t>(n));
      if (buf[0] == kMessageTransportType && n > 32) {
        sendTo(target_, buf.data(), static_cast<size_t>(n));
        ++replays;
        buf[20] ^= 0x01;
        sendTo(target_, buf.data(), static_cast<size_t>(n));
        ++alterations;
      }
    }
  }
  int fd_ = -1;
  Endpoint target_, endpoint_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(Device, ReplayedAndAlteredPacketsAreDroppedAndCounted) {
  TestDevice a, b;
  a.start();
  b.start();
  TamperingRelay relay(b.endpoint());
  // a reaches b only through the relay; b answers whoever reached it (the relay).
  connect(a, b, "10.0.0.1/32", "10.0.0.2/32", true, false, relay.endpoint());
  const uint32_t kPackets = 300;
  std::set<uint32_t> seen;
  for (uint32_t i = 0; i < kPackets; ++i) {
    a.inject(udpPacket("10.0.0.1", "10.0.0.2", i));
    auto got = b.deliver(kDeadline);
    ASSERT_TRUE(got) << "packet " << i;
    EXPECT_TRUE(seen.insert(seqOf(*got)).second) << "delivered twice: " << seqOf(*got);
  }
  EXPECT_FALSE(b.deliver(300ms)) << "a duplicate or altered packet got through";
  ASSERT_TRUE(e2e::waitFor(
      [&] {
        auto c = b.device->counters();
        return c.replayed == static_cast<uint64_t>(relay.replays.load()) &&
               c.authFailed == static_cast<uint64_t>(relay.alterations.load());
      },
      kDeadline));
  EXPECT_GE(relay.replays.load(), static_cast<int>(kPackets));
  EXPECT_EQ(b.device->counters().rxPackets, kPackets);
}

TEST(Device, HandshakeFloodGetsCookieReplies) {
  DeviceOptions o;
  o.underLoadHandshakesPerSecond = 20;
  TestDevice b(o);
  b.start();
  // b knows one peer; the flood comes from a stranger who knows b's public key (so mac1
  // is valid) but sends garbage otherwise.
  TestDevice a;
  PeerUpdate u;
  ASSERT_TRUE(b.device->updatePeer(a.pub, u).ok());

  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  sockaddr_in6 dst6 = b.endpoint().toSockaddr6();
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = dst6.sin6_port;
  dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

  CookieGenerator gen;
  gen.init(b.pub);
  std::map<uint32_t, MacValue> mac1BySender;
  auto sendInitiation = [&](uint32_t sender) {
    MessageInitiation m{};
    m.type = kMessageInitiationType;
    m.sender = sender;
    randomBytes(MutableBytes(m.ephemeral, sizeof m.ephemeral));
    gen.addMacs(MutableBytes(reinterpret_cast<uint8_t*>(&m), sizeof m),
                std::chrono::steady_clock::now());
    std::memcpy(mac1BySender[sender].data(), m.mac1, 16);
    sendto(fd, &m, sizeof m, 0, reinterpret_cast<sockaddr*>(&dst), sizeof dst);
    return m;
  };
  const uint32_t kFlood = 200;
  for (uint32_t i = 1; i <= kFlood; ++i) sendInitiation(i);

  std::vector<MessageCookieReply> replies;
  e2e::waitFor(
      [&] {
        MessageCookieReply r;
        while (recv(fd, &r, sizeof r, MSG_DONTWAIT) == static_cast<ssize_t>(sizeof r)) {
          replies.push_back(r);
        }
        return replies.size() >= kFlood - o.underLoadHandshakesPerSecond;
      },
      5s);
  ASSERT_GE(replies.size(), 100u) << "expected cookie replies to most of the flood";
  EXPECT_EQ(b.device->counters().cookieRepliesSent, replies.size());

  // Decrypt one reply as a real initiator would: the key is HASH("cookie--" || b's
  // public key), the associated data the mac1 of the message answered.
  const MessageCookieReply& r = replies.back();
  EXPECT_EQ(r.type, kMessageCookieReplyType);
  ASSERT_TRUE(mac1BySender.count(r.receiver));
  HashValue key = hash({Bytes(reinterpret_cast<const uint8_t*>(kLabelCookie), 8), b.pub});
  uint8_t cookie[16];
  ASSERT_TRUE(xaeadOpen(key.data(), r.nonce, Bytes(r.encryptedCookie, 32), mac1BySender[r.receiver],
                        cookie));

  // With that cookie in mac2 an initiation is processed (and refused: it is garbage)
  // instead of answered with another cookie.
  uint64_t refusedBefore = b.device->counters().handshakeRefused;
  uint64_t cookiesBefore = b.device->counters().cookieRepliesSent;
  MessageInitiation m{};
  m.type = kMessageInitiationType;
  m.sender = 9999;
  gen.addMacs(MutableBytes(reinterpret_cast<uint8_t*>(&m), sizeof m),
              std::chrono::steady_clock::now());
  MacValue mac2 = mac(Bytes(cookie, 16), {Bytes(reinterpret_cast<uint8_t*>(&m), sizeof m - 16)});
  std::memcpy(m.mac2, mac2.data(), 16);
  sendto(fd, &m, sizeof m, 0, reinterpret_cast<sockaddr*>(&dst), sizeof dst);
  EXPECT_TRUE(e2e::waitFor(
      [&] { return b.device->counters().handshakeRefused == refusedBefore + 1; }, kDeadline));
  EXPECT_EQ(b.device->counters().cookieRepliesSent, cookiesBefore);
  // A bad mac1 is dropped before anything else.
  m.mac1[0] ^= 1;
  sendto(fd, &m, sizeof m, 0, reinterpret_cast<sockaddr*>(&dst), sizeof dst);
  EXPECT_TRUE(e2e::waitFor([&] { return b.device->counters().badMac1 == 1; }, kDeadline));
  close(fd);
}

TEST(Device, RekeyUnderTrafficLosesAtMostAHandful) {
  DeviceOptions o;
  o.timers.rekeyAfterTime = 800ms;
  o.timers.rejectAfterTime = 1200ms;
  o.timers.rekeyTimeout = 150ms;
  o.timers.keepaliveTimeout = 300ms;
  o.timers.rekeyAttemptTime = 9000ms;
  o.timerTick = 10ms;
  TestDevice a(o), b(o);
  a.start();
  b.start();
  connect(a, b, "10.0.0.1/32", "10.0.0.2/32");
  // The first session is set up before the measurement: rekeys are what is measured.
  expectDelivered(a, b, "10.0.0.1", "10.0.0.2", 100000);
  expectDelivered(b, a, "10.0.0.2", "10.0.0.1", 100000);
  const uint64_t handshakesBefore =
      a.device->counters().handshakesCompleted + b.device->counters().handshakesCompleted;
  const uint32_t kPackets = 2500;  // both ways, ~5 s at 2 ms spacing: several rekeys
  std::set<uint32_t> atB, atA;
  std::atomic<size_t> received{0};
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop) {
      if (auto p = b.deliver(1ms)) atB.insert(seqOf(*p));
      if (auto p = a.deliver(1ms)) atA.insert(seqOf(*p));
      received = atA.size() + atB.size();
    }
  });
  for (uint32_t i = 0; i < kPackets; ++i) {
    a.inject(udpPacket("10.0.0.1", "10.0.0.2", i));
    b.inject(udpPacket("10.0.0.2", "10.0.0.1", i));
    std::this_thread::sleep_for(2ms);  // pacing the traffic, not waiting for a result
  }
  e2e::waitFor([&] { return received.load() >= 2 * kPackets; }, 5s);
  stop = true;
  reader.join();
  auto ca = a.device->counters(), cb = b.device->counters();
  uint64_t handshakes = ca.handshakesCompleted + cb.handshakesCompleted - handshakesBefore;
  EXPECT_GE(handshakes, 6u) << "expected several rekeys (both sides count completions)";
  size_t lost = 2 * kPackets - atA.size() - atB.size();
  std::printf("rekey under traffic: %u packets each way, %llu handshakes, %zu lost\n", kPackets,
              static_cast<unsigned long long>(handshakes), lost);
  EXPECT_LE(lost, 5u) << "lost " << lost << " packets over " << handshakes << " handshakes";
  EXPECT_EQ(ca.authFailed + cb.authFailed, 0u);
}

TEST(Device, EndpointRoamsToTheNewestAuthenticatedSource) {
  TestDevice a, b;
  a.start();
  b.start();
  connect(a, b, "10.0.0.1/32", "10.0.0.2/32", true, false);
  expectDelivered(a, b, "10.0.0.1", "10.0.0.2", 1);
  Endpoint before = b.device->snapshot().peers[0].endpoint;
  EXPECT_EQ(before, a.endpoint());
  ASSERT_TRUE(a.device->setListenPort(0).ok());  // a "moves": new port
  ASSERT_NE(a.endpoint(), before);
  expectDelivered(a, b, "10.0.0.1", "10.0.0.2", 2);
  EXPECT_EQ(b.device->snapshot().peers[0].endpoint, a.endpoint());
  expectDelivered(b, a, "10.0.0.2", "10.0.0.1", 3);  // b answers at the new address
}

TEST(Device, RemovedPeerStopsTraffic) {
  TestDevice a, b;
  a.start();
  b.start();
  connect(a, b, "10.0.0.1/32", "10.0.0.2/32");
  expectDelivered(a, b, "10.0.0.1", "10.0.0.2", 1);
  EXPECT_TRUE(b.device->removePeer(a.pub));
  EXPECT_FALSE(b.device->removePeer(a.pub));
  a.inject(udpPacket("10.0.0.1", "10.0.0.2", 2));
  EXPECT_TRUE(e2e::waitFor([&] { return b.device->counters().unknownIndex >= 1; }, kDeadline));
  EXPECT_FALSE(b.deliver(200ms));
}

}  // namespace
}  // namespace strait::tunnel
