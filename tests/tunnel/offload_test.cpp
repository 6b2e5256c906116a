// TUN offload helpers: TSO super-packets cut into segments with valid checksums, pending
// checksums completed, and in-order TCP segments coalesced back into one GSO write.
#include "tunnel/offload.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "tunnel/crypto.h"
#include "tunnel/remap.h"

namespace strait::tunnel {
namespace {

uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t get32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
void put16(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

// IPv4 + TCP (with 12 bytes of options) carrying `payload` bytes, flags ACK|PSH.
std::vector<uint8_t> tcpPacket(size_t payload, uint32_t seq) {
  std::vector<uint8_t> p(20 + 32 + payload);
  p[0] = 0x45;
  put16(&p[2], static_cast<uint32_t>(p.size()));
  put16(&p[4], 0x1234);
  p[6] = 0x40;  // DF
  p[8] = 64;
  p[9] = 6;
  inet_pton(AF_INET, "10.100.0.1", &p[12]);
  inet_pton(AF_INET, "10.100.0.2", &p[16]);
  put16(&p[20], 40000);
  put16(&p[22], 5201);
  for (int i = 0; i < 4; ++i) p[24 + i] = static_cast<uint8_t>(seq >> (24 - 8 * i));
  p[32] = 8 << 4;  // 32-byte TCP header
  p[33] = 0x18;
  put16(&p[34], 512);
  for (size_t i = 40; i < 52; ++i) p[i] = 1;  // NOPs
  for (size_t i = 52; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 13);
  return p;
}

uint16_t pseudo(const uint8_t* ip, size_t l4len) {
  uint8_t tail[4] = {0, 6, static_cast<uint8_t>(l4len >> 8), static_cast<uint8_t>(l4len)};
  return onesComplementSum(tail, 4, onesComplementSum(ip + 12, 8));
}

bool tcpChecksumValid(const uint8_t* ip, size_t len) {
  return static_cast<uint16_t>(~onesComplementSum(ip + 20, len - 20, pseudo(ip, len - 20))) == 0;
}

TEST(Offload, SumMatchesReferenceChecksum) {
  for (size_t n : {0u, 1u, 2u, 3u, 7u, 8u, 9u, 1500u, 1501u}) {
    std::vector<uint8_t> d(n);
    randomBytes(MutableBytes(d.data(), d.size()));
    EXPECT_EQ(static_cast<uint16_t>(~onesComplementSum(d.data(), n)), internetChecksum(d.data(), n))
        << n;
  }
}

TEST(Offload, SegmentsTsoSuperPacket) {
  const size_t kMss = 1000, kPayload = 5500;
  auto super = tcpPacket(kPayload, 1000000);
  put16(&super[36], pseudo(super.data(), super.size() - 20));  // CHECKSUM_PARTIAL
  VirtioNetHdr h{kVirtioNeedsCsum, kGsoTcpV4, 52, kMss, 20, 16};
  std::vector<std::vector<uint8_t>> bufs(8, std::vector<uint8_t>(2000));
  std::vector<uint8_t*> outs;
  for (auto& b : bufs) outs.push_back(b.data());
  size_t lengths[8];
  size_t n = segmentOffloaded(h, super.data(), super.size(), outs, 2000, lengths);
  ASSERT_EQ(n, 6u);
  std::vector<uint8_t> joined;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* s = outs[i];
    size_t len = lengths[i];
    EXPECT_EQ(len, 52 + (i < 5 ? kMss : 500));
    EXPECT_EQ(get16(s + 2), len);
    EXPECT_EQ(internetChecksum(s, 20), 0) << "IP checksum of segment " << i;
    EXPECT_TRUE(tcpChecksumValid(s, len)) << "TCP checksum of segment " << i;
    EXPECT_EQ(get32(s + 24), 1000000 + i * kMss);
    EXPECT_EQ(get16(s + 4), 0x1234 + i);
    EXPECT_EQ(s[33] & 0x08, i == n - 1 ? 0x08 : 0) << "PSH only on the last";
    joined.insert(joined.end(), s + 52, s + len);
  }
  EXPECT_TRUE(std::equal(joined.begin(), joined.end(), super.begin() + 52));
  // Too few outputs: refused, not overflowed.
  EXPECT_EQ(segmentOffloaded(h, super.data(), super.size(),
                             std::span<uint8_t* const>(outs.data(), 3), 2000, lengths),
            0u);
}

TEST(Offload, CompletesPendingChecksum) {
  auto p = tcpPacket(300, 7);
  put16(&p[36], pseudo(p.data(), p.size() - 20));
  put16(&p[10], internetChecksum(p.data(), 20));
  VirtioNetHdr h{kVirtioNeedsCsum, kGsoNone, 0, 0, 20, 16};
  std::vector<uint8_t> out(2000);
  uint8_t* o = out.data();
  size_t len;
  ASSERT_EQ(segmentOffloaded(h, p.data(), p.size(), std::span<uint8_t* const>(&o, 1), 2000, &len),
            1u);
  EXPECT_TRUE(tcpChecksumValid(o, len));
}

TEST(Offload, CoalescesInOrderSegmentsOfOneFlow) {
  std::vector<std::vector<uint8_t>> segs;
  for (uint32_t i = 0; i < 5; ++i) {
    auto s = tcpPacket(1000, 5000 + i * 1000);
    s[33] = i == 4 ? 0x18 : 0x10;
    segs.push_back(s);
  }
  segs.push_back(tcpPacket(1000, 999999));  // another position in the stream: not merged
  std::vector<TunPacket> packets;
  for (auto& s : segs) packets.push_back({s.data(), s.size()});
  std::vector<uint8_t> scratch;
  std::vector<std::pair<VirtioNetHdr, std::vector<uint8_t>>> writes;
  coalesceForTun(std::span<const TunPacket>(packets), scratch,
                 [&](const VirtioNetHdr& h, const uint8_t* d, size_t n) {
                   writes.push_back({h, std::vector<uint8_t>(d, d + n)});
                 });
  ASSERT_EQ(writes.size(), 2u);
  const auto& [h, merged] = writes[0];
  EXPECT_EQ(h.gsoType, kGsoTcpV4);
  EXPECT_EQ(h.gsoSize, 1000);
  EXPECT_EQ(h.csumStart, 20);
  EXPECT_EQ(h.csumOffset, 16);
  EXPECT_EQ(merged.size(), 52u + 5000u);
  EXPECT_EQ(get16(&merged[2]), merged.size());
  EXPECT_EQ(internetChecksum(merged.data(), 20), 0);
  EXPECT_EQ(get16(&merged[36]), pseudo(merged.data(), merged.size() - 20));
  EXPECT_EQ(merged[33], 0x18) << "PSH of the last segment kept";
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(std::equal(segs[i].begin() + 52, segs[i].end(), merged.begin() + 52 + i * 1000));
  }
  EXPECT_EQ(writes[1].first.gsoType, kGsoNone);
  EXPECT_EQ(writes[1].second, segs[5]);
}

}  // namespace
}  // namespace strait::tunnel
