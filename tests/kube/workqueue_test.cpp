#include "kube/workqueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace strait::kube {
namespace {

using namespace std::chrono_literals;

TEST(WorkQueue, DeduplicatesWaitingKeys) {
  WorkQueue q;
  q.add("a");
  q.add("b");
  q.add("a");
  EXPECT_EQ(q.len(), 2u);
  EXPECT_EQ(*q.get(), "a");
  EXPECT_EQ(*q.get(), "b");
  EXPECT_EQ(q.len(), 0u);
}

TEST(WorkQueue, KeyAddedWhileProcessingIsRequeuedAtDone) {
  WorkQueue q;
  q.add("a");
  auto k = q.get();
  ASSERT_EQ(*k, "a");
  q.add("a");  // while processing: not handed out to a second worker
  EXPECT_EQ(q.len(), 0u);
  q.add("a");
  q.done("a");
  EXPECT_EQ(q.len(), 1u);  // once, however often it was added
  EXPECT_EQ(*q.get(), "a");
}

TEST(WorkQueue, NoKeyIsProcessedByTwoWorkersAtOnce) {
  WorkQueue q;
  std::mutex mu;
  std::map<std::string, int> active;
  std::atomic<int> processed{0};
  std::atomic<bool> overlap{false};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto k = q.get()) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (++active[*k] > 1) overlap = true;
        }
        std::this_thread::yield();
        {
          std::lock_guard<std::mutex> lock(mu);
          --active[*k];
        }
        ++processed;
        q.done(*k);
      }
    });
  }
  for (int i = 0; i < 20000; ++i) q.add("k" + std::to_string(i % 7));
  q.shutDownWithDrain();
  for (auto& t : workers) t.join();
  EXPECT_FALSE(overlap);
  EXPECT_GE(processed.load(), 7);
  EXPECT_EQ(q.len(), 0u);
}

TEST(WorkQueue, PerItemExponentialBackoffAndForget) {
  WorkQueueOptions o;
  o.baseDelay = 5ms;
  o.maxDelay = 1000ms;
  o.qps = 0;  // bucket off: per-item delays only
  WorkQueue q(o);
  EXPECT_EQ(q.when("a"), 5ms);
  EXPECT_EQ(q.when("a"), 10ms);
  EXPECT_EQ(q.when("a"), 20ms);
  EXPECT_EQ(q.when("b"), 5ms);
  EXPECT_EQ(q.numRequeues("a"), 3);
  for (int i = 0; i < 20; ++i) (void)q.when("a");
  EXPECT_EQ(q.when("a"), 1000ms);  // capped
  q.forget("a");
  EXPECT_EQ(q.numRequeues("a"), 0);
  EXPECT_EQ(q.when("a"), 5ms);
}

TEST(WorkQueue, OverallBucketLimitsDistinctKeys) {
  auto t = std::make_shared<std::chrono::steady_clock::time_point>();
  WorkQueueOptions o;
  o.baseDelay = 1ms;
  o.qps = 10;
  o.burst = 2;
  o.clock = [t] { return *t; };
  WorkQueue q(o);
  EXPECT_EQ(q.when("a"), 1ms);
  EXPECT_EQ(q.when("b"), 1ms);
  EXPECT_EQ(q.when("c"), 100ms);  // the bucket is empty: 1/qps
  EXPECT_EQ(q.when("d"), 200ms);
}

TEST(WorkQueue, AddAfterWithInjectedClock) {
  auto t = std::make_shared<std::atomic<int64_t>>(0);  // fake time in seconds
  WorkQueueOptions o;
  o.clock = [t] { return std::chrono::steady_clock::time_point(std::chrono::seconds(t->load())); };
  WorkQueue q(o);
  q.addAfter("late", 10s);
  q.addAfter("late", 20s);  // later time: ignored
  q.addAfter("soon", 1s);
  std::atomic<bool> got{false};
  std::string first;
  std::thread waiter([&] {
    first = *q.get();
    got = true;
  });
  std::this_thread::sleep_for(20ms);  // let the waiter block; it must not return yet
  EXPECT_FALSE(got);
  *t += 2;
  waiter.join();
  EXPECT_EQ(first, "soon");
  *t += 9;
  EXPECT_EQ(*q.get(), "late");
}

TEST(WorkQueue, ShutdownWakesWaitersAndIgnoresAdds) {
  WorkQueue q;
  std::thread waiter([&] { EXPECT_FALSE(q.get().has_value()); });
  q.shutDown();
  waiter.join();
  q.add("x");
  EXPECT_EQ(q.len(), 0u);
  EXPECT_TRUE(q.shuttingDown());
}

