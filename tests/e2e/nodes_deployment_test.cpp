// The scheduler and simulated nodes with Deployments (needs the Deployment and ReplicaSet
// controllers): 12 one-CPU replicas fill 3 nodes of 4 CPU; scaling to 14 leaves 2 Pending with the
// upstream message and a FailedScheduling event; a NoExecute taint evicts a node's pods,
// which the ReplicaSet replaces; a stopped heartbeat gets a node's pods evicted and replaced.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "e2e/cluster_fixture.h"

namespace strait::e2e {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

class DeploymentSchedulingTest : public ClusterTest {
 public:
  static void SetUpTestSuite() {
    SetUpTestSuiteWithArgs({"--nodes", "3", "--node-cpu", "4", "--pod-start-latency", "200ms",
                            "--node-monitor-grace-period", "6s", "--default-toleration-seconds",
                            "2"});
  }

 protected:
  CommandResult must(const std::vector<std::string>& args, const std::string& in = {}) {
    CommandResult r = kubectl(args, in);
    std::string cmd;
    for (const auto& a : args) cmd += " " + a;
    EXPECT_EQ(r.exitCode, 0) << "kubectl" << cmd << "\n" << r.describe();
    return r;
  }
  // Live (not terminating) pods of app=web by phase, and by node for the running ones.
  struct Census {
    size_t running = 0, pending = 0;
    std::map<std::string, int> perNode;
    std::vector<json> pendingPods;
  };
  Census census() {
    Census c;
    CommandResult r = kubectl({"get", "pods", "-l", "app=web", "-o", "json"});
    json list = json::parse(r.out, nullptr, false);
    if (!list.is_object()) return c;
    for (const auto& p : list["items"]) {
      if (p["metadata"].contains("deletionTimestamp")) continue;
      std::string phase = p["status"].value("phase", "");
      if (phase == "Running") {
        ++c.running;
        ++c.perNode[p["spec"].value("nodeName", "")];
      } else if (phase == "Pending") {
        ++c.pending;
        c.pendingPods.push_back(p);
      }
    }
    return c;
  }
};

TEST_F(DeploymentSchedulingTest, TwelveReplicasFillThreeNodesAndFourteenLeaveTwoPending) {
  must({"create", "deployment", "web", "--image=nginx", "--replicas=12"});
  must({"set", "resources", "deployment", "web", "--requests=cpu=1"});
  ASSERT_TRUE(waitFor(
      [&] {
        Census c = census();
        return c.running == 12 && c.pending == 0;
      },
      90s, 250ms))
      << must({"get", "pods", "-o", "wide"}).out;
  EXPECT_EQ(census().perNode, (std::map<std::string, int>{{"node-0", 4}, {"node-1", 4}, {"node-2", 4}}));

  must({"scale", "deployment", "web", "--replicas=14"});
  const std::string want = "0/3 nodes are available: 3 Insufficient cpu.";
  ASSERT_TRUE(waitFor(
      [&] {
        Census c = census();
        if (c.running != 12 || c.pending != 2) return false;
        for (const auto& p : c.pendingPods) {
          bool found = false;
          for (const auto& cond : p["status"].value("conditions", json::array())) {
            if (cond.value("type", "") == "PodScheduled" && cond.value("reason", "") == "Unschedulable" &&
                cond.value("message", "").rfind(want, 0) == 0) {
              found = true;
            }
          }
          if (!found) return false;
        }
        return true;
      },
      60s, 250ms))
      << must({"get", "pods", "-o", "wide"}).out;
  std::string pendingName = census().pendingPods[0]["metadata"].value("name", "");
  CommandResult d = must({"describe", "pod", pendingName});
  EXPECT_THAT(d.out, HasSubstr("FailedScheduling"));
  EXPECT_THAT(d.out, HasSubstr(want));
  CommandResult ev = must({"get", "events", "--field-selector", "reason=FailedScheduling"});
  EXPECT_THAT(ev.out, HasSubstr(pendingName));

  // With 6 replicas there is room elsewhere: a NoExecute taint on node-0 evicts its pods and
  // the ReplicaSet's replacements run on the other nodes.
  must({"scale", "deployment", "web", "--replicas=6"});
  ASSERT_TRUE(waitFor([&] { Census c = census(); return c.running == 6 && c.pending == 0; }, 60s, 250ms));
  must({"taint", "node", "node-0", "maintenance=now:NoExecute"});
  EXPECT_TRUE(waitFor(
      [&] {
        Census c = census();
        return c.running == 6 && c.perNode.count("node-0") == 0;
      },
      60s, 250ms))
      << must({"get", "pods", "-o", "wide"}).out;
  must({"taint", "node", "node-0", "maintenance-"});

  // node-1 stops heartbeating: NotReady after the 6 s grace, tainted unreachable, its pods
  // evicted after their 2 s toleration and replaced on the healthy nodes.
  must({"annotate", "node", "node-1", "strait.io/simulate=stop-heartbeat"});
  EXPECT_TRUE(waitFor([&] { return must({"get", "node", "node-1"}).out.find("NotReady") != std::string::npos; },
                      60s, 250ms));
  EXPECT_THAT(must({"get", "node", "node-1", "-o", "jsonpath={.spec.taints}"}).out,
              HasSubstr("node.kubernetes.io/unreachable"));
  EXPECT_TRUE(waitFor(
      [&] {
        Census c = census();
        return c.running == 6 && c.perNode.count("node-1") == 0;
      },
      60s, 250ms))
      << must({"get", "pods", "-o", "wide"}).out;
  must({"annotate", "node", "node-1", "strait.io/simulate-"});
  must({"delete", "deployment", "web"});
}

}  // namespace
}  // namespace strait::e2e
