// CIDR remapping: translated addresses, and checksums that equal a full recomputation
// (IPv4 header, TCP, UDP, ICMP errors with their quoted header).
#include "tunnel/remap.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tunnel/crypto.h"

namespace strait::tunnel {
namespace {

PrefixRemap makeRemap() { return *PrefixRemap::parse("10.200.0.0/16 -> 10.201.0.0/16"); }

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

// IPv4 packet with header checksum and (for TCP/UDP) the transport checksum computed fully.
std::vector<uint8_t> ipv4(uint8_t proto, const char* src, const char* dst, size_t l4len) {
  std::vector<uint8_t> p(20 + l4len);
  p[0] = 0x45;
  put16(&p[2], static_cast<uint16_t>(p.size()));
  p[8] = 64;
  p[9] = proto;
  inet_pton(AF_INET, src, &p[12]);
  inet_pton(AF_INET, dst, &p[16]);
  for (size_t i = 20; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 7);
  return p;
}

uint16_t transportChecksum(const std::vector<uint8_t>& p, size_t csumOffset) {
  std::vector<uint8_t> copy = p;
  put16(&copy[20 + csumOffset], 0);
  uint32_t pseudo = 0;
  for (int i = 12; i < 20; i += 2) pseudo += get16(&copy[i]);
  pseudo += copy[9];
  pseudo += static_cast<uint32_t>(copy.size() - 20);
  return internetChecksum(copy.data() + 20, copy.size() - 20, pseudo);
}

void finish(std::vector<uint8_t>& p, int csumOffset) {
  put16(&p[10], 0);
  put16(&p[10], internetChecksum(p.data(), 20));
  if (csumOffset >= 0) put16(&p[20 + csumOffset], transportChecksum(p, csumOffset));
}

bool headerOk(const std::vector<uint8_t>& p) { return internetChecksum(p.data(), 20) == 0; }

TEST(Remap, ParseAndValidate) {
  EXPECT_TRUE(PrefixRemap::parse("10.200.0.0/16 -> 10.201.0.0/16").ok());
  EXPECT_FALSE(PrefixRemap::parse("10.200.0.0/16 10.201.0.0/16").ok());
  EXPECT_FALSE(PrefixRemap::parse("10.200.0.0/16 -> 10.201.0.0/24").ok());
  EXPECT_FALSE(PrefixRemap::parse("10.200.0.0/16 -> 10.200.0.0/16").ok());
  EXPECT_FALSE(PrefixRemap::parse("fd00::/64 -> fd01::/64").ok());
}

TEST(Remap, TcpOutboundAndInbound) {
  auto p = ipv4(6, "10.200.1.5", "10.201.7.9", 40);
  finish(p, 16);
  ASSERT_TRUE(remapOutbound(makeRemap(), p.data(), p.size()));
  char buf[16];
  EXPECT_STREQ(inet_ntop(AF_INET, &p[16], buf, sizeof buf), "10.200.7.9");
  EXPECT_STREQ(inet_ntop(AF_INET, &p[12], buf, sizeof buf), "10.200.1.5") << "source kept";
  EXPECT_TRUE(headerOk(p));
  EXPECT_EQ(get16(&p[36]), transportChecksum(p, 16));

  // The reply, seen inbound: source 10.200.7.9 becomes 10.201.7.9.
  auto r = ipv4(6, "10.200.7.9", "10.200.1.5", 40);
  finish(r, 16);
  ASSERT_TRUE(remapInbound(makeRemap(), r.data(), r.size()));
  EXPECT_STREQ(inet_ntop(AF_INET, &r[12], buf, sizeof buf), "10.201.7.9");
  EXPECT_TRUE(headerOk(r));
  EXPECT_EQ(get16(&r[36]), transportChecksum(r, 16));
}

TEST(Remap, UdpChecksumAndZeroChecksum) {
  auto p = ipv4(17, "10.200.1.5", "10.201.255.254", 30);
  put16(&p[24], 30);
  finish(p, 6);
  ASSERT_TRUE(remapOutbound(makeRemap(), p.data(), p.size()));
  EXPECT_TRUE(headerOk(p));
  EXPECT_EQ(get16(&p[26]), transportChecksum(p, 6));

  auto z = ipv4(17, "10.200.1.5", "10.201.0.1", 30);
  finish(z, -1);
  put16(&z[26], 0);  // no UDP checksum
  ASSERT_TRUE(remapOutbound(makeRemap(), z.data(), z.size()));
  EXPECT_EQ(get16(&z[26]), 0) << "a zero UDP checksum stays zero";
  EXPECT_TRUE(headerOk(z));
}

TEST(Remap, IcmpEchoAndErrorWithQuotedHeader) {
  auto echo = ipv4(1, "10.200.1.5", "10.201.3.3", 16);
  finish(echo, -1);
  echo[20] = 8;
  put16(&echo[22], 0);
  put16(&echo[22], internetChecksum(echo.data() + 20, 16));
  ASSERT_TRUE(remapOutbound(makeRemap(), echo.data(), echo.size()));
  EXPECT_TRUE(headerOk(echo));
  EXPECT_EQ(internetChecksum(echo.data() + 20, 16), 0);

  // Port unreachable from the peer's pod 10.200.3.3 about a UDP packet we sent to it; the
  // quoted header says dst 10.200.3.3 and must read 10.201.3.3 locally.
  auto quoted = ipv4(17, "10.200.1.5", "10.200.3.3", 8);
  finish(quoted, -1);
  auto err = ipv4(1, "10.200.3.3", "10.200.1.5", 8 + quoted.size());
  err[20] = 3;
  err[21] = 3;
  std::memset(&err[22], 0, 6);
  std::memcpy(&err[28], quoted.data(), quoted.size());
  finish(err, -1);
  put16(&err[22], internetChecksum(err.data() + 20, err.size() - 20));
  ASSERT_TRUE(remapInbound(makeRemap(), err.data(), err.size()));
  char buf[16];
  EXPECT_STREQ(inet_ntop(AF_INET, &err[12], buf, sizeof buf), "10.201.3.3");
  EXPECT_STREQ(inet_ntop(AF_INET, &err[28 + 16], buf, sizeof buf), "10.201.3.3");
  EXPECT_STREQ(inet_ntop(AF_INET, &err[28 + 12], buf, sizeof buf), "10.200.1.5");
  EXPECT_TRUE(headerOk(err));
  EXPECT_EQ(internetChecksum(err.data() + 28, 20), 0) << "quoted header checksum";
  EXPECT_EQ(internetChecksum(err.data() + 20, err.size() - 20), 0) << "ICMP checksum";
}

TEST(Remap, OtherPacketsUntouched) {
  auto p = ipv4(6, "10.200.1.5", "10.99.0.1", 40);
  finish(p, 16);
  auto before = p;
  EXPECT_FALSE(remapOutbound(makeRemap(), p.data(), p.size()));
  EXPECT_EQ(p, before);
  std::vector<uint8_t> tiny(10, 0x45);
  EXPECT_FALSE(remapOutbound(makeRemap(), tiny.data(), tiny.size()));
  std::vector<uint8_t> v6(60, 0);
  v6[0] = 0x60;
  EXPECT_FALSE(remapInbound(makeRemap(), v6.data(), v6.size()));
}

TEST(Remap, ChecksumAdjustMatchesRecomputation) {
  // Random headers: incremental update == full recomputation.
  for (int i = 0; i < 200; ++i) {
    uint8_t h[20];
    randomBytes(MutableBytes(h, 20));
    h[0] = 0x45;
    put16(&h[10], 0);
    put16(&h[10], internetChecksum(h, 20));
    uint8_t before[4], after[4];
    std::memcpy(before, &h[16], 4);
    randomBytes(MutableBytes(after, 4));
    std::memcpy(&h[16], after, 4);
    put16(&h[10], checksumAdjust(get16(&h[10]), before, after));
    ASSERT_EQ(internetChecksum(h, 20), 0) << i;
  }
}

}  // namespace
}  // namespace strait::tunnel
