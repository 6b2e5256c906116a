#include "tunnel/offload.h"

#include <algorithm>

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
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

constexpr uint8_t kTcpFin = 0x01, kTcpPsh = 0x08, kTcpAck = 0x10, kTcpCwr = 0x80;

// Sum of the TCP pseudo-header of an IPv4 or IPv6 packet `p` with `l4Length` TCP bytes.
uint16_t pseudoHeaderSum(const uint8_t* p, bool v4, size_t l4Length) {
  uint8_t tail[8] = {0};
  if (v4) {
    tail[1] = 6;
    put16(tail + 2, static_cast<uint32_t>(l4Length));
    uint16_t s = onesComplementSum(p + 12, 8);
    return onesComplementSum(tail, 4, s);
  }
  put32(tail, static_cast<uint32_t>(l4Length));
  tail[7] = 6;
  uint16_t s = onesComplementSum(p + 8, 32);
  return onesComplementSum(tail, 8, s);
}

}  // namespace

uint16_t onesComplementSum(const uint8_t* d, size_t n, uint32_t initial) {
  // Summing little-endian words and swapping at the end equals summing big-endian words
  // (RFC 1071 byte-order independence).
  uint64_t sum = 0;
  while (n >= 8) {
    uint32_t a, b;
    std::memcpy(&a, d, 4);
    std::memcpy(&b, d + 4, 4);
    sum += uint64_t(a) + b;
    d += 8;
    n -= 8;
  }
  if (n >= 4) {
    uint32_t a;
    std::memcpy(&a, d, 4);
    sum += a;
    d += 4;
    n -= 4;
  }
  if (n >= 2) {
    uint16_t a;
    std::memcpy(&a, d, 2);
    sum += a;
    d += 2;
    n -= 2;
  }
  if (n) sum += d[0];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  uint32_t be = static_cast<uint16_t>((sum >> 8) | (sum << 8));
  be += initial;
  while (be >> 16) be = (be & 0xffff) + (be >> 16);
  return static_cast<uint16_t>(be);
}

size_t segmentOffloaded(const VirtioNetHdr& hdr, const uint8_t* packet, size_t length,
                        std::span<uint8_t* const> outputs, size_t capacity, size_t* lengths) {
  if (outputs.empty() || length == 0) return 0;
  uint8_t gso = hdr.gsoType & 0x7f;  // without the ECN bit
  if (gso == kGsoNone) {
    if (length > capacity) return 0;
    uint8_t* o = outputs[0];
    std::memcpy(o, packet, length);
    if (hdr.flags & kVirtioNeedsCsum) {
      size_t field = size_t(hdr.csumStart) + hdr.csumOffset;
      if (field + 2 > length || hdr.csumStart >= length) return 0;
      // The field holds the pseudo-header sum; the sum over the whole L4 completes it.
      put16(o + field,
            static_cast<uint16_t>(~onesComplementSum(o + hdr.csumStart, length - hdr.csumStart)));
    }
    lengths[0] = length;
    return 1;
  }
  if (gso != kGsoTcpV4 && gso != kGsoTcpV6) return 0;
  bool v4 = (packet[0] >> 4) == 4;
  if (v4 != (gso == kGsoTcpV4)) return 0;
  size_t l4 = hdr.csumStart;
  if (l4 < (v4 ? 20u : 40u) || l4 + 20 > length) return 0;
  size_t tcpHl = size_t(packet[l4 + 12] >> 4) * 4;
  size_t hl = l4 + tcpHl;
  size_t mss = hdr.gsoSize;
  if (tcpHl < 20 || hl > length || mss == 0) return 0;
  size_t payload = length - hl;
  size_t count = payload == 0 ? 1 : (payload + mss - 1) / mss;
  if (count > outputs.size() || hl + std::min(mss, payload) > capacity) return 0;
  uint32_t seq0 = get32(packet + l4 + 4);
  uint16_t id0 = get16(packet + 4);
  size_t ihl = size_t(packet[0] & 0x0f) * 4;
  for (size_t i = 0; i < count; ++i) {
    size_t off = i * mss;
    size_t chunk = std::min(mss, payload - off);
    uint8_t* o = outputs[i];
    std::memcpy(o, packet, hl);
    std::memcpy(o + hl, packet + hl + off, chunk);
    if (v4) {
      put16(o + 2, static_cast<uint32_t>(hl + chunk));
      put16(o + 4, static_cast<uint16_t>(id0 + i));
      put16(o + 10, 0);
      put16(o + 10, static_cast<uint16_t>(~onesComplementSum(o, ihl)));
    } else {
      put16(o + 4, static_cast<uint32_t>(hl - 40 + chunk));
    }
    put32(o + l4 + 4, seq0 + static_cast<uint32_t>(off));
    if (i + 1 != count) o[l4 + 13] &= static_cast<uint8_t>(~(kTcpFin | kTcpPsh));
    if (i != 0) o[l4 + 13] &= static_cast<uint8_t>(~kTcpCwr);
    put16(o + l4 + 16, 0);
    uint16_t pseudo = pseudoHeaderSum(o, v4, tcpHl + chunk);
    put16(o + l4 + 16, static_cast<uint16_t>(~onesComplementSum(o + l4, tcpHl + chunk, pseudo)));
    lengths[i] = hl + chunk;
  }
  return count;
}

