#include "reflection/reflector.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

namespace strait::reflection {
namespace {

using namespace std::chrono_literals;

// A kind whose outcome per key is scripted; records calls and concurrency per key.
class ScriptedKind : public KindReflector {
 public:
  std::string kind() const override { return "Scripted"; }
  HandleResult handle(const std::string& key) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!inFlight.insert(key).second) overlapped = true;
    }
    std::this_thread::yield();
    HandleResult r = HandleResult::done();
    {
      std::lock_guard<std::mutex> lock(mu);
      inFlight.erase(key);
      int n = ++calls[key];
      if (key.rfind("fail", 0) == 0 && n < 3) {
        r = HandleResult::retry(kube::makeError(kube::Code::Unavailable, "provider unreachable"));
      }
      if (key.rfind("wait", 0) == 0 && n < 2) r = HandleResult::requeueAfter(20ms);
    }
    cv.notify_all();
    return r;
  }
  bool waitCalls(const std::string& key, int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, 20s, [&] { return calls[key] >= n; });
  }
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, int> calls;
  std::set<std::string> inFlight;
  bool overlapped = false;
};

KindOptions fastRetries(int workers) {
  KindOptions o;
  o.workers = workers;
  o.queue.baseDelay = 1ms;
  o.queue.maxDelay = 10ms;
  o.queue.qps = 0;
  return o;
}

TEST(Reflector, HandlesRetriesAndRequeues) {
  auto kind = std::make_unique<ScriptedKind>();
  ScriptedKind* k = kind.get();
  Reflector r;
  ASSERT_TRUE(r.registerKind(std::move(kind), fastRetries(3)).ok());
  r.start();
  ASSERT_TRUE(r.enqueue("Scripted", "ns/ok").ok());
  ASSERT_TRUE(r.enqueue("Scripted", "fail/a").ok());
  ASSERT_TRUE(r.enqueue("Scripted", "wait/b").ok());
  EXPECT_TRUE(k->waitCalls("ns/ok", 1));
  EXPECT_TRUE(k->waitCalls("fail/a", 3));  // two retries then done
  EXPECT_TRUE(k->waitCalls("wait/b", 2));
  r.stop();
  KindCounters c = r.counters("Scripted");
  EXPECT_EQ(c.retries, 2u);
  EXPECT_EQ(c.requeues, 1u);
  EXPECT_EQ(c.handled, 6u);
  EXPECT_EQ(k->calls["ns/ok"], 1);
  EXPECT_EQ(k->calls["fail/a"], 3);
}

TEST(Reflector, OneKeyIsNeverHandledConcurrently) {
  auto kind = std::make_unique<ScriptedKind>();
  ScriptedKind* k = kind.get();
  Reflector r;
  ASSERT_TRUE(r.registerKind(std::move(kind), fastRetries(4)).ok());
  r.start();
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(r.enqueue("Scripted", "k" + std::to_string(i % 5)).ok());
  }
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(k->waitCalls("k" + std::to_string(i), 1));
  r.stop();
  EXPECT_FALSE(k->overlapped);
}

TEST(Reflector, RegistrationErrors) {
  Reflector r;
  ASSERT_TRUE(r.registerKind(std::make_unique<ScriptedKind>()).ok());
  EXPECT_FALSE(r.registerKind(std::make_unique<ScriptedKind>()).ok());
  KindOptions zero;
  zero.workers = 0;
  Reflector r2;
  EXPECT_EQ(r2.registerKind(std::make_unique<ScriptedKind>(), zero).code(), kube::Code::Invalid);
  EXPECT_EQ(r.enqueue("Nope", "x").code(), kube::Code::NotFound);
  r.start();
  EXPECT_FALSE(r.registerKind(std::make_unique<ScriptedKind>()).ok());
  r.stop();
  r.stop();  // idempotent
  EXPECT_TRUE(r.enqueue("Scripted", "after-stop").ok());  // ignored, no crash
}

}  // namespace
}  // namespace strait::reflection
