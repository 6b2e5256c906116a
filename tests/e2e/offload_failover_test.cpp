// Failover when a provider dies, with real processes and real kubectl: one consumer ("home")
// peered with two providers ("cloud-a", "cloud-b"), namespace "web" offloaded with the Remote
// strategy, a Deployment of 4 replicas spread over both virtual nodes (topology spread on
// kubernetes.io/hostname, ScheduleAnyway) whose Pods tolerate not-ready/unreachable for 2 s
// only. Then cloud-a's agent is killed with SIGKILL: the stream from home breaks, after the
// virtual node's stream grace (--vnode-stream-grace 3s here) strait-cloud-a turns NotReady,
// home's node lifecycle controller taints it node.kubernetes.io/not-ready:NoExecute and evicts
// its Pods once their tolerationSeconds run out, and the Deployment's replacements are
// scheduled on strait-cloud-b and run in cloud-b. The test logs the measured times (kill ->
// NotReady, kill -> all 4 replicas Running elsewhere) and fails past 90 s.

#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "e2e/two_providers_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string deployment() {
  json tolerate = json::array();
  for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    tolerate.push_back(
        {{"key", key}, {"operator", "Exists"}, {"effect", "NoExecute"}, {"tolerationSeconds", 2}});
  }
  json spec = {{"terminationGracePeriodSeconds", 1},
               {"tolerations", tolerate},
               {"topologySpreadConstraints",
                json::array({{{"maxSkew", 1},
                              {"topologyKey", "kubernetes.io/hostname"},
                              {"whenUnsatisfiable", "ScheduleAnyway"},
                              {"labelSelector", {{"matchLabels", {{"app", "web"}}}}}}})},
               {"containers", json::array({{{"name", "c"},
                                            {"image", "busybox"},
                                            {"resources", {{"requests", {{"cpu", "100m"}}}}}}})}};
  json d = {{"apiVersion", "apps/v1"},
            {"kind", "Deployment"},
            {"metadata", {{"name", "web"}, {"namespace", "web"}}}};
  d["spec"]["replicas"] = 4;
  d["spec"]["selector"]["matchLabels"]["app"] = "web";
  d["spec"]["template"]["metadata"]["labels"]["app"] = "web";
  d["spec"]["template"]["spec"] = spec;
  return d.dump();
}

TEST(OffloadFailoverTest, KilledProvidersReplicasMoveToTheOtherProvider) {
  TwoProviders t("strait-failover");
  ASSERT_EQ(t.start({"--vnode-stream-grace", "3s"}), "");
  Minicluster &home = t.home, &cloudB = t.cloudB;
  AgentProcess& agentA = t.agentA;
  auto diagnostics = [&] { return t.diagnostics(); };
  auto kubectlOn = [&](const Minicluster& c, const std::vector<std::string>& args,
                       const std::string& in = "") { return t.kubectlOn(c, args, in); };
  auto kubectl = [&](const std::vector<std::string>& args, const std::string& in = "") {
    return t.kubectl(args, in);
  };
  auto ready = [&](const std::string& node) {
    return kubectl({"get", "node", node, "-o",
                    "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"})
        .out;
  };
  for (const std::string node : {"strait-cloud-a", "strait-cloud-b"}) {
    ASSERT_TRUE(waitFor([&] { return ready(node) == "True"; }, 60s)) << node << diagnostics();
  }
  ASSERT_EQ(kubectl({"create", "namespace", "web"}).exitCode, 0);
  CommandResult off = runCommand({straitBinary(), "offload", "namespace", "web", "--kubeconfig",
                                  home.kubeconfig(), "--pod-offloading-strategy", "Remote"},
                                 {}, 60s);
  ASSERT_EQ(off.exitCode, 0) << off.describe();
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, deployment()).exitCode, 0);

  // Running, not terminating, Pods of the Deployment by node.
  auto placement = [&] {
    std::map<std::string, int> byNode;
    json l = json::parse(kubectl({"get", "pods", "-n", "web", "-o", "json"}).out, nullptr, false);
    if (!l.is_object()) return byNode;
    for (const json& p : l.value("items", json::array())) {
      if (p["metadata"].contains("deletionTimestamp")) continue;
      if (p.value("/status/phase"_json_pointer, std::string()) != "Running") continue;
      ++byNode[p.value("/spec/nodeName"_json_pointer, std::string())];
    }
    return byNode;
  };
  auto describe = [&](const std::map<std::string, int>& m) {
    std::string s;
    for (const auto& [node, count] : m) s += node + "=" + std::to_string(count) + " ";
    return s;
  };
  std::map<std::string, int> before;
  ASSERT_TRUE(waitFor(
      [&] {
        before = placement();
        return before["strait-cloud-a"] + before["strait-cloud-b"] == 4;
      },
      90s))
      << describe(before) << diagnostics();
  ASSERT_GE(before["strait-cloud-a"], 1) << "not spread: " << describe(before);
  ASSERT_GE(before["strait-cloud-b"], 1) << "not spread: " << describe(before);

  const auto killed = Clock::now();
  agentA.kill();  // SIGKILL
  ASSERT_TRUE(waitFor([&] { return ready("strait-cloud-a") == "False"; }, 60s)) << diagnostics();
  const auto notReady = Clock::now();
  std::map<std::string, int> after;
  ASSERT_TRUE(waitFor(
      [&] {
        after = placement();
        return after["strait-cloud-b"] == 4;
      },
      90s))
      << describe(after) << diagnostics();
  const auto moved = Clock::now();
  EXPECT_EQ(after.count("strait-cloud-a") ? after["strait-cloud-a"] : 0, 0) << describe(after);
  // The replacements run in cloud-b.
  CommandResult remote =
      kubectlOn(cloudB, {"get", "pods", "-A", "-l", "strait.io/origin-cluster-id", "-o",
                         "jsonpath={.items[*].status.phase}"});
  int runningInB = 0;
  for (size_t p = remote.out.find("Running"); p != std::string::npos;
       p = remote.out.find("Running", p + 1)) {
    ++runningInB;
  }
  EXPECT_EQ(runningInB, 4) << remote.describe();
  auto ms = [](Clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  std::cout << "failover: stream grace 3s, tolerationSeconds 2; kill -> strait-cloud-a NotReady "
            << ms(notReady - killed) << " ms; kill -> 4/4 replicas Running on strait-cloud-b "
            << ms(moved - killed) << " ms (" << before["strait-cloud-a"]
            << " moved from strait-cloud-a)" << std::endl;
}

}  // namespace
}  // namespace strait::e2e