namespace offload_detail {

namespace {
// A plain IPv4 TCP segment that may take part in a merge; fills header length and payload.
bool mergeCandidate(const TunPacket& p, size_t* hl, size_t* payload) {
  const uint8_t* d = p.data;
  if (p.length < 40 || d[0] != 0x45 || d[9] != 6) return false;
  if ((get16(d + 6) & 0x3fff) != 0) return false;  // fragment (MF or offset)
  if (get16(d + 2) != p.length) return false;
  size_t tcpHl = size_t(d[32] >> 4) * 4;
  if (tcpHl < 20 || 20 + tcpHl > p.length) return false;
  uint8_t flags = d[33];
  if ((flags & ~kTcpPsh) != kTcpAck) return false;  // plain data segments only
  *hl = 20 + tcpHl;
  *payload = p.length - *hl;
  return *payload > 0;
}
}  // namespace

size_t mergeableRun(std::span<const TunPacket> packets, size_t first) {
  size_t hl0, mss;
  const TunPacket& p0 = packets[first];
  if (!mergeCandidate(p0, &hl0, &mss) || (p0.data[33] & kTcpPsh)) return 1;
  const uint8_t* h0 = p0.data;
  uint32_t nextSeq = get32(h0 + 24) + static_cast<uint32_t>(mss);
  size_t total = p0.length;
  size_t run = 1;
  for (size_t j = first + 1; j < packets.size(); ++j) {
    const TunPacket& q = packets[j];
    size_t hl, payload;
    if (!mergeCandidate(q, &hl, &payload) || hl != hl0 || payload > mss) break;
    const uint8_t* h = q.data;
    // Same TOS, TTL, addresses, ports, ack, window and options; contiguous sequence.
    if (h[1] != h0[1] || h[8] != h0[8] || std::memcmp(h + 12, h0 + 12, 12) != 0 ||
        std::memcmp(h + 28, h0 + 28, 4) != 0 || std::memcmp(h + 34, h0 + 34, 2) != 0 ||
        std::memcmp(h + 40, h0 + 40, hl - 40) != 0 || get32(h + 24) != nextSeq) {
      break;
    }
    if (total + payload > 65535 - 64) break;
    total += payload;
    nextSeq += static_cast<uint32_t>(payload);
    ++run;
    if (payload < mss || (h[33] & kTcpPsh)) break;  // a short or pushed segment ends it
  }
  return run;
}

void buildMerged(std::span<const TunPacket> packets, size_t first, size_t count,
                 std::vector<uint8_t>& scratch) {
  const TunPacket& p0 = packets[first];
  size_t hl = 20 + size_t(p0.data[32] >> 4) * 4;
  size_t mss = p0.length - hl;
  scratch.resize(sizeof(VirtioNetHdr) + hl);
  std::memcpy(scratch.data() + sizeof(VirtioNetHdr), p0.data, hl);
  for (size_t i = first; i < first + count; ++i) {
    const TunPacket& p = packets[i];
    scratch.insert(scratch.end(), p.data + hl, p.data + p.length);
  }
  uint8_t* ip = scratch.data() + sizeof(VirtioNetHdr);
  size_t total = scratch.size() - sizeof(VirtioNetHdr);
  put16(ip + 2, static_cast<uint32_t>(total));
  put16(ip + 10, 0);
  put16(ip + 10, static_cast<uint16_t>(~onesComplementSum(ip, 20)));
  ip[33] = packets[first + count - 1].data[33];  // the last segment's flags (PSH)
  // CHECKSUM_PARTIAL: the field holds the pseudo-header sum, the kernel does the rest.
  put16(ip + 36, pseudoHeaderSum(ip, true, total - 20));
  VirtioNetHdr h{};
  h.flags = kVirtioNeedsCsum;
  h.gsoType = kGsoTcpV4;
  h.hdrLen = static_cast<uint16_t>(hl);
  h.gsoSize = static_cast<uint16_t>(mss);
  h.csumStart = 20;
  h.csumOffset = 16;
  std::memcpy(scratch.data(), &h, sizeof h);
}

}  // namespace offload_detail
}  // namespace strait::tunnel
