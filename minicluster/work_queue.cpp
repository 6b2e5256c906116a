#include "minicluster/work_queue.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace strait::minicluster {

using Clock = std::chrono::steady_clock;

WorkQueue::WorkQueue(WorkQueueOptions opts, Handler handler)
    : opts_(std::move(opts)), handler_(std::move(handler)) {}

WorkQueue::~WorkQueue() { stop(); }

void WorkQueue::start() {
  std::lock_guard<std::mutex> l(mu_);
  if (!threads_.empty()) return;
  stopping_ = false;
  for (int i = 0; i < std::max(1, opts_.workers); ++i) {
    threads_.emplace_back([this] { worker(); });
  }
}

void WorkQueue::stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (auto& t : threads) t.join();
}

void WorkQueue::enqueueLocked(const std::string& key) {
  if (dirty_.count(key)) return;
  dirty_.insert(key);
  if (processing_.count(key)) return;  // queued again when its handler returns
  queue_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::add(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopping_) return;
  enqueueLocked(key);
}

void WorkQueue::addAfter(const std::string& key, std::chrono::milliseconds delay) {
  if (delay.count() <= 0) return add(key);
  std::lock_guard<std::mutex> l(mu_);
  if (stopping_) return;
  auto when = Clock::now() + delay;
  auto it = delayedAt_.find(key);
  if (it != delayedAt_.end()) {
    if (it->second <= when) return;
    auto range = delayed_.equal_range(it->second);
    for (auto d = range.first; d != range.second; ++d) {
      if (d->second == key) {
        delayed_.erase(d);
        break;
      }
    }
  }
  delayedAt_[key] = when;
  delayed_.emplace(when, key);
  cv_.notify_all();  // a worker may need to wake earlier
}

size_t WorkQueue::pending() const {
  std::lock_guard<std::mutex> l(mu_);
  std::set<std::string> all = dirty_;
  all.insert(processing_.begin(), processing_.end());
  for (const auto& [k, t] : delayedAt_) all.insert(k);
  return all.size();
}

void WorkQueue::worker() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stopping_) {
    // Move due delayed keys into the queue.
    auto now = Clock::now();
    while (!delayed_.empty() && delayed_.begin()->first <= now) {
      std::string key = delayed_.begin()->second;
      delayed_.erase(delayed_.begin());
      delayedAt_.erase(key);
      enqueueLocked(key);
    }
    if (head_ == queue_.size()) {
      queue_.clear();
      head_ = 0;
      if (delayed_.empty()) {
        cv_.wait(l);
      } else {
        cv_.wait_until(l, delayed_.begin()->first);
      }
      continue;
    }
    std::string key = std::move(queue_[head_++]);
    dirty_.erase(key);
    processing_.insert(key);
    l.unlock();
    kube::Status s = handler_(key);
    l.lock();
    processing_.erase(key);
    if (s.ok()) {
      failures_.erase(key);
    } else {
      int n = ++failures_[key];
      auto backoff = opts_.baseBackoff * (1LL << std::min(n - 1, 20));
      if (backoff > opts_.maxBackoff) backoff = opts_.maxBackoff;
      spdlog::warn("event=reconcile_failed queue={} key={} attempt={} retry_ms={} error=\"{}\"",
                   opts_.name, key, n, backoff.count(), s.error().message);
      auto when = Clock::now() + backoff;
      if (!delayedAt_.count(key)) {
        delayedAt_[key] = when;
        delayed_.emplace(when, key);
      }
    }
    if (dirty_.count(key)) {
      queue_.push_back(key);
      cv_.notify_one();
    }
  }
}

}  // namespace strait::minicluster