TEST(WorkQueue, ShutDownWithDrainWaitsForProcessing) {
  WorkQueue q;
  q.add("a");
  auto k = q.get();
  std::atomic<bool> drained{false};
  std::thread drainer([&] {
    q.shutDownWithDrain();
    drained = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(drained);  // "a" is still being processed
  q.done(*k);
  drainer.join();
  EXPECT_TRUE(drained);
  EXPECT_FALSE(q.get().has_value());
}

// Idle workers blocked in get() while `run` is true; each key taken is recorded and done().
class IdleWorkers {
 public:
  IdleWorkers(WorkQueue& q, int n, std::chrono::milliseconds hold = 0ms) : q_(q) {
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back([this, hold] {
        while (auto k = q_.get()) {
          {
            std::lock_guard<std::mutex> l(mu_);
            taken_.emplace_back(*k, std::chrono::steady_clock::now());
          }
          cv_.notify_all();
          if (*k == "hold") std::this_thread::sleep_for(hold);
          q_.done(*k);
        }
      });
    }
  }
  ~IdleWorkers() {
    q_.shutDown();
    for (auto& t : threads_) t.join();
  }
  // When `key` was taken (waits up to 5 s); nullopt if it was not.
  std::optional<std::chrono::steady_clock::time_point> waitTaken(const std::string& key) {
    std::unique_lock<std::mutex> l(mu_);
    std::optional<std::chrono::steady_clock::time_point> at;
    cv_.wait_for(l, 5s, [&] {
      for (const auto& [k, t] : taken_) {
        if (k == key) at = t;
      }
      return at.has_value();
    });
    return at;
  }

 private:
  WorkQueue& q_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> taken_;
  std::vector<std::thread> threads_;
};

TEST(WorkQueue, ADelayedKeyWakesOneIdleWorkerNotAll) {
  WorkQueue q;
  IdleWorkers workers(q, 8);
  std::this_thread::sleep_for(50ms);  // all eight block in get()
  const uint64_t before = q.wakeups();
  q.addAfter("k", 50ms);
  ASSERT_TRUE(workers.waitTaken("k"));
  std::this_thread::sleep_for(100ms);
  // One worker sleeps until the key is due and takes it; at most one more takes over that
  // role on the way. Waking every idle worker for each delayed key cost 8 to 16 here.
  EXPECT_LE(q.wakeups() - before, 3u);
  q.add("now");
  ASSERT_TRUE(workers.waitTaken("now"));
  std::this_thread::sleep_for(50ms);
  EXPECT_LE(q.wakeups() - before, 4u);  // an add wakes one worker
}

TEST(WorkQueue, TheNextDelayedKeyIsHandedOutWhileTheWorkerThatSleptForTheFirstIsBusy) {
  WorkQueue q;
  IdleWorkers workers(q, 3, 2000ms);
  std::this_thread::sleep_for(50ms);
  const auto t0 = std::chrono::steady_clock::now();
  q.addAfter("hold", 30ms);  // its worker then stays busy for 2 s
  q.addAfter("next", 150ms);
  auto next = workers.waitTaken("next");
  ASSERT_TRUE(next);
  EXPECT_GE(*next - t0, 140ms);
  EXPECT_LT(*next - t0, 1000ms);
}

TEST(WorkQueue, AnEarlierDelayedKeyOrAnAddWakesTheWorkerSleepingForALaterOne) {
  WorkQueue q;
  IdleWorkers workers(q, 1);
  std::this_thread::sleep_for(20ms);
  const auto t0 = std::chrono::steady_clock::now();
  q.addAfter("late", 10s);
  std::this_thread::sleep_for(20ms);  // the only worker sleeps until "late" is due
  q.addAfter("soon", 50ms);
  auto soon = workers.waitTaken("soon");
  ASSERT_TRUE(soon);
  EXPECT_LT(*soon - t0, 2000ms);
  std::this_thread::sleep_for(20ms);
  const auto t1 = std::chrono::steady_clock::now();
  q.add("now");
  auto now = workers.waitTaken("now");
  ASSERT_TRUE(now);
  EXPECT_LT(*now - t1, 2000ms);
}

TEST(WorkQueue, AnAddWakesAnIdleWorkerWhileAnotherSleepsForADelayedKey) {
  WorkQueue q;
  IdleWorkers workers(q, 4);
  std::this_thread::sleep_for(20ms);
  q.addAfter("late", 10s);
  std::this_thread::sleep_for(20ms);
  for (int i = 0; i < 20; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    q.add("k" + std::to_string(i));
    auto at = workers.waitTaken("k" + std::to_string(i));
    ASSERT_TRUE(at);
    EXPECT_LT(*at - t0, 2000ms);
  }
}

}  // namespace
}  // namespace strait::kube
