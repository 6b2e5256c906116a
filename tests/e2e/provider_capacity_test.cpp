// The provider agent's capacity tracker (peering/provider_capacity.h) against a real
// minicluster with simulated nodes: what it keeps from its Node and Pod watches gives the same
// summary and free allocatable as a LIST of every Node and Pod (the form it replaced), as Pods
// are created, scheduled and deleted and a node is cordoned, and it keeps per Pod only the
// node and requests. With two consumers sharing a pool's nodes, the provider agent's
// heartbeat answer gives each one a pool summary that counts the other's Pods as used and its
// own as free to it, and the pool's usage from the watch.
#include <gtest/gtest.h>
#include <unistd.h>

#include "e2e/cluster_fixture.h"
#include "kube/client.h"
#include "kube/object.h"
#include "peering/foreign_cluster.h"
#include "peering/names.h"
#include "peering/pools.h"
#include "peering/provider.h"
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

// A Pod consumer `consumerId` reflected for its pool `pool`, bound to `node` ("" leaves it
// Pending: it selects a label no node has).
json poolPod(const std::string& name, const std::string& cpu, const std::string& consumerId,
             const std::string& pool, const std::string& node) {
  json pod = podAsking(name, cpu);
  pod["metadata"]["labels"] = {{std::string(peering::kLabelOriginClusterId), consumerId},
                               {std::string(peering::kLabelPool), pool}};
  if (node.empty()) {
    pod["spec"]["nodeSelector"] = {{"strait.io/no-such-node", "true"}};
  } else {
    pod["spec"]["nodeName"] = node;
  }
  return pod;
}

