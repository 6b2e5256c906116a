// What reflection reports to the process's metrics sink (reflection_metrics.h), recorded by a
// sink installed for each test: the reflector's work items by kind and result and its queue's
// lifetime, the stream client's messages each way by type and size, a dial failure, a broken
// stream and the reconnection after it.
#include "reflection/reflection_metrics.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <thread>

#include "reflection/fake_event_stream.h"
#include "reflection/reflector.h"
#include "reflection/stream_client.h"

namespace strait::reflection {
namespace {

using namespace std::chrono_literals;

class RecordingSink : public ReflectionMetrics {
 public:
  void streamMessage(StreamSide side, StreamDirection direction, std::string_view type,
                     size_t bytes) override {
    std::lock_guard<std::mutex> l(mu);
    const std::string key = std::string(streamSideName(side)) + "/" +
                            streamDirectionName(direction) + "/" + std::string(type);
    messages[key]++;
    this->bytes[key] += bytes;
  }
  void streamError(StreamSide side, StreamError error) override {
    std::lock_guard<std::mutex> l(mu);
    errors[std::string(streamSideName(side)) + "/" + streamErrorName(error)]++;
  }
  void streamReconnected() override {
    std::lock_guard<std::mutex> l(mu);
    reconnects++;
  }
  void workHandled(const std::string& kind, WorkResult result, double seconds) override {
    std::lock_guard<std::mutex> l(mu);
    work[kind + "/" + workResultName(result)]++;
    if (seconds > longest) longest = seconds;
  }
  void queueAdded(const std::string& reflector, const std::string& kind,
                  std::function<size_t()> depth) override {
    std::lock_guard<std::mutex> l(mu);
    queues[reflector + "/" + kind] = std::move(depth);
  }
  void queueRemoved(const std::string& reflector, const std::string& kind) override {
    std::lock_guard<std::mutex> l(mu);
    queues.erase(reflector + "/" + kind);
  }
  void podsAdded(const std::string& node, std::function<size_t()> count) override {
    std::lock_guard<std::mutex> l(mu);
    pods[node] = std::move(count);
  }
  void podsRemoved(const std::string& node) override {
    std::lock_guard<std::mutex> l(mu);
    pods.erase(node);
  }

  template <class T>
  T read(const T& field) {
    std::lock_guard<std::mutex> l(mu);
    return field;
  }

  std::mutex mu;
  std::map<std::string, int> messages;
  std::map<std::string, size_t> bytes;
  std::map<std::string, int> errors;
  int reconnects = 0;
  std::map<std::string, int> work;
  double longest = 0;
  std::map<std::string, std::function<size_t()>> queues;
  std::map<std::string, std::function<size_t()>> pods;
};

bool waitUntil(const std::function<bool()>& cond, std::chrono::milliseconds limit = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return cond();
}

class ReflectionMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override { setReflectionMetrics(sink_); }
  void TearDown() override { setReflectionMetrics(nullptr); }
  std::shared_ptr<RecordingSink> sink_ = std::make_shared<RecordingSink>();
};

// "ok" keys are done at once, "slow" after 30 ms, "again" asks to be requeued once, "fail"
// to be retried once.
class OutcomeKind : public KindReflector {
 public:
  std::string kind() const override { return "Widget"; }
  HandleResult handle(const std::string& key) override {
    std::lock_guard<std::mutex> l(mu_);
    const int n = ++calls_[key];
    if (key == "slow") std::this_thread::sleep_for(30ms);
    if (key == "again" && n == 1) return HandleResult::requeueAfter(1ms);
    if (key == "fail" && n == 1) {
      return HandleResult::retry(kube::makeError(kube::Code::Unavailable, "provider away"));
    }
    return HandleResult::done();
  }

