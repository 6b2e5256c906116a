#pragma once
// TUN offloads (IFF_VNET_HDR): every packet read from or written to the TUN carries a
// 10-byte virtio_net_hdr. With TSO enabled the kernel hands us TCP "super-packets" of up to
// 64 KiB, which we cut into MTU-sized segments before encryption (segmentation), and on the
// way in we merge consecutive segments of one TCP flow into one super-packet for the kernel
// (coalescing, like GRO). Both cut the per-packet system-call and TCP-stack cost.
//
// Pure functions over caller-owned buffers; thread-safe.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace strait::tunnel {

struct VirtioNetHdr {
  uint8_t flags;
  uint8_t gsoType;
  uint16_t hdrLen;
  uint16_t gsoSize;
  uint16_t csumStart;
  uint16_t csumOffset;
};
static_assert(sizeof(VirtioNetHdr) == 10);

inline constexpr uint8_t kVirtioNeedsCsum = 1;
inline constexpr uint8_t kGsoNone = 0;
inline constexpr uint8_t kGsoTcpV4 = 1;
inline constexpr uint8_t kGsoTcpV6 = 4;

// One's-complement sum (not complemented) of `data`, folded to 16 bits, big-endian value.
uint16_t onesComplementSum(const uint8_t* data, size_t length, uint32_t initial = 0);

// Turns one packet read from a vnet-hdr TUN (`hdr`, then `packet` of `length` bytes) into
// plain IP packets: completes a pending checksum, and cuts a TCP GSO packet into segments of
// hdr.gsoSize payload bytes. Segment i is written at outputs[i] (each with room for
// `capacity` bytes) and its length stored in lengths[i]. Returns the number of segments, or
// 0 when the packet is malformed or needs more outputs than given.
size_t segmentOffloaded(const VirtioNetHdr& hdr, const uint8_t* packet, size_t length,
                        std::span<uint8_t* const> outputs, size_t capacity, size_t* lengths);

// A decrypted IP packet waiting to be written to the TUN.
struct TunPacket {
  const uint8_t* data;
  size_t length;
};

// Groups `packets` (in arrival order) into TUN writes: runs of consecutive in-order segments
// of one IPv4 TCP flow become one GSO super-packet; everything else is written alone.
// `write(iov_data, iov_len)` is called once per TUN write with the virtio header first.
// `scratch` is reused across calls.
template <class Write>
void coalesceForTun(std::span<const TunPacket> packets, std::vector<uint8_t>& scratch,
                    Write&& write);

// ---- implementation detail of coalesceForTun ----
namespace offload_detail {
// Length of the run of packets starting at `first` that can be merged (>= 1).
size_t mergeableRun(std::span<const TunPacket> packets, size_t first);
// Builds header + merged payload of packets[first, first+count) into scratch.
void buildMerged(std::span<const TunPacket> packets, size_t first, size_t count,
                 std::vector<uint8_t>& scratch);
}  // namespace offload_detail

template <class Write>
void coalesceForTun(std::span<const TunPacket> packets, std::vector<uint8_t>& scratch,
                    Write&& write) {
  static const VirtioNetHdr kPlain{};
  size_t i = 0;
  while (i < packets.size()) {
    size_t run = offload_detail::mergeableRun(packets, i);
    if (run == 1) {
      write(kPlain, packets[i].data, packets[i].length);
    } else {
      offload_detail::buildMerged(packets, i, run, scratch);
      VirtioNetHdr h;
      std::memcpy(&h, scratch.data(), sizeof h);
      write(h, scratch.data() + sizeof h, scratch.size() - sizeof h);
    }
    i += run;
  }
}

}  // namespace strait::tunnel
