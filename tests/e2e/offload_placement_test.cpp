// Placement controls with real processes and real kubectl: two `strait minicluster`s ("home":
// two nodes of 2 CPUs; "cloud": two nodes of 8), a `strait agent` on each, `strait peer
// --label tier=gold`, then:
//  - the virtual node carries the peering's label;
//  - `--pod-offloading-strategy Remote` keeps a Deployment's Pods off the home nodes (all on
//    the virtual node, running in the cloud); changing the strategy moves nothing and the
//    CLI says what the new rule affects;
//  - `--selector tier=gold` offloads to the labelled virtual node, `--selector tier=silver`
//    (no virtual node matches) leaves Remote Pods unscheduled;
//  - `Local` offloads no Pod even when the Pods tolerate the virtual node themselves: what
//    does not fit at home stays Pending, no Pod reaches the cloud, the namespace's Service
//    does;
//  - bad flags are refused with a message naming them.
// ctest runs each test in a process of its own, with fresh clusters.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "e2e/offload_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

class OffloadPlacementTest : public OffloadSuite {
 public:
  static void SetUpTestSuite() {
    OffloadSetup s;
    s.homeArgs = {"--nodes", "2", "--node-cpu", "2", "--node-memory", "8Gi"};
    s.cloudArgs = {"--nodes", "2", "--node-cpu", "8", "--node-memory", "32Gi"};
    s.peerArgs = {"--cpu", "16", "--memory", "32Gi", "--pods", "50", "--label", "tier=gold"};
    s.namespaces = {};
    startAll(s);
  }
  static void TearDownTestSuite() { stopAll(); }

 protected:
  void SetUp() override {
    OffloadSuite::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(waitFor([&] { return vnodeReady() == "True"; }, 60s)) << agentLogs();
  }