// Consumers A and B both draw pool "shared" from the one node labelled for it (4 CPUs).
// Each one's pool summary is the node's allocatable minus the provider's own Pods and the
// other consumer's, its own Pods given back (its pool grant covers them): alone, A sees the
// whole node with its Pods running; once B's Pods run there, A sees B's as used and B sees
// A's. The pool's usage comes from the watch, Pending Pods included, as a LIST counts them.
TEST_F(ProviderCapacityTest, APoolSummaryCountsTheOtherConsumersPodsAndNotTheCallersOwn) {
  auto nodes = client_->list(res::kNodes, "");
  ASSERT_TRUE(nodes.ok());
  const std::string shared = kube::getName((*nodes)["items"][0]);
  ASSERT_TRUE(client_->patch(res::kNodes, "", shared, kube::PatchType::Merge,
                             {{"metadata", {{"labels", {{"strait.io/test-pool", "shared"}}}}}})
                  .ok());
  ASSERT_TRUE(client_->create(peering::kCrds, "", peering::foreignClusterCrd()).ok());
  ASSERT_TRUE(waitFor([&] { return client_->list(peering::kForeignClusters, "").ok(); }, 30s));
  const std::string idA = "aaaaaaaa-0000-4000-8000-00000000000a";
  const std::string idB = "bbbbbbbb-0000-4000-8000-00000000000b";
  for (const auto& [name, id] : {std::pair{"home-a", idA}, std::pair{"home-b", idB}}) {
    auto made =
        client_->create(peering::kForeignClusters, "",
                        peering::makeForeignCluster(
                            name, id, name, std::string(peering::kRoleConsumer), "127.0.0.1:1"));
    ASSERT_TRUE(made.ok()) << made.error().message;
  }
  auto identity = peering::ClusterIdentity::generate("cloud");
  ASSERT_TRUE(identity.ok()) << identity.error().message;
  peering::ProviderConfig config;
  config.policy.explicitBudget = *peering::parseResourceArg("cpu=8,memory=16Gi,pods=100");
  peering::ProviderService svc(*identity, *client_, config);
  ASSERT_TRUE(svc.load().ok());

  peering::PoolSpec pool{"shared",
                         *peering::parseResourceArg("cpu=3,memory=4Gi,pods=20"),
                         {{"strait.io/test-pool", "shared"}}};
  struct Seen {
    std::string granted, poolFree, nodeFree, used;
    size_t nodes = 0;
  };
  auto beat = [&](const std::string& id) {
    v1::HeartbeatRequest req;
    peering::poolToProto(pool, req.add_pools());
    v1::HeartbeatResponse resp;
    Seen seen;
    if (!svc.heartbeat({id, "ipv4:127.0.0.1:1"}, req, &resp).ok() || resp.pools_size() != 1) {
      return seen;
    }
    peering::PoolGrant g = peering::poolGrantFromProto(resp.pools(0));
    seen.granted = cpu(g.granted).toString();
    seen.poolFree = cpu(g.summary.pooledFree).toString();
    seen.nodes = g.summary.nodes.size();
    if (!g.summary.nodes.empty()) seen.nodeFree = cpu(g.summary.nodes[0].free).toString();
    seen.used = cpu(g.used).toString();
    return seen;
  };
  auto answers = [&](const std::string& id, const std::string& poolFree, const std::string& used) {
    Seen seen;
    bool ok = waitFor(
        [&] {
          seen = beat(id);
          return seen.poolFree == poolFree && seen.used == used;
        },
        30s, 50ms);
    EXPECT_EQ(seen.nodes, 1u);
    EXPECT_EQ(seen.nodeFree, seen.poolFree);
    EXPECT_EQ(seen.granted, "3");
    return ok ? ::testing::AssertionSuccess()
              : ::testing::AssertionFailure()
                    << "consumer " << id << ": pool free cpu " << seen.poolFree << " used "
                    << seen.used << ", want free " << poolFree << " used " << used;
  };

  // A alone, its Pods on the node (2 CPUs bound, 250m Pending): it sees the node's 4 CPUs
  // (with its Pods counted, 2 would be left, below its grant of 3).
  EXPECT_EQ(beat(idA).granted, "3");
  for (const json& p :
       {poolPod("a-1", "1", idA, "shared", shared), poolPod("a-2", "1", idA, "shared", shared),
        poolPod("a-pending", "250m", idA, "shared", "")}) {
    ASSERT_TRUE(client_->create(res::kPods, "default", p).ok());
  }
  ASSERT_TRUE(answers(idA, "4", "2250m"));

  // B's Pods (1500m) and a Pod of the provider's own (500m) on the same node.
  EXPECT_EQ(beat(idB).granted, "3");
  ASSERT_TRUE(
      client_->create(res::kPods, "default", poolPod("b-1", "1500m", idB, "shared", shared)).ok());
  json own = podAsking("own", "500m");
  own["spec"]["nodeName"] = shared;
  ASSERT_TRUE(client_->create(res::kPods, "default", own).ok());
  ASSERT_TRUE(answers(idA, "2", "2250m"));      // 4 - 1500m (B) - 500m (own)
  ASSERT_TRUE(answers(idB, "1500m", "1500m"));  // 4 - 2 (A) - 500m (own)

  // A's Pods go: B has the node but the provider's own Pod.
  kube::DeleteOptions now;
  now.gracePeriodSeconds = 0;
  for (const char* name : {"a-1", "a-2", "a-pending"}) {
    ASSERT_TRUE(client_->remove(res::kPods, "default", name, now).ok());
  }
  ASSERT_TRUE(answers(idB, "3500m", "1500m"));
  ASSERT_TRUE(answers(idA, "2", "0"));
}

TEST_F(ProviderCapacityTest, APodKeepsOnlyWhatTheCapacityIsComputedFrom) {
  json pod = podAsking("slim", "250m");
  pod["metadata"]["labels"] = {
      {"app", "web"}, {"strait.io/origin-cluster-id", "c1"}, {"strait.io/peering-pool", "gpu"}};
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
                 "labels": {"strait.io/origin-cluster-id": "c1",
                            "strait.io/peering-pool": "gpu"}},
    "spec": {"nodeName": "n1",
             "containers": [{"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}],
             "initContainers": [{"resources": {"requests": {"cpu": "1"}}}]},
    "status": {"phase": "Running"}})"));
  // The requests counted are the same as from the whole Pod.
  EXPECT_EQ(peering::podRequests(json::array({slim})), peering::podRequests(json::array({pod})));
}

}  // namespace
}  // namespace strait::e2e
