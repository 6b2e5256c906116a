#pragma once
// A token bucket (client-go's flowcontrol.NewTokenBucketRateLimiter): `qps` tokens per
// second refill a bucket of `burst`; each request takes one, waiting when the bucket is
// empty. Thread-safe. The clock is injectable so tests need no sleeps.

#include <chrono>
#include <functional>
#include <mutex>

#include "base/thread_annotations.h"

namespace strait::kube {

class TokenBucket {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // qps <= 0 means unlimited. The bucket starts full.
  TokenBucket(double qps, int burst, Clock clock = {});

  // Takes one token now if one is available; returns true if it did.
  bool tryAccept();
  // Reserves one token and returns how long the caller must wait before using it (zero if
  // available now). Never blocks. Reservations queue: each one takes the next token.
  std::chrono::nanoseconds reserve();
  // reserve() then sleeps for the returned time. Blocks.
  void accept();

 private:
  void refill(std::chrono::steady_clock::time_point now) REQUIRES(mu_);

  const double qps_;
  const double burst_;
  Clock clock_;
  base::Mutex mu_;
  double tokens_ GUARDED_BY(mu_);  // may go negative: outstanding reservations
  std::chrono::steady_clock::time_point last_ GUARDED_BY(mu_);
};

}  // namespace strait::kube
