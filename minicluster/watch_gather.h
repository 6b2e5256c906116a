#pragma once
// Draining a store watch from an in-process loop (the controllers, the scheduler, the
// simulated kubelets, the informers; private to minicluster/).

#include <chrono>
#include <optional>
#include <thread>

#include "minicluster/store.h"

namespace strait::minicluster {

// How long a loop lets a burst of events gather after it was woken by one.
inline constexpr std::chrono::milliseconds kWatchGather{2};

// The next event of `w`: one already queued is returned at once; otherwise waits up to
// `timeout`, and when an event came, sleeps `gather` before returning it, so that the events
// right behind it are drained (next(0ms)) in the same wake-up. Every write wakes each idle
// watcher of its key; without the gather a loop pays a context switch per event during a
// burst. Nullopt as Watch::next. Blocks; call from the loop's own thread.
inline std::optional<EventPtr> nextGathered(Watch& w, std::chrono::milliseconds timeout,
                                            std::chrono::milliseconds gather = kWatchGather) {
  if (auto ev = w.next(std::chrono::milliseconds(0))) return ev;
  auto ev = w.next(timeout);
  if (ev && gather.count() > 0) std::this_thread::sleep_for(gather);
  return ev;
}

}  // namespace strait::minicluster
