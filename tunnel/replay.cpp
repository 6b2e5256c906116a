#include "tunnel/replay.h"

namespace strait::tunnel {

bool ReplayFilter::validate(uint64_t counter, uint64_t limit) {
  if (counter >= limit) return false;
  uint64_t block = counter / kBlockBits;
  if (!any_ || counter > last_) {
    // Moving forward: clear the blocks between the old head and the new one (at most the
    // whole ring).
    uint64_t current = any_ ? last_ / kBlockBits : 0;
    uint64_t advance = block - current;
    if (!any_) {
      ring_.fill(0);
      advance = 0;
    }
    if (advance > kRingBlocks) advance = kRingBlocks;
    for (uint64_t i = 1; i <= advance; ++i) ring_[(current + i) % kRingBlocks] = 0;
    last_ = counter;
    any_ = true;
  } else if (last_ - counter > kWindowSize) {
    return false;
  }
  uint64_t& word = ring_[block % kRingBlocks];
  uint64_t bit = 1ull << (counter % kBlockBits);
  if (word & bit) return false;
  word |= bit;
  return true;
}

void ReplayFilter::reset() {
  last_ = 0;
  any_ = false;
  ring_.fill(0);
}

}  // namespace strait::tunnel
