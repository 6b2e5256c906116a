// The consumer's Pod status writes (PodStatusWriter, and the PodReflector through it): the
// latest wanted status wins while a write is in flight; a write is a merge patch of
// pods/status with the uid as precondition and no resourceVersion; a status the Pod already
// has, or that was written while the informer cache lags, is not written again; a Pod gone
// or replaced is not retried, a transient failure is.
#include "reflection/unused_client.h"
#include "reflection/pod_status_writer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "kube/object.h"
#include "reflection/pod_reflector.h"

namespace strait::reflection {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// A consumer API server that records the status writes; the first PATCH may be held until
// release(), and PATCH answers may be scripted.
class StatusWritesClient final : public testing::UnusedClient {
 public:
  struct Write {
    std::string verb;  // PATCH or PUT
    std::string ns, name, subresource;
    kube::PatchType type = kube::PatchType::Merge;
    json body;
  };

  kube::Result<json> get(const kube::ResourceRef&, std::string_view, std::string_view,
                         const kube::GetOptions&) override {
    return kube::makeError(kube::Code::NotFound, "not found");
  }
  kube::Result<json> create(const kube::ResourceRef&, std::string_view, const json& obj,
                            const kube::WriteOptions&) override {
    return obj;  // Events
  }
  kube::Result<json> update(const kube::ResourceRef&, std::string_view ns, const json& obj,
                            const kube::WriteOptions& o) override {
    std::lock_guard<std::mutex> l(mu_);
    writes_.push_back({"PUT", std::string(ns), kube::getName(obj), o.subresource,
                       kube::PatchType::Merge, obj});
    cv_.notify_all();
    return obj;
  }
  kube::Result<json> patch(const kube::ResourceRef&, std::string_view ns, std::string_view name,
                           kube::PatchType type, const json& body,
                           const kube::WriteOptions& o) override {
    std::unique_lock<std::mutex> l(mu_);
    writes_.push_back({"PATCH", std::string(ns), std::string(name), o.subresource, type, body});
    cv_.notify_all();
    if (hold_ && writes_.size() == 1) cv_.wait(l, [&] { return !hold_; });
    if (!answers_.empty()) {
      kube::Result<json> r = answers_.front();
      answers_.erase(answers_.begin());
      return r;
    }
    // The patched Pod as the server answers it: a new resourceVersion each write.
    return json{{"metadata", {{"name", name}, {"resourceVersion", std::to_string(nextRv_++)}}},
                {"status", body["status"]}};
  }

  void holdFirst() {
    std::lock_guard<std::mutex> l(mu_);
    hold_ = true;
  }
  void release() {
    std::lock_guard<std::mutex> l(mu_);
    hold_ = false;
    cv_.notify_all();
  }
  void answer(kube::Result<json> r) {
    std::lock_guard<std::mutex> l(mu_);
    answers_.push_back(std::move(r));
  }
  bool waitWrites(size_t n) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, 10s, [&] { return writes_.size() >= n; });
  }
  std::vector<Write> writes() {
    std::lock_guard<std::mutex> l(mu_);
    return writes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool hold_ = false;
  uint64_t nextRv_ = 100;
  std::vector<Write> writes_;
  std::vector<kube::Result<json>> answers_;
};

json localPod(const std::string& rv, const json& status, const std::string& uid = "uid-1") {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", "web-1"}, {"namespace", "web"}, {"uid", uid}, {"resourceVersion", rv}}},
          {"spec",
           {{"nodeName", "strait-cloud"},
            {"containers", json::array({{{"name", "app"}, {"image", "nginx:1"}}})}}},
          {"status", status}};
}

json phase(const std::string& p) { return {{"phase", p}}; }

