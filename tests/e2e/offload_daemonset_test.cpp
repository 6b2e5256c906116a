// PEERS.md complaint 3 (DaemonSet Pods land on virtual nodes and stay Pending; liqo#1398,
// admiralty#114) against real processes: two `strait minicluster` ("home": 2 nodes,
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

#include "e2e/cluster_fixture.h"
#include "e2e/peering_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

class OffloadDaemonSetTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    home_ = new Minicluster();
    cloud_ = new Minicluster();
    homeAgent_ = new AgentProcess();
    cloudAgent_ = new AgentProcess();
    error_ = home_->start("home", 60s, {"--nodes", "2", "--pod-start-latency", "200ms"});
    if (error_.empty()) error_ = cloud_->start("cloud", 60s, {"--nodes", "2"});
    const std::vector<std::string> common = {"--heartbeat-interval", "300ms", "--lost-after", "3s",
                                             "--kubelet-port", "0"};
    if (error_.empty()) {
      std::vector<std::string> args = common;
      args.insert(args.end(), {"--share", "1"});
      error_ = cloudAgent_->start(cloud_->kubeconfig(), "cloud", args);
    }
    if (error_.empty()) error_ = homeAgent_->start(home_->kubeconfig(), "home", common);
    if (error_.empty()) error_ = peerAndOffload();
  }
  static void TearDownTestSuite() {
    delete homeAgent_;
    delete cloudAgent_;
    delete home_;
    delete cloud_;
    homeAgent_ = cloudAgent_ = nullptr;
    home_ = cloud_ = nullptr;
  }

 protected:
  // `strait peer` home -> cloud, strait-cloud Ready, namespace demo offloaded.
  static std::string peerAndOffload() {
    CommandResult p = runCommand({straitBinary(), "peer", "--kubeconfig", home_->kubeconfig(),
                                  "--remote-kubeconfig", cloud_->kubeconfig(), "--cpu", "8",
                                  "--memory", "16Gi", "--pods", "50"},
                                 {}, 120s);
    if (p.exitCode != 0) return "peer: " + p.describe();
    TempDir cache("strait-offload-ds-setup");
    Env env = {{"KUBECACHEDIR", cache.path() + "/kcache"}, {"HOME", cache.path()}};
    CommandResult ready;
    if (!waitFor([&] {
          ready = runCommand({"kubectl", "--kubeconfig", home_->kubeconfig(), "get", "node",
                              "strait-cloud", "-o",
                              "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"},
                             env, 60s);
          return ready.exitCode == 0 && ready.out == "True";
        }, 60s)) {
      return "virtual node strait-cloud not Ready: " + ready.describe();
    }
    CommandResult ns = runCommand(
        {"kubectl", "--kubeconfig", home_->kubeconfig(), "create", "namespace", "demo"}, env, 60s);
    if (ns.exitCode != 0) return "namespace: " + ns.describe();
    CommandResult off = runCommand(
        {straitBinary(), "offload", "namespace", "demo", "--kubeconfig", home_->kubeconfig()}, {},
        120s);
    return off.exitCode == 0 ? "" : "offload: " + off.describe();
  }

  void SetUp() override {
    ASSERT_TRUE(error_.empty()) << error_;
    dir_ = std::make_unique<TempDir>("strait-offload-ds-test");
  }

  CommandResult kubectl(const Minicluster& c, const std::vector<std::string>& args,
                        const std::string& stdinText = "") {
    std::vector<std::string> argv = {"kubectl", "--kubeconfig", c.kubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    Env env = {{"KUBECACHEDIR", dir_->path() + "/kcache" + std::to_string(++calls_)},
               {"HOME", dir_->path()}};
    return runCommand(argv, env, 60s, stdinText);
  }
  json getJson(const Minicluster& c, const std::vector<std::string>& args) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"-o", "json"});
    CommandResult r = kubectl(c, a);
    if (r.exitCode != 0) return json();
    json j = json::parse(r.out, nullptr, false);
    return j.is_discarded() ? json() : j;
  }
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

  static Minicluster* home_;
  static Minicluster* cloud_;
  static AgentProcess* homeAgent_;
  static AgentProcess* cloudAgent_;
  static std::string error_;
  std::unique_ptr<TempDir> dir_;
  int calls_ = 0;
};

Minicluster* OffloadDaemonSetTest::home_ = nullptr;
Minicluster* OffloadDaemonSetTest::cloud_ = nullptr;
AgentProcess* OffloadDaemonSetTest::homeAgent_ = nullptr;
AgentProcess* OffloadDaemonSetTest::cloudAgent_ = nullptr;
std::string OffloadDaemonSetTest::error_;

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
