// DaemonSet Pods must not land on virtual nodes and stay Pending (liqo#1398,
// admiralty#114), against real processes: two `strait minicluster` ("home": 2 nodes,
// "cloud": 2 nodes), a `strait agent` on each, `strait peer`, `strait offload namespace
// demo`, and a DaemonSet tolerating every taint, as kube-proxy does.
//  - With the agent's DaemonSet webhook: the template gets `type NotIn [virtual-kubelet]`,
//    one Pod runs on each real home node, none is bound to strait-cloud, the DaemonSet is
//    fully ready (desired = ready = 2) and the cloud holds nothing.
//  - With the webhook removed: the daemon Pod bound to strait-cloud is refused by the
//    reflector (status reason DaemonSetPodNotOffloaded) and never created in the cloud.
// Each test sets up its own clusters (ctest runs every test in a process of its own).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "e2e/offload_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

class OffloadDaemonSetTest : public OffloadSuite {
 public:
  static void SetUpTestSuite() {
    OffloadSetup s;
    s.homeArgs = {"--nodes", "2", "--pod-start-latency", "200ms"};
    s.cloudArgs = {"--nodes", "2"};
    s.peerArgs = {"--cpu", "8", "--memory", "16Gi", "--pods", "50"};
    startAll(s);
  }
  static void TearDownTestSuite() { stopAll(); }

 protected:
  static std::string daemonSet(const std::string& name) {
    return R"({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":")" + name +
           R"(","namespace":"demo"},"spec":{"selector":{"matchLabels":{"app":")" + name +
           R"("}},"template":{"metadata":{"labels":{"app":")" + name +
           R"("}},"spec":{"terminationGracePeriodSeconds":1,"tolerations":[{"operator":"Exists"}],
             "containers":[{"name":"c","image":"fluent-bit:3"}]}}}})";
  }
  // Live daemon Pods of `app` at home.
  std::vector<json> homePods(const std::string& app) {
    std::vector<json> out;
    json pods = getJson(*home_, {"get", "pods", "-n", "demo", "-l", "app=" + app});
    for (const json& p : pods.value("items", json::array())) {
      if (!p["metadata"].contains("deletionTimestamp")) out.push_back(p);
    }
    return out;
  }
  // Every Pod in the cloud (all namespaces).
  size_t cloudPodCount() {
    json pods = getJson(*cloud_, {"get", "pods", "-A"});
    size_t n = 0;
    for (const json& p : pods.value("items", json::array())) {
      if (p["metadata"].value("namespace", "").rfind("demo", 0) == 0) ++n;
    }
    return n;
  }
  std::string diagnostics(const std::string& app) {
    std::string s = "\n--- ds ---\n" + getJson(*home_, {"get", "ds", app, "-n", "demo"}).dump();
    s += "\n--- pods ---\n";
    for (const json& p : homePods(app)) {
      s += p["metadata"].value("name", "") + " node=" + p["spec"].value("nodeName", "") +
           " phase=" + p["status"].value("phase", "") + " reason=" +
           p["status"].value("reason", "") + "\n";
    }
    std::string logs = homeAgent_->logs();
    return s + "--- home agent ---\n" + (logs.size() > 4000 ? logs.substr(logs.size() - 4000) : logs);
  }
};