bool waitIdle(const PodStatusWriter& w) {
  for (int i = 0; i < 1000; ++i) {
    if (w.pending() == 0) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(PodStatusWriterTest, ThreeStatusesWhileAWriteIsInFlightGiveOneMoreWriteOfTheLast) {
  StatusWritesClient api;
  api.holdFirst();
  PodStatusWriterOptions o;
  o.workers = 1;
  PodStatusWriter w(api, o);
  w.start();
  const json pod = localPod("10", phase("Pending"));
  ASSERT_TRUE(w.want("web/web-1", pod, phase("Running")).ok());
  ASSERT_TRUE(api.waitWrites(1));  // in flight, held
  json ready = {{"phase", "Running"}, {"podIP", "10.0.0.1"}};
  json done = {{"phase", "Succeeded"}, {"podIP", "10.0.0.1"}};
  ASSERT_TRUE(w.want("web/web-1", pod, phase("Failed")).ok());
  ASSERT_TRUE(w.want("web/web-1", pod, ready).ok());
  ASSERT_TRUE(w.want("web/web-1", pod, done).ok());
  EXPECT_EQ(*w.expected("web/web-1", pod), done);  // what the Pod will have
  api.release();
  ASSERT_TRUE(waitIdle(w));
  w.stop();

  std::vector<StatusWritesClient::Write> writes = api.writes();
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0].body["status"], phase("Running"));
  EXPECT_EQ(writes[1].body["status"], done);
  for (const auto& wr : writes) {
    EXPECT_EQ(wr.verb, "PATCH");
    EXPECT_EQ(wr.type, kube::PatchType::Merge);
    EXPECT_EQ(wr.subresource, "status");
    EXPECT_EQ(wr.ns, "web");
    EXPECT_EQ(wr.name, "web-1");
    EXPECT_EQ(wr.body["metadata"], json({{"uid", "uid-1"}}));  // uid precondition, no RV
  }
  EXPECT_EQ(w.counters().written, 2u);
  EXPECT_EQ(w.counters().coalesced, 2u);
}

TEST(PodStatusWriterTest, FieldsTheWantedStatusLacksArePatchedToNull) {
  StatusWritesClient api;
  PodStatusWriter w(api);  // inline
  json had = {{"phase", "Pending"}, {"reason", "ProviderRefused"}, {"message", "quota"}};
  ASSERT_TRUE(w.want("web/web-1", localPod("3", had), phase("Running")).ok());
  ASSERT_EQ(api.writes().size(), 1u);
  EXPECT_EQ(api.writes()[0].body["status"],
            json({{"phase", "Running"}, {"reason", nullptr}, {"message", nullptr}}));
}

TEST(PodStatusWriterTest, AStatusWrittenIsExpectedUntilTheCacheShowsANewerVersion) {
  StatusWritesClient api;
  PodStatusWriter w(api);
  const json stale = localPod("5", phase("Pending"));
  EXPECT_FALSE(w.expected("web/web-1", stale));
  ASSERT_TRUE(w.want("web/web-1", stale, phase("Running")).ok());  // the server: version 100
  // The cache still has version 5: the written status is what the Pod has.
  EXPECT_EQ(*w.expected("web/web-1", stale), phase("Running"));
  // Wanting it again with that stale cache writes nothing.
  ASSERT_TRUE(w.want("web/web-1", stale, phase("Running")).ok());
  EXPECT_EQ(api.writes().size(), 1u);
  // A version between (an earlier write's echo) does not show it either.
  EXPECT_EQ(*w.expected("web/web-1", localPod("99", phase("Pending"))), phase("Running"));
  ASSERT_TRUE(w.want("web/web-1", localPod("99", phase("Pending")), phase("Running")).ok());
  EXPECT_EQ(api.writes().size(), 1u);
  // The cache caught up (or someone else wrote since): the cached status is current again.
  EXPECT_FALSE(w.expected("web/web-1", localPod("100", phase("Running"))));
  // Another incarnation under the same name knows nothing of the first one's writes.
  ASSERT_TRUE(w.want("web/web-1", localPod("100", phase("Pending")), phase("Failed")).ok());
  EXPECT_EQ(*w.expected("web/web-1", localPod("100", phase("Pending"))), phase("Failed"));
  EXPECT_FALSE(w.expected("web/web-1", localPod("100", phase("Pending"), "uid-2")));
  EXPECT_EQ(api.writes().size(), 2u);
}

