#include "tunnel/remap.h"

#include <cstring>

namespace strait::tunnel {

using base::Code;
using base::makeError;

base::Status PrefixRemap::validate() const {
  if (peer.address.family != AF_INET || local.address.family != AF_INET) {
    return makeError(Code::Invalid, "remap " + toString() + ": only IPv4 prefixes are remapped");
  }
  if (peer.bits != local.bits) {
    return makeError(Code::Invalid,
                     "remap " + toString() + ": both prefixes must have the same length");
  }
  if (peer == local) {
    return makeError(Code::Invalid, "remap " + toString() + ": prefixes are identical");
  }
  return base::Status::OK();
}

std::string PrefixRemap::toString() const { return peer.toString() + " -> " + local.toString(); }

base::Result<PrefixRemap> PrefixRemap::parse(const std::string& text) {
  size_t arrow = text.find("->");
  if (arrow == std::string::npos) {
    return makeError(Code::Invalid, "remap \"" + text + "\": expected PEER_CIDR -> LOCAL_CIDR");
  }
  auto trim = [](std::string s) {
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t") + 1);
    return s;
  };
  auto peer = IpPrefix::parse(trim(text.substr(0, arrow)));
  if (!peer.ok()) return makeError(Code::Invalid, "remap: " + peer.error().message);
  auto local = IpPrefix::parse(trim(text.substr(arrow + 2)));
  if (!local.ok()) return makeError(Code::Invalid, "remap: " + local.error().message);
  PrefixRemap r{*peer, *local};
  if (auto st = r.validate(); !st.ok()) return st.error();
  return r;
}

uint16_t internetChecksum(const uint8_t* data, size_t length, uint32_t initial) {
  uint32_t sum = initial;
  for (size_t i = 0; i + 1 < length; i += 2) sum += uint32_t(data[i]) << 8 | data[i + 1];
  if (length & 1) sum += uint32_t(data[length - 1]) << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

uint16_t checksumAdjust(uint16_t checksum, const uint8_t before[4], const uint8_t after[4]) {
  uint32_t sum = static_cast<uint16_t>(~checksum);
  for (int i = 0; i < 4; i += 2) {
    sum += static_cast<uint16_t>(~(uint16_t(before[i]) << 8 | before[i + 1]));
    sum += uint16_t(after[i]) << 8 | after[i + 1];
  }
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

namespace {

uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

// Adjusts the 16-bit checksum at `field` for an address change.
void adjustAt(uint8_t* field, const uint8_t before[4], const uint8_t after[4]) {
  put16(field, checksumAdjust(get16(field), before, after));
}

// Rewrites the address at `addr` into `to` if it lies in `from`; fills before/after.
bool translate(uint8_t* addr, const IpPrefix& from, const IpPrefix& to, uint8_t before[4],
               uint8_t after[4]) {
  IpAddress a;
  a.family = AF_INET;
  std::memcpy(a.bytes.data(), addr, 4);
  if (!from.contains(a)) return false;
  std::memcpy(before, addr, 4);
  uint32_t mask = from.bits == 0 ? 0 : ~uint32_t(0) << (32 - from.bits);
  uint32_t host =
      (uint32_t(addr[0]) << 24 | uint32_t(addr[1]) << 16 | uint32_t(addr[2]) << 8 | addr[3]) &
      ~mask;
  const uint8_t* t = to.address.bytes.data();
  uint32_t net = uint32_t(t[0]) << 24 | uint32_t(t[1]) << 16 | uint32_t(t[2]) << 8 | t[3];
  uint32_t v = (net & mask) | host;
  for (int i = 0; i < 4; ++i) after[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
  std::memcpy(addr, after, 4);
  return true;
}

bool isIcmpError(uint8_t type) {
  return type == 3 || type == 4 || type == 5 || type == 11 || type == 12;
}

// Translates the address at byte offset `addrOffset` (12 = source, 16 = destination) of the
// IPv4 packet, and the opposite address of an ICMP error's quoted header.
bool remap(const IpPrefix& from, const IpPrefix& to, size_t addrOffset, uint8_t* p, size_t len) {
  if (len < 20 || (p[0] >> 4) != 4) return false;
  size_t ihl = (p[0] & 0x0f) * 4u;
  if (ihl < 20 || ihl > len) return false;
  uint8_t before[4], after[4];
  if (!translate(p + addrOffset, from, to, before, after)) return false;
  adjustAt(p + 10, before, after);

  bool firstFragment = (get16(p + 6) & 0x1fff) == 0;
  uint8_t proto = p[9];
  uint8_t* l4 = p + ihl;
  size_t l4len = len - ihl;
  if (!firstFragment) return true;
  if (proto == 6 && l4len >= 18) {
    adjustAt(l4 + 16, before, after);
  } else if (proto == 17 && l4len >= 8) {
    if (get16(l4 + 6) != 0) {  // 0 = no checksum (IPv4 only)
      adjustAt(l4 + 6, before, after);
      if (get16(l4 + 6) == 0) put16(l4 + 6, 0xffff);
    }
  } else if (proto == 1 && l4len >= 8 + 20 && isIcmpError(l4[0])) {
    // The quoted packet travelled the other way: its opposite address is the one that
    // was translated when it was sent.
    uint8_t* inner = l4 + 8;
    if ((inner[0] >> 4) != 4) return true;
    size_t innerAddr = addrOffset == 12 ? 16 : 12;
    uint8_t ib[4], ia[4];
    if (translate(inner + innerAddr, from, to, ib, ia)) {
      uint8_t oldSum[4] = {inner[10], inner[11], 0, 0};
      adjustAt(inner + 10, ib, ia);
      uint8_t newSum[4] = {inner[10], inner[11], 0, 0};
      adjustAt(l4 + 2, ib, ia);          // the ICMP checksum covers the quoted bytes
      adjustAt(l4 + 2, oldSum, newSum);  // including the quoted header's checksum
    }
  }
  // ICMP echo and other ICMP checksums do not cover the IP header: nothing to fix.
  return true;
}

}  // namespace

bool remapOutbound(const PrefixRemap& r, uint8_t* packet, size_t length) {
  return remap(r.local, r.peer, 16, packet, length);
}

bool remapInbound(const PrefixRemap& r, uint8_t* packet, size_t length) {
  return remap(r.peer, r.local, 12, packet, length);
}

}  // namespace strait::tunnel
