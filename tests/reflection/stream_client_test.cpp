// StreamClient (consumer side of the reflection stream) against a scripted fake provider over
// in-memory EventStream pairs: request/reply correlation with many calls in flight, the
// remote Pod cache kept by STATUS/GONE, SYNCED, errors carried by REPLY, calls failing when
// the stream breaks, reconnection with onConnected again and the cache refilled, keepalives,
// a silent stream redialled, RESYNC_BEGIN/RESYNC_DONE.
#include "reflection/stream_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <set>
#include <thread>

#include "kube/object.h"
#include "reflection/fake_event_stream.h"

namespace strait::reflection {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using testing::FakeEventStream;

const std::string kId = "c0c0c0c0-1111-4222-8333-444455556666";
const std::string kRemoteNs = "web-" + kId;

bool waitUntil(const std::function<bool()>& cond, std::chrono::milliseconds limit = 20s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return cond();
}

json pod(const std::string& name, const std::string& rv, const std::string& phase = "Running") {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", kRemoteNs},
            {"resourceVersion", rv},
            {"labels", {{"strait.io/origin-uid", "uid-" + name}}}}},
          {"status", {{"phase", phase}}}};
}

// A scripted provider: each dial gets a serving thread that sends `initialPods` as STATUS
// then SYNCED (unless `withholdSynced`), then answers requests: APPLY -> the object back
// with a resourceVersion (names starting "slow" after 200 ms, "grant" -> Forbidden), DELETE
// -> null, GET -> NotFound; nothing when `holdReplies`. It records what it received.
class FakeProvider {
 public:
  ~FakeProvider() { shutdown(); }

  std::function<kube::Result<std::unique_ptr<peering::EventStream>>()> dialer() {
    return [this]() -> kube::Result<std::unique_ptr<peering::EventStream>> {
      dials++;
      if (refuse) return kube::makeError(kube::Code::Unavailable, "connection refused");
      auto [client, server] = testing::fakePair();
      std::lock_guard<std::mutex> l(mu);
      FakeEventStream* s = server.get();
      current = s;
      servers.push_back(std::move(server));
      threads.emplace_back([this, s] { serve(*s); });
      return std::unique_ptr<peering::EventStream>(std::move(client));
    };
  }
  void breakCurrent() {
    std::lock_guard<std::mutex> l(mu);
    if (current) current->cancel();
  }
  void shutdown() {
    {
      std::lock_guard<std::mutex> l(mu);
      for (auto& s : servers) s->cancel();
    }
    for (auto& t : threads) {
      if (t.joinable()) t.join();
    }
  }
  std::vector<std::string> received() {
    std::lock_guard<std::mutex> l(mu);
    return types;
  }
  int count(const std::string& type) {
    std::lock_guard<std::mutex> l(mu);
    return static_cast<int>(std::count(types.begin(), types.end(), type));
  }
  std::vector<std::string> lastResyncUids() {
    std::lock_guard<std::mutex> l(mu);
    return resyncUids;
  }
  static void send(FakeEventStream& s, const StreamMessage& m) { s.write(encodeStreamMessage(m)); }
  // Sends `m` on the stream of the latest dial.
  void sendToCurrent(const StreamMessage& m) {
    std::lock_guard<std::mutex> l(mu);
    if (current) send(*current, m);
  }

  std::atomic<int> dials{0};
  std::atomic<bool> refuse{false};
  std::atomic<bool> holdReplies{false};
  std::atomic<bool> silent{false};  // sends nothing at all after the initial list
  std::atomic<bool> withholdSynced{false};
  void setInitialPods(std::vector<json> pods) {
    std::lock_guard<std::mutex> l(mu);
    initialPods = std::move(pods);
  }

