// The provider agent's capacity tracker (peering/provider_capacity.h) against a real
// minicluster with simulated nodes: what it keeps from its Node and Pod watches gives the same
// summary and free allocatable as a LIST of every Node and Pod (the form it replaced), as Pods
// are created, scheduled and deleted and a node is cordoned, and it keeps per Pod only the
// node and requests.
#include <gtest/gtest.h>
#include <unistd.h>

#include "e2e/cluster_fixture.h"
#include "kube/client.h"
#include "kube/object.h"
#include "peering/provider_capacity.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
namespace res = kube::resources;

json podAsking(const std::string& name, const std::string& cpu) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"containers",
             {{{"name", "app"},
               {"image", "nginx:1.27"},
               {"resources", {{"requests", {{"cpu", cpu}, {"memory", "64Mi"}}}}}}}}}}};
}

class ProviderCapacityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(server_.start("capacity-" + std::to_string(getpid()), 60s,
                            {"--nodes", "2", "--node-cpu", "4", "--node-memory", "8Gi"}),
              "");
    auto cfg = kube::loadKubeconfig({{server_.kubeconfig()}, ""});
    ASSERT_TRUE(cfg.ok()) << cfg.error().message;
    auto c = kube::newClient(*cfg);
    ASSERT_TRUE(c.ok()) << c.error().message;
    client_ = std::move(*c);
  }

  // What the provider agent computed before: one LIST of Nodes and one of Pods.
  peering::ProviderSummary listedSummary() {
    auto nodes = client_->list(res::kNodes, "");
    auto pods = client_->list(res::kPods, "");
    if (!nodes.ok() || !pods.ok()) return {};
    return peering::summarizeProvider((*nodes)["items"], (*pods)["items"]);
  }
  peering::ResourceMap listedFree() {
    auto nodes = client_->list(res::kNodes, "");
    auto pods = client_->list(res::kPods, "");
    if (!nodes.ok() || !pods.ok()) return {};
    return peering::freeAllocatable((*nodes)["items"], (*pods)["items"]);
  }
  // Waits until the watched figures equal the listed ones and `extra` holds.
  ::testing::AssertionResult converges(peering::ProviderCapacity& cap,
                                       const std::function<bool()>& extra) {
    peering::ProviderSummary want, got;
    bool same = waitFor(
        [&] {
          want = listedSummary();
          got = cap.summary();
          return got == want && cap.freeAllocatable() == listedFree() && extra();
        },
        30s, 50ms);
    if (same) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "watched pooled free " << peering::formatResources(got.pooledFree) << " on "
           << got.nodes.size() << " nodes, listed " << peering::formatResources(want.pooledFree)
           << " on " << want.nodes.size() << " nodes";
  }

  Minicluster server_;
  std::unique_ptr<kube::Client> client_;
};

kube::Quantity cpu(const peering::ResourceMap& m) {
  auto it = m.find("cpu");
  return it == m.end() ? kube::Quantity() : it->second;
}

TEST_F(ProviderCapacityTest, WatchedSummaryEqualsTheListedOneAsPodsComeAndGo) {
  peering::ProviderCapacity cap(*client_);
  cap.start();
  ASSERT_TRUE(cap.waitForSync(30s));
  ASSERT_TRUE(converges(cap, [&] { return cap.summary().nodes.size() == 2; }));
  const kube::Quantity idle = cpu(cap.summary().pooledFree);
  EXPECT_EQ(idle.toString(), "8");

  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client_->create(res::kPods, "default", podAsking("p" + std::to_string(i), "500m"))
                    .ok());
  }
  // Scheduled by the minicluster's scheduler: 1.5 CPU fewer once all three are bound.
  ASSERT_TRUE(converges(cap, [&] { return cpu(cap.summary().pooledFree).toString() == "6500m"; }));
  EXPECT_EQ(cap.podCount(), 3u);
  EXPECT_EQ(cpu(cap.freeAllocatable()).toString(), "6500m");

  kube::DeleteOptions now;
  now.gracePeriodSeconds = 0;
  ASSERT_TRUE(client_->remove(res::kPods, "default", "p1", now).ok());
  ASSERT_TRUE(converges(cap, [&] { return cpu(cap.summary().pooledFree).toString() == "7"; }));

  // A cordoned node leaves the summary (and its Pods' requests with it).
  auto nodes = client_->list(res::kNodes, "");
  ASSERT_TRUE(nodes.ok());
  const std::string first = kube::getName((*nodes)["items"][0]);
  ASSERT_TRUE(client_->patch(res::kNodes, "", first, kube::PatchType::Merge,
                             {{"spec", {{"unschedulable", true}}}})
                  .ok());
  ASSERT_TRUE(converges(cap, [&] { return cap.summary().nodes.size() == 1; }));
  cap.stop();
}

