#pragma once
// Sliding replay window of 8192 bits (RFC 6479 style, as in the kernel and wireguard-go):
// 128 blocks of 64 bits in a ring; 8128 counters behind the newest are tracked.
//
// Not thread-safe: the owner (one keypair's receive path) serialises calls.

#include <array>
#include <cstdint>

namespace strait::tunnel {

class ReplayFilter {
 public:
  static constexpr uint64_t kBlockBits = 64;
  static constexpr uint64_t kRingBlocks = 128;                             // 8192 bits
  static constexpr uint64_t kWindowSize = (kRingBlocks - 1) * kBlockBits;  // 8128

  // Accepts `counter` once: true if it is below `limit`, not older than the window and not
  // seen before (and records it); false otherwise. Call only after the packet's tag verified.
  bool validate(uint64_t counter, uint64_t limit);
  // Forgets everything.
  void reset();

 private:
  uint64_t last_ = 0;
  bool any_ = false;
  std::array<uint64_t, kRingBlocks> ring_{};
};

}  // namespace strait::tunnel
