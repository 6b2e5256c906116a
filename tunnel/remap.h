#pragma once
// Per-peer CIDR remapping for overlapping pod CIDRs: stateless 1:1 IPv4 prefix translation
// (like NETMAP). The peer's real prefix (e.g. 10.200.0.0/16, also used locally) is presented
// here under a free local prefix (e.g. 10.201.0.0/16):
//   outbound (TUN -> peer): destination in the local view  -> peer's real prefix
//   inbound  (peer -> TUN): source in the peer's real prefix -> local view
// The host part is kept. IPv4 header, TCP, UDP and ICMP checksums are fixed incrementally
// (RFC 1624); ICMP errors also get the quoted header translated.
//
// Pure functions on packet bytes; thread-safe.

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "tunnel/ip.h"

namespace strait::tunnel {

struct PrefixRemap {
  IpPrefix peer;   // the peer's real prefix
  IpPrefix local;  // how it appears locally

  // Both IPv4 with the same length, and distinct.
  base::Status validate() const;
  // "10.200.0.0/16 -> 10.201.0.0/16" (the config syntax).
  std::string toString() const;
  static base::Result<PrefixRemap> parse(const std::string& text);
};

// Translates an outbound IPv4 packet in place. True if it was changed. Packets that are
// not IPv4, too short, or not addressed to `remap.local` are left alone.
bool remapOutbound(const PrefixRemap& remap, uint8_t* packet, size_t length);
// Translates an inbound IPv4 packet in place (source in `remap.peer`). True if changed.
bool remapInbound(const PrefixRemap& remap, uint8_t* packet, size_t length);

// RFC 1624 incremental update of a 16-bit one's-complement checksum (host order value)
// for a 4-byte field changing from `before` to `after`.
uint16_t checksumAdjust(uint16_t checksum, const uint8_t before[4], const uint8_t after[4]);
// Internet checksum of `data` (for tests and full recomputation).
uint16_t internetChecksum(const uint8_t* data, size_t length, uint32_t initial = 0);

}  // namespace strait::tunnel
