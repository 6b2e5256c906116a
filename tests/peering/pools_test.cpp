// peering/pools.h: parsing of pools (command line and ForeignCluster spec), the grant
// arithmetic across pools and consumers, and the pool summary's uniform labels.
#include "peering/pools.h"

#include <gtest/gtest.h>

namespace strait::peering {
namespace {

using nlohmann::json;

ResourceMap res(const std::string& text) { return *parseResourceArg(text); }

json node(const std::string& name, const std::string& cpu, const std::string& gpu,
          std::map<std::string, std::string> labels, bool ready = true) {
  labels["kubernetes.io/hostname"] = name;
  json alloc = {{"cpu", cpu}, {"memory", "8Gi"}, {"pods", "110"}};
  if (!gpu.empty()) alloc["nvidia.com/gpu"] = gpu;
  return {{"metadata", {{"name", name}, {"labels", labels}}},
          {"status",
           {{"allocatable", alloc},
            {"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}};
}

TEST(PoolsTest, ParsesNameResourcesAndSelector) {
  kube::Result<PoolSpec> p =
      parsePoolArg("gpu:cpu=4,memory=8Gi,nvidia.com/gpu=1@strait.io/test-gpu=true,zone=a");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->name, "gpu");
  EXPECT_EQ(p->requested, res("cpu=4,memory=8Gi,nvidia.com/gpu=1"));
  EXPECT_EQ(p->nodeSelector, (NodeSelector{{"strait.io/test-gpu", "true"}, {"zone", "a"}}));
  kube::Result<PoolSpec> bare = parsePoolArg("general");
  ASSERT_TRUE(bare.ok());
  EXPECT_TRUE(bare->requested.empty());
  EXPECT_TRUE(bare->nodeSelector.empty());
  kube::Result<PoolSpec> sel = parsePoolArg("big@size=large");
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(sel->name, "big");
  EXPECT_EQ(sel->nodeSelector.at("size"), "large");
}

TEST(PoolsTest, RefusesBadPoolArgumentsNamingTheProblem) {
  struct Case {
    const char* arg;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{{"", "pool name is empty"},
                                         {"GPU", "not a DNS label"},
                                         {"gpu_1", "not a DNS label"},
                                         {"-gpu", "not a DNS label"},
                                         {"gpu:", "empty resources"},
                                         {"gpu:cpu", "expected NAME=QUANTITY"},
                                         {"gpu:cpu=lots", "cpu"},
                                         {"gpu:cpu=-1", "negative"},
                                         {"gpu@", "empty node selector"},
                                         {"gpu@zone", "expected KEY=VALUE"},
                                         {"gpu@zone=a,zone=b", "given twice"},
                                         {"gpu@zone=a,,x=y", "empty item"},
                                         {"gpu@bad key=1", "key"},
                                         {"gpu@k=bad value", "value"},
                                         {":cpu=1", "pool name is empty"}}) {
    kube::Result<PoolSpec> p = parsePoolArg(c.arg);
    ASSERT_FALSE(p.ok()) << c.arg;
    EXPECT_EQ(p.error().code, kube::Code::Invalid) << c.arg;
    EXPECT_NE(p.error().message.find(c.says), std::string::npos)
        << c.arg << ": " << p.error().message;
  }
}

TEST(PoolsTest, PoolNodeNamesStayValidHostnames) {
  EXPECT_EQ(poolNodeName("cloud", "gpu"), "strait-cloud-gpu");
  EXPECT_TRUE(validatePoolNodeName("cloud", "gpu").ok());
  const std::string provider(40, 'p');
  kube::Status s = validatePoolNodeName(provider, std::string(20, 'g'));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("at most 15"), std::string::npos) << s.error().message;
}

TEST(PoolsTest, SpecPoolsRoundTripAndBadEntriesAreNamed) {
  std::vector<PoolSpec> pools = {*parsePoolArg("general:cpu=2"),
                                 *parsePoolArg("gpu:cpu=1,nvidia.com/gpu=1@strait.io/test-gpu=true")};
  json list = json::array();
  for (const PoolSpec& p : pools) list.push_back(poolToJson(p));
  kube::Result<std::vector<PoolSpec>> back = poolsFromJson(list);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, pools);

  json dup = json::array({poolToJson(pools[0]), poolToJson(pools[0])});
  kube::Result<std::vector<PoolSpec>> d = poolsFromJson(dup);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("given twice"), std::string::npos);
  json bad = json::array({{{"name", "ok"}}, {{"name", "Not_OK"}}});
  kube::Result<std::vector<PoolSpec>> b = poolsFromJson(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("spec.pools[1].name"), std::string::npos)
      << b.error().message;
  json badQty = json::array({{{"name", "a"}, {"requested", {{"cpu", "many"}}}}});
  EXPECT_FALSE(poolsFromJson(badQty).ok());
  EXPECT_TRUE(poolsOfForeignCluster(json{{"spec", json::object()}})->empty());
}

TEST(PoolsTest, PoolSummaryCountsMatchingNodesAndTheirUniformLabels) {
  json nodes = json::array(
      {node("cpu-1", "8", "", {{"node.kubernetes.io/instance-type", "m5"}, {"zone", "a"}}),
       node("gpu-1", "4", "2",
            {{"strait.io/test-gpu", "true"},
             {"nvidia.com/gpu.product", "A100"},
             {"node.kubernetes.io/instance-type", "p4"},
             {"zone", "a"}}),
       node("gpu-2", "4", "2",
            {{"strait.io/test-gpu", "true"},
             {"nvidia.com/gpu.product", "A100"},
             {"node.kubernetes.io/instance-type", "p4"},
             {"zone", "b"}}),
       node("gpu-3", "4", "2", {{"strait.io/test-gpu", "true"}}, /*ready=*/false)});
  std::map<std::string, ResourceMap> used = {{"gpu-1", res("cpu=1,nvidia.com/gpu=1")}};
  ProviderSummary gpu = summarizePool(nodes, used, {{"strait.io/test-gpu", "true"}});
  ASSERT_EQ(gpu.nodes.size(), 2u);  // gpu-3 is not Ready
  EXPECT_EQ(gpu.pooledFree.at("cpu"), res("cpu=7").at("cpu"));
  EXPECT_EQ(gpu.pooledFree.at("nvidia.com/gpu"), res("g=3").at("g"));
  EXPECT_EQ(gpu.topologyLabels,
            (std::map<std::string, std::string>{{"node.kubernetes.io/instance-type", "p4"},
                                                {"nvidia.com/gpu.product", "A100"},
                                                {"strait.io/test-gpu", "true"}}));
  ProviderSummary all = summarizePool(nodes, used, {});
  EXPECT_EQ(all.nodes.size(), 3u);
  EXPECT_EQ(all.topologyLabels, (std::map<std::string, std::string>{}));
  EXPECT_TRUE(summarizePool(nodes, used, {{"zone", "c"}}).nodes.empty());
}

// Two consumers share the GPU nodes: each one's pool summary counts the provider's own Pods
// and the other consumer's as used and gives back only its own Pods of that pool (on the node
// they run on), so a lone consumer sees the nodes' whole free however much of it its Pods use.
TEST(PoolsTest, APoolSummaryCountsTheOtherConsumersPodsAndGivesBackTheCallersOwn) {
  json nodes = json::array({node("cpu-1", "8", "", {}),
                            node("gpu-1", "4", "2", {{"strait.io/test-gpu", "true"}}),
                            node("gpu-2", "4", "2", {{"strait.io/test-gpu", "true"}})});
  const NodeSelector gpu = {{"strait.io/test-gpu", "true"}};
  // gpu-1: the provider's own Pod (500m), consumer A's (1 CPU, 1 GPU) and B's (2 CPU);
  // gpu-2: B's (1 CPU, 1 GPU); cpu-1: A's Pod of another pool (3 CPU).
  const ResourceMap own = res("cpu=500m,pods=1"), a1 = res("cpu=1,nvidia.com/gpu=1,pods=1"),
                    b1 = res("cpu=2,pods=1"), b2 = res("cpu=1,nvidia.com/gpu=1,pods=1");
  std::map<std::string, ResourceMap> all = {{"gpu-1", addResources(own, addResources(a1, b1))},
                                            {"gpu-2", b2},
                                            {"cpu-1", res("cpu=3,pods=1")}};
  auto cpuOf = [](const ProviderSummary& s, const std::string& name) {
    for (const ProviderNodeFree& n : s.nodes) {
      if (n.name == name) return n.free.at("cpu").toString();
    }
    return std::string("absent");
  };

  ProviderSummary forA = summarizePoolForCaller(nodes, all, {{"gpu-1", a1}}, gpu);
  ASSERT_EQ(forA.nodes.size(), 2u);
  EXPECT_EQ(cpuOf(forA, "gpu-1"), "1500m");  // 4 - 500m (provider) - 2 (B)
  EXPECT_EQ(cpuOf(forA, "gpu-2"), "3");      // 4 - 1 (B)
  EXPECT_EQ(forA.pooledFree.at("cpu").toString(), "4500m");
  EXPECT_EQ(forA.pooledFree.at("nvidia.com/gpu").toString(), "3");  // B's GPU counted, A's not

  ProviderSummary forB = summarizePoolForCaller(nodes, all, {{"gpu-1", b1}, {"gpu-2", b2}}, gpu);
  EXPECT_EQ(cpuOf(forB, "gpu-1"), "2500m");  // 4 - 500m (provider) - 1 (A)
  EXPECT_EQ(cpuOf(forB, "gpu-2"), "4");
  EXPECT_EQ(forB.pooledFree.at("nvidia.com/gpu").toString(), "3");  // A's GPU counted

  // A lone consumer whose Pods fill a node still sees the node's whole free.
  std::map<std::string, ResourceMap> lone = {{"gpu-1", res("cpu=4,nvidia.com/gpu=2,pods=2")}};
  ProviderSummary alone = summarizePoolForCaller(nodes, lone, lone, gpu);
  EXPECT_EQ(alone.pooledFree.at("cpu").toString(), "8");
  EXPECT_EQ(alone.pooledFree.at("nvidia.com/gpu").toString(), "4");
  // Without Pods of its own, a consumer sees what every Pod leaves (summarizePool).
  EXPECT_EQ(summarizePoolForCaller(nodes, all, {}, gpu), summarizePool(nodes, all, gpu));
}

TEST(PoolsTest, GrantsAcrossPoolsAndConsumersNeverExceedTheBudget) {
  PolicyConfig cfg;  // share 0.5
  json nodes = json::array({node("cpu-1", "16", "", {}),
                            node("gpu-1", "4", "2", {{"strait.io/test-gpu", "true"}})});
  auto summaryOf = [&](const PoolSpec& p) { return summarizePool(nodes, {}, p.nodeSelector); };
  ResourceMap free = summarizePool(nodes, {}, {}).pooledFree;
  ResourceMap budget = budgetFor(free, cfg);  // cpu=10, memory=8Gi, pods=110, gpu=1
  std::vector<PoolSpec> pools = {*parsePoolArg("general:cpu=6,memory=2Gi,pods=20"),
                                 *parsePoolArg("gpu:cpu=4,memory=2Gi,pods=10,nvidia.com/gpu=2"
                                               "@strait.io/test-gpu=true")};
  std::vector<PoolGrant> a = grantPools(pools, budget, {}, cfg, summaryOf);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].granted, res("cpu=6,memory=2Gi,pods=20"));
  EXPECT_TRUE(a[0].refusedReason.empty());
  // The gpu pool is bounded by half of its one node: cpu 2, gpu 1 (whole-unit rule).
  EXPECT_EQ(a[1].granted, res("cpu=2,memory=2Gi,pods=10,nvidia.com/gpu=1"));
  EXPECT_EQ(a[1].summary.nodes.size(), 1u);
  ResourceMap first = sumGranted(a);
  EXPECT_EQ(first, res("cpu=8,memory=4Gi,pods=30,nvidia.com/gpu=1"));

