#include "reflection/reflector.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

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

// Retries once with `error`, then done.
class ConflictOnceKind : public KindReflector {
 public:
  explicit ConflictOnceKind(kube::Error error) : error_(std::move(error)) {}
  std::string kind() const override { return "ConflictOnce"; }
  HandleResult handle(const std::string&) override {
    std::lock_guard<std::mutex> lock(mu_);
    return ++calls_ == 1 ? HandleResult::retry(error_) : HandleResult::done();
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  kube::Error error_;
  std::mutex mu_;
  int calls_ = 0;
};

// What the reflector logs at info level and above while handling one key that first fails
// with `error`.
std::string logsOfOneRetry(kube::Error error) {
  std::ostringstream out;
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger->set_level(spdlog::level::info);
  spdlog::set_default_logger(logger);
  auto kind = std::make_unique<ConflictOnceKind>(std::move(error));
  ConflictOnceKind* k = kind.get();
  Reflector r;
  EXPECT_TRUE(r.registerKind(std::move(kind), fastRetries(1)).ok());
  r.start();
  EXPECT_TRUE(r.enqueue("ConflictOnce", "ns/a").ok());
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (k->calls() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  r.stop();
  EXPECT_EQ(r.counters("ConflictOnce").retries, 1u);
  spdlog::set_default_logger(previous);
  return out.str();
}

TEST(Reflector, StaleVersionConflictRetriesAreRoutineOthersAreWarnings) {
  // The API server's optimistic-concurrency answer: routine, not a warning.
  std::string stale = logsOfOneRetry(kube::makeError(
      kube::Code::Conflict,
      "Operation cannot be fulfilled on pods \"web-1\": the object has been modified; please "
      "apply your changes to the latest version and try again"));
  EXPECT_EQ(stale.find("reflect_retry"), std::string::npos) << stale;
  // A name owned by someone else is a real conflict, and so is an unreachable provider.
  std::string owner = logsOfOneRetry(kube::makeError(
      kube::Code::Conflict, "Pod web-x/web-1 exists in the provider and is not reflected"));
  EXPECT_NE(owner.find("event=reflect_retry kind=ConflictOnce key=ns/a code=Conflict"),
            std::string::npos)
      << owner;
  std::string down =
      logsOfOneRetry(kube::makeError(kube::Code::Unavailable, "provider unreachable"));
  EXPECT_NE(down.find("reflect_retry"), std::string::npos) << down;
}

}  // namespace
}  // namespace strait::reflection
