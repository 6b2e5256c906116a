// DaemonSets with the real kubectl against a 3-node minicluster (simulated kubelets):
// `kubectl apply -f`, `get ds`, `rollout status ds/x`, one Running Pod per node with the
// right status counts; cordoning changes nothing and a deleted daemon Pod comes back on its
// cordoned node; a NoSchedule taint (not tolerated) keeps the existing Pod but takes the node
// out of the desired count, a NoExecute one removes the Pod; `set image` rolls; `delete ds`
// removes the Pods.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "e2e/cluster_fixture.h"

namespace strait::e2e {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

const char* kDaemonSetYaml = R"(apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels:
      app: agent
  template:
    metadata:
      labels:
        app: agent
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: agent:1
)";

class DaemonSetKubectlTest : public ClusterTest {
 public:
  static void SetUpTestSuite() {
    SetUpTestSuiteWithArgs({"--nodes", "3", "--pod-start-latency", "200ms"});
  }

 protected:
  CommandResult must(const std::vector<std::string>& args, const std::string& in = {}) {
    CommandResult r = kubectl(args, in);
    std::string cmd;
    for (const auto& a : args) cmd += " " + a;
    EXPECT_EQ(r.exitCode, 0) << "kubectl" << cmd << "\n" << r.describe();
    return r;
  }
  json getJson(const std::vector<std::string>& args) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"-o", "json"});
    CommandResult r = kubectl(a);
    if (r.exitCode != 0) return json();
    json j = json::parse(r.out, nullptr, false);
    return j.is_discarded() ? json() : j;
  }
  // Live daemon Pods: node -> (name, phase, image).
  struct PodView {
    std::string name, phase, image;
  };
  std::map<std::string, PodView> podsByNode() {
    std::map<std::string, PodView> out;
    json pods = getJson({"get", "pods", "-l", "app=agent"});
    for (const json& p : pods.value("items", json::array())) {
      if (p["metadata"].contains("deletionTimestamp")) continue;
      std::string node = p["spec"].value("nodeName", "<unbound>");
      if (out.count(node)) node += "+dup";
      out[node] = {p["metadata"].value("name", ""), p["status"].value("phase", ""),
                   p["spec"]["containers"][0].value("image", "")};
    }
    return out;
  }
  bool allRunning(const std::map<std::string, PodView>& pods, size_t n,
                  const std::string& image = "agent:1") {
    if (pods.size() != n) return false;
    for (const auto& [node, v] : pods) {
      if (v.phase != "Running" || v.image != image || node.find('+') != std::string::npos) {
        return false;
      }
    }
    return true;
  }
  json status() { return getJson({"get", "ds", "agent"}).value("status", json::object()); }
  std::string describe() {
    std::string s = status().dump() + "\n";
    for (const auto& [n, v] : podsByNode()) s += n + " " + v.name + " " + v.phase + "\n";
    return s;
  }
};

