#include "kube/rate_limiter.h"

#include <gtest/gtest.h>

namespace strait::kube {
namespace {

using namespace std::chrono_literals;

class FakeClock {
 public:
  std::chrono::steady_clock::time_point now() const { return t_; }
  void advance(std::chrono::nanoseconds d) { t_ += d; }
  TokenBucket::Clock fn() {
    return [this] { return now(); };
  }

 private:
  std::chrono::steady_clock::time_point t_{};
};

TEST(TokenBucket, BurstThenQps) {
  FakeClock clock;
  TokenBucket b(10, 3, clock.fn());
  EXPECT_TRUE(b.tryAccept());
  EXPECT_TRUE(b.tryAccept());
  EXPECT_TRUE(b.tryAccept());
  EXPECT_FALSE(b.tryAccept());
  clock.advance(100ms);  // one token at 10 qps
  EXPECT_TRUE(b.tryAccept());
  EXPECT_FALSE(b.tryAccept());
  clock.advance(10s);  // refills to burst, not beyond
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(b.tryAccept());
  EXPECT_FALSE(b.tryAccept());
}

TEST(TokenBucket, ReservationsQueue) {
  FakeClock clock;
  TokenBucket b(4, 1, clock.fn());
  EXPECT_EQ(b.reserve(), 0ns);
  EXPECT_EQ(b.reserve(), 250ms);
  EXPECT_EQ(b.reserve(), 500ms);
  clock.advance(500ms);
  EXPECT_EQ(b.reserve(), 250ms);
}

TEST(TokenBucket, ZeroQpsIsUnlimited) {
  TokenBucket b(0, 1);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(b.tryAccept());
  EXPECT_EQ(b.reserve(), 0ns);
}

}  // namespace
}  // namespace strait::kube
