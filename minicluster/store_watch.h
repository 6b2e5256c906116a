#pragma once
// Watch fan-out of the minicluster store (private to minicluster/).
//
// Every event is one shared EventPtr; publishing pushes that pointer onto the queue of each
// watcher whose prefix matches (no copy of the object per watcher). Each watcher has its
// own mutex and condition variable, so a slow reader never holds up a writer for longer
// than a push; a watcher whose queue would exceed its limit is ended and dropped.
//
// Locking: the store calls publish() and add() while holding its own lock (exclusive for
// publish, at least shared for add), which orders history replay against live events. The
// hub's mutex is taken after the store's; a watcher's mutex after the hub's. publish() only
// queues: the readers it must wake are handed back and woken (wake()) after the store's lock
// is released, so a woken reader never preempts a writer that holds it.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/thread_annotations.h"
#include "minicluster/store.h"

namespace strait::minicluster {

// One watcher's queue. Thread-safe: pushed to by writers, read by the watch's owner.
class WatcherQueue {
 public:
  WatcherQueue(std::string prefix, uint64_t afterRv, size_t limit)
      : prefix_(std::move(prefix)), afterRv_(afterRv), limit_(limit) {}

  const std::string& prefix() const { return prefix_; }
  uint64_t afterRv() const { return afterRv_; }

  // Queues an event; ends the watcher if that would exceed the limit. Returns false when the
  // watcher no longer takes events (ended or stopped). `*wake` (if given) is set when the
  // reader may be waiting for this event: the caller must then call wake(); without `wake`
  // the reader is woken here.
  bool push(const EventPtr& ev, bool* wake = nullptr);
  // Wakes a reader waiting in next() (after a push that asked for it). Any thread, no lock.
  void wake();
  std::optional<EventPtr> next(std::chrono::milliseconds timeout);
  bool ended() const;
  // Stops by the owner (stop()) or by the store (endByStore = true, e.g. store destroyed).
  void finish(bool endByStore);

 private:
  const std::string prefix_;
  const uint64_t afterRv_;  // only events with rv > afterRv_ are delivered
  const size_t limit_;

  mutable base::Mutex mu_;
  std::condition_variable_any ready_;
  std::deque<EventPtr> queue_ GUARDED_BY(mu_);
  bool stopped_ GUARDED_BY(mu_) = false;
  bool ended_ GUARDED_BY(mu_) = false;
};

// The set of live watchers. Thread-safe.
class WatchHub {
 public:
  void add(std::shared_ptr<WatcherQueue> w);
  void remove(const WatcherQueue* w);
  // Delivers `ev` (whose object has key `key`) to every matching watcher. The watchers whose
  // readers must be woken are appended to `toWake`; call wake() on each once the caller's
  // locks are released.
  void publish(const std::string& key, const EventPtr& ev,
               std::vector<std::shared_ptr<WatcherQueue>>& toWake);
  // Ends every watcher (the store is going away).
  void endAll();

 private:
  base::Mutex mu_;
  std::vector<std::shared_ptr<WatcherQueue>> watchers_ GUARDED_BY(mu_);
};

// The Watch handed to callers: unregisters from the hub when destroyed.
class HubWatch final : public Watch {
 public:
  HubWatch(std::shared_ptr<WatchHub> hub, std::shared_ptr<WatcherQueue> q)
      : hub_(std::move(hub)), q_(std::move(q)) {}
  ~HubWatch() override;
  std::optional<EventPtr> next(std::chrono::milliseconds timeout) override;
  bool ended() const override;
  void stop() override;

 private:
  std::shared_ptr<WatchHub> hub_;
  std::shared_ptr<WatcherQueue> q_;
};

}  // namespace strait::minicluster
