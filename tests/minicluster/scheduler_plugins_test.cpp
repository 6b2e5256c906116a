#include "minicluster/scheduler_plugins.h"

#include <gtest/gtest.h>

namespace strait::minicluster::sched {
namespace {

json pod(const json& spec, const json& labels = json::object()) {
  json s = spec;
  if (!s.contains("containers")) s["containers"] = json::array({{{"name", "c"}, {"image", "x"}}});
  return {{"metadata", {{"name", "p"}, {"namespace", "default"}, {"labels", labels}}}, {"spec", s}};
}

json container(const json& requests) {
  return {{"name", "c"}, {"image", "x"}, {"resources", {{"requests", requests}}}};
}

NodeInfo node(const std::string& name, const std::string& cpu, const std::string& mem,
              const json& labels = json::object(), const json& taints = json::array()) {
  json n = {{"metadata", {{"name", name}, {"labels", labels}}},
            {"spec", {{"taints", taints}}},
            {"status", {{"allocatable", {{"cpu", cpu}, {"memory", mem}, {"pods", "110"},
                                          {"nvidia.com/gpu", "2"}}}}}};
  return parseNode(n);
}

PodInfo parse(const json& p) {
  auto r = parsePod(p);
  EXPECT_TRUE(r.ok()) << (r ? "" : r.error().message);
  return r ? *r : PodInfo{};
}

TEST(PodRequests, InitContainersTakeTheMaxAndOverheadAdds) {
  json spec = {{"containers", json::array({container({{"cpu", "500m"}, {"memory", "1Gi"}}),
                                           container({{"cpu", "500m"}})})},
               {"initContainers", json::array({container({{"cpu", "2"}}),
                                               container({{"memory", "512Mi"}})})},
               {"overhead", {{"cpu", "100m"}}}};
  auto r = podRequests(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->at("cpu").toString(), "2100m");  // max(2, 1) + 100m
  EXPECT_EQ(r->at("memory").toString(), "1Gi");  // max(512Mi, 1Gi)
}

TEST(PodRequests, LimitsStandInForMissingRequestsAndBadQuantitiesAreErrors) {
  json spec = {{"containers", json::array({{{"name", "c"}, {"resources", {{"limits", {{"cpu", "1"}}}}}}})}};
  EXPECT_EQ(podRequests(spec)->at("cpu").toString(), "1");
  json bad = {{"containers", json::array({container({{"cpu", "lots"}})})}};
  auto r = podRequests(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("spec.containers[0].resources.requests"), std::string::npos);
}

TEST(Filters, ResourcesFitListsEveryInsufficientResource) {
  NodeInfo n = node("n", "1", "1Gi");
  PodInfo p = parse(pod({{"containers", json::array({container({{"cpu", "2"}, {"memory", "2Gi"},
                                                                {"nvidia.com/gpu", "3"}})})}}));
  auto s = filterNodeResourcesFit(p, n);
  EXPECT_FALSE(s.fits);
  EXPECT_EQ(s.reasons, (std::vector<std::string>{"Insufficient cpu", "Insufficient memory",
                                                 "Insufficient nvidia.com/gpu"}));
  EXPECT_FALSE(s.unresolvable);
  PodInfo small = parse(pod({{"containers", json::array({container({{"cpu", "1"}, {"nvidia.com/gpu", "2"}})})}}));
  EXPECT_TRUE(filterNodeResourcesFit(small, n).fits);
  addPod(n, small);
  EXPECT_EQ(filterNodeResourcesFit(small, n).reasons,
            (std::vector<std::string>{"Insufficient cpu", "Insufficient nvidia.com/gpu"}));
  removePod(n, small);
  EXPECT_TRUE(filterNodeResourcesFit(small, n).fits);
}

TEST(Filters, TooManyPods) {
  json n = {{"metadata", {{"name", "n"}}}, {"status", {{"allocatable", {{"pods", "1"}, {"cpu", "4"}}}}}};
  NodeInfo info = parseNode(n);
  PodInfo p = parse(pod(json::object()));
  EXPECT_TRUE(filterNodeResourcesFit(p, info).fits);
  addPod(info, p);
  EXPECT_EQ(filterNodeResourcesFit(p, info).reasons, std::vector<std::string>{"Too many pods"});
}

TEST(Filters, TaintsNeedTolerations) {
  NodeInfo n = node("n", "4", "8Gi", json::object(),
                    json::array({{{"key", "gpu"}, {"value", "true"}, {"effect", "NoSchedule"}}}));
  PodInfo plain = parse(pod(json::object()));
  auto s = filterTaintToleration(plain, n);
  EXPECT_FALSE(s.fits);
  EXPECT_TRUE(s.unresolvable);
  EXPECT_EQ(s.reasons[0], "node(s) had untolerated taint {gpu: true}");
  PodInfo tol = parse(pod({{"tolerations", json::array({{{"key", "gpu"}, {"operator", "Equal"},
                                                         {"value", "true"}, {"effect", "NoSchedule"}}})}}));
  EXPECT_TRUE(filterTaintToleration(tol, n).fits);
  PodInfo wrongValue = parse(pod({{"tolerations", json::array({{{"key", "gpu"}, {"value", "false"}}})}}));
  EXPECT_FALSE(filterTaintToleration(wrongValue, n).fits);
  PodInfo all = parse(pod({{"tolerations", json::array({{{"operator", "Exists"}}})}}));
  EXPECT_TRUE(filterTaintToleration(all, n).fits);
  // PreferNoSchedule never filters; it lowers the score.
  NodeInfo soft = node("s", "4", "8Gi", json::object(),
                       json::array({{{"key", "k"}, {"effect", "PreferNoSchedule"}}}));
  EXPECT_TRUE(filterTaintToleration(plain, soft).fits);
  EXPECT_EQ(countIntolerablePreferNoSchedule(plain, soft), 1);
}

TEST(Filters, NodeAffinityAndSelector) {
  NodeInfo ssd = node("a", "4", "8Gi", {{"disk", "ssd"}, {"zone", "z1"}, {"gen", "5"}});
  NodeInfo hdd = node("b", "4", "8Gi", {{"disk", "hdd"}});
  PodInfo sel = parse(pod({{"nodeSelector", {{"disk", "ssd"}}}}));
  EXPECT_TRUE(filterNodeAffinity(sel, ssd).fits);
  auto s = filterNodeAffinity(sel, hdd);
  EXPECT_FALSE(s.fits);
  EXPECT_EQ(s.reasons[0], "node(s) didn't match Pod's node affinity/selector");
  json terms = json::array({{{"matchExpressions", json::array({{{"key", "gen"}, {"operator", "Gt"},
                                                                 {"values", {"4"}}}})}},
                            {{"matchFields", json::array({{{"key", "metadata.name"}, {"operator", "In"},
                                                           {"values", {"b"}}}})}}});
  PodInfo aff = parse(pod({{"affinity", {{"nodeAffinity",
                                          {{"requiredDuringSchedulingIgnoredDuringExecution",
                                            {{"nodeSelectorTerms", terms}}}}}}}}));
  EXPECT_TRUE(filterNodeAffinity(aff, ssd).fits);   // gen > 4
  EXPECT_TRUE(filterNodeAffinity(aff, hdd).fits);   // metadata.name in (b)
  NodeInfo other = node("c", "4", "8Gi", {{"gen", "3"}});
  EXPECT_FALSE(filterNodeAffinity(aff, other).fits);
}

TEST(Filters, UnschedulableAndNodeName) {
  json n = {{"metadata", {{"name", "n"}}}, {"spec", {{"unschedulable", true}}},
            {"status", {{"allocatable", {{"pods", "10"}}}}}};
  NodeInfo info = parseNode(n);
  PodInfo p = parse(pod(json::object()));
  EXPECT_EQ(filterNodeUnschedulable(p, info).reasons[0], "node(s) were unschedulable");
  PodInfo named = parse(pod({{"nodeName", "other"}}));
  EXPECT_EQ(filterNodeName(named, info).reasons[0], "node(s) didn't match the requested node name");
}

TEST(Filters, TopologySpreadLimitsSkew) {
  NodeInfo a = node("a", "4", "8Gi", {{"zone", "z1"}});
  NodeInfo b = node("b", "4", "8Gi", {{"zone", "z2"}});
  NodeInfo bare = node("c", "4", "8Gi");
  json spread = json::array({{{"maxSkew", 1}, {"topologyKey", "zone"},
                              {"whenUnsatisfiable", "DoNotSchedule"},
                              {"labelSelector", {{"matchLabels", {{"app", "web"}}}}}}});
  PodInfo p = parse(pod({{"topologySpreadConstraints", spread}}, {{"app", "web"}}));
  addPod(a, p);  // z1 has one matching pod, z2 none
  std::vector<const NodeInfo*> nodes = {&a, &b, &bare};
  SpreadState st = prepareTopologySpread(p, nodes);
  EXPECT_FALSE(filterTopologySpread(p, a, st).fits);  // 1 + 1 - 0 > 1
  EXPECT_TRUE(filterTopologySpread(p, b, st).fits);
  auto missing = filterTopologySpread(p, bare, st);
  EXPECT_FALSE(missing.fits);
  EXPECT_TRUE(missing.unresolvable);
}

TEST(Scores, LeastAllocatedAndBalancedPreferEmptierNodes) {
  NodeInfo empty = node("e", "4", "8Gi");
  NodeInfo busy = node("b", "4", "8Gi");
  PodInfo filler = parse(pod({{"containers", json::array({container({{"cpu", "3"}, {"memory", "1Gi"}})})}}));
  addPod(busy, filler);
  PodInfo p = parse(pod({{"containers", json::array({container({{"cpu", "1"}, {"memory", "2Gi"}})})}}));
  EXPECT_GT(scoreLeastAllocated(p, empty), scoreLeastAllocated(p, busy));
  EXPECT_GT(scoreBalancedAllocation(p, empty), scoreBalancedAllocation(p, busy));
  SpreadState none;
  auto totals = scoreNodes(p, {&empty, &busy}, none);
  EXPECT_GT(totals[0], totals[1]);
}

TEST(Scores, PreferredAffinityWins) {
  NodeInfo plain = node("a", "4", "8Gi");
  NodeInfo liked = node("b", "4", "8Gi", {{"tier", "fast"}});
  json pref = json::array({{{"weight", 50},
                            {"preference", {{"matchExpressions", json::array({{{"key", "tier"},
                                                                               {"operator", "In"},
                                                                               {"values", {"fast"}}}})}}}}});
  PodInfo p = parse(pod({{"affinity", {{"nodeAffinity",
                                        {{"preferredDuringSchedulingIgnoredDuringExecution", pref}}}}}}));
  EXPECT_EQ(scoreNodeAffinityRaw(p, liked), 50);
  EXPECT_EQ(scoreNodeAffinityRaw(p, plain), 0);
  SpreadState none;
  auto totals = scoreNodes(p, {&plain, &liked}, none);
  EXPECT_GT(totals[1], totals[0]);
}

TEST(FitError, UpstreamFormatSortedWithPreemption) {
  FilterStatus cpu{false, false, {"Insufficient cpu"}};
  FilterStatus both{false, false, {"Insufficient cpu", "Insufficient memory"}};
  FilterStatus taint{false, true, {"node(s) had untolerated taint {gpu: true}"}};
  EXPECT_EQ(fitErrorMessage(3, {cpu, cpu, cpu}),
            "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
            "3 No preemption victims found for incoming pod..");
  EXPECT_EQ(fitErrorMessage(4, {both, cpu, taint, cpu}),
            "0/4 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint "
            "{gpu: true}, 3 Insufficient cpu. preemption: 0/4 nodes are available: 1 Preemption "
            "is not helpful for scheduling, 3 No preemption victims found for incoming pod..");
}

}  // namespace
}  // namespace strait::minicluster::sched