TEST(PodStatusWriterTest, APodGoneOrReplacedIsDroppedATransientFailureRetried) {
  StatusWritesClient api;
  PodStatusWriter inlineWriter(api);
  // Another incarnation refuses the uid precondition (422): nothing to retry.
  api.answer(kube::makeError(kube::Code::Invalid, "metadata.uid: field is immutable"));
  EXPECT_TRUE(inlineWriter.want("web/web-1", localPod("1", phase("Pending")), phase("Running"))
                  .ok());
  EXPECT_FALSE(inlineWriter.expected("web/web-1", localPod("1", phase("Pending"))));
  EXPECT_EQ(inlineWriter.counters().dropped, 1u);
  // Unavailable: the caller is told (the reflector retries the key).
  api.answer(kube::makeError(kube::Code::Unavailable, "connection refused"));
  EXPECT_FALSE(inlineWriter.want("web/web-2", localPod("1", phase("Pending")), phase("Running"))
                   .ok());

  StatusWritesClient api2;
  api2.answer(kube::makeError(kube::Code::Unavailable, "connection refused"));
  PodStatusWriterOptions o;
  o.workers = 2;
  o.queue.baseDelay = 1ms;
  o.queue.qps = 0;
  PodStatusWriter pooled(api2, o);
  pooled.start();
  ASSERT_TRUE(pooled.want("web/web-1", localPod("1", phase("Pending")), phase("Running")).ok());
  ASSERT_TRUE(api2.waitWrites(2));  // written again after the back-off
  ASSERT_TRUE(waitIdle(pooled));
  EXPECT_EQ(pooled.counters().written, 1u);
  EXPECT_EQ(api2.writes()[1].body["status"], phase("Running"));
}

TEST(PodStatusWriterTest, AnInformerUpdateThatOnlyShowsTheStatusWrittenIsItsEcho) {
  StatusWritesClient api;
  PodStatusWriter w(api);  // inline
  const json before = localPod("5", phase("Pending"));
  const json echo = localPod("100", phase("Running"));
  EXPECT_FALSE(w.echoesOwnWrite("web/web-1", before, echo));  // nothing written yet
  ASSERT_TRUE(w.want("web/web-1", before, phase("Running")).ok());  // the server: version 100
  // Anything else that changed is news for the reflector.
  json relabelled = echo;
  relabelled["metadata"]["labels"] = {{"app", "web"}};
  EXPECT_FALSE(w.echoesOwnWrite("web/web-1", before, relabelled));
  json deleting = echo;
  deleting["metadata"]["deletionTimestamp"] = "2026-12-02T10:00:00Z";
  EXPECT_FALSE(w.echoesOwnWrite("web/web-1", before, deleting));
  json respec = echo;
  respec["spec"]["activeDeadlineSeconds"] = 5;
  EXPECT_FALSE(w.echoesOwnWrite("web/web-1", before, respec));
  EXPECT_FALSE(w.echoesOwnWrite("web/web-1", before, localPod("100", phase("Failed"))));
  EXPECT_FALSE(w.echoesOwnWrite("web/web-1", localPod("5", phase("Pending"), "uid-2"),
                                localPod("100", phase("Running"), "uid-2")));
  EXPECT_FALSE(w.echoesOwnWrite("web/web-2", before, echo));
  // The echo itself, managedFields included; the cache shows the write now.
  json withFields = echo;
  withFields["metadata"]["managedFields"] = json::array({{{"manager", "strait"}}});
  EXPECT_TRUE(w.echoesOwnWrite("web/web-1", before, withFields));
  EXPECT_FALSE(w.expected("web/web-1", echo));
  EXPECT_EQ(api.writes().size(), 1u);
}

