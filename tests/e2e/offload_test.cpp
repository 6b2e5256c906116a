// Offloading a Deployment end to end with real processes: two `strait minicluster` ("home": 2 nodes
// x 2 CPU, "cloud": 4 nodes x 8 CPU), a `strait agent` on each, `strait peer`, `strait offload
// namespace demo`, and a Deployment of 20 replicas at 500m through real kubectl. Pods the
// home nodes cannot hold land on the virtual node strait-cloud (the agent's webhook gave
// them the toleration), run in the cloud (reflection stream over gRPC/mTLS) and show
// Running with pod IPs at home; scaling down and deleting leave the cloud empty; a Pod
// larger than any cloud node gets its reason; the virtual node's capacity follows a cloud
// node being cordoned; `strait unoffload` and `strait unpeer` refuse while Pods are
// offloaded, and `unoffload --force` empties the cloud; `unpeer --drain` evicts the offloaded
// Pods and parts cleanly.
// The tests of the suite run in order on the same clusters.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "e2e/offload_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

class OffloadTest : public OffloadSuite {
 public:
  static void SetUpTestSuite() { startAll(OffloadSetup{}); }
  static void TearDownTestSuite() { stopAll(); }

 protected:
  std::string remoteNs() { return remoteNamespace("demo"); }
  // Pods of the demo Deployment at home: (total, running with an IP, on the virtual node).
  struct Counts {
    int total = 0, runningWithIp = 0, onVnode = 0, onVnodeRunning = 0;
  };
  Counts homeCounts() {
    Counts c;
    json pods = getJson(*home_, {"get", "pods", "-n", "demo", "-l", "app=web"});
    for (const json& p : pods.value("items", json::array())) {
      if (p["metadata"].contains("deletionTimestamp")) continue;
      ++c.total;
      bool running = p.value("/status/phase"_json_pointer, std::string()) == "Running" &&
                     !p.value("/status/podIP"_json_pointer, std::string()).empty();
      if (running) ++c.runningWithIp;
      if (p.value("/spec/nodeName"_json_pointer, std::string()) == "strait-cloud") {
        ++c.onVnode;
        if (running) ++c.onVnodeRunning;
      }
    }
    return c;
  }
  // Pods in the cloud's mapped namespace: (all, Running).
  std::pair<int, int> cloudCounts() {
    json pods = getJson(*cloud_, {"get", "pods", "-n", remoteNs()});
    int all = 0, running = 0;
    for (const json& p : pods.value("items", json::array())) {
      ++all;
      if (p.value("/status/phase"_json_pointer, std::string()) == "Running") ++running;
    }
    return {all, running};
  }
  std::string vnodeAllocatableCpu() {
    CommandResult r = kubectl(*home_, {"get", "node", "strait-cloud", "-o",
                                       "jsonpath={.status.allocatable.cpu}"});
    return r.exitCode == 0 ? r.out : "";
  }
  std::string diagnostics() { return agentLogs(); }
  static std::string deployment(int replicas) {
    return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"demo"},
      "spec":{"replicas":)" + std::to_string(replicas) + R"(,"selector":{"matchLabels":{"app":"web"}},
        "template":{"metadata":{"labels":{"app":"web"}},"spec":{"terminationGracePeriodSeconds":1,
          "containers":[{"name":"web","image":"nginx:1.27",
            "resources":{"requests":{"cpu":"500m","memory":"64Mi"}}}]}}}})";
  }

};