// A consumer's Pods are covered by its grant: counted in the summary (what the provider
// uses), left out of the free allocatable the budget is taken from, else each consumer's grant
// would shrink as its own Pods arrive.
TEST_F(ProviderCapacityTest, PodsThatRunForAConsumerAreLeftOutOfTheBudgetsFreeCapacity) {
  peering::ProviderCapacity cap(*client_);
  cap.start();
  ASSERT_TRUE(cap.waitForSync(30s));
  json reflected = podAsking("reflected", "1");
  reflected["metadata"]["labels"] = {{"strait.io/origin-cluster-id", "consumer-1"}};
  json peered = podAsking("peered", "500m");
  peered["metadata"]["labels"] = {{"strait.io/managed-by", "strait"},
                                  {"strait.io/remote-cluster-id", "consumer-2"}};
  json own = podAsking("own", "250m");
  own["metadata"]["labels"] = {{"strait.io/remote-cluster-id", "not-managed"}};
  for (const json& p : {reflected, peered, own}) {
    ASSERT_TRUE(client_->create(res::kPods, "default", p).ok());
  }
  ASSERT_TRUE(waitFor([&] { return cpu(cap.summary().pooledFree).toString() == "6250m"; }, 30s,
                      50ms))
      << peering::formatResources(cap.summary().pooledFree);
  EXPECT_EQ(cpu(cap.freeAllocatable()).toString(), "7750m");
  EXPECT_EQ(cpu(cap.poolSummary({}).pooledFree).toString(), "7750m");
  cap.stop();
}

TEST_F(ProviderCapacityTest, APodKeepsOnlyWhatTheCapacityIsComputedFrom) {
  json pod = podAsking("slim", "250m");
  pod["metadata"]["labels"] = {{"app", "web"}, {"strait.io/origin-cluster-id", "c1"}};
  pod["metadata"]["resourceVersion"] = "7";
  pod["metadata"]["uid"] = "u-1";
  pod["spec"]["nodeName"] = "n1";
  pod["spec"]["initContainers"] = {{{"name", "init"}, {"image", "busybox"},
                                    {"resources", {{"requests", {{"cpu", "1"}}}}}}};
  pod["status"] = {{"phase", "Running"}, {"podIP", "10.0.0.1"}};
  json slim = pod;
  peering::ProviderCapacity::slimPod(slim);
  EXPECT_EQ(slim, json::parse(R"({
    "metadata": {"name": "slim", "namespace": "default", "uid": "u-1", "resourceVersion": "7",
                 "labels": {"strait.io/origin-cluster-id": "c1"}},
    "spec": {"nodeName": "n1",
             "containers": [{"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}],
             "initContainers": [{"resources": {"requests": {"cpu": "1"}}}]},
    "status": {"phase": "Running"}})"));
  // The requests counted are the same as from the whole Pod.
  EXPECT_EQ(peering::podRequests(json::array({slim})), peering::podRequests(json::array({pod})));
}

}  // namespace
}  // namespace strait::e2e