  // A second consumer gets what is left of the shared budget, never more.
  std::vector<PoolSpec> other = {*parsePoolArg("all:cpu=8,memory=8Gi,pods=100,nvidia.com/gpu=1")};
  std::vector<PoolGrant> b = grantPools(other, budget, first, cfg, summaryOf);
  EXPECT_EQ(b[0].granted, res("cpu=2,memory=4Gi,pods=80,nvidia.com/gpu=0"));
  ResourceMap total = addResources(first, sumGranted(b));
  for (const auto& [k, v] : total) EXPECT_LE(v, budget[k]) << k;

  // A third finds nothing: refused with a reason, zero grant.
  std::vector<PoolGrant> c =
      grantPools({*parsePoolArg("late:cpu=1,memory=1Gi")}, budget, total, cfg, summaryOf);
  EXPECT_EQ(c[0].refusedReason, "NothingToLend");
  EXPECT_EQ(c[0].granted, res("cpu=0,memory=0"));
}

TEST(PoolsTest, PerConsumerCapHoldsForThePoolsTogether) {
  PolicyConfig cfg;
  cfg.share = 1.0;
  cfg.perConsumerCap = res("cpu=5");
  json nodes = json::array({node("a", "16", "", {})});
  auto summaryOf = [&](const PoolSpec& p) { return summarizePool(nodes, {}, p.nodeSelector); };
  ResourceMap budget = budgetFor(summarizePool(nodes, {}, {}).pooledFree, cfg);
  std::vector<PoolGrant> g = grantPools(
      {*parsePoolArg("one:cpu=3,memory=1Gi"), *parsePoolArg("two:cpu=3,memory=1Gi")}, budget, {},
      cfg, summaryOf);
  EXPECT_EQ(g[0].granted.at("cpu"), res("cpu=3").at("cpu"));
  EXPECT_EQ(g[1].granted.at("cpu"), res("cpu=2").at("cpu"));
}