TEST_F(OffloadTest, A_OverflowPodsRunInTheCloudAndScaleDownAndDeleteLeaveItEmpty) {
  // The virtual node registered and turned Ready once the reflection stream was up (the
  // suite's setup peered the clusters and offloaded namespace demo).
  ASSERT_TRUE(waitFor([&] { return vnodeReady() == "True"; }, 60s))
      << getJson(*home_, {"get", "node", "strait-cloud"}).dump(2) << diagnostics();
  json node = getJson(*home_, {"get", "node", "strait-cloud"});
  EXPECT_EQ(node["metadata"]["labels"]["type"], "virtual-kubelet");
  bool tainted = false;
  for (const json& t : node["spec"].value("taints", json::array())) {
    if (t.value("key", "") == "virtual-node.strait.io/not-allowed") tainted = true;
  }
  EXPECT_TRUE(tainted) << node["spec"].dump();
  EXPECT_EQ(node["status"]["allocatable"]["cpu"], "32") << node["status"].dump();
  // No tunnel in this peering: the node says NetworkUnavailable=True, the node lifecycle
  // controller taints it network-unavailable:NoSchedule (as upstream's does), and the
  // webhook's tolerations still let the overflow schedule there (below).
  EXPECT_TRUE(waitFor([&] {
    json n = getJson(*home_, {"get", "node", "strait-cloud"});
    for (const json& t : n["spec"].value("taints", json::array())) {
      if (t.value("key", "") == "node.kubernetes.io/network-unavailable" &&
          t.value("effect", "") == "NoSchedule") {
        return true;
      }
    }
    return false;
  }, 30s)) << getJson(*home_, {"get", "node", "strait-cloud"}).dump();

  CommandResult d = kubectl(*home_, {"apply", "-f", "-"}, deployment(20));
  ASSERT_EQ(d.exitCode, 0) << d.describe();

  // All 20 Running with a pod IP at home; the home nodes hold at most 8 (4 CPU / 500m), so
  // at least 12 run on the virtual node, each mirrored by one Running Pod in the cloud.
  Counts c;
  ASSERT_TRUE(waitFor([&] {
    c = homeCounts();
    return c.total == 20 && c.runningWithIp == 20;
  }, 180s)) << "total=" << c.total << " running=" << c.runningWithIp << " onVnode=" << c.onVnode
            << diagnostics();
  EXPECT_GE(c.onVnode, 12);
  std::pair<int, int> cloud;
  ASSERT_TRUE(waitFor([&] {
    cloud = cloudCounts();
    return cloud.first == c.onVnode && cloud.second == c.onVnode;
  }, 60s)) << "cloud pods=" << cloud.first << " running=" << cloud.second
           << " vnode pods=" << c.onVnode;
  // An offloaded Pod carries the webhook's toleration; its status came from the cloud
  // (hostIP = the virtual node's address).
  json pods = getJson(*home_, {"get", "pods", "-n", "demo", "--field-selector",
                               "spec.nodeName=strait-cloud"});
  ASSERT_FALSE(pods.value("items", json::array()).empty());
  const json& one = pods["items"][0];
  bool tolerated = false;
  for (const json& t : one["spec"].value("tolerations", json::array())) {
    if (t.value("key", "") == "virtual-node.strait.io/not-allowed") tolerated = true;
  }
  EXPECT_TRUE(tolerated) << one["spec"].dump();
  EXPECT_EQ(one["status"]["hostIP"], "127.0.0.1");

  // kubectl logs and exec on an offloaded Pod: home API server -> the virtual node's kubelet
  // API in the home agent -> the cloud agent -> the cloud's API server.
  const std::string podName = one["metadata"].value("name", "");
  CommandResult logs;
  EXPECT_TRUE(waitFor([&] {
    logs = kubectl(*home_, {"logs", "-n", "demo", podName});
    return logs.exitCode == 0 && logs.out.find("started") != std::string::npos;
  }, 30s)) << logs.describe() << diagnostics();
  EXPECT_NE(logs.out.find("of pod demo-"), std::string::npos) << logs.out;  // the remote Pod's log
  CommandResult ex = kubectl(*home_, {"exec", "-n", "demo", podName, "--", "echo", "hi"});
  EXPECT_EQ(ex.exitCode, 0) << ex.describe();
  EXPECT_EQ(ex.out, "hi\n") << ex.describe();
  CommandResult fail = kubectl(*home_, {"exec", "-n", "demo", podName, "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(fail.exitCode, 3) << fail.describe();
  // The consumer's own Pods in the cloud are covered by its grant: seconds of heartbeats
  // after they arrived, the virtual node still offers the whole grant (it used to shrink by
  // what they use, so a lone consumer could fill only half a provider).
  EXPECT_EQ(vnodeAllocatableCpu(), "32") << cloudCounts().second << " Running in the cloud";

  // Scale down: the cloud follows.
  ASSERT_EQ(kubectl(*home_, {"scale", "deployment", "web", "-n", "demo", "--replicas", "4"}).exitCode, 0);
  ASSERT_TRUE(waitFor([&] {
    c = homeCounts();
    cloud = cloudCounts();
    return c.total == 4 && cloud.first == c.onVnode;
  }, 120s)) << "home=" << c.total << " onVnode=" << c.onVnode << " cloud=" << cloud.first
            << diagnostics();
  // Delete the Deployment directly: nothing left at home or in the cloud. (4 Pods were once
  // left here, most likely re-created by the ReplicaSet controller from a stale cache after
  // their ReplicaSet was gone; the garbage collector now collects dependents of an absent
  // owner.)
  ASSERT_EQ(kubectl(*home_, {"delete", "deployment", "web", "-n", "demo"}).exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return homeCounts().total == 0 && cloudCounts().first == 0; }, 120s))
      << "home=" << homeCounts().total << " cloud=" << cloudCounts().first << diagnostics();
}

