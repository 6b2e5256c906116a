#include "tunnel/device_harness.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <cstring>

#include "tunnel/remap.h"

namespace strait::tunnel::testing {

std::vector<uint8_t> udpPacket(const char* src, const char* dst, uint32_t seq, size_t payload) {
  std::vector<uint8_t> p(28 + payload, 0);
  p[0] = 0x45;
  p[2] = static_cast<uint8_t>(p.size() >> 8);
  p[3] = static_cast<uint8_t>(p.size());
  p[8] = 64;
  p[9] = 17;
  inet_pton(AF_INET, src, &p[12]);
  inet_pton(AF_INET, dst, &p[16]);
  uint16_t c = internetChecksum(p.data(), 20);
  p[10] = static_cast<uint8_t>(c >> 8);
  p[11] = static_cast<uint8_t>(c);
  p[20] = 0x30;  // ports 12345 -> 12346
  p[21] = 0x39;
  p[22] = 0x30;
  p[23] = 0x3a;
  p[24] = static_cast<uint8_t>((8 + payload) >> 8);
  p[25] = static_cast<uint8_t>(8 + payload);
  for (int i = 0; i < 4; ++i) p[28 + i] = static_cast<uint8_t>(seq >> (24 - 8 * i));
  return p;
}

uint32_t seqOf(const std::vector<uint8_t>& p) {
  if (p.size() < 32) return ~0u;
  return uint32_t(p[28]) << 24 | uint32_t(p[29]) << 16 | uint32_t(p[30]) << 8 | p[31];
}

TestDevice::TestDevice(DeviceOptions options) {
  pub = *publicKeyOf(key);
  device = std::make_unique<Device>(options);
  EXPECT_TRUE(device->setPrivateKey(key).ok());
  int fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, fds), 0);
  tunDevice = fds[0];
  tunTest = fds[1];
  int buf = 4 << 20;
  for (int fd : fds) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);
  }
}

TestDevice::~TestDevice() {
  device->stop();
  close(tunDevice);
  close(tunTest);
}

void TestDevice::start() { ASSERT_TRUE(device->start(tunDevice).ok()); }

void TestDevice::inject(const std::vector<uint8_t>& packet) {
  ASSERT_EQ(write(tunTest, packet.data(), packet.size()), static_cast<ssize_t>(packet.size()));
}

std::optional<std::vector<uint8_t>> TestDevice::deliver(std::chrono::milliseconds timeout) {
  pollfd p{tunTest, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
  std::vector<uint8_t> buf(65536);
  ssize_t n = read(tunTest, buf.data(), buf.size());
  if (n <= 0) return std::nullopt;
  buf.resize(static_cast<size_t>(n));
  return buf;
}

Endpoint TestDevice::endpoint() const {
  return *Endpoint::parse("127.0.0.1:" + std::to_string(device->listenPort()));
}

void connect(TestDevice& a, TestDevice& b, const std::string& aAllowed, const std::string& bAllowed,
             bool aKnowsEndpoint, bool bKnowsEndpoint, std::optional<Endpoint> via) {
  PeerUpdate toB;
  toB.addAllowedIps.push_back(*IpPrefix::parse(bAllowed));
  if (aKnowsEndpoint) toB.endpoint = via ? *via : b.endpoint();
  ASSERT_TRUE(a.device->updatePeer(b.pub, toB).ok());
  PeerUpdate toA;
  toA.addAllowedIps.push_back(*IpPrefix::parse(aAllowed));
  if (bKnowsEndpoint) toA.endpoint = via ? *via : a.endpoint();
  ASSERT_TRUE(b.device->updatePeer(a.pub, toA).ok());
}

}  // namespace strait::tunnel::testing
