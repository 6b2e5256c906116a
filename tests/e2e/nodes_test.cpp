// Simulated nodes with the real kubectl: the scheduler over simulated nodes, pod
// lifecycle, kubectl logs/exec through the kubelet API, and node failure handling.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "e2e/cluster_fixture.h"

namespace strait::e2e {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

std::string podManifest(const std::string& name, const std::string& cpu,
                        const std::string& extraMeta = "", const std::string& extraSpec = "") {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         R"(","labels":{"app":"web"})" + extraMeta +
         R"(},"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":")" +
         cpu + R"("}}}])" + extraSpec + "}}";
}

class NodesTestBase : public ClusterTest {
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
    a.push_back("-o");
    a.push_back("json");
    CommandResult r = kubectl(a);
    if (r.exitCode != 0) return json();
    return json::parse(r.out, nullptr, false);
  }
  // Pods of the default namespace by phase ("Running", "Pending", ...).
  std::map<std::string, std::vector<json>> podsByPhase(const std::string& selector = "") {
    std::vector<std::string> args = {"get", "pods"};
    if (!selector.empty()) args.push_back("-l" + selector);
    json list = getJson(args);
    std::map<std::string, std::vector<json>> out;
    if (!list.is_object()) return out;
    for (const auto& p : list["items"]) {
      if (p["metadata"].contains("deletionTimestamp")) {
        out["Terminating"].push_back(p);
      } else {
        out[p["status"].value("phase", "")].push_back(p);
      }
    }
    return out;
  }
  std::string podCondition(const json& pod, const std::string& type, const std::string& field) {
    for (const auto& c : pod["status"].value("conditions", json::array())) {
      if (c.value("type", "") == type) return c.value(field, "");
    }
    return "";
  }
};

// --- scheduling -------------------------------------------------------------------------------

class SchedulingTest : public NodesTestBase {
 public:
  static void SetUpTestSuite() {
    SetUpTestSuiteWithArgs({"--nodes", "3", "--node-cpu", "4", "--node-memory", "8Gi",
                            "--pod-start-latency", "200ms"});
  }
};

