// kube::Client against a real `strait minicluster` process: every verb, the typed errors,
// subresources, pagination, selectors and watch streams.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "e2e/cluster_fixture.h"
#include "kube/api_error.h"
#include "kube/client.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using kube::Code;
using ::testing::HasSubstr;
namespace res = kube::resources;

class ClientRestTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    auto cfg = kube::loadKubeconfig({{cluster().kubeconfig()}, ""});
    ASSERT_TRUE(cfg.ok()) << cfg.error().message;
    auto c = kube::newClient(*cfg);
    ASSERT_TRUE(c.ok()) << c.error().message;
    client_ = std::move(*c);
  }

  json configMap(const std::string& name, const std::string& value,
                 const json& labels = json::object()) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"labels", labels}}},
            {"data", {{"k", value}}}};
  }

  std::unique_ptr<kube::Client> client_;
};

TEST_F(ClientRestTest, CreateGetUpdateDeleteWithTypedErrors) {
  auto created = client_->create(res::kConfigMaps, "default", configMap("crud", "1"));
  ASSERT_TRUE(created.ok()) << created.error().message;
  EXPECT_FALSE((*created)["metadata"]["uid"].get<std::string>().empty());

  auto again = client_->create(res::kConfigMaps, "default", configMap("crud", "1"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.code(), Code::AlreadyExists);
  EXPECT_THAT(again.error().message, HasSubstr("already exists"));

  auto got = client_->get(res::kConfigMaps, "default", "crud");
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ((*got)["data"]["k"], "1");

  json upd = *got;
  upd["data"]["k"] = "2";
  auto updated = client_->update(res::kConfigMaps, "default", upd);
  ASSERT_TRUE(updated.ok()) << updated.error().message;
  EXPECT_EQ((*updated)["data"]["k"], "2");

  // The same stale resourceVersion again: 409 Conflict.
  auto stale = client_->update(res::kConfigMaps, "default", upd);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.code(), Code::Conflict);

  kube::DeleteOptions wrongUid;
  wrongUid.preconditionUid = "not-the-uid";
  auto pre = client_->remove(res::kConfigMaps, "default", "crud", wrongUid);
  ASSERT_FALSE(pre.ok());
  EXPECT_EQ(pre.code(), Code::Conflict);

  kube::DeleteOptions rightUid;
  rightUid.preconditionUid = (*created)["metadata"]["uid"];
  rightUid.propagationPolicy = "Background";
  auto del = client_->remove(res::kConfigMaps, "default", "crud", rightUid);
  ASSERT_TRUE(del.ok()) << del.error().message;
  auto gone = client_->get(res::kConfigMaps, "default", "crud");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.code(), Code::NotFound);
  EXPECT_TRUE(kube::isNotFound(gone.error()));
}

TEST_F(ClientRestTest, InvalidCarriesCauses) {
  auto bad = client_->create(res::kConfigMaps, "default", configMap("Not_A_Valid_Name", "1"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), Code::Invalid);
  ASSERT_FALSE(bad.error().causes.empty());
  EXPECT_EQ(bad.error().causes[0].field, "metadata.name");
}

TEST_F(ClientRestTest, FourPatchTypes) {
  ASSERT_TRUE(client_->create(res::kConfigMaps, "default", configMap("patched", "0")).ok());
  auto merge = client_->patch(res::kConfigMaps, "default", "patched", kube::PatchType::Merge,
                              {{"data", {{"m", "merge"}}}});
  ASSERT_TRUE(merge.ok()) << merge.error().message;
  EXPECT_EQ((*merge)["data"]["m"], "merge");
  auto jp = client_->patch(res::kConfigMaps, "default", "patched", kube::PatchType::Json,
                           json::array({{{"op", "replace"}, {"path", "/data/k"}, {"value", "j"}}}));
  ASSERT_TRUE(jp.ok()) << jp.error().message;
  EXPECT_EQ((*jp)["data"]["k"], "j");
  auto smp = client_->patch(res::kConfigMaps, "default", "patched",
                            kube::PatchType::StrategicMerge, {{"data", {{"s", "strategic"}}}});
  ASSERT_TRUE(smp.ok()) << smp.error().message;
  EXPECT_EQ((*smp)["data"]["s"], "strategic");
  kube::WriteOptions apply;
  apply.fieldManager = "client-test";
  apply.force = true;
  auto ap = client_->patch(res::kConfigMaps, "default", "applied", kube::PatchType::Apply,
                           configMap("applied", "a"), apply);
  ASSERT_TRUE(ap.ok()) << ap.error().message;
  EXPECT_EQ((*ap)["data"]["k"], "a");
  auto badJson = client_->patch(res::kConfigMaps, "default", "patched", kube::PatchType::Json,
                                json::array({{{"op", "test"}, {"path", "/data/k"}, {"value", "x"}}}));
  EXPECT_FALSE(badJson.ok());
}