// The pod reflector end to end over in-memory sides: the remote Pod is whatever the
// reflector applied, with the status the test sets; the local Pod is a fixed cached copy.
class MemoryRemote final : public RemoteObjects {
 public:
  kube::Result<json> get(const std::string&, const std::string&, const std::string&) override {
    std::lock_guard<std::mutex> l(mu);
    if (pod.is_null()) return kube::makeError(kube::Code::NotFound, "no remote pod");
    return pod;
  }
  kube::Result<json> apply(const StreamMessage& m) override {
    std::lock_guard<std::mutex> l(mu);
    if (m.kind == "Pod") pod = m.object;
    return m.object;
  }
  kube::Result<json> remove(const StreamMessage&) override { return json(nullptr); }
  void setStatus(const json& status) {
    std::lock_guard<std::mutex> l(mu);
    pod["status"] = status;
  }
  std::mutex mu;
  json pod;
};

TEST(PodStatusWriterTest, TheReflectorWritesAStatusOnceThoughTheCacheLagsAndNeverWhenEqual) {
  StatusWritesClient api;
  MemoryRemote remote;
  json cached = localPod("7", {{"phase", "Pending"}, {"qosClass", "BestEffort"}});
  std::mutex cacheMu;
  PodReflectorOptions o;
  o.mapping = NamespaceMapping("c1", NamingStrategy::Default);
  o.forge.consumerId = "c1";
  o.forge.virtualNodeName = "strait-cloud";
  o.forge.virtualNodeAddress = "127.0.0.42";
  o.status.virtualNodeAddress = "127.0.0.42";
  o.resyncDone = [] { return true; };
  PodReflector r(
      api,
      [&](const std::string&) {
        std::lock_guard<std::mutex> l(cacheMu);
        return std::make_shared<const json>(cached);
      },
      remote, o);

  ASSERT_EQ(r.handle("web/web-1").kind, HandleResult::Kind::RequeueAfter);  // created
  ASSERT_FALSE(remote.pod.is_null());
  EXPECT_TRUE(api.writes().empty());
  remote.setStatus({{"phase", "Running"}, {"podIP", "10.1.0.5"}});
  r.handle("web/web-1");
  ASSERT_EQ(api.writes().size(), 1u);
  const StatusWritesClient::Write first = api.writes()[0];
  EXPECT_EQ(first.verb, "PATCH");
  EXPECT_EQ(first.subresource, "status");
  EXPECT_EQ(first.body["metadata"], json({{"uid", "uid-1"}}));
  EXPECT_EQ(first.body["status"]["phase"], "Running");
  EXPECT_EQ(first.body["status"]["podIP"], "10.1.0.5");
  EXPECT_EQ(first.body["status"]["hostIP"], "127.0.0.42");

  // Handled again before the cache shows the write (e.g. another STATUS that changes no
  // mapped field): nothing is written.
  remote.setStatus({{"phase", "Running"}, {"podIP", "10.1.0.5"}, {"hostIP", "192.168.9.9"}});
  EXPECT_EQ(r.handle("web/web-1").kind, HandleResult::Kind::Done);
  EXPECT_EQ(api.writes().size(), 1u);

  // The cache shows the write: equal, nothing written.
  {
    std::lock_guard<std::mutex> l(cacheMu);
    json st = first.body["status"];
    st["qosClass"] = "BestEffort";
    cached = localPod("100", st);  // the version the write produced
  }
  EXPECT_EQ(r.handle("web/web-1").kind, HandleResult::Kind::Done);
  EXPECT_EQ(api.writes().size(), 1u);

  // A real change is written, as a patch against what the Pod has.
  remote.setStatus({{"phase", "Succeeded"}, {"podIP", "10.1.0.5"}});
  r.handle("web/web-1");
  ASSERT_EQ(api.writes().size(), 2u);
  EXPECT_EQ(api.writes()[1].body["status"]["phase"], "Succeeded");
}

}  // namespace
}  // namespace strait::reflection