TEST_F(SchedulingTest, NodesRegisterWithFullStatusAndLeases) {
  json nodes = getJson({"get", "nodes"});
  ASSERT_TRUE(nodes.is_object());
  ASSERT_EQ(nodes["items"].size(), 3u);
  std::set<std::string> cidrs;
  for (const auto& n : nodes["items"]) {
    const json& st = n["status"];
    EXPECT_EQ(st["capacity"].value("cpu", ""), "4");
    EXPECT_EQ(st["allocatable"].value("memory", ""), "8Gi");
    EXPECT_EQ(st["capacity"].value("pods", ""), "110");
    std::set<std::string> types;
    for (const auto& c : st["conditions"]) {
      types.insert(c.value("type", ""));
      EXPECT_TRUE(c.contains("lastHeartbeatTime"));
    }
    EXPECT_EQ(types, (std::set<std::string>{"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}));
    EXPECT_EQ(st["addresses"][0].value("type", ""), "InternalIP");
    EXPECT_EQ(st["addresses"][1].value("type", ""), "Hostname");
    EXPECT_GT(st["daemonEndpoints"]["kubeletEndpoint"].value("Port", 0), 0);
    EXPECT_FALSE(st["nodeInfo"].value("kubeletVersion", "").empty());
    cidrs.insert(n["spec"].value("podCIDR", ""));
    json lease = getJson({"get", "lease", "-n", "kube-node-lease", n["metadata"]["name"]});
    ASSERT_TRUE(lease.is_object()) << n["metadata"]["name"];
    EXPECT_EQ(lease["spec"].value("holderIdentity", ""), n["metadata"].value("name", ""));
    EXPECT_EQ(lease["spec"].value("leaseDurationSeconds", 0), 40);
  }
  EXPECT_EQ(cidrs, (std::set<std::string>{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"}));
  CommandResult get = must({"get", "nodes"});
  EXPECT_THAT(get.out, HasSubstr("Ready"));
}

TEST_F(SchedulingTest, TwelveOneCpuPodsRunAcrossThreeNodesAndTwoMoreStayPending) {
  std::string all;
  for (int i = 0; i < 12; ++i) all += podManifest("web-" + std::to_string(i), "1") + "\n";
  must({"create", "-f", "-"}, all);
  ASSERT_TRUE(waitFor([&] { return podsByPhase("app=web")["Running"].size() == 12; }, 60s, 200ms))
      << must({"get", "pods", "-o", "wide"}).out;
  std::map<std::string, int> perNode;
  auto running = podsByPhase("app=web")["Running"];
  for (const auto& p : running) {
    ++perNode[p["spec"].value("nodeName", "")];
    const json& st = p["status"];
    EXPECT_THAT(st.value("podIP", ""), HasSubstr("10.244."));
    EXPECT_EQ(st.value("hostIP", ""), "127.0.0.1");
    EXPECT_FALSE(st.value("startTime", "").empty());
    EXPECT_EQ(podCondition(p, "Ready", "status"), "True");
    EXPECT_EQ(podCondition(p, "PodScheduled", "status"), "True");
    const json& cs = st["containerStatuses"][0];
    EXPECT_TRUE(cs.value("ready", false));
    EXPECT_TRUE(cs.value("started", false));
    EXPECT_THAT(cs.value("imageID", ""), HasSubstr("@sha256:"));
  }
  EXPECT_EQ(perNode, (std::map<std::string, int>{{"node-0", 4}, {"node-1", 4}, {"node-2", 4}}));

  must({"create", "-f", "-"}, podManifest("web-12", "1") + "\n" + podManifest("web-13", "1"));
  const std::string want =
      "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No "
      "preemption victims found for incoming pod..";
  ASSERT_TRUE(waitFor(
      [&] {
        auto pending = podsByPhase("app=web")["Pending"];
        return pending.size() == 2 &&
               podCondition(pending[0], "PodScheduled", "message") == want &&
               podCondition(pending[1], "PodScheduled", "message") == want;
      },
      30s, 200ms))
      << must({"get", "pods", "-o", "yaml"}).out;
  auto pending = podsByPhase("app=web")["Pending"];
  EXPECT_EQ(podCondition(pending[0], "PodScheduled", "reason"), "Unschedulable");
  EXPECT_EQ(podCondition(pending[0], "PodScheduled", "status"), "False");
  CommandResult describe = must({"describe", "pod", "web-12"});
  EXPECT_THAT(describe.out, HasSubstr("FailedScheduling"));
  EXPECT_THAT(describe.out, HasSubstr("0/3 nodes are available: 3 Insufficient cpu."));

  // Freeing capacity retries the pending pods.
  must({"delete", "pod", "web-0", "web-1", "--wait=true"});
  EXPECT_TRUE(waitFor([&] { return podsByPhase("app=web")["Running"].size() == 12; }, 30s, 200ms))
      << must({"get", "pods", "-o", "wide"}).out;
  must({"delete", "pods", "-l", "app=web", "--wait=true"});
}

TEST_F(SchedulingTest, SelectorsTaintsAndOtherSchedulersAreHonoured) {
  // nodeSelector on a hostname label: lands on that node.
  must({"create", "-f", "-"},
       podManifest("pinned", "100m", "", R"(,"nodeSelector":{"kubernetes.io/hostname":"node-2"})"));
  // A selector nobody matches stays Pending with the affinity reason.
  must({"create", "-f", "-"}, podManifest("nowhere", "100m", "", R"(,"nodeSelector":{"disk":"ssd"})"));
  // Another scheduler's pod is left alone.
  must({"create", "-f", "-"}, podManifest("other", "100m", "", R"(,"schedulerName":"my-scheduler")"));
  ASSERT_TRUE(waitFor(
      [&] {
        json p = getJson({"get", "pod", "pinned"});
        return p.is_object() && p["status"].value("phase", "") == "Running";
      },
      30s, 200ms));
  EXPECT_EQ(getJson({"get", "pod", "pinned"})["spec"].value("nodeName", ""), "node-2");
  ASSERT_TRUE(waitFor(
      [&] {
        json p = getJson({"get", "pod", "nowhere"});
        return p.is_object() && !podCondition(p, "PodScheduled", "message").empty();
      },
      30s, 200ms));
  EXPECT_EQ(podCondition(getJson({"get", "pod", "nowhere"}), "PodScheduled", "message"),
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
            "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling..");
  json other = getJson({"get", "pod", "other"});
  EXPECT_EQ(other["spec"].value("nodeName", ""), "");
  EXPECT_EQ(podCondition(other, "PodScheduled", "status"), "");

  // Labelling a node makes the waiting pod schedulable (retry on node update).
  must({"label", "node", "node-1", "disk=ssd"});
  EXPECT_TRUE(waitFor(
      [&] { return getJson({"get", "pod", "nowhere"})["spec"].value("nodeName", "") == "node-1"; },
      30s, 200ms));
  must({"delete", "pod", "pinned", "nowhere", "other", "--wait=true"});
}

TEST_F(SchedulingTest, ContainersExitByAnnotationAndRestartPolicyIsHonoured) {
  const std::string exit1 = R"(,"annotations":{"strait.io/exit-after":"500ms","strait.io/exit-code":"1","strait.io/restart-backoff":"500ms"})";
  const std::string exit0 = R"(,"annotations":{"strait.io/exit-after":"500ms","strait.io/exit-code":"0"})";
  must({"create", "-f", "-"},
       podManifest("never-fails", "10m", exit1, R"(,"restartPolicy":"Never")") + "\n" +
           podManifest("onfailure-ok", "10m", exit0, R"(,"restartPolicy":"OnFailure")") + "\n" +
           podManifest("always-crashes", "10m", exit1, R"(,"restartPolicy":"Always")"));
  auto phase = [&](const std::string& n) {
    json p = getJson({"get", "pod", n});
    return p.is_object() ? p["status"].value("phase", "") : "";
  };
  EXPECT_TRUE(waitFor([&] { return phase("never-fails") == "Failed"; }, 30s, 200ms));
  EXPECT_TRUE(waitFor([&] { return phase("onfailure-ok") == "Succeeded"; }, 30s, 200ms));
  json failed = getJson({"get", "pod", "never-fails"});
  EXPECT_EQ(failed["status"]["containerStatuses"][0]["state"]["terminated"].value("exitCode", -1), 1);
  EXPECT_TRUE(waitFor(
      [&] {
        json p = getJson({"get", "pod", "always-crashes"});
        return p.is_object() && p["status"]["containerStatuses"][0].value("restartCount", 0) >= 2;
      },
      30s, 200ms));
  json crashing = getJson({"get", "pod", "always-crashes"});
  EXPECT_EQ(crashing["status"]["containerStatuses"][0]["lastState"]["terminated"].value("exitCode", -1), 1);
  must({"delete", "pod", "never-fails", "onfailure-ok", "always-crashes", "--wait=true"});
}

// --- logs and exec ----------------------------------------------------------------------------

class LogsExecTest : public NodesTestBase {
 public:
  static void SetUpTestSuite() {
    SetUpTestSuiteWithArgs({"--nodes", "2", "--pod-start-latency", "100ms"});
  }

 protected:
  void runPod(const std::string& manifest, const std::string& name) {
    must({"create", "-f", "-"}, manifest);
    ASSERT_TRUE(waitFor(
        [&] {
          json p = getJson({"get", "pod", name});
          return p.is_object() && p["status"].value("phase", "") == "Running";
        },
        30s, 100ms));
  }
};

TEST_F(LogsExecTest, KubectlLogsTailTimestampsAndFollow) {
  runPod(podManifest("logger", "10m"), "logger");
  ASSERT_TRUE(waitFor([&] { return kubectl({"logs", "logger"}).out.find("heartbeat 2") != std::string::npos; },
                      30s, 200ms));
  CommandResult logs = must({"logs", "logger"});
  EXPECT_THAT(logs.out, HasSubstr("[strait] container c of pod default/logger started on node"));
  CommandResult tail = must({"logs", "logger", "--tail=1"});
  EXPECT_EQ(std::count(tail.out.begin(), tail.out.end(), '\n'), 1) << tail.out;
  EXPECT_THAT(tail.out, HasSubstr("heartbeat"));
  CommandResult ts = must({"logs", "logger", "--tail=1", "--timestamps"});
  EXPECT_EQ(ts.out.substr(0, 2), "20");
  EXPECT_THAT(ts.out, HasSubstr("Z [strait]"));
  CommandResult limited = must({"logs", "logger", "--limit-bytes=10"});
  EXPECT_EQ(limited.out.size(), 10u);

  auto follow = kubectlBackground({"logs", "-f", "logger", "--tail=1"});
  std::string first = kubectl({"logs", "logger", "--tail=1"}).out;
  EXPECT_TRUE(waitFor(
      [&] {
        std::string out = follow->stdoutText();
        return std::count(out.begin(), out.end(), '\n') >= 3;
      },
      30s, 200ms))
      << follow->stdoutText() << follow->stderrText();
  EXPECT_TRUE(follow->running());
  follow->stop();

  CommandResult missing = kubectl({"logs", "logger", "-c", "nope"});
  EXPECT_NE(missing.exitCode, 0);
  EXPECT_THAT(missing.err, HasSubstr("container nope is not valid for pod logger"));
  must({"delete", "pod", "logger", "--wait=true"});
}

TEST_F(LogsExecTest, KubectlExecBuiltinsStdinAndExitCodes) {
  must({"create", "-f", "-"},
       R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"greeting":"hello from a configmap\n"}})");
  runPod(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"shell"},"spec":{
      "containers":[{"name":"c","image":"busybox","env":[{"name":"MODE","value":"test"},
        {"name":"GREETING","valueFrom":{"configMapKeyRef":{"name":"cfg","key":"greeting"}}}],
        "volumeMounts":[{"name":"cfg","mountPath":"/etc/cfg"}]}],
      "volumes":[{"name":"cfg","configMap":{"name":"cfg"}}]}})",
         "shell");
  CommandResult hi = must({"exec", "shell", "--", "echo", "hi"});
  EXPECT_EQ(hi.out, "hi\n");
  EXPECT_EQ(must({"exec", "shell", "--", "hostname"}).out, "shell\n");
  EXPECT_THAT(must({"exec", "shell", "--", "env"}).out, HasSubstr("MODE=test\n"));
  EXPECT_EQ(must({"exec", "shell", "--", "cat", "/etc/cfg/greeting"}).out, "hello from a configmap\n");
  EXPECT_EQ(must({"exec", "shell", "--", "sh", "-c", "echo $MODE && echo second"}).out, "test\nsecond\n");

  CommandResult in = kubectl({"exec", "-i", "shell", "--", "cat"}, "piped input\n");
  EXPECT_EQ(in.exitCode, 0) << in.describe();
  EXPECT_EQ(in.out, "piped input\n");

  CommandResult three = kubectl({"exec", "shell", "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(three.exitCode, 3) << three.describe();
  CommandResult unknown = kubectl({"exec", "shell", "--", "no-such-command"});
  EXPECT_EQ(unknown.exitCode, 127) << unknown.describe();
  EXPECT_THAT(unknown.err, HasSubstr("no-such-command"));
  must({"delete", "pod", "shell", "--wait=true"});
}

// --- node failure -----------------------------------------------------------------------------

class NodeFailureTest : public NodesTestBase {
 public:
  static void SetUpTestSuite() {
    SetUpTestSuiteWithArgs({"--nodes", "2", "--pod-start-latency", "100ms",
                            "--node-monitor-grace-period", "3s", "--default-toleration-seconds",
                            "2"});
  }
};

TEST_F(NodeFailureTest, NoExecuteTaintEvictsPodsOfThatNode) {
  must({"create", "-f", "-"},
       podManifest("victim", "10m", "", R"(,"nodeSelector":{"kubernetes.io/hostname":"node-0"})") +
           "\n" +
           podManifest("tolerant", "10m", "",
                       R"(,"nodeSelector":{"kubernetes.io/hostname":"node-0"},"tolerations":[{"key":"maintenance","operator":"Exists","effect":"NoExecute"}])"));
  ASSERT_TRUE(waitFor([&] { return podsByPhase()["Running"].size() == 2; }, 30s, 100ms));
  must({"taint", "node", "node-0", "maintenance=now:NoExecute"});
  EXPECT_TRUE(waitFor([&] { return kubectl({"get", "pod", "victim"}).exitCode != 0; }, 30s, 200ms));
  CommandResult tolerant = must({"get", "pod", "tolerant"});
  EXPECT_THAT(tolerant.out, HasSubstr("Running"));
  must({"taint", "node", "node-0", "maintenance-"});
  must({"delete", "pod", "tolerant", "--wait=true"});
}

TEST_F(NodeFailureTest, StoppedHeartbeatMakesNodeUnknownTaintedAndEvictsAfterToleration) {
  must({"create", "-f", "-"},
       podManifest("stranded", "10m", "", R"(,"nodeSelector":{"kubernetes.io/hostname":"node-1"})"));
  ASSERT_TRUE(waitFor([&] { return podsByPhase()["Running"].size() == 1; }, 30s, 100ms));
  json pod = getJson({"get", "pod", "stranded"});
  bool hasToleration = false;
  for (const auto& t : pod["spec"]["tolerations"]) {
    if (t.value("key", "") == "node.kubernetes.io/unreachable" && t.value("tolerationSeconds", 0) == 2) {
      hasToleration = true;
    }
  }
  EXPECT_TRUE(hasToleration) << pod["spec"]["tolerations"].dump();

  must({"annotate", "node", "node-1", "strait.io/simulate=stop-heartbeat"});
  auto readyOf = [&](const json& node) {
    for (const auto& c : node["status"]["conditions"]) {
      if (c.value("type", "") == "Ready") return c.value("status", "");
    }
    return std::string();
  };
  ASSERT_TRUE(waitFor([&] { return readyOf(getJson({"get", "node", "node-1"})) == "Unknown"; }, 30s, 200ms));
  json node = getJson({"get", "node", "node-1"});
  std::set<std::string> taints;
  for (const auto& t : node["spec"]["taints"]) taints.insert(t.value("key", "") + ":" + t.value("effect", ""));
  EXPECT_TRUE(taints.count("node.kubernetes.io/unreachable:NoExecute")) << node["spec"].dump();
  EXPECT_TRUE(taints.count("node.kubernetes.io/unreachable:NoSchedule")) << node["spec"].dump();
  EXPECT_THAT(must({"get", "nodes"}).out, HasSubstr("NotReady"));
  // The pod is marked not ready, then evicted once its 2 s toleration ran out; with the
  // kubelet down it stays Terminating, as on a real cluster.
  EXPECT_TRUE(waitFor(
      [&] {
        json p = getJson({"get", "pod", "stranded"});
        return p.is_object() && p["metadata"].contains("deletionTimestamp");
      },
      30s, 200ms));
  EXPECT_EQ(podCondition(getJson({"get", "pod", "stranded"}), "Ready", "status"), "False");
  // A new pod is not scheduled onto the unreachable node.
  must({"create", "-f", "-"}, podManifest("replacement", "10m"));
  ASSERT_TRUE(waitFor([&] { return getJson({"get", "pod", "replacement"})["spec"].value("nodeName", "") != ""; },
                      30s, 100ms));
  EXPECT_EQ(getJson({"get", "pod", "replacement"})["spec"].value("nodeName", ""), "node-0");

  // Recovery: heartbeats resume, the node is Ready and untainted, and the kubelet finishes
  // the pending deletion.
  must({"annotate", "node", "node-1", "strait.io/simulate-"});
  EXPECT_TRUE(waitFor([&] { return readyOf(getJson({"get", "node", "node-1"})) == "True"; }, 30s, 200ms));
  EXPECT_TRUE(waitFor([&] { return !getJson({"get", "node", "node-1"})["spec"].contains("taints"); }, 30s, 200ms))
      << getJson({"get", "node", "node-1"})["spec"].dump();
  EXPECT_TRUE(waitFor([&] { return kubectl({"get", "pod", "stranded"}).exitCode != 0; }, 30s, 200ms));
  must({"delete", "pod", "replacement", "--wait=true"});
}

}  // namespace
}  // namespace strait::e2e