TEST_F(ClientRestTest, ListSelectorsPaginationAndDeleteCollection) {
  for (int i = 0; i < 7; ++i) {
    auto r = client_->create(res::kConfigMaps, "default",
                             configMap("page-" + std::to_string(i), std::to_string(i),
                                       {{"set", "paged"}, {"parity", i % 2 ? "odd" : "even"}}));
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  kube::ListOptions lo;
  lo.labelSelector = "set=paged,parity=odd";
  auto odd = client_->list(res::kConfigMaps, "default", lo);
  ASSERT_TRUE(odd.ok()) << odd.error().message;
  EXPECT_EQ((*odd)["items"].size(), 3u);

  kube::ListOptions fo;
  fo.fieldSelector = "metadata.name=page-4";
  auto one = client_->list(res::kConfigMaps, "default", fo);
  ASSERT_TRUE(one.ok()) << one.error().message;
  ASSERT_EQ((*one)["items"].size(), 1u);

  kube::ListOptions po;
  po.labelSelector = "set=paged";
  po.limit = 3;
  std::set<std::string> seen;
  int pages = 0;
  for (;;) {
    auto page = client_->list(res::kConfigMaps, "default", po);
    ASSERT_TRUE(page.ok()) << page.error().message;
    ++pages;
    EXPECT_LE((*page)["items"].size(), 3u);
    for (const auto& it : (*page)["items"]) seen.insert(it["metadata"]["name"].get<std::string>());
    std::string cont = (*page)["metadata"].value("continue", "");
    if (cont.empty()) break;
    po.continueToken = cont;
  }
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen.size(), 7u);

  kube::ListOptions sel;
  sel.labelSelector = "set=paged,parity=even";
  auto dc = client_->removeCollection(res::kConfigMaps, "default", sel);
  ASSERT_TRUE(dc.ok()) << dc.error().message;
  kube::ListOptions all;
  all.labelSelector = "set=paged";
  auto left = client_->list(res::kConfigMaps, "default", all);
  ASSERT_TRUE(left.ok());
  EXPECT_EQ((*left)["items"].size(), 3u);
}

json pod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}}},
          {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}};
}

TEST_F(ClientRestTest, BindingStatusEvictionAndLogs) {
  ASSERT_TRUE(client_->create(res::kPods, "default", pod("bound")).ok());
  auto b = kube::bindPod(*client_, "default", "bound", "node-a");
  ASSERT_TRUE(b.ok()) << b.error().message;
  auto p = client_->get(res::kPods, "default", "bound");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)["spec"]["nodeName"], "node-a");

  json st = *p;
  st["status"]["phase"] = "Running";
  st["spec"]["nodeName"] = "ignored-by-status-update";
  auto us = kube::updateStatus(*client_, res::kPods, "default", st);
  ASSERT_TRUE(us.ok()) << us.error().message;
  EXPECT_EQ((*us)["status"]["phase"], "Running");
  EXPECT_EQ((*us)["spec"]["nodeName"], "node-a");

  // Logs: pods/log goes to the kubelet of the pod's node, and node-a has no Node object, so
  // the API server answers 404 (as upstream: nodes "node-a" not found); the client must
  // surface it as a typed error rather than as log text.
  std::string text;
  auto ls = client_->streamLogs("default", "bound", {}, [&](std::string_view d) {
    text.append(d);
    return true;
  });
  EXPECT_FALSE(ls.ok());
  EXPECT_EQ(ls.code(), Code::NotFound);

  kube::DeleteOptions now;
  now.gracePeriodSeconds = 0;
  auto ev = kube::evictPod(*client_, "default", "bound", now);
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  EXPECT_TRUE(waitFor([&] { return client_->get(res::kPods, "default", "bound").code() ==
                                   Code::NotFound; },
                      30s));
}

TEST_F(ClientRestTest, WatchDeliversEventsInOrderAndStopsPromptly) {
  auto list = client_->list(res::kConfigMaps, "default");
  ASSERT_TRUE(list.ok());
  std::string rv = (*list)["metadata"]["resourceVersion"];
  std::stop_source stop;
  std::vector<std::pair<kube::WatchEventType, std::string>> events;
  std::mutex mu;
  kube::Status result;
  std::thread watcher([&] {
    kube::WatchOptions wo;
    wo.resourceVersion = rv;
    wo.labelSelector = "w=1";
    result = client_->watch(res::kConfigMaps, "default", wo,
                            [&](kube::WatchEvent&& e) {
                              std::lock_guard<std::mutex> lock(mu);
                              if (e.type != kube::WatchEventType::Bookmark) {
                                events.emplace_back(e.type, e.object["metadata"]["name"]);
                              }
                              return true;
                            },
                            stop.get_token());
  });
  ASSERT_TRUE(client_->create(res::kConfigMaps, "default", configMap("w1", "a", {{"w", "1"}})).ok());
  ASSERT_TRUE(client_->patch(res::kConfigMaps, "default", "w1", kube::PatchType::Merge,
                             {{"data", {{"k", "b"}}}})
                  .ok());
  ASSERT_TRUE(client_->remove(res::kConfigMaps, "default", "w1").ok());
  EXPECT_TRUE(waitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return events.size() >= 3;
  }, 30s));
  auto t0 = std::chrono::steady_clock::now();
  stop.request_stop();
  watcher.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_TRUE(result.ok()) << result.error().message;
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].first, kube::WatchEventType::Added);
  EXPECT_EQ(events[1].first, kube::WatchEventType::Modified);
  EXPECT_EQ(events[2].first, kube::WatchEventType::Deleted);
}

TEST_F(ClientRestTest, UnreachableServerIsUnavailable) {
  auto cfg = kube::loadKubeconfig({{cluster().kubeconfig()}, ""});
  ASSERT_TRUE(cfg.ok());
  cfg->server = "https://127.0.0.1:1";  // nothing listens on port 1
  cfg->maxRetries = 1;
  auto c = kube::newClient(*cfg);
  ASSERT_TRUE(c.ok());
  auto r = (*c)->get(res::kConfigMaps, "default", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::Unavailable);
  EXPECT_THAT(r.error().message, HasSubstr("127.0.0.1:1"));
}

}  // namespace
}  // namespace strait::e2e
