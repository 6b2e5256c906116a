#include "minicluster/store_watch.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace strait::minicluster {

bool WatcherQueue::push(const EventPtr& ev, bool* wake) {
  base::MutexLock lk(mu_);
  if (stopped_ || ended_) return false;
  if (queue_.size() >= limit_) {
    ended_ = true;
    queue_.clear();
    ready_.notify_all();
    spdlog::warn("watch ended reason=queue_full prefix={} limit={} rv={}", prefix_, limit_, ev->rv);
    return false;
  }
  queue_.push_back(ev);
  // The reader only ever waits on an empty queue. It checks the queue and starts waiting
  // under mu_, so a notify after mu_ is released still finds it waiting.
  if (queue_.size() == 1) {
    if (wake) {
      *wake = true;
    } else {
      ready_.notify_one();
    }
  }
  return true;
}

void WatcherQueue::wake() { ready_.notify_one(); }

std::optional<EventPtr> WatcherQueue::next(std::chrono::milliseconds timeout) {
  base::UniqueLock lk(mu_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (queue_.empty() && !stopped_ && !ended_) {
    if (ready_.wait_until(lk, deadline) == std::cv_status::timeout) break;
  }
  if (queue_.empty() || stopped_ || ended_) return std::nullopt;
  EventPtr ev = std::move(queue_.front());
  queue_.pop_front();
  return ev;
}

bool WatcherQueue::ended() const {
  base::MutexLock lk(mu_);
  return ended_;
}

void WatcherQueue::finish(bool endByStore) {
  base::MutexLock lk(mu_);
  if (endByStore) {
    ended_ = true;
  } else {
    stopped_ = true;
  }
  queue_.clear();
  ready_.notify_all();
}

void WatchHub::add(std::shared_ptr<WatcherQueue> w) {
  base::MutexLock lk(mu_);
  watchers_.push_back(std::move(w));
}

void WatchHub::remove(const WatcherQueue* w) {
  base::MutexLock lk(mu_);
  auto it =
      std::find_if(watchers_.begin(), watchers_.end(), [&](const auto& p) { return p.get() == w; });
  if (it != watchers_.end()) {
    std::swap(*it, watchers_.back());
    watchers_.pop_back();
  }
}

void WatchHub::publish(const std::string& key, const EventPtr& ev,
                       std::vector<std::shared_ptr<WatcherQueue>>& toWake) {
  base::MutexLock lk(mu_);
  for (size_t i = 0; i < watchers_.size();) {
    WatcherQueue& w = *watchers_[i];
    if (ev->rv > w.afterRv() && key.starts_with(w.prefix())) {
      bool wake = false;
      if (!w.push(ev, &wake)) {
        // Ended or stopped: drop it from the fan-out list (order of watchers is irrelevant).
        std::swap(watchers_[i], watchers_.back());
        watchers_.pop_back();
        continue;
      }
      if (wake) toWake.push_back(watchers_[i]);
    }
    ++i;
  }
}

void WatchHub::endAll() {
  base::MutexLock lk(mu_);
  for (auto& w : watchers_) w->finish(/*endByStore=*/true);
  watchers_.clear();
}

HubWatch::~HubWatch() {
  q_->finish(/*endByStore=*/false);
  hub_->remove(q_.get());
}

std::optional<EventPtr> HubWatch::next(std::chrono::milliseconds timeout) {
  return q_->next(timeout);
}

bool HubWatch::ended() const { return q_->ended(); }

void HubWatch::stop() { q_->finish(/*endByStore=*/false); }

}  // namespace strait::minicluster