TEST_F(OffloadTest, B_APodLargerThanAnyCloudNodeGetsItsReason) {
  // 12 CPU: more than any cloud node (8) but less than the virtual node's 32, and more than
  // any home node: the scheduler binds it to strait-cloud, which refuses it with a reason.
  const std::string pod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"huge","namespace":"demo"},
    "spec":{"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"12"}}}]}})";
  ASSERT_EQ(kubectl(*home_, {"apply", "-f", "-"}, pod).exitCode, 0);
  CommandResult st;
  ASSERT_TRUE(waitFor([&] {
    st = kubectl(*home_, {"get", "pod", "huge", "-n", "demo", "-o",
                          "jsonpath={.spec.nodeName} {.status.reason}"});
    return st.out == "strait-cloud ProviderNodeTooSmall";
  }, 60s)) << st.describe() << diagnostics();
  CommandResult msg = kubectl(*home_, {"get", "pod", "huge", "-n", "demo", "-o",
                                       "jsonpath={.status.message}"});
  EXPECT_NE(msg.out.find("more than any single provider node"), std::string::npos) << msg.out;
  EXPECT_EQ(cloudCounts().first, 0);
  EXPECT_EQ(kubectl(*home_, {"delete", "pod", "huge", "-n", "demo", "--wait=false"}).exitCode, 0);
}

TEST_F(OffloadTest, C_CapacityFollowsACloudNodeGoingAway) {
  ASSERT_TRUE(waitFor([&] { return vnodeAllocatableCpu() == "32"; }, 30s)) << vnodeAllocatableCpu();
  auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(kubectl(*cloud_, {"cordon", "node-3"}).exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return vnodeAllocatableCpu() == "24"; }, 30s)) << vnodeAllocatableCpu();
  auto followed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(followed, 5s) << "capacity followed after "
                          << std::chrono::duration_cast<std::chrono::milliseconds>(followed).count()
                          << " ms";
  ASSERT_EQ(kubectl(*cloud_, {"uncordon", "node-3"}).exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return vnodeAllocatableCpu() == "32"; }, 30s)) << vnodeAllocatableCpu();
}

TEST_F(OffloadTest, D_UnoffloadAndUnpeerRefuseWhilePodsAreOffloadedForceUnoffloadEmptiesTheCloud) {
  ASSERT_EQ(kubectl(*home_, {"apply", "-f", "-"}, deployment(12)).exitCode, 0);
  Counts c;
  ASSERT_TRUE(waitFor([&] {
    c = homeCounts();
    return c.total == 12 && c.onVnodeRunning >= 4 && cloudCounts().second == c.onVnode;
  }, 180s)) << "total=" << c.total << " onVnodeRunning=" << c.onVnodeRunning << diagnostics();

  CommandResult un = strait({"unoffload", "namespace", "demo", "--kubeconfig", home_->kubeconfig()});
  EXPECT_NE(un.exitCode, 0) << un.describe();
  EXPECT_NE(un.err.find("demo/web-"), std::string::npos) << un.describe();

  CommandResult plain = strait({"unpeer", "--kubeconfig", home_->kubeconfig(),
                                "--remote-kubeconfig", cloud_->kubeconfig()});
  EXPECT_NE(plain.exitCode, 0) << plain.describe();
  EXPECT_NE((plain.out + plain.err).find("demo/web-"), std::string::npos) << plain.describe();
  EXPECT_EQ(cloudCounts().first, c.onVnode);  // nothing was touched
  EXPECT_EQ(kubectl(*home_, {"get", "node", "strait-cloud", "-o",
                             "jsonpath={.spec.unschedulable}"}).out, "")
      << "the refused unpeer left the virtual node cordoned";

  // Unoffload --force deletes the offloaded Pods (their remote copies go with them); the
  // ReplicaSet's replacements no longer tolerate the virtual node and stay home.
  CommandResult force = strait({"unoffload", "namespace", "demo", "--kubeconfig",
                                home_->kubeconfig(), "--force"});
  ASSERT_EQ(force.exitCode, 0) << force.describe();
  ASSERT_TRUE(waitFor([&] {
    json pods = getJson(*cloud_, {"get", "pods", "-A", "-l", "strait.io/origin-cluster-id"});
    // KNOWN GAP: the local Pods stay Terminating after their remote copies are gone (the
    // virtual kubelet does not finish them yet), so only the cloud side is checked here.
    return pods.is_object() && pods.value("items", json::array()).empty();
  }, 120s)) << "cloud=" << cloudCounts().first << " onVnode=" << homeCounts().onVnode
            << diagnostics();
}