TEST_F(OffloadDaemonSetTest, TolerateAllDaemonSetRunsOnRealNodesOnlyAndIsReady) {
  CommandResult cfg = kubectl(*home_, {"get", "mutatingwebhookconfiguration", "strait-offloading",
                                       "-o", "jsonpath={.webhooks[1].name} {.webhooks[1].rules[0].resources[0]} "
                                             "{.webhooks[1].failurePolicy} {.webhooks[1].sideEffects}"});
  ASSERT_EQ(cfg.exitCode, 0) << cfg.describe();
  EXPECT_EQ(cfg.out, "daemonsets.offloading.strait.io daemonsets Ignore None");

  CommandResult r = kubectl(*home_, {"apply", "-f", "-"}, daemonSet("logger"));
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  json ds = getJson(*home_, {"get", "ds", "logger", "-n", "demo"});
  json terms = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                 ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 1u) << ds.dump();
  EXPECT_EQ(terms[0]["matchExpressions"][0],
            json({{"key", "type"}, {"operator", "NotIn"}, {"values", json::array({"virtual-kubelet"})}}));

  // One Running Pod on each real node, the DaemonSet fully ready.
  ASSERT_TRUE(waitFor([&] {
    auto pods = homePods("logger");
    std::set<std::string> nodes;
    for (const json& p : pods) {
      if (p["status"].value("phase", "") == "Running") nodes.insert(p["spec"].value("nodeName", ""));
    }
    json st = getJson(*home_, {"get", "ds", "logger", "-n", "demo"}).value("status", json::object());
    return pods.size() == 2 && nodes == std::set<std::string>{"node-0", "node-1"} &&
           st.value("desiredNumberScheduled", -1) == 2 && st.value("numberReady", -1) == 2 &&
           st.value("numberAvailable", -1) == 2;
  }, 120s)) << diagnostics("logger");
  r = kubectl(*home_, {"rollout", "status", "ds/logger", "-n", "demo", "--timeout=30s"});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  for (const json& p : homePods("logger")) {
    EXPECT_NE(p["spec"].value("nodeName", ""), "strait-cloud") << p.dump();
    EXPECT_EQ(p["status"].value("phase", ""), "Running") << p.dump();
  }
  json onVnode = getJson(*home_, {"get", "pods", "-A", "--field-selector", "spec.nodeName=strait-cloud"});
  EXPECT_TRUE(onVnode.value("items", json::array()).empty()) << onVnode.dump();
  EXPECT_EQ(cloudPodCount(), 0u);
  EXPECT_NE(homeAgent_->logs().find("event=daemonset_kept_off_virtual_nodes namespace=demo name=logger"),
            std::string::npos);

  // An update keeps the exclusion (the webhook runs on UPDATE too) and stays idempotent.
  r = kubectl(*home_, {"set", "image", "ds/logger", "-n", "demo", "c=fluent-bit:4"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  ds = getJson(*home_, {"get", "ds", "logger", "-n", "demo"});
  terms = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 1u);
  EXPECT_EQ(terms[0]["matchExpressions"].size(), 1u) << ds.dump();
  r = kubectl(*home_, {"rollout", "status", "ds/logger", "-n", "demo", "--timeout=90s"});
  EXPECT_EQ(r.exitCode, 0) << r.describe() << diagnostics("logger");
  EXPECT_EQ(cloudPodCount(), 0u);
}

TEST_F(OffloadDaemonSetTest, WithoutTheWebhookTheReflectorRefusesTheDaemonPod) {
  CommandResult r = kubectl(*home_, {"delete", "mutatingwebhookconfiguration", "strait-offloading"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  r = kubectl(*home_, {"apply", "-f", "-"}, daemonSet("bare"));
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  json ds = getJson(*home_, {"get", "ds", "bare", "-n", "demo"});
  EXPECT_FALSE(ds["spec"]["template"]["spec"].contains("affinity")) << ds.dump();

  // The DaemonSet controller wants a Pod on strait-cloud too (it tolerates every taint); the
  // reflector refuses it with its reason and creates nothing in the cloud.
  json vnodePod;
  ASSERT_TRUE(waitFor([&] {
    for (const json& p : homePods("bare")) {
      if (p["spec"].value("nodeName", "") == "strait-cloud" &&
          p["status"].value("reason", "") == "DaemonSetPodNotOffloaded") {
        vnodePod = p;
        return true;
      }
    }
    return false;
  }, 120s)) << diagnostics("bare");
  EXPECT_NE(vnodePod["status"].value("message", "").find("strait-cloud"), std::string::npos);
  EXPECT_NE(vnodePod["status"].value("phase", ""), "Running");
  ASSERT_TRUE(waitFor([&] {
    json st = getJson(*home_, {"get", "ds", "bare", "-n", "demo"}).value("status", json::object());
    return st.value("desiredNumberScheduled", -1) == 3 && st.value("numberReady", -1) == 2;
  }, 60s)) << diagnostics("bare");
  EXPECT_EQ(cloudPodCount(), 0u);
  json events = getJson(*home_, {"get", "events", "-n", "demo", "--field-selector",
                                 "reason=DaemonSetPodNotOffloaded"});
  EXPECT_FALSE(events.value("items", json::array()).empty());
}

}  // namespace
}  // namespace strait::e2e