TEST(PoolsTest, RefusesPoolsWithoutNodesOrWithBadNamesFromTheWire) {
  PolicyConfig cfg;
  json nodes = json::array({node("a", "4", "", {})});
  auto summaryOf = [&](const PoolSpec& p) { return summarizePool(nodes, {}, p.nodeSelector); };
  ResourceMap budget = budgetFor(summarizePool(nodes, {}, {}).pooledFree, cfg);
  v1::PoolRequest wire;
  wire.set_name("Bad Name");
  (*wire.mutable_requested()->mutable_items())["cpu"] = "1";
  std::vector<PoolSpec> pools = {poolFromProto(wire),
                                 *parsePoolArg("gpu:cpu=1@strait.io/test-gpu=true"),
                                 *parsePoolArg("ok:cpu=1"), *parsePoolArg("ok:cpu=1")};
  std::vector<PoolGrant> g = grantPools(pools, budget, {}, cfg, summaryOf);
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[0].refusedReason, "InvalidPool");
  EXPECT_EQ(g[1].refusedReason, "NoMatchingNodes");
  EXPECT_EQ(g[1].granted, res("cpu=0"));
  EXPECT_TRUE(g[2].refusedReason.empty());
  EXPECT_EQ(g[3].refusedReason, "InvalidPool");  // repeated name
  EXPECT_EQ(sumGranted(g), res("cpu=1"));
}

