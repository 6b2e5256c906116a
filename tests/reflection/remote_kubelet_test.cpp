// The pure parts of the provider side of the virtual kubelet API: which remote Pods a
// consumer sees, as it knows them, and the stats summary built from them.
#include "reflection/remote_kubelet.h"

#include <gtest/gtest.h>

#include "reflection/labels.h"

namespace strait::reflection {
namespace {

using nlohmann::json;

const std::string kConsumer = "c0ffee00-0000-4000-8000-000000000001";

json remotePod(const std::string& ns, const std::string& owner) {
  json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata",
             {{"name", "web-1"},
              {"namespace", ns},
              {"uid", "remote-uid"},
              {"resourceVersion", "42"},
              {"labels",
               {{std::string(kLabelOriginClusterId), owner},
                {std::string(kLabelOriginUid), "local-uid"}}},
              {"annotations", {{std::string(kAnnotationOriginNamespace), "web"}}}}},
            {"status",
             {{"phase", "Running"},
              {"startTime", "2026-11-30T05:00:00Z"},
              {"containerStatuses",
               {{{"name", "app"}, {"state", {{"running", {{"startedAt", "2026-11-30T05:00:01Z"}}}}}}}}}}};
  return p;
}

TEST(RemoteKubeletTest, ConsumerSeesItsPodUnderItsOwnNamespaceAndUid) {
  NamespaceMapping m(kConsumer, NamingStrategy::Default);
  json seen = podAsConsumerSees(remotePod("web-" + kConsumer, kConsumer), m);
  ASSERT_TRUE(seen.is_object());
  EXPECT_EQ(seen["metadata"]["namespace"], "web");
  EXPECT_EQ(seen["metadata"]["uid"], "local-uid");
  EXPECT_FALSE(seen["metadata"].contains("resourceVersion"));
  EXPECT_EQ(seen["status"]["phase"], "Running");
}

TEST(RemoteKubeletTest, AnotherConsumersPodIsInvisible) {
  NamespaceMapping m(kConsumer, NamingStrategy::Default);
  EXPECT_TRUE(podAsConsumerSees(remotePod("web-" + kConsumer, "someone-else"), m).is_null());
  json unlabelled = remotePod("web-" + kConsumer, kConsumer);
  unlabelled["metadata"].erase("labels");
  EXPECT_TRUE(podAsConsumerSees(unlabelled, m).is_null());
}

TEST(RemoteKubeletTest, SameNameMappingKeepsTheNamespace) {
  NamespaceMapping m(kConsumer, NamingStrategy::SameName);
  json seen = podAsConsumerSees(remotePod("web", kConsumer), m);
  ASSERT_TRUE(seen.is_object());
  EXPECT_EQ(seen["metadata"]["namespace"], "web");
}

TEST(RemoteKubeletTest, StatsSummaryListsPodsWithStartTimesAndNoInventedUsage) {
  NamespaceMapping m(kConsumer, NamingStrategy::Default);
  json list = {{"items", json::array({podAsConsumerSees(remotePod("web-" + kConsumer, kConsumer), m)})}};
  json s = statsSummaryOf(list);
  ASSERT_EQ(s["pods"].size(), 1u);
  const json& p = s["pods"][0];
  EXPECT_EQ(p["podRef"]["name"], "web-1");
  EXPECT_EQ(p["podRef"]["namespace"], "web");
  EXPECT_EQ(p["podRef"]["uid"], "local-uid");
  EXPECT_EQ(p["startTime"], "2026-11-30T05:00:00Z");
  EXPECT_EQ(p["containers"][0]["name"], "app");
  EXPECT_EQ(p["containers"][0]["startTime"], "2026-11-30T05:00:01Z");
  EXPECT_FALSE(p.contains("cpu"));
  EXPECT_FALSE(p.contains("memory"));
}

TEST(RemoteKubeletTest, StatsSummaryCarriesTheProvidersUsageUnderTheConsumersNames) {
  NamespaceMapping m(kConsumer, NamingStrategy::Default);
  json list = {{"items", json::array({podAsConsumerSees(remotePod("web-" + kConsumer, kConsumer), m)})}};
  // PodMetrics as the provider's metrics.k8s.io serves them, keyed by the consumer's names.
  json metrics = {{"timestamp", "2026-11-30T05:01:00Z"},
                  {"containers",
                   {{{"name", "app"}, {"usage", {{"cpu", "250m"}, {"memory", "64Mi"}}}}}}};
  json s = statsSummaryOf(list, {{"web/web-1", metrics}});
  const json& p = s["pods"][0];
  EXPECT_EQ(p["podRef"]["namespace"], "web");
  EXPECT_EQ(p["containers"][0]["cpu"]["usageNanoCores"], 250000000u);
  EXPECT_EQ(p["containers"][0]["cpu"]["time"], "2026-11-30T05:01:00Z");
  EXPECT_EQ(p["containers"][0]["memory"]["workingSetBytes"], 64u * 1024 * 1024);
  EXPECT_EQ(p["cpu"]["usageNanoCores"], 250000000u);
  EXPECT_EQ(p["memory"]["workingSetBytes"], 64u * 1024 * 1024);
  // Metrics of a Pod under another name are not this Pod's.
  json other = statsSummaryOf(list, {{"web-" + kConsumer + "/web-1", metrics}});
  EXPECT_FALSE(other["pods"][0]["containers"][0].contains("cpu"));
  EXPECT_FALSE(other["pods"][0].contains("cpu"));
}

TEST(RemoteKubeletTest, CreateNamesTheMissingOption) {
  auto r = RemoteKubelet::create({});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("provider"), std::string::npos);
}

}  // namespace
}  // namespace strait::reflection
