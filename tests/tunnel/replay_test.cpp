// The 8192-bit replay window.
#include "tunnel/replay.h"

#include <gtest/gtest.h>

#include "tunnel/messages.h"

namespace strait::tunnel {
namespace {

constexpr uint64_t kLimit = kRejectAfterMessages;

TEST(Replay, AcceptsOnceInAnyOrder) {
  ReplayFilter f;
  EXPECT_TRUE(f.validate(0, kLimit));
  EXPECT_FALSE(f.validate(0, kLimit));
  EXPECT_TRUE(f.validate(2, kLimit));
  EXPECT_TRUE(f.validate(1, kLimit));
  EXPECT_FALSE(f.validate(1, kLimit));
  EXPECT_FALSE(f.validate(2, kLimit));
}

TEST(Replay, WindowIs8128Behind) {
  ReplayFilter f;
  const uint64_t head = 20000;
  EXPECT_TRUE(f.validate(head, kLimit));
  EXPECT_TRUE(f.validate(head - ReplayFilter::kWindowSize, kLimit)) << "oldest in window";
  EXPECT_FALSE(f.validate(head - ReplayFilter::kWindowSize - 1, kLimit)) << "just outside";
  EXPECT_FALSE(f.validate(head - ReplayFilter::kWindowSize, kLimit)) << "now a duplicate";
  for (uint64_t c = head - 100; c < head; ++c) EXPECT_TRUE(f.validate(c, kLimit));
}

TEST(Replay, BigJumpClearsTheRing) {
  ReplayFilter f;
  for (uint64_t c = 0; c < 9000; ++c) ASSERT_TRUE(f.validate(c, kLimit));
  const uint64_t far = 1'000'000;
  EXPECT_TRUE(f.validate(far, kLimit));
  // Counters behind the new head but inside the window were never seen: accepted once.
  EXPECT_TRUE(f.validate(far - 64, kLimit));
  EXPECT_TRUE(f.validate(far - 8000, kLimit));
  EXPECT_FALSE(f.validate(far - 8000, kLimit));
  EXPECT_FALSE(f.validate(8999, kLimit)) << "far behind the window";
}

TEST(Replay, EveryCounterOfALongInOrderRun) {
  ReplayFilter f;
  for (uint64_t c = 0; c < 100000; ++c) ASSERT_TRUE(f.validate(c, kLimit)) << c;
  for (uint64_t c = 100000 - 8000; c < 100000; ++c) ASSERT_FALSE(f.validate(c, kLimit)) << c;
}

TEST(Replay, LimitRefused) {
  ReplayFilter f;
  EXPECT_FALSE(f.validate(kLimit, kLimit));
  EXPECT_TRUE(f.validate(kLimit - 1, kLimit));
  f.reset();
  EXPECT_TRUE(f.validate(5, kLimit));
}

}  // namespace
}  // namespace strait::tunnel
