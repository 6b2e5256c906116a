// planFabric: the fabric ConfigMap turned into a node's routes, bad entries ignored with a
// warning that names them.
#include "cmd/fabric_config.h"

#include <gtest/gtest.h>

namespace strait::cmd {
namespace {

nlohmann::json configMap(const std::string& node, const std::string& ip, const std::string& cidrs) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", "strait-fabric"}, {"namespace", "strait-system"}}},
          {"data", {{"gatewayNode", node}, {"gatewayIP", ip}, {"cidrs", cidrs}}}};
}

bool notLocal(const tunnel::IpAddress&) { return false; }

TEST(FabricConfigTest, OneRoutePerCidrViaTheGateway) {
  auto cm = configMap("home-node-0", "100.64.17.2", "10.240.0.0/16,10.241.0.0/16");
  FabricPlan plan = planFabric(&cm, "home-node-1", notLocal);
  ASSERT_TRUE(plan.usable) << plan.error;
  EXPECT_FALSE(plan.isGatewayNode);
  ASSERT_EQ(plan.routes.size(), 2u);
  EXPECT_EQ(plan.routes[0].toString(), "10.240.0.0/16 via 100.64.17.2");
  EXPECT_EQ(plan.routes[1].toString(), "10.241.0.0/16 via 100.64.17.2");
  EXPECT_TRUE(plan.warnings.empty());
}

TEST(FabricConfigTest, TheGatewayNodeRoutesNothing) {
  auto cm = configMap("home-node-0", "100.64.17.2", "10.240.0.0/16");
  EXPECT_TRUE(planFabric(&cm, "home-node-0", notLocal).routes.empty());
  // Another name, but the gateway's address is one of this namespace's.
  FabricPlan byAddress = planFabric(&cm, "renamed", [](const tunnel::IpAddress& a) {
    return a.toString() == "100.64.17.2";
  });
  EXPECT_TRUE(byAddress.isGatewayNode);
  EXPECT_TRUE(byAddress.routes.empty());
}

TEST(FabricConfigTest, NoConfigMapMeansNoRoutes) {
  FabricPlan plan = planFabric(nullptr, "n", notLocal);
  EXPECT_TRUE(plan.usable);
  EXPECT_TRUE(plan.routes.empty());
  auto empty = configMap("g", "100.64.17.2", "");
  plan = planFabric(&empty, "n", notLocal);
  EXPECT_TRUE(plan.usable);
  EXPECT_TRUE(plan.routes.empty());
}

TEST(FabricConfigTest, BadEntriesAreIgnoredWithAWarningAndTheRestApplied) {
  auto cm = configMap("g", "100.64.17.2",
                      " 10.240.0.0/16 , 10.241.0.0/33,banana,10.242.0.5/16,fd00::/64,"
                      "100.64.0.0/10,10.240.0.0/16,10.243.0.0/16");
  FabricPlan plan = planFabric(&cm, "n", notLocal);
  ASSERT_TRUE(plan.usable);
  ASSERT_EQ(plan.routes.size(), 2u);
  EXPECT_EQ(plan.routes[0].destination.toString(), "10.240.0.0/16");
  EXPECT_EQ(plan.routes[1].destination.toString(), "10.243.0.0/16");
  ASSERT_EQ(plan.warnings.size(), 6u);
  EXPECT_EQ(plan.warnings[0].rfind("cidrs entry 2 \"10.241.0.0/33\": ", 0), 0u) << plan.warnings[0];
  EXPECT_EQ(plan.warnings[1],
            "cidrs entry 3 \"banana\": not a CIDR (expected ADDRESS/PREFIX-LENGTH, e.g. "
            "10.240.0.0/16); ignored");
  EXPECT_EQ(plan.warnings[2],
            "cidrs entry 4 \"10.242.0.5/16\": host bits are set (the network is "
            "10.242.0.0/16); ignored");
  EXPECT_EQ(plan.warnings[3],
            "cidrs entry 5 \"fd00::/64\": its address family differs from gatewayIP "
            "100.64.17.2; ignored");
  EXPECT_EQ(plan.warnings[4],
            "cidrs entry 6 \"100.64.0.0/10\": it contains gatewayIP 100.64.17.2; ignored");
  EXPECT_EQ(plan.warnings[5], "cidrs entry 7 \"10.240.0.0/16\": listed twice; ignored");
}

TEST(FabricConfigTest, AMissingOrBadGatewayIpMakesTheConfigMapUnusable) {
  auto missing = configMap("g", "", "10.240.0.0/16");
  FabricPlan plan = planFabric(&missing, "n", notLocal);
  EXPECT_FALSE(plan.usable);
  EXPECT_EQ(plan.error, "data.gatewayIP is missing");
  auto bad = configMap("g", "100.64.17", "10.240.0.0/16");
  plan = planFabric(&bad, "n", notLocal);
  EXPECT_FALSE(plan.usable);
  EXPECT_EQ(plan.error.rfind("data.gatewayIP \"100.64.17\": ", 0), 0u) << plan.error;
}

}  // namespace
}  // namespace strait::cmd
