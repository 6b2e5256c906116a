// WorkerPool: dedup, no concurrent processing of one key, retry with backoff, addAfter.
#include "kube/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

namespace strait::kube {
namespace {

using namespace std::chrono_literals;

bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds deadline = 10s) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return cond();
}

TEST(WorkerPoolTest, DeduplicatesWaitingKeys) {
  std::mutex mu;
  std::map<std::string, int> calls;
  std::atomic<bool> gate{false};
  WorkerPoolOptions o;
  o.workers = 1;
  WorkerPool q(o, [&](const std::string& k) {
    while (k == "block" && !gate) std::this_thread::sleep_for(1ms);
    std::lock_guard l(mu);
    ++calls[k];
    return Status::OK();
  });
  q.start();
  q.add("block");
  ASSERT_TRUE(eventually([&] { return q.pending() == 1; }));
  for (int i = 0; i < 10; ++i) q.add("a");
  gate = true;
  ASSERT_TRUE(eventually([&] { return q.pending() == 0; }));
  std::lock_guard l(mu);
  EXPECT_EQ(calls["a"], 1);
  EXPECT_EQ(calls["block"], 1);
}

TEST(WorkerPoolTest, KeyAddedWhileProcessingRunsAgainButNeverConcurrently) {
  std::atomic<int> running{0}, maxRunning{0}, calls{0};
  std::atomic<bool> inside{false}, release{false};
  WorkerPoolOptions o;
  o.workers = 4;
  WorkerPool q(o, [&](const std::string&) {
    int r = ++running;
    maxRunning = std::max(maxRunning.load(), r);
    inside = true;
    if (calls == 0) {
      while (!release) std::this_thread::sleep_for(1ms);
    }
    ++calls;
    --running;
    return Status::OK();
  });
  q.start();
  q.add("k");
  ASSERT_TRUE(eventually([&] { return inside.load(); }));
  q.add("k");
  q.add("k");
  release = true;
  ASSERT_TRUE(eventually([&] { return calls == 2 && q.pending() == 0; }));
  EXPECT_EQ(maxRunning, 1);
}

TEST(WorkerPoolTest, FailuresRetryWithBackoffUntilSuccess) {
  std::atomic<int> calls{0};
  WorkerPoolOptions o;
  o.queue.baseDelay = 1ms;
  WorkerPool q(o, [&](const std::string&) -> Status {
    if (++calls < 4) return makeError(Code::Conflict, "try again");
    return Status::OK();
  });
  q.start();
  q.add("k");
  ASSERT_TRUE(eventually([&] { return calls == 4 && q.pending() == 0; }));
}

TEST(WorkerPoolTest, AddAfterDelaysAndStopDropsWork) {
  std::atomic<int> calls{0};
  WorkerPool q(WorkerPoolOptions{}, [&](const std::string&) {
    ++calls;
    return Status::OK();
  });
  q.start();
  auto t0 = std::chrono::steady_clock::now();
  q.addAfter("k", 50ms);
  EXPECT_EQ(q.pending(), 1u);
  ASSERT_TRUE(eventually([&] { return calls == 1; }));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 50ms);
  q.addAfter("late", 1h);
  q.stop();
  EXPECT_EQ(calls, 1);
  q.add("after-stop");
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace strait::kube
