// peering/summary.h: the provider summary survives the wire (HeartbeatResponse.summary) and
// bad quantities from the network are dropped, never fatal.
#include "peering/summary.h"

#include <gtest/gtest.h>

namespace strait::peering {
namespace {

using nlohmann::json;

json node(const std::string& name, const std::string& cpu, bool ready, const std::string& zone) {
  return {{"metadata",
           {{"name", name},
            {"labels",
             {{"topology.kubernetes.io/region", "eu"}, {"topology.kubernetes.io/zone", zone}}}}},
          {"status",
           {{"allocatable", {{"cpu", cpu}, {"memory", "8Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "1"}}},
            {"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}};
}

TEST(SummaryTest, RoundTripsThroughTheHeartbeatMessage) {
  json pods = json::array({{{"spec", {{"nodeName", "b"},
                                       {"containers", {{{"resources", {{"requests", {{"cpu", "500m"}}}}}}}}}}}});
  ProviderSummary s = summarizeProvider(
      json::array({node("a", "2", true, "z1"), node("b", "8", true, "z1"), node("c", "16", false, "z1")}),
      pods);
  ASSERT_EQ(s.nodes.size(), 2u);  // c is not Ready
  EXPECT_EQ(s.nodes[0].name, "b");  // largest free cpu first
  EXPECT_EQ(s.nodes[0].free.at("cpu").toString(), "7500m");
  EXPECT_EQ(s.pooledFree.at("cpu").toString(), "9500m");
  EXPECT_EQ(s.pooledFree.at("nvidia.com/gpu").toString(), "2");
  EXPECT_EQ(s.topologyLabels.at("topology.kubernetes.io/zone"), "z1");

  v1::HeartbeatResponse resp;
  summaryToProto(s, resp.mutable_summary());
  v1::HeartbeatResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(resp.SerializeAsString()));
  EXPECT_EQ(summaryFromProto(parsed.summary()), s);
}

TEST(SummaryTest, BadQuantitiesFromTheWireAreDropped) {
  v1::ProviderSummary p;
  (*p.mutable_pooled_free()->mutable_items())["cpu"] = "lots";
  (*p.mutable_pooled_free()->mutable_items())["memory"] = "-1Gi";
  (*p.mutable_pooled_free()->mutable_items())["pods"] = "10";
  v1::NodeFree* n = p.add_nodes();
  n->set_name("x");
  (*n->mutable_free()->mutable_items())["cpu"] = "12 cores";
  ProviderSummary s = summaryFromProto(p);
  EXPECT_EQ(s.pooledFree.size(), 1u);
  EXPECT_EQ(s.pooledFree.at("pods").toString(), "10");
  ASSERT_EQ(s.nodes.size(), 1u);
  EXPECT_TRUE(s.nodes[0].free.empty());
  EXPECT_TRUE(summaryFromProto(v1::ProviderSummary()).nodes.empty());
}

}  // namespace
}  // namespace strait::peering