 private:
  std::mutex mu_;
  std::map<std::string, int> calls_;
};

TEST_F(ReflectionMetricsTest, TheReflectorReportsEachWorkItemByResultAndItsQueueWhileRunning) {
  Reflector r("strait-cloud");
  KindOptions o;
  o.queue.baseDelay = 1ms;
  o.queue.maxDelay = 5ms;
  o.queue.qps = 0;
  ASSERT_TRUE(r.registerKind(std::make_unique<OutcomeKind>(), o).ok());
  EXPECT_TRUE(sink_->read(sink_->queues).empty());  // not before start()
  r.start();
  ASSERT_EQ(sink_->read(sink_->queues).count("strait-cloud/Widget"), 1u);
  EXPECT_EQ(sink_->read(sink_->queues).at("strait-cloud/Widget")(), 0u);
  for (const char* key : {"ok", "slow", "again", "fail"})
    ASSERT_TRUE(r.enqueue("Widget", key).ok());
  ASSERT_TRUE(waitUntil([&] {
    auto w = sink_->read(sink_->work);
    return w["Widget/done"] == 4 && w["Widget/requeue"] == 1 && w["Widget/retry"] == 1;
  })) << sink_->read(sink_->work).size();
  EXPECT_GE(sink_->read(sink_->longest), 0.025);  // the slow key's 30 ms, in seconds
  EXPECT_LT(sink_->read(sink_->longest), 10.0);
  r.stop();
  EXPECT_TRUE(sink_->read(sink_->queues).empty());  // removed by stop()
  auto w = sink_->read(sink_->work);
  EXPECT_EQ(w.size(), 3u);
}

TEST_F(ReflectionMetricsTest, MessagesAreCountedByTheirWireTypeAndSizeAndStrangeTypesAsUnknown) {
  v1::ReflectionEvent apply = encodeStreamMessage(
      StreamMessage::apply({{"apiVersion", "v1"},
                            {"kind", "Pod"},
                            {"metadata", {{"name", "web"}, {"namespace", "demo"}}}},
                           "uid-1"));
  countStreamMessage(StreamSide::Consumer, StreamDirection::Sent, apply);
  v1::ReflectionEvent odd;
  odd.set_type("{\"injected\":1}");
  countStreamMessage(StreamSide::Provider, StreamDirection::Received, odd);
  auto m = sink_->read(sink_->messages);
  EXPECT_EQ(m["consumer/sent/APPLY"], 1);
  EXPECT_EQ(sink_->read(sink_->bytes)["consumer/sent/APPLY"], apply.ByteSizeLong());
  EXPECT_GT(apply.ByteSizeLong(), 50u);
  EXPECT_EQ(m["provider/received/UNKNOWN"], 1);
  EXPECT_EQ(m.size(), 2u);

  setReflectionMetrics(nullptr);  // nothing installed: counting is a no-op
  countStreamMessage(StreamSide::Consumer, StreamDirection::Sent, apply);
  countStreamError(StreamSide::Consumer, StreamError::Dial);
  countStreamReconnect();
  EXPECT_EQ(sink_->read(sink_->messages)["consumer/sent/APPLY"], 1);
  EXPECT_TRUE(sink_->read(sink_->errors).empty());
}

TEST_F(ReflectionMetricsTest, TheStreamClientCountsTrafficDialFailuresBreaksAndReconnections) {
  std::mutex mu;
  std::vector<std::unique_ptr<testing::FakeEventStream>> servers;
  std::atomic<int> dials{0};
  StreamClientOptions o;
  o.consumerId = "c0c0c0c0-1111-4222-8333-444455556666";
  o.keepaliveInterval = 50ms;
  o.minBackoff = 1ms;
  o.maxBackoff = 5ms;
  // The first dial is refused; later ones connect and the provider side says SYNCED.
  o.open = [&]() -> kube::Result<std::unique_ptr<peering::EventStream>> {
    if (dials++ == 0) return kube::makeError(kube::Code::Unavailable, "connection refused");
    auto [client, server] = testing::fakePair();
    server->write(encodeStreamMessage(StreamMessage::ofType(StreamMessageType::Synced)));
    std::lock_guard<std::mutex> l(mu);
    servers.push_back(std::move(server));
    return std::unique_ptr<peering::EventStream>(std::move(client));
  };
  StreamClient client(o);
  client.start();
  ASSERT_TRUE(waitUntil([&] { return client.remoteSynced(); }));
  ASSERT_TRUE(waitUntil([&] {
    auto m = sink_->read(sink_->messages);
    return m["consumer/sent/RESYNC_BEGIN"] == 1 && m["consumer/received/SYNCED"] == 1 &&
           m["consumer/sent/KEEPALIVE"] >= 1;
  }));
  EXPECT_EQ(sink_->read(sink_->errors)["consumer/dial"], 1);
  EXPECT_EQ(sink_->read(sink_->reconnects), 0);  // the first stream is no reconnection

  {
    std::lock_guard<std::mutex> l(mu);
    servers.back()->cancel();  // the provider's end breaks
  }
  ASSERT_TRUE(waitUntil([&] { return sink_->read(sink_->reconnects) == 1; }));
  ASSERT_TRUE(waitUntil([&] { return client.remoteSynced(); }));
  EXPECT_EQ(sink_->read(sink_->errors)["consumer/broken"], 1);
  EXPECT_EQ(sink_->read(sink_->messages)["consumer/received/SYNCED"], 2);
  EXPECT_EQ(sink_->read(sink_->messages)["consumer/sent/RESYNC_BEGIN"], 2);
  client.stop();
  EXPECT_EQ(sink_->read(sink_->errors)["consumer/broken"], 1);  // stop() is no error
}

}  // namespace
}  // namespace strait::reflection