 private:
  void serve(FakeEventStream& s) {
    std::vector<json> initial;
    {
      std::lock_guard<std::mutex> l(mu);
      initial = initialPods;
    }
    for (const json& p : initial) send(s, StreamMessage::status(p, "uid-" + kube::getName(p)));
    if (!withholdSynced) send(s, StreamMessage::ofType(StreamMessageType::Synced));
    v1::ReflectionEvent e;
    std::vector<std::thread> slow;
    while (s.read(&e)) {
      auto m = decodeStreamMessage(e);
      ASSERT_TRUE(m.ok()) << m.error().message;
      {
        std::lock_guard<std::mutex> l(mu);
        types.push_back(e.type());
        if (m->type == StreamMessageType::ResyncDone) resyncUids = m->resyncOriginUids();
      }
      if (m->type == StreamMessageType::Keepalive && !silent) {
        send(s, StreamMessage::ofType(StreamMessageType::Keepalive));
      }
      if (holdReplies || silent) continue;
      if (m->type == StreamMessageType::Apply) {
        json stored = m->object;
        stored["metadata"]["resourceVersion"] = std::to_string(++rv);
        if (m->name.rfind("grant", 0) == 0) {
          send(s, StreamMessage::reply(m->seq, kube::makeError(kube::Code::Forbidden,
                                                               "pod exceeds the grant: cpu")));
        } else if (m->name.rfind("slow", 0) == 0) {
          slow.emplace_back([&s, seq = m->seq, stored] {
            std::this_thread::sleep_for(200ms);
            send(s, StreamMessage::reply(seq, stored));
          });
        } else {
          send(s, StreamMessage::reply(m->seq, stored));
        }
      } else if (m->type == StreamMessageType::Delete) {
        // Names starting "term": the Pod is terminating (its object comes back); "gone": the
        // same, but its GONE overtakes the answer.
        json answer;
        if (m->name.rfind("term", 0) == 0 || m->name.rfind("gone", 0) == 0) {
          answer = pod(m->name, std::to_string(++rv));
          answer["metadata"]["uid"] = "r-" + m->name;
          answer["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
          answer["metadata"]["deletionGracePeriodSeconds"] = 1;
        }
        if (m->name.rfind("gone", 0) == 0) {
          StreamMessage g = StreamMessage::remove("Pod", m->ns, m->name, m->originUid, std::nullopt);
          g.type = StreamMessageType::Gone;
          send(s, g);
        }
        send(s, StreamMessage::reply(m->seq, answer));
      } else if (m->type == StreamMessageType::Get) {
        send(s, StreamMessage::reply(m->seq, kube::makeError(kube::Code::NotFound, "no such object")));
      }
    }
    for (auto& t : slow) t.join();
  }

  std::mutex mu;
  FakeEventStream* current = nullptr;
  std::vector<std::unique_ptr<FakeEventStream>> servers;
  std::vector<std::thread> threads;
  std::vector<std::string> types;
  std::vector<std::string> resyncUids;
  std::vector<json> initialPods;
  std::atomic<int> rv{100};
};

class StreamClientTest : public ::testing::Test {
 protected:
  StreamClientOptions options() {
    StreamClientOptions o;
    o.consumerId = kId;
    o.mapping = NamespaceMapping(kId, NamingStrategy::Default);
    o.open = provider_.dialer();
    o.keepaliveInterval = 50ms;
    o.callTimeout = 5s;
    o.minBackoff = 20ms;
    o.maxBackoff = 200ms;
    o.onConnected = [this] { connected_++; };
    o.onDisconnected = [this](const kube::Status&) { disconnected_++; };
    o.onRemoteChange = [this](const std::string& key) {
      // What a reconciler reading the cache at this moment would see of Pod "a".
      std::optional<kube::Code> podA;
      if (recordPodA_) podA = client_->get("Pod", kRemoteNs, "a").code();
      std::lock_guard<std::mutex> l(mu_);
      changes_.push_back(key);
      if (podA) podAAtChange_.push_back(*podA);
    };
    return o;
  }
  void TearDown() override {
    if (client_) client_->stop();
    provider_.shutdown();
  }
  std::vector<std::string> changes() {
    std::lock_guard<std::mutex> l(mu_);
    return changes_;
  }

