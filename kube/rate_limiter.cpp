#include "kube/rate_limiter.h"

#include <algorithm>
#include <thread>

namespace strait::kube {

TokenBucket::TokenBucket(double qps, int burst, Clock clock)
    : qps_(qps),
      burst_(std::max(1, burst)),
      clock_(clock ? std::move(clock) : [] { return std::chrono::steady_clock::now(); }),
      tokens_(std::max(1, burst)),
      last_(clock_()) {}

void TokenBucket::refill(std::chrono::steady_clock::time_point now) {
  if (now <= last_) return;
  double secs = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(burst_, tokens_ + secs * qps_);
  last_ = now;
}

bool TokenBucket::tryAccept() {
  if (qps_ <= 0) return true;
  base::MutexLock lock(mu_);
  refill(clock_());
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

std::chrono::nanoseconds TokenBucket::reserve() {
  if (qps_ <= 0) return std::chrono::nanoseconds(0);
  base::MutexLock lock(mu_);
  refill(clock_());
  tokens_ -= 1;
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(static_cast<int64_t>(-tokens_ / qps_ * 1e9));
}

void TokenBucket::accept() {
  auto wait = reserve();
  if (wait.count() > 0) std::this_thread::sleep_for(wait);
}

}  // namespace strait::kube
