#pragma once
// Giving the agent's freed heap back to the kernel.
//
// The agent allocates and frees at a high rate on about a hundred threads: every watch event,
// API answer and reflection message is parsed, converted and dropped (heaptrack on a consumer
// agent offloading 2,000 Pods: 184,000 allocations per second, a live heap of 26 MB at its
// peak). glibc's malloc gives each thread an arena and keeps what was freed in it; only the
// top of an arena goes back to the kernel by itself, so free chunks below a live one stay
// resident. With 6,000 offloaded Pods the consumer agent's arenas held 176 MB of which 134 MB
// were free. malloc_trim(0) returns the free pages of every arena (madvise), keeping the
// chunks in place.
//
// glibc also trims by itself: a free() that leaves more than M_TRIM_THRESHOLD at the top of an
// arena returns it at once (madvise), and on a busy agent that is thousands of madvise calls a
// second, each flushing the TLB of every core the process runs on (perf on a provider agent
// offloading 1,000 Pods: 14% of its CPU in those flushes, then page faults when the pages are
// reused). keepFreedHeapUntilTrimmed() raises that threshold so freed memory is returned only
// by the periodic releaseFreeHeap().
//
// HeapTrimmer is driven from one thread (the agent's main loop); releaseFreeHeap() may be
// called from any thread (glibc takes each arena's lock in turn).

#include <chrono>

namespace strait::cmd {

// Returns the free pages of every malloc arena to the kernel. True when glibc released some.
// Does not block on anything but the arenas' locks (each held for one pass over its free
// chunks).
bool releaseFreeHeap();

// Lets free() keep what it frees (up to 256 MiB at the top of an arena) for the next
// allocation instead of returning it to the kernel; call once at start, before the threads, and
// run a HeapTrimmer. True when glibc accepted the setting.
bool keepFreedHeapUntilTrimmed();

class HeapTrimmer {
 public:
  using Clock = std::chrono::steady_clock;
  // `interval` between two releases; zero or negative: never.
  explicit HeapTrimmer(std::chrono::milliseconds interval) : interval_(interval) {}

  // Calls releaseFreeHeap() when `interval` has passed since the last call that did (or since
  // the first tick). True when it was called.
  bool tick(Clock::time_point now);

 private:
  const std::chrono::milliseconds interval_;
  Clock::time_point last_{};
  bool started_ = false;
};

}  // namespace strait::cmd
