#include "vnode/capacity.h"

#include <gtest/gtest.h>

namespace strait::vnode {
namespace {

using nlohmann::json;

kube::Quantity q(const char* s) { return *kube::Quantity::parse(s); }
ResourceMap res(const std::string& text) { return *peering::parseResourceArg(text); }

json node(const std::string& name, const std::string& cpu, const std::string& mem,
          bool ready = true, const std::string& zone = "z1", const std::string& gpu = "") {
  json n = {{"metadata",
             {{"name", name},
              {"labels",
               {{"topology.kubernetes.io/region", "eu"}, {"topology.kubernetes.io/zone", zone}}}}},
            {"status",
             {{"allocatable", {{"cpu", cpu}, {"memory", mem}, {"pods", "110"}}},
              {"conditions", json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
  if (!gpu.empty()) n["status"]["allocatable"]["nvidia.com/gpu"] = gpu;
  return n;
}

json pod(const std::string& nodeName, const std::string& cpu, const std::string& mem) {
  return {{"spec",
           {{"nodeName", nodeName},
            {"containers", json::array({{{"name", "c"},
                                         {"resources", {{"requests", {{"cpu", cpu}, {"memory", mem}}}}}}})}}}};
}

TEST(Capacity, PoolsFreeAllocatableOfReadyNodes) {
  json nodes = json::array({node("a", "8", "32Gi"), node("b", "8", "32Gi"),
                            node("down", "64", "256Gi", false)});
  json pods = json::array({pod("a", "2", "4Gi"), pod("b", "500m", "1Gi"), pod("down", "1", "1Gi")});
  ProviderSummary s = summarizeProvider(nodes, pods);
  EXPECT_EQ(s.pooledFree["cpu"], q("13500m"));
  EXPECT_EQ(s.pooledFree["memory"], q("59Gi"));
  EXPECT_EQ(s.pooledFree["pods"], q("218"));
  ASSERT_EQ(s.nodes.size(), 2u);
  EXPECT_EQ(s.nodes[0].name, "b");  // largest free cpu first
  EXPECT_EQ(s.topologyLabels.at("topology.kubernetes.io/zone"), "z1");
  EXPECT_EQ(s.topologyLabels.at("topology.kubernetes.io/region"), "eu");
}

TEST(Capacity, MixedZonesGiveNoZoneLabel) {
  ProviderSummary s =
      summarizeProvider(json::array({node("a", "1", "1Gi", true, "z1"), node("b", "1", "1Gi", true, "z2")}),
                        json::array());
  EXPECT_FALSE(s.topologyLabels.count("topology.kubernetes.io/zone"));
  EXPECT_EQ(s.topologyLabels.at("topology.kubernetes.io/region"), "eu");
}

TEST(Capacity, AllocatableIsTheSmallerOfGrantAndFree) {
  ResourceMap free = res("cpu=13500m,memory=59Gi,pods=218,nvidia.com/gpu=1");
  ResourceMap a = virtualAllocatable(res("cpu=4,memory=100Gi,nvidia.com/gpu=1,example.com/fpga=2"), free);
  EXPECT_EQ(a["cpu"], q("4"));
  EXPECT_EQ(a["memory"], q("59Gi"));
  EXPECT_EQ(a["nvidia.com/gpu"], q("1"));  // exact, never 90% of 1 = 0
  EXPECT_EQ(a["example.com/fpga"], q("0"));
  EXPECT_EQ(a["pods"], q("218"));  // not in the grant: from the provider
  EXPECT_EQ(virtualAllocatable({}, free), free);
  EXPECT_EQ(virtualAllocatable(res("pods=10"), free)["pods"], q("10"));
}

TEST(Capacity, PodLargerThanAnyNodeGetsAReason) {
  ProviderSummary s = summarizeProvider(
      json::array({node("a", "8", "32Gi"), node("b", "8", "32Gi", true, "z1", "1")}),
      json::array());
  // 12 cpu fits the pooled 16 but no single node.
  auto big = doesNotFitReason(podRequests(pod("", "12", "1Gi")), s);
  ASSERT_TRUE(big.has_value());
  EXPECT_NE(big->find("cpu=12"), std::string::npos) << *big;
  EXPECT_NE(big->find("more than any single provider node"), std::string::npos) << *big;
  EXPECT_NE(big->find("cpu=8"), std::string::npos) << *big;
  EXPECT_FALSE(doesNotFitReason(podRequests(pod("", "8", "32Gi")), s).has_value());
  // A GPU Pod fits only node b.
  json gpuPod = pod("", "1", "1Gi");
  gpuPod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1";
  EXPECT_FALSE(doesNotFitReason(podRequests(gpuPod), s).has_value());
  gpuPod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "2";
  auto noGpu = doesNotFitReason(podRequests(gpuPod), s);
  ASSERT_TRUE(noGpu.has_value());
  EXPECT_NE(noGpu->find("nvidia.com/gpu"), std::string::npos) << *noGpu;
  auto empty = doesNotFitReason(podRequests(pod("", "1", "1Gi")), ProviderSummary{});
  ASSERT_TRUE(empty.has_value());
  EXPECT_NE(empty->find("no Ready schedulable node"), std::string::npos);
}

TEST(Capacity, GarbageInputIsSkipped) {
  ProviderSummary s = summarizeProvider(json::parse(R"([1, {"metadata":3}, {"status":{}}])"),
                                        json::parse(R"([2, {"spec":{"nodeName":5}}])"));
  EXPECT_TRUE(s.nodes.empty());
  EXPECT_TRUE(summarizeProvider(json::object(), json()).nodes.empty());
}

}  // namespace
}  // namespace strait::vnode
