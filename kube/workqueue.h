#pragma once
// A rate-limited work queue of string keys (client-go's workqueue.TypedRateLimitingInterface)
// for controllers built on Informers:
//  - a key waiting in the queue is queued once however often it is added (dirty set);
//  - a key handed out by get() is not handed out again until done(key): an add while it is
//    processed marks it dirty and it is queued again at done() (processing set), so two
//    workers never hold the same key;
//  - addRateLimited() delays by the worse of a per-key exponential backoff (base * 2^n,
//    capped) and an overall token bucket; forget() resets the key's backoff;
//  - addAfter() delays a key (requeue-after); the earliest pending time wins;
//  - after shutDown() adds are ignored, keys already queued are still handed out, and get()
//    returns nullopt once none is left; shutDownWithDrain() also waits until the queue is
//    empty and every key handed out is done().
//
// Thread-safe. No background thread: delayed keys become ready inside get(). Of the idle
// threads blocked in get(), one at most sleeps until the earliest delayed key is due; the
// others sleep until a key is added, and one add wakes one of them: a pool of idle workers
// costs one wake-up per key, not one per worker. The clock is injectable for tests.

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "base/thread_annotations.h"
#include "kube/rate_limiter.h"

namespace strait::kube {

struct WorkQueueOptions {
  std::chrono::milliseconds baseDelay{5};      // first per-key retry delay
  std::chrono::milliseconds maxDelay{1000000};  // per-key cap (client-go: 1000 s)
  double qps = 10;                             // overall bucket (client-go: 10 qps,
  int burst = 100;                             // burst 100); qps <= 0 disables it
  std::function<std::chrono::steady_clock::time_point()> clock;  // default steady_clock
};

class WorkQueue {
 public:
  explicit WorkQueue(WorkQueueOptions opts = {});
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `key` unless it is already waiting (or, while processed, marks it to be queued
  // again at done()). Ignored after shutdown.
  void add(const std::string& key);
  // add() after `delay` (zero or negative: now). A key already waiting for a later time is
  // moved earlier; an earlier one is kept.
  void addAfter(const std::string& key, std::chrono::nanoseconds delay);
  // addAfter(key, when(key)): per-key exponential backoff combined with the token bucket.
  void addRateLimited(const std::string& key);
  // The delay addRateLimited would use now (and counts it as a requeue).
  std::chrono::nanoseconds when(const std::string& key);
  // Resets the key's backoff (call when it was processed successfully).
  void forget(const std::string& key);
  // How many times the key was rate-limited since the last forget().
  int numRequeues(const std::string& key) const;

  // Blocks until a key is ready or the queue shuts down (nullopt). The caller owns the key
  // until done(key).
  std::optional<std::string> get();
  // Marks the key processed; requeues it if it was added meanwhile.
  void done(const std::string& key);

  // Keys ready to be handed out (not counting delayed or processing ones).
  size_t len() const;
  // Keys waiting, delayed or being processed, each counted once (tests: wait until idle).
  size_t pending() const;
  // How many times a thread blocked in get() woke up (tests: idle workers are not woken
  // for nothing).
  uint64_t wakeups() const;
  // Stops accepting keys (delayed ones are dropped); get() returns nullopt once the queue
  // is empty. Idempotent.
  void shutDown();
  // shutDown(), then waits until the queue is empty and every key is done(). Workers must
  // keep calling get()/done() meanwhile. Idempotent.
  void shutDownWithDrain();
  bool shuttingDown() const;

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  TimePoint now() const { return opts_.clock ? opts_.clock() : std::chrono::steady_clock::now(); }
  // Queues `key` (see add()); `wake`: wakes a get() for it.
  void addLocked(const std::string& key, bool wake = true) REQUIRES(mu_);
  // Queues the delayed keys due at `now`, waking no one (the caller takes one and wakes
  // others for the rest).
  void promoteDelayedLocked(TimePoint now) REQUIRES(mu_);
  // Wakes one thread blocked in get() for a key just queued: an idle one not notified yet,
  // else the timer.
  void wakeOneLocked() REQUIRES(mu_);
  // Wakes an idle get() not notified yet; false when there is none.
  bool wakeIdleLocked() REQUIRES(mu_);

  const WorkQueueOptions opts_;
  TokenBucket bucket_;

  mutable base::Mutex mu_;
  std::condition_variable_any cv_;       // idle get()s: a key was queued, or shutdown
  std::condition_variable_any timerCv_;  // the get() sleeping until the earliest delayed key
  std::condition_variable_any drainCv_;  // shutDownWithDrain(): the queue may be drained
  int idle_ GUARDED_BY(mu_) = 0;         // get()s blocked on cv_
  int signaled_ GUARDED_BY(mu_) = 0;     // of them, notified and not yet awake
  bool timerArmed_ GUARDED_BY(mu_) = false;  // a get() is blocked on timerCv_
  TimePoint timerAt_ GUARDED_BY(mu_);        // ... until then
  uint64_t wakeups_ GUARDED_BY(mu_) = 0;
  std::deque<std::string> queue_ GUARDED_BY(mu_);
  std::set<std::string> dirty_ GUARDED_BY(mu_);
  std::set<std::string> processing_ GUARDED_BY(mu_);
  std::multimap<TimePoint, std::string> delayed_ GUARDED_BY(mu_);
  std::map<std::string, TimePoint> delayedAt_ GUARDED_BY(mu_);
  std::map<std::string, int> failures_ GUARDED_BY(mu_);
  bool shuttingDown_ GUARDED_BY(mu_) = false;
};

}  // namespace strait::kube