TEST(PoolsTest, PoolGrantSurvivesTheHeartbeatMessage) {
  json nodes = json::array({node("g", "4", "1", {{"nvidia.com/gpu.product", "T4"}})});
  PoolGrant g;
  g.name = "gpu";
  g.granted = res("cpu=1,nvidia.com/gpu=1");
  g.used = res("cpu=500m");
  g.summary = summarizePool(nodes, {}, {});
  v1::HeartbeatResponse resp;
  poolGrantToProto(g, resp.add_pools());
  v1::HeartbeatResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(resp.SerializeAsString()));
  ASSERT_EQ(parsed.pools_size(), 1);
  EXPECT_EQ(poolGrantFromProto(parsed.pools(0)), g);
  EXPECT_EQ(poolGrantFromProto(parsed.pools(0)).summary.topologyLabels.at("nvidia.com/gpu.product"),
            "T4");
}

TEST(PoolsTest, PinningAddsThePoolSelectorAndRefusesAContradiction) {
  PoolSpec gpu = *parsePoolArg("gpu:cpu=1@strait.io/test-gpu=true,zone=a");
  json pod = {{"metadata", {{"name", "p"}}},
              {"spec", {{"nodeSelector", {{"disk", "ssd"}}}, {"containers", json::array()}}}};
  EXPECT_FALSE(podPinnedTo(pod, gpu.nodeSelector));
  EXPECT_EQ(podPool(pod), "");
  ASSERT_TRUE(pinPodToPool(pod, gpu).ok());
  EXPECT_EQ(podPool(pod), "gpu");
  EXPECT_TRUE(podPinnedTo(pod, gpu.nodeSelector));
  EXPECT_EQ(pod["spec"]["nodeSelector"],
            (json{{"disk", "ssd"}, {"strait.io/test-gpu", "true"}, {"zone", "a"}}));
  EXPECT_TRUE(pinPodToPool(pod, gpu).ok());  // idempotent

  json other = {{"spec", {{"nodeSelector", {{"zone", "b"}}}}}};
  kube::Status s = pinPodToPool(other, gpu);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("zone=b, but pool gpu has zone=a"), std::string::npos)
      << s.error().message;
  // A Pod that only claims the pool is not pinned (the provider refuses it).
  json claims = {{"metadata", {{"labels", {{std::string(kLabelPool), "gpu"}}}}},
                 {"spec", {{"nodeSelector", {{"zone", "a"}}}}}};
  EXPECT_EQ(podPool(claims), "gpu");
  EXPECT_FALSE(podPinnedTo(claims, gpu.nodeSelector));
  EXPECT_TRUE(podPinnedTo(claims, {}));
}

}  // namespace
}  // namespace strait::peering