TEST_F(OffloadTest, E_UnpeerDrainEvictsOffloadedPodsThenPartsAndLeavesNothing) {
  // Own state whatever ran before in this process: namespace demo offloaded, no Deployment.
  (void)kubectl(*home_, {"delete", "deployment", "web", "-n", "demo", "--ignore-not-found"});
  ASSERT_TRUE(waitFor([&] { return homeCounts().total == 0 && cloudCounts().first == 0; }, 120s))
      << "home=" << homeCounts().total << " cloud=" << cloudCounts().first << "\n"
      << kubectl(*home_, {"get", "pods,rs,deploy", "-n", "demo", "-o", "wide"}).out
      << kubectl(*home_, {"get", "pods", "-n", "demo", "-o", "json"}).out << diagnostics();
  CommandResult off = strait({"offload", "namespace", "demo", "--kubeconfig", home_->kubeconfig()});
  ASSERT_EQ(off.exitCode, 0) << off.describe();
  ASSERT_EQ(kubectl(*home_, {"apply", "-f", "-"}, deployment(12)).exitCode, 0);
  Counts c;
  ASSERT_TRUE(waitFor([&] {
    c = homeCounts();
    return c.total == 12 && c.onVnodeRunning >= 4 && cloudCounts().second == c.onVnode;
  }, 180s)) << "total=" << c.total << " onVnodeRunning=" << c.onVnodeRunning << diagnostics();

  // --drain evicts the offloaded Pods (the virtual node is cordoned first, so the
  // ReplicaSet's replacements stay home), waits until they are gone on both sides, then
  // ends the peering: no virtual node, nothing of ours left in the cloud.
  CommandResult un = strait({"unpeer", "--kubeconfig", home_->kubeconfig(), "--remote-kubeconfig",
                             cloud_->kubeconfig(), "--drain", "--timeout", "120s"},
                            180s);
  ASSERT_EQ(un.exitCode, 0) << un.describe() << diagnostics();
  EXPECT_NE(un.out.find("drained " + std::to_string(c.onVnode) + " pod(s) from strait-cloud"),
            std::string::npos)
      << un.describe();
  EXPECT_EQ(homeCounts().onVnode, 0);
  EXPECT_TRUE(waitFor([&] {
    return kubectl(*home_, {"get", "node", "strait-cloud"}).exitCode != 0;
  }, 60s)) << "the virtual node outlived the peering" << diagnostics();
  // And it stays gone: a virtual kubelet still running when its node was deleted registers
  // it again, uncordoned, and the evicted Pods' Pending replacements are bound to it. Watched
  // for 3 s, longer than the virtual node's 500 ms poll and the agent's 300 ms heartbeat.
  const auto watchUntil = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < watchUntil) {
    ASSERT_NE(kubectl(*home_, {"get", "node", "strait-cloud"}).exitCode, 0)
        << "the virtual node came back after unpeer" << diagnostics();
    ASSERT_EQ(homeCounts().onVnode, 0) << "pods bound to the virtual node after unpeer";
  }
  json left;
  EXPECT_TRUE(waitFor([&] {
    left = getJson(*cloud_, {"get", "pods", "-A", "-l", "strait.io/origin-cluster-id"});
    return left.is_object() && left.value("items", json::array()).empty();
  }, 60s)) << left.dump(1) << diagnostics();
  // The evicted Pods were replaced at home (those the home nodes cannot hold stay Pending).
  EXPECT_TRUE(waitFor([&] { return homeCounts().total == 12; }, 60s)) << homeCounts().total;
}

}  // namespace
}  // namespace strait::e2e