TEST_F(DaemonSetKubectlTest, OnePodPerNodeRolloutTaintsCordonAndDelete) {
  CommandResult r = must({"apply", "-f", "-"}, kDaemonSetYaml);
  EXPECT_THAT(r.out, HasSubstr("daemonset.apps/agent created"));
  ASSERT_TRUE(waitFor([&] { return allRunning(podsByNode(), 3); }, 90s)) << describe();
  auto pods = podsByNode();
  for (const char* n : {"node-0", "node-1", "node-2"}) EXPECT_EQ(pods.count(n), 1u) << n;

  r = must({"rollout", "status", "ds/agent", "--timeout=60s"});
  EXPECT_THAT(r.out, HasSubstr("daemon set \"agent\" successfully rolled out"));
  json s = status();
  EXPECT_EQ(s.value("desiredNumberScheduled", -1), 3) << s.dump();
  EXPECT_EQ(s.value("currentNumberScheduled", -1), 3);
  EXPECT_EQ(s.value("numberReady", -1), 3);
  EXPECT_EQ(s.value("numberAvailable", -1), 3);
  EXPECT_EQ(s.value("updatedNumberScheduled", -1), 3);
  EXPECT_EQ(s.value("numberMisscheduled", -1), 0);
  EXPECT_EQ(s.value("observedGeneration", -1), 1);
  r = must({"get", "ds"});
  EXPECT_THAT(r.out, ::testing::ContainsRegex("agent +3 +3 +3 +3 +3 +<none>"));
  r = must({"get", "all"});
  EXPECT_THAT(r.out, HasSubstr("daemonset.apps/agent"));
  r = must({"get", "daemonsets.apps", "agent", "-o", "jsonpath={.spec.updateStrategy.type}"});
  EXPECT_EQ(r.out, "RollingUpdate");

  // Cordon-independent: nothing moves, and a deleted daemon Pod returns to its cordoned node.
  must({"cordon", "node-1"});
  std::string old1 = podsByNode()["node-1"].name;
  must({"delete", "pod", old1, "--wait=false"});
  ASSERT_TRUE(waitFor([&] {
    auto now = podsByNode();
    return allRunning(now, 3) && now["node-1"].name != old1;
  }, 90s)) << describe();
  EXPECT_EQ(status().value("desiredNumberScheduled", -1), 3);
  must({"uncordon", "node-1"});

  // NoSchedule, not tolerated: the running Pod stays (upstream), the node is not desired.
  std::string keep2 = podsByNode()["node-2"].name;
  must({"taint", "node", "node-2", "dedicated=db:NoSchedule"});
  ASSERT_TRUE(waitFor([&] {
    json st = status();
    return st.value("desiredNumberScheduled", -1) == 2 && st.value("numberMisscheduled", -1) == 1;
  }, 60s)) << describe();
  EXPECT_EQ(podsByNode()["node-2"].name, keep2);
  // NoExecute, not tolerated: the Pod goes.
  must({"taint", "node", "node-2", "dedicated=db:NoExecute"});
  ASSERT_TRUE(waitFor([&] {
    auto now = podsByNode();
    json st = status();
    return !now.count("node-2") && allRunning(now, 2) &&
           st.value("desiredNumberScheduled", -1) == 2 && st.value("numberMisscheduled", -1) == 0 &&
           st.value("numberReady", -1) == 2;
  }, 90s)) << describe();
  must({"taint", "node", "node-2", "dedicated-"});
  ASSERT_TRUE(waitFor([&] { return allRunning(podsByNode(), 3); }, 90s)) << describe();

  // A template change rolls (maxUnavailable 1) and rollout status waits for it.
  must({"set", "image", "ds/agent", "c=agent:2"});
  r = kubectl({"rollout", "status", "ds/agent", "--timeout=120s"}, {}, std::chrono::seconds(150));
  EXPECT_EQ(r.exitCode, 0) << r.describe() << describe();
  EXPECT_THAT(r.out, HasSubstr("successfully rolled out"));
  EXPECT_TRUE(allRunning(podsByNode(), 3, "agent:2")) << describe();
  EXPECT_EQ(status().value("updatedNumberScheduled", -1), 3);

  // Deleting the DaemonSet deletes its Pods.
  must({"delete", "ds", "agent"});
  ASSERT_TRUE(waitFor([&] {
    json pods = getJson({"get", "pods", "-l", "app=agent"});
    return pods.is_object() && pods.value("items", json::array()).empty();
  }, 90s)) << describe();
}

TEST_F(DaemonSetKubectlTest, InvalidDaemonSetIsRefusedWithUpstreamMessage) {
  std::string bad = kDaemonSetYaml;
  bad.replace(bad.rfind("app: agent"), 10, "app: other");
  CommandResult r = kubectl({"apply", "-f", "-"}, bad);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("`selector` does not match template `labels`"));
}

}  // namespace
}  // namespace strait::e2e
