// Giving the agent's freed heap back to the kernel (see agent_memory.h).
#include "cmd/agent_memory.h"

#include <malloc.h>

namespace strait::cmd {

bool releaseFreeHeap() { return malloc_trim(0) != 0; }

bool keepFreedHeapUntilTrimmed() { return mallopt(M_TRIM_THRESHOLD, 256 << 20) == 1; }

bool HeapTrimmer::tick(Clock::time_point now) {
  if (interval_.count() <= 0) return false;
  if (!started_) {
    started_ = true;
    last_ = now;
    return false;
  }
  if (now - last_ < interval_) return false;
  last_ = now;
  releaseFreeHeap();
  return true;
}

}  // namespace strait::cmd
