// The kubelet stats Summary built from usage samples, CPU rates between samples, and the
// metrics.k8s.io objects built from a Summary.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "minicluster/metrics_api.h"
#include "minicluster/stats_summary.h"

namespace strait::minicluster {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;
using SysClock = std::chrono::system_clock;

TEST(CpuRateTrackerTest, RateNeedsAnEarlierSampleOfTheSameInstance) {
  CpuRateTracker t(500ms);
  Steady::time_point t0{};
  EXPECT_FALSE(t.hasBaseline("a", t0));
  EXPECT_FALSE(t.rate("a", t0, 1'000'000'000));
  EXPECT_FALSE(t.hasBaseline("a", t0 + 100ms));
  EXPECT_TRUE(t.hasBaseline("a", t0 + 500ms));
  // 0.5 s of CPU in 1 s: half a core.
  EXPECT_EQ(t.rate("a", t0 + 1s, 1'500'000'000), 500'000'000u);
  // Too soon after the last sample: the rate spans back to the one before it.
  EXPECT_EQ(t.rate("a", t0 + 1100ms, 1'600'000'000), 545'454'545u);
  // Another instance has its own history; a counter going back gives no rate.
  EXPECT_FALSE(t.rate("b", t0 + 2s, 5));
  EXPECT_FALSE(t.rate("a", t0 + 3s, 1));
  t.forgetOlderThan(t0 + 10s);
  EXPECT_FALSE(t.hasBaseline("b", t0 + 20s));
}

TEST(StatsSummaryTest, ShapeOfTheKubeletSummaryWithSumsPerPodAndNode) {
  CpuRateTracker rates(500ms);
  Steady::time_point s0{};
  SysClock::time_point now = SysClock::from_time_t(1800000000);
  PodStats p;
  p.ns = "default";
  p.name = "web";
  p.uid = "u1";
  p.startTime = now - 60s;
  ContainerStats a{"a", "u1/a/0", now - 50s, {}};
  a.usage.cpuNs = 1'000'000'000;
  a.usage.memoryUsage = 3000;
  a.usage.workingSet = 2000;
  a.usage.rss = 1000;
  ContainerStats b = a;
  b.name = "b";
  b.instance = "u1/b/0";
  p.containers = {a, b};
  // First sample: no rate yet, cumulative figures already.
  json first = buildStatsSummary("node-0", now - 600s, {p}, now, s0, rates);
  EXPECT_FALSE(first["pods"][0]["containers"][0]["cpu"].contains("usageNanoCores"));
  EXPECT_EQ(first["pods"][0]["containers"][0]["cpu"]["usageCoreNanoSeconds"], 1'000'000'000u);
  EXPECT_FALSE(first["pods"][0]["cpu"].contains("usageNanoCores"));
  // A second later, container a used 0.25 s more and b 1 s more.
  p.containers[0].usage.cpuNs = 1'250'000'000;
  p.containers[1].usage.cpuNs = 2'000'000'000;
  json s = buildStatsSummary("node-0", now - 600s, {p}, now + 1s, s0 + 1s, rates);
  EXPECT_EQ(s["node"]["nodeName"], "node-0");
  EXPECT_EQ(s["node"]["startTime"], "2027-01-15T07:50:00Z");
  const json& pod = s["pods"][0];
  EXPECT_EQ(pod["podRef"], (json{{"name", "web"}, {"namespace", "default"}, {"uid", "u1"}}));
  EXPECT_EQ(pod["startTime"], "2027-01-15T07:59:00Z");
  const json& ca = pod["containers"][0];
  EXPECT_EQ(ca["name"], "a");
  EXPECT_EQ(ca["startTime"], "2027-01-15T07:59:10Z");
  EXPECT_EQ(ca["cpu"]["time"], "2027-01-15T08:00:01Z");
  EXPECT_EQ(ca["cpu"]["usageNanoCores"], 250'000'000u);
  EXPECT_EQ(ca["cpu"]["usageCoreNanoSeconds"], 1'250'000'000u);
  EXPECT_EQ(ca["memory"]["usageBytes"], 3000u);
  EXPECT_EQ(ca["memory"]["workingSetBytes"], 2000u);
  EXPECT_EQ(ca["memory"]["rssBytes"], 1000u);
  EXPECT_EQ(pod["cpu"]["usageNanoCores"], 1'250'000'000u);
  EXPECT_EQ(pod["memory"]["workingSetBytes"], 4000u);
  EXPECT_EQ(s["node"]["cpu"]["usageNanoCores"], 1'250'000'000u);
  EXPECT_EQ(s["node"]["cpu"]["usageCoreNanoSeconds"], 3'250'000'000u);
  EXPECT_EQ(s["node"]["memory"]["usageBytes"], 6000u);
}

TEST(StatsSummaryTest, UnknownFiguresAreLeftOutNotZero) {
  CpuRateTracker rates;
  PodStats p;
  p.ns = "n";
  p.name = "p";
  p.containers = {ContainerStats{"c", "i", {}, {}}};
  json s = buildStatsSummary("node", {}, {p}, {}, {}, rates);
  const json& c = s["pods"][0]["containers"][0];
  EXPECT_FALSE(c["cpu"].contains("usageCoreNanoSeconds"));
  EXPECT_FALSE(c["memory"].contains("workingSetBytes"));
  EXPECT_FALSE(s["node"]["memory"].contains("usageBytes"));
  // A node without Pods uses nothing.
  json empty = buildStatsSummary("node", {}, {}, {}, {}, rates);
  EXPECT_EQ(empty["node"]["cpu"]["usageCoreNanoSeconds"], 0u);
  EXPECT_TRUE(empty["pods"].empty());
}

TEST(MetricsApiTest, NodeAndPodMetricsFromASummary) {
  json summary = {
      {"node",
       {{"nodeName", "n1"},
        {"cpu", {{"time", "2026-12-01T10:00:00Z"}, {"usageNanoCores", 1234567}}},
        {"memory", {{"time", "2026-12-01T10:00:00Z"}, {"workingSetBytes", 2048 * 1024}}}}},
      {"pods",
       {{{"podRef", {{"name", "web"}, {"namespace", "default"}}},
         {"containers",
          {{{"name", "c"},
            {"cpu", {{"time", "2026-12-01T10:00:00Z"}, {"usageNanoCores", 150000000}}},
            {"memory", {{"time", "2026-12-01T10:00:00Z"}, {"workingSetBytes", 10240}}}}}}}}}};
  json node = {{"metadata", {{"name", "n1"}, {"labels", {{"a", "b"}}}}}};
  json nm = nodeMetricsOf(node, summary);
  EXPECT_EQ(nm["kind"], "NodeMetrics");
  EXPECT_EQ(nm["apiVersion"], "metrics.k8s.io/v1beta1");
  EXPECT_EQ(nm["metadata"]["name"], "n1");
  EXPECT_EQ(nm["metadata"]["labels"]["a"], "b");
  EXPECT_EQ(nm["timestamp"], "2026-12-01T10:00:00Z");
  EXPECT_EQ(nm["usage"]["cpu"], "1234567n");
  EXPECT_EQ(nm["usage"]["memory"], "2048Ki");
  json pod = {{"metadata", {{"name", "web"}, {"namespace", "default"}}}};
  json pm = podMetricsOf(pod, summary["pods"][0]);
  EXPECT_EQ(pm["kind"], "PodMetrics");
  EXPECT_EQ(pm["metadata"]["namespace"], "default");
  ASSERT_EQ(pm["containers"].size(), 1u);
  EXPECT_EQ(pm["containers"][0]["name"], "c");
  EXPECT_EQ(pm["containers"][0]["usage"]["cpu"], "150000000n");
  EXPECT_EQ(pm["containers"][0]["usage"]["memory"], "10Ki");
}

TEST(MetricsApiTest, NoUsageNoMetrics) {
  json noUsage = {{"node", {{"nodeName", "n"}}},
                  {"pods", {{{"podRef", {{"name", "p"}}}, {"containers", {{{"name", "c"}}}}}}}};
  EXPECT_TRUE(nodeMetricsOf(json::object(), noUsage).is_null());
  EXPECT_TRUE(podMetricsOf(json::object(), noUsage["pods"][0]).is_null());
  EXPECT_TRUE(podMetricsOf(json::object(), json{{"containers", json::array()}}).is_null());
}

TEST(MetricsApiTest, DiscoveryAddsTheGroupOnce) {
  json groups = {{"groups", json::array()}};
  addMetricsGroup(groups);
  addMetricsGroup(groups);
  ASSERT_EQ(groups["groups"].size(), 1u);
  EXPECT_EQ(groups["groups"][0]["name"], "metrics.k8s.io");
  EXPECT_EQ(groups["groups"][0]["preferredVersion"]["groupVersion"], "metrics.k8s.io/v1beta1");
  json agg = {{"items", json::array()}};
  addMetricsAggregatedDiscovery(agg);
  ASSERT_EQ(agg["items"].size(), 1u);
  const json& v = agg["items"][0]["versions"][0];
  EXPECT_EQ(v["version"], "v1beta1");
  EXPECT_EQ(v["resources"][0]["resource"], "nodes");
  EXPECT_EQ(v["resources"][0]["scope"], "Cluster");
  EXPECT_EQ(v["resources"][1]["resource"], "pods");
  EXPECT_EQ(v["resources"][1]["responseKind"]["kind"], "PodMetrics");
  EXPECT_TRUE(isMetricsApiPath("/apis/metrics.k8s.io/v1beta1/pods"));
  EXPECT_FALSE(isMetricsApiPath("/apis/metrics.k8s.io.evil/v1"));
}

}  // namespace
}  // namespace strait::minicluster
