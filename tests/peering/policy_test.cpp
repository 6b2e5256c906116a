#include "peering/policy.h"

#include <gtest/gtest.h>

namespace strait::peering {
namespace {

kube::Quantity q(const char* s) { return *kube::Quantity::parse(s); }

ResourceMap res(const std::string& text) { return *parseResourceArg(text); }

TEST(Policy, ParseResourceArg) {
  ResourceMap r = res("cpu=8,memory=16Gi,nvidia.com/gpu=2");
  EXPECT_EQ(r["cpu"], q("8"));
  EXPECT_EQ(r["memory"], q("16Gi"));
  EXPECT_EQ(r["nvidia.com/gpu"], q("2"));
  EXPECT_FALSE(parseResourceArg("cpu").ok());
  EXPECT_FALSE(parseResourceArg("cpu=lots").ok());
  EXPECT_FALSE(parseResourceArg("=1").ok());
  EXPECT_FALSE(parseResourceArg("cpu=-1").ok());
  kube::Result<ResourceMap> bad = parseResourceArg("cpu=1,memory=x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("memory"), std::string::npos);
}

TEST(Policy, FreeAllocatableSubtractsBoundPodsOfReadyNodes) {
  nlohmann::json nodes = nlohmann::json::parse(R"([
    {"metadata":{"name":"a"},"status":{"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"},
      "conditions":[{"type":"Ready","status":"True"}]}},
    {"metadata":{"name":"b"},"status":{"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"},
      "conditions":[{"type":"Ready","status":"False"}]}},
    {"metadata":{"name":"c"},"spec":{"unschedulable":true},
      "status":{"allocatable":{"cpu":"4"},"conditions":[{"type":"Ready","status":"True"}]}}])");
  nlohmann::json pods = nlohmann::json::parse(R"([
    {"spec":{"nodeName":"a","containers":[{"resources":{"requests":{"cpu":"500m","memory":"1Gi"}}},
                                          {"resources":{"requests":{"cpu":"500m"}}}]}},
    {"spec":{"nodeName":"a","containers":[{"resources":{"requests":{"cpu":"1"}}}]},
     "status":{"phase":"Succeeded"}},
    {"spec":{"nodeName":"b","containers":[{"resources":{"requests":{"cpu":"1"}}}]}}])");
  ResourceMap free = freeAllocatable(nodes, pods);
  EXPECT_EQ(free["cpu"], q("3"));
  EXPECT_EQ(free["memory"], q("7Gi"));
  EXPECT_EQ(free["pods"], q("109"));
}

TEST(Policy, BudgetIsAShareWithWholeUnitsForNonCpu) {
  PolicyConfig cfg;
  cfg.share = 0.9;
  ResourceMap b = budgetFor(res("cpu=3,memory=10,nvidia.com/gpu=1,pods=110"), cfg);
  EXPECT_EQ(b["cpu"], q("2700m"));
  EXPECT_EQ(b["memory"], q("9"));
  EXPECT_EQ(b["nvidia.com/gpu"], q("1"));  // not 0 (liqo#1035)
  EXPECT_EQ(b["pods"], q("99"));
  cfg.explicitBudget = res("cpu=1");
  EXPECT_EQ(budgetFor(res("cpu=100"), cfg), res("cpu=1"));
}

TEST(Policy, GrantsNeverExceedTheSharedBudget) {
  PolicyConfig cfg;
  ResourceMap budget = res("cpu=10,memory=16Gi,pods=100");
  ResourceMap a = grantFor(res("cpu=8,memory=8Gi,pods=50"), budget, {}, cfg);
  EXPECT_EQ(a, res("cpu=8,memory=8Gi,pods=50"));
  ResourceMap b = grantFor(res("cpu=8,memory=16Gi,pods=80"), budget, a, cfg);
  EXPECT_EQ(b, res("cpu=2,memory=8Gi,pods=50"));
  ResourceMap sum = addResources(a, b);
  for (const auto& [k, v] : sum) EXPECT_LE(v, budget[k]) << k;
  ResourceMap c = grantFor(res("cpu=1,nvidia.com/gpu=1"), budget, sum, cfg);
  EXPECT_EQ(c, res("cpu=0,nvidia.com/gpu=0"));
}

TEST(Policy, PerConsumerCap) {
  PolicyConfig cfg;
  cfg.perConsumerCap = res("cpu=2");
  ResourceMap g = grantFor(res("cpu=8,memory=1Gi"), res("cpu=10,memory=4Gi"), {}, cfg);
  EXPECT_EQ(g, res("cpu=2,memory=1Gi"));
}

TEST(Policy, PodRequestsCountsInitContainersAsMax) {
  nlohmann::json pods = nlohmann::json::parse(R"([
    {"spec":{"initContainers":[{"resources":{"requests":{"cpu":"2"}}}],
             "containers":[{"resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}])");
  ResourceMap r = podRequests(pods);
  EXPECT_EQ(r["cpu"], q("2"));
  EXPECT_EQ(r["memory"], q("1Gi"));
  EXPECT_EQ(r["pods"], q("1"));
}

TEST(PolicyTest, AGrantOfNothingIsRefusedNamingWhat) {
  auto q = [](const char* v) { return *kube::Quantity::parse(v); };
  kube::Status none = checkGrantNotEmpty({{"cpu", q("0")}, {"memory", q("0")}, {"pods", q("0")},
                                          {"nvidia.com/gpu", q("2")}});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, kube::Code::Forbidden);
  EXPECT_NE(none.error().message.find("nothing to lend (cpu=0, memory=0, pods=0)"),
            std::string::npos)
      << none.error().message;
  EXPECT_FALSE(checkGrantNotEmpty({}).ok());
  EXPECT_TRUE(checkGrantNotEmpty({{"cpu", q("0")}, {"memory", q("0")}, {"pods", q("1")}}).ok());
  EXPECT_TRUE(checkGrantNotEmpty({{"cpu", q("500m")}}).ok());
}

}  // namespace
}  // namespace strait::peering