  FakeProvider provider_;
  std::unique_ptr<StreamClient> client_;
  std::atomic<int> connected_{0};
  std::atomic<int> disconnected_{0};
  std::mutex mu_;
  std::vector<std::string> changes_;
  std::atomic<bool> recordPodA_{false};
  std::vector<kube::Code> podAAtChange_;
};

TEST_F(StreamClientTest, ManyCallsInFlightEachGetsItsOwnReply) {
  client_ = std::make_unique<StreamClient>(options());
  client_->start();
  ASSERT_TRUE(waitUntil([&] { return client_->connected(); }));
  std::vector<std::thread> callers;
  std::atomic<int> right{0};
  for (int i = 0; i < 20; i++) {
    callers.emplace_back([&, i] {
      std::string name = (i % 2 ? "slow-" : "fast-") + std::to_string(i);
      kube::Result<json> r = client_->apply(StreamMessage::apply(pod(name, "1"), "uid-" + name));
      if (r.ok() && kube::getName(*r) == name) right++;
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(right.load(), 20);
  EXPECT_EQ(provider_.count("APPLY"), 20);
  // Replies about Pods refresh the cache too.
  EXPECT_EQ(client_->remotePods().size(), 20u);
  StreamCounters c = client_->counters();
  EXPECT_EQ(c.applies, 20u);
  EXPECT_GE(c.messagesOut, 21u);  // RESYNC_BEGIN + 20 APPLYs (+ keepalives)
  EXPECT_GT(c.bytesOut, c.messagesOut);
  EXPECT_GE(c.messagesIn, 21u);   // SYNCED + 20 REPLYs
}

TEST_F(StreamClientTest, StatusAndGoneKeepTheRemoteCacheAndNameTheLocalPod) {
  provider_.setInitialPods({pod("a", "5")});
  client_ = std::make_unique<StreamClient>(options());
  client_->start();
  ASSERT_TRUE(waitUntil([&] { return client_->remoteSynced(); }));
  auto got = client_->get("Pod", kRemoteNs, "a");
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ((*got)["status"]["phase"], "Running");
  EXPECT_EQ(changes(), std::vector<std::string>{"web/a"});
  EXPECT_EQ(client_->get("Pod", kRemoteNs, "b").code(), kube::Code::NotFound);
  // Other kinds are asked for.
  EXPECT_EQ(client_->get("ConfigMap", kRemoteNs, "conf").code(), kube::Code::NotFound);
  EXPECT_EQ(provider_.count("GET"), 1);
}

TEST_F(StreamClientTest, ADeleteAnswerMarksTheCachedPodTerminatingAndNeverBringsItBack) {
  json a = pod("term-a", "5"), b = pod("gone-b", "6");
  a["metadata"]["uid"] = "r-term-a";
  b["metadata"]["uid"] = "r-gone-b";
  provider_.setInitialPods({a, b});
  client_ = std::make_unique<StreamClient>(options());
  client_->start();
  ASSERT_TRUE(waitUntil([&] { return client_->remoteSynced(); }));
  // A worker handling the Pod again before the provider's STATUS sees it terminating (and
  // does not delete it a second time).
  ASSERT_TRUE(client_->remove(StreamMessage::remove("Pod", kRemoteNs, "term-a", "uid-term-a", 1)).ok());
  auto got = client_->get("Pod", kRemoteNs, "term-a");
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_TRUE(kube::isBeingDeleted(*got)) << got->dump();
  EXPECT_EQ((*got)["metadata"]["deletionGracePeriodSeconds"], 1);
  // An answer arriving after the GONE does not bring the Pod back.
  ASSERT_TRUE(client_->remove(StreamMessage::remove("Pod", kRemoteNs, "gone-b", "uid-gone-b", 1)).ok());
  EXPECT_EQ(client_->get("Pod", kRemoteNs, "gone-b").code(), kube::Code::NotFound);
}

TEST_F(StreamClientTest, PodsAreUnavailableUntilTheInitialListArrived) {
  provider_.withholdSynced = true;
  client_ = std::make_unique<StreamClient>(options());
  client_->start();
  ASSERT_TRUE(waitUntil([&] { return client_->connected(); }));
  EXPECT_FALSE(client_->remoteSynced());
  EXPECT_EQ(client_->get("Pod", kRemoteNs, "a").code(), kube::Code::Unavailable);
}

TEST_F(StreamClientTest, StatusPatchesUpdateTheCachedPodOrFetchItAgain) {
  json a = pod("a", "5", "Pending");
  a["metadata"]["uid"] = "r-a";
  provider_.setInitialPods({a});
  client_ = std::make_unique<StreamClient>(options());
  client_->start();
  ASSERT_TRUE(waitUntil([&] { return client_->remoteSynced(); }));
  // The consumer tells the provider it applies patches.
  ASSERT_TRUE(waitUntil([&] { return provider_.count("RESYNC_BEGIN") == 1; }));
  auto sendToClient = [&](const StreamMessage& m) { provider_.sendToCurrent(m); };
  json running = a;
  running["metadata"]["resourceVersion"] = "6";
  running["status"] = {{"phase", "Running"}, {"podIP", "10.0.0.9"}};
  sendToClient(*StreamMessage::statusPatch(a, running, "uid-a"));
  ASSERT_TRUE(waitUntil([&] {
    auto got = client_->get("Pod", kRemoteNs, "a");
    return got.ok() && *got == running;
  }));
  EXPECT_EQ(changes(), (std::vector<std::string>{"web/a", "web/a"}));
  // A patch made from a version this client does not hold: the Pod is asked for again
  // (the fake provider answers NotFound: the stale copy goes).
  json later = running;
  later["metadata"]["resourceVersion"] = "9";
  json latest = later;
  latest["metadata"]["resourceVersion"] = "10";
  latest["status"]["phase"] = "Succeeded";
  recordPodA_ = true;
  sendToClient(*StreamMessage::statusPatch(later, latest, "uid-a"));
  ASSERT_TRUE(waitUntil([&] { return provider_.count("GET") == 1; }));
  ASSERT_TRUE(waitUntil([&] { return changes().size() == 3u; }));
  EXPECT_EQ(client_->get("Pod", kRemoteNs, "a").code(), kube::Code::NotFound);
  // The reconciler is told once, after the fetched answer replaced the stale copy (told
  // before it, it would mirror the stale copy and nothing would tell it again).
  std::lock_guard<std::mutex> l(mu_);
  EXPECT_EQ(podAAtChange_, std::vector<kube::Code>{kube::Code::NotFound});
}

TEST_F(StreamClientTest, AnErrorReplyKeepsItsCodeAndMessage) {
  client_ = std::make_unique<StreamClient>(options());
  client_->start();
  ASSERT_TRUE(waitUntil([&] { return client_->connected(); }));
  auto r = client_->apply(StreamMessage::apply(pod("grant-1", "1"), "uid-grant-1"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), kube::Code::Forbidden);
  EXPECT_EQ(r.error().message, "pod exceeds the grant: cpu");
  EXPECT_EQ(client_->counters().errors, 1u);
}

TEST_F(StreamClientTest, BreakFailsCallsInFlightThenReconnectsAndRefillsTheCache) {
  provider_.setInitialPods({pod("old", "5")});
  provider_.holdReplies = true;
  client_ = std::make_unique<StreamClient>(options());
  client_->start();
  ASSERT_TRUE(waitUntil([&] { return client_->remoteSynced() && connected_ == 1; }));
  ASSERT_EQ(client_->remotePods().count(kRemoteNs + "/old"), 1u);

  kube::Result<json> inFlight = json();
  std::thread caller([&] {
    inFlight = client_->apply(StreamMessage::apply(pod("x", "1"), "uid-x"));
  });
  ASSERT_TRUE(waitUntil([&] { return provider_.count("APPLY") == 1; }));
  provider_.setInitialPods({pod("new", "9")});  // the provider's list differs after the break
  provider_.withholdSynced = true;
  provider_.breakCurrent();
  caller.join();
  EXPECT_EQ(inFlight.code(), kube::Code::Unavailable) << (inFlight.ok() ? "ok" : inFlight.error().message);
  ASSERT_TRUE(waitUntil([&] { return connected_ == 2; }));
  EXPECT_GE(disconnected_.load(), 1);
  EXPECT_EQ(client_->connections(), 2u);
  // The old cache was dropped; the new connection's list is in, but not synced yet.
  ASSERT_TRUE(waitUntil([&] { return client_->remotePods().count(kRemoteNs + "/new") == 1; }));
  EXPECT_EQ(client_->remotePods().count(kRemoteNs + "/old"), 0u);
  EXPECT_FALSE(client_->remoteSynced());
  // Each connection started with RESYNC_BEGIN.
  EXPECT_EQ(provider_.count("RESYNC_BEGIN"), 2);
}

TEST_F(StreamClientTest, NoReplyWithinTheCallTimeoutIsServerTimeout) {
  provider_.holdReplies = true;
  auto o = options();
  o.callTimeout = 200ms;
  client_ = std::make_unique<StreamClient>(o);
  client_->start();
  ASSERT_TRUE(waitUntil([&] { return client_->connected(); }));
  auto r = client_->remove(StreamMessage::remove("Pod", kRemoteNs, "x", "uid-x", 0));
  EXPECT_EQ(r.code(), kube::Code::ServerTimeout);
}

TEST_F(StreamClientTest, KeepalivesFlowAndASilentStreamIsRedialled) {
  client_ = std::make_unique<StreamClient>(options());
  client_->start();
  ASSERT_TRUE(waitUntil([&] { return provider_.count("KEEPALIVE") >= 3; }));
  EXPECT_EQ(client_->connections(), 1u);
  // The provider goes silent (a partition that does not break the connection): after
  // deadAfter (3 s minimum) the client gives up on the stream and dials again.
  provider_.silent = true;
  ASSERT_TRUE(waitUntil([&] { return client_->connections() >= 2; }, 30s));
  EXPECT_GE(disconnected_.load(), 1);
}

TEST_F(StreamClientTest, UnreachableProviderIsRetriedWithBackoffAndCallsFailFast) {
  provider_.refuse = true;
  std::atomic<int> refusals{0};
  auto o = options();
  o.onDisconnected = [&](const kube::Status& why) {
    EXPECT_EQ(why.code(), kube::Code::Unavailable);
    refusals++;
  };
  client_ = std::make_unique<StreamClient>(o);
  client_->start();
  ASSERT_TRUE(waitUntil([&] { return refusals >= 3; }));
  auto r = client_->apply(StreamMessage::apply(pod("x", "1"), "uid-x"));
  EXPECT_EQ(r.code(), kube::Code::Unavailable);
  EXPECT_FALSE(client_->resyncDone({}).ok());
  provider_.refuse = false;
  ASSERT_TRUE(waitUntil([&] { return connected_.load() == 1; }));
  EXPECT_TRUE(client_->connected());
}

TEST_F(StreamClientTest, ResyncDoneListsTheOriginUids) {
  client_ = std::make_unique<StreamClient>(options());
  client_->start();
  ASSERT_TRUE(waitUntil([&] { return client_->connected(); }));
  ASSERT_TRUE(client_->resyncDone({"u1", "u2"}).ok());
  ASSERT_TRUE(waitUntil([&] { return provider_.count("RESYNC_DONE") == 1; }));
  EXPECT_EQ(provider_.lastResyncUids(), (std::vector<std::string>{"u1", "u2"}));
  std::vector<std::string> types = provider_.received();
  ASSERT_FALSE(types.empty());
  EXPECT_EQ(types.front(), "RESYNC_BEGIN");
}

TEST_F(StreamClientTest, StopFailsCallsAndJoinsPromptly) {
  provider_.holdReplies = true;
  client_ = std::make_unique<StreamClient>(options());
  client_->start();
  ASSERT_TRUE(waitUntil([&] { return client_->connected(); }));
  kube::Result<json> inFlight = json();
  std::thread caller([&] { inFlight = client_->apply(StreamMessage::apply(pod("x", "1"), "uid-x")); });
  ASSERT_TRUE(waitUntil([&] { return provider_.count("APPLY") == 1; }));
  client_->stop();
  caller.join();
  EXPECT_EQ(inFlight.code(), kube::Code::Unavailable);
  EXPECT_FALSE(client_->connected());
}

}  // namespace
}  // namespace strait::reflection
