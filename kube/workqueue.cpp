#include "kube/workqueue.h"

#include <algorithm>
#include <cmath>

namespace strait::kube {

using namespace std::chrono_literals;

WorkQueue::WorkQueue(WorkQueueOptions opts)
    : opts_(std::move(opts)),
      bucket_(opts_.qps, opts_.burst,
              opts_.clock ? TokenBucket::Clock(opts_.clock) : TokenBucket::Clock()) {}

bool WorkQueue::wakeIdleLocked() {
  if (idle_ <= signaled_) return false;
  ++signaled_;
  cv_.notify_one();
  return true;
}

void WorkQueue::wakeOneLocked() {
  if (!wakeIdleLocked() && timerArmed_) timerCv_.notify_one();
}

void WorkQueue::addLocked(const std::string& key, bool wake) {
  if (shuttingDown_ || dirty_.count(key)) return;
  dirty_.insert(key);
  if (processing_.count(key)) return;  // queued again at done()
  queue_.push_back(key);
  if (wake) wakeOneLocked();
}

void WorkQueue::add(const std::string& key) {
  base::MutexLock lock(mu_);
  addLocked(key);
}

void WorkQueue::addAfter(const std::string& key, std::chrono::nanoseconds delay) {
  base::MutexLock lock(mu_);
  if (shuttingDown_) return;
  if (delay <= 0ns) {
    addLocked(key);
    return;
  }
  TimePoint at = now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay);
  auto it = delayedAt_.find(key);
  if (it != delayedAt_.end()) {
    if (it->second <= at) return;
    auto range = delayed_.equal_range(it->second);
    for (auto d = range.first; d != range.second; ++d) {
      if (d->second == key) {
        delayed_.erase(d);
        break;
      }
    }
  }
  delayed_.emplace(at, key);
  delayedAt_[key] = at;
  // The get() sleeping until a later key must wake earlier; with none sleeping so, an idle
  // one takes that role (busy workers look at the delayed keys when they come back).
  if (timerArmed_) {
    if (at < timerAt_) timerCv_.notify_one();
  } else {
    wakeIdleLocked();
  }
}

std::chrono::nanoseconds WorkQueue::when(const std::string& key) {
  int n;
  {
    base::MutexLock lock(mu_);
    n = failures_[key]++;
  }
  double perItem = static_cast<double>(std::chrono::nanoseconds(opts_.baseDelay).count()) *
                   std::pow(2.0, std::min(n, 62));
  double cap = static_cast<double>(std::chrono::nanoseconds(opts_.maxDelay).count());
  auto itemDelay = std::chrono::nanoseconds(static_cast<int64_t>(std::min(perItem, cap)));
  return std::max(itemDelay, bucket_.reserve());
}

void WorkQueue::addRateLimited(const std::string& key) { addAfter(key, when(key)); }

void WorkQueue::forget(const std::string& key) {
  base::MutexLock lock(mu_);
  failures_.erase(key);
}

int WorkQueue::numRequeues(const std::string& key) const {
  base::MutexLock lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::promoteDelayedLocked(TimePoint t) {
  while (!delayed_.empty() && delayed_.begin()->first <= t) {
    std::string key = delayed_.begin()->second;
    delayed_.erase(delayed_.begin());
    delayedAt_.erase(key);
    addLocked(key, false);
  }
}

std::optional<std::string> WorkQueue::get() {
  base::UniqueLock lock(mu_);
  for (;;) {
    if (!shuttingDown_) promoteDelayedLocked(now());
    if (!queue_.empty()) break;  // keys queued before a shutdown are still handed out
    if (shuttingDown_) return std::nullopt;
    if (!delayed_.empty() && opts_.clock) {
      // An injected clock does not advance with real time: poll briefly.
      ++idle_;
      cv_.wait_for(lock, 1ms);
      --idle_;
      if (signaled_ > 0) --signaled_;
    } else if (!delayed_.empty() && !timerArmed_) {
      // The one get() that sleeps until the earliest delayed key is due.
      timerArmed_ = true;
      timerAt_ = delayed_.begin()->first;
      timerCv_.wait_until(lock, timerAt_);
      timerArmed_ = false;
    } else {
      ++idle_;
      cv_.wait(lock);
      --idle_;
      if (signaled_ > 0) --signaled_;
    }
    ++wakeups_;
  }
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  dirty_.erase(key);
  processing_.insert(key);
  // What this thread leaves behind: keys nobody was woken for yet (e.g. several delayed
  // ones due at once), and the timer role it may have held.
  while (queue_.size() > static_cast<size_t>(signaled_) && wakeIdleLocked()) {
  }
  if (!delayed_.empty() && !timerArmed_ && !opts_.clock) wakeIdleLocked();
  return key;
}

void WorkQueue::done(const std::string& key) {
  base::MutexLock lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key)) {
    queue_.push_back(key);
    wakeOneLocked();
  }
  if (processing_.empty() && queue_.empty()) drainCv_.notify_all();
}

size_t WorkQueue::len() const {
  base::MutexLock lock(mu_);
  return queue_.size();
}

uint64_t WorkQueue::wakeups() const {
  base::MutexLock lock(mu_);
  return wakeups_;
}

size_t WorkQueue::pending() const {
  base::MutexLock lock(mu_);
  std::set<std::string> all = dirty_;
  all.insert(processing_.begin(), processing_.end());
  for (const auto& [key, at] : delayedAt_) all.insert(key);
  return all.size();
}

void WorkQueue::shutDown() {
  base::MutexLock lock(mu_);
  shuttingDown_ = true;
  cv_.notify_all();
  timerCv_.notify_all();
}

void WorkQueue::shutDownWithDrain() {
  base::UniqueLock lock(mu_);
  shuttingDown_ = true;  // no new work is handed out or accepted
  cv_.notify_all();
  timerCv_.notify_all();
  while (!(processing_.empty() && queue_.empty())) drainCv_.wait(lock);
}

bool WorkQueue::shuttingDown() const {
  base::MutexLock lock(mu_);
  return shuttingDown_;
}

}  // namespace strait::kube