  CommandResult offload(const std::string& ns, const std::vector<std::string>& args) {
    if (kubectl(*home_, {"get", "namespace", ns}).exitCode != 0) {
      EXPECT_EQ(kubectl(*home_, {"create", "namespace", ns}).exitCode, 0);
    }
    std::vector<std::string> argv = {"offload", "namespace", ns, "--kubeconfig",
                                     home_->kubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    return strait(argv);
  }

  static json deployment(const std::string& ns, const std::string& name, int replicas,
                         const std::string& cpu, bool tolerateVirtualNode = false) {
    json spec = {{"terminationGracePeriodSeconds", 1},
                 {"containers", json::array({{{"name", "c"},
                                              {"image", "busybox"},
                                              {"resources", {{"requests", {{"cpu", cpu}}}}}}})}};
    if (tolerateVirtualNode) {
      spec["tolerations"] = json::array(
          {{{"key", "virtual-node.strait.io/not-allowed"}, {"operator", "Exists"}},
           {{"key", "node.kubernetes.io/network-unavailable"}, {"operator", "Exists"}}});
    }
    json d = {{"apiVersion", "apps/v1"},
              {"kind", "Deployment"},
              {"metadata", {{"name", name}, {"namespace", ns}}}};
    d["spec"]["replicas"] = replicas;
    d["spec"]["selector"]["matchLabels"]["app"] = name;
    d["spec"]["template"]["metadata"]["labels"]["app"] = name;
    d["spec"]["template"]["spec"] = std::move(spec);
    return d;
  }

  // The Pods of `ns` at home (items of `kubectl get pods -o json`).
  json pods(const std::string& ns) {
    json l = getJson(*home_, {"get", "pods", "-n", ns});
    return l.is_object() ? l.value("items", json::array()) : json::array();
  }
  static std::string nodeOf(const json& pod) {
    return pod.value("/spec/nodeName"_json_pointer, std::string());
  }
  static std::string phaseOf(const json& pod) {
    return pod.value("/status/phase"_json_pointer, std::string());
  }
  // Whether the scheduler said it cannot place the Pod (PodScheduled False).
  static bool unschedulable(const json& pod) {
    for (const json& c : pod.value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False") return true;
    }
    return false;
  }
  std::string describe(const std::string& ns) {
    std::string out;
    for (const json& p : pods(ns)) {
      out += "\n" + p["metadata"].value("name", "") + " node=" + nodeOf(p) +
             " phase=" + phaseOf(p) + " affinity=" + p["spec"].value("affinity", json()).dump();
    }
    return out + "\n" + agentLogs();
  }
  // Names of the Pods in the cloud namespace that home's `ns` maps to.
  std::vector<std::string> cloudPods(const std::string& ns) {
    std::vector<std::string> out;
    json l = getJson(*cloud_, {"get", "pods", "-n", remoteNamespace(ns)});
    if (!l.is_object()) return out;
    for (const json& p : l.value("items", json::array())) out.push_back(p["metadata"]["name"]);
    return out;
  }
};

TEST_F(OffloadPlacementTest, RemoteKeepsPodsOffHomeNodesAndSelectorsChooseByLabel) {
  CommandResult label =
      kubectl(*home_, {"get", "node", kVirtualNode, "-o", "jsonpath={.metadata.labels.tier}"});
  EXPECT_EQ(label.out, "gold") << label.describe();

  CommandResult off = offload("remote", {"--pod-offloading-strategy", "Remote"});
  ASSERT_EQ(off.exitCode, 0) << off.describe();
  EXPECT_NE(off.out.find("pods run only on any virtual node"), std::string::npos) << off.out;
  ASSERT_EQ(
      kubectl(*home_, {"apply", "-f", "-"}, deployment("remote", "web", 3, "100m").dump()).exitCode,
      0);
  ASSERT_TRUE(waitFor(
      [&] {
        json items = pods("remote");
        if (items.size() != 3) return false;
        for (const json& p : items) {
          if (phaseOf(p) != "Running") return false;
        }
        return true;
      },
      90s))
      << describe("remote");
  for (const json& p : pods("remote")) EXPECT_EQ(nodeOf(p), kVirtualNode) << describe("remote");
  EXPECT_EQ(cloudPods("remote").size(), 3u);

  // Back to the default: nothing moves, and the CLI says so.
  CommandResult back = offload("remote", {});
  ASSERT_EQ(back.exitCode, 0) << back.describe();
  EXPECT_NE(back.out.find("applies to pods created from now on; running pods are not moved (3 "
                          "on virtual nodes, 0 on this cluster's nodes)"),
            std::string::npos)
      << back.out;
  CommandResult strategy =
      kubectl(*home_, {"get", "namespace", "remote", "-o",
                       "jsonpath={.metadata.annotations.strait\\.io/pod-offloading-strategy}"});
  EXPECT_EQ(strategy.out, "") << strategy.describe();
  for (const json& p : pods("remote")) EXPECT_EQ(nodeOf(p), kVirtualNode);

  // Selectors on the virtual nodes' labels.
  ASSERT_EQ(
      offload("gold", {"--pod-offloading-strategy", "Remote", "--selector", "tier=gold"}).exitCode,
      0);
  ASSERT_EQ(offload("silver", {"--pod-offloading-strategy", "Remote", "--selector", "tier=silver"})
                .exitCode,
            0);
  ASSERT_EQ(
      kubectl(*home_, {"apply", "-f", "-"}, deployment("gold", "g", 1, "100m").dump()).exitCode, 0);
  ASSERT_EQ(
      kubectl(*home_, {"apply", "-f", "-"}, deployment("silver", "s", 1, "100m").dump()).exitCode,
      0);
  ASSERT_TRUE(waitFor(
      [&] {
        json items = pods("gold");
        return items.size() == 1 && phaseOf(items[0]) == "Running";
      },
      90s))
      << describe("gold");
  EXPECT_EQ(nodeOf(pods("gold")[0]), kVirtualNode);
  ASSERT_TRUE(waitFor(
      [&] {
        json items = pods("silver");
        return items.size() == 1 && unschedulable(items[0]);
      },
      60s))
      << describe("silver");
  EXPECT_EQ(nodeOf(pods("silver")[0]), "");
  // The remote copy's affinity no longer names the virtual node's own labels.
  json remote = getJson(*cloud_, {"get", "pods", "-n", remoteNamespace("gold")});
  ASSERT_TRUE(remote.is_object());
  ASSERT_EQ(remote["items"].size(), 1u);
  EXPECT_FALSE(remote["items"][0]["spec"].contains("affinity"))
      << remote["items"][0]["spec"].dump();
}

TEST_F(OffloadPlacementTest, LocalOffloadsNoPodAndBadFlagsAreRefused) {
  CommandResult off = offload("local", {"--pod-offloading-strategy", "Local"});
  ASSERT_EQ(off.exitCode, 0) << off.describe();
  EXPECT_NE(off.out.find("no pod is offloaded"), std::string::npos) << off.out;
  // Four Pods of 1.5 CPU tolerating the virtual node themselves: two fit at home, the other
  // two would fit only on the virtual node, which Local forbids.
  ASSERT_EQ(
      kubectl(*home_, {"apply", "-f", "-"}, deployment("local", "big", 4, "1500m", true).dump())
          .exitCode,
      0);
  ASSERT_TRUE(waitFor(
      [&] {
        json items = pods("local");
        if (items.size() != 4) return false;
        int running = 0, unscheduled = 0;
        for (const json& p : items) {
          running += phaseOf(p) == "Running";
          unscheduled += unschedulable(p);
        }
        return running == 2 && unscheduled == 2;
      },
      90s))
      << describe("local");
  for (const json& p : pods("local")) {
    EXPECT_NE(nodeOf(p), kVirtualNode) << describe("local");
    // The Pod's own toleration has no effect; the webhook's would say NoExecute.
    for (const json& t : p["spec"].value("tolerations", json::array())) {
      EXPECT_FALSE(t.value("key", "") == "virtual-node.strait.io/not-allowed" &&
                   t.value("effect", "") == "NoExecute")
          << "the webhook added a toleration: " << p["spec"].dump();
    }
  }
  EXPECT_TRUE(cloudPods("local").empty());
  // The namespace's Services are still reflected: Local keeps Pods home, not the namespace.
  ASSERT_EQ(
      kubectl(*home_, {"create", "service", "clusterip", "big", "-n", "local", "--tcp", "80:8080"})
          .exitCode,
      0);
  CommandResult svc;
  EXPECT_TRUE(waitFor(
      [&] {
        svc = kubectl(*cloud_, {"get", "service", "big", "-n", remoteNamespace("local"), "-o",
                                "jsonpath={.spec.ports[0].port}"});
        return svc.exitCode == 0 && svc.out == "80";
      },
      30s))
      << svc.describe() << agentLogs();
  EXPECT_TRUE(cloudPods("local").empty());

  struct Bad {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Bad& b : std::vector<Bad>{
           {{"--selector", "tier in gold"}, "--selector \"tier in gold\""},
           {{"--selector", "tier=gold", "--remote-name", "cloud"}, "not both"},
           {{"--pod-offloading-strategy", "Local", "--selector", "tier=gold"}, "offloads no pod"},
           {{"--pod-offloading-strategy", "Elsewhere"}, "--pod-offloading-strategy"}}) {
    CommandResult r = offload("local", b.args);
    EXPECT_NE(r.exitCode, 0) << r.describe();
    EXPECT_NE(r.err.find(b.says), std::string::npos) << r.describe();
  }
  CommandResult badLabel =
      strait({"peer", "--kubeconfig", home_->kubeconfig(), "--remote-kubeconfig",
              cloud_->kubeconfig(), "--label", "kubernetes.io/hostname=x"});
  EXPECT_NE(badLabel.exitCode, 0);
  EXPECT_NE(badLabel.err.find("the virtual node sets kubernetes.io/hostname itself"),
            std::string::npos)
      << badLabel.describe();
}

}  // namespace
}  // namespace strait::e2e
