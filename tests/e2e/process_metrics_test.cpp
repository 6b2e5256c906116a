// Resource usage and limits of the process runtime end to end, as root, with the real
// /usr/bin/kubectl: `kubectl top pods`, `kubectl top pods -A -l`, `kubectl top nodes` read
// metrics.k8s.io, which the minicluster builds from its kubelets' /stats/summary (cgroups,
// or /proc when cgroups are unusable); a Pod over its memory limit is OOMKilled where a
// memory controller is usable, and elsewhere the Node says plainly that limits are not
// enforced.
//
// Skipped (with the reason) when the process runtime cannot run here
// (processRuntimeUnavailable()).

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "e2e/cluster_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;

const char* kLimitsAnnotation = "minicluster.strait.io/resource-limits";

// `kubectl top` output: NAME (or NAMESPACE NAME) -> CPU in millicores.
std::map<std::string, int> topCpu(const std::string& out, bool withNamespace) {
  std::map<std::string, int> cpu;
  std::stringstream ss(out);
  std::string line;
  std::getline(ss, line);  // header
  std::regex row(withNamespace ? R"(^(\S+)\s+(\S+)\s+(\d+)m\s+)" : R"(^(\S+)\s+(\d+)m\s+)");
  while (std::getline(ss, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    if (withNamespace) {
      cpu[m[1].str() + "/" + m[2].str()] = std::stoi(m[3]);
    } else {
      cpu[m[1].str()] = std::stoi(m[2]);
    }
  }
  return cpu;
}

json shellPod(const std::string& name, const std::string& script, json resources = nullptr) {
  json c = {{"name", "main"}, {"image", "debian:12"}, {"command", {"sh", "-c", script}}};
  if (!resources.is_null()) c["resources"] = resources;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{"app", name}}}}},
          {"spec", {{"terminationGracePeriodSeconds", 1}, {"containers", json::array({c})}}}};
}

class ProcessMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = processRuntimeUnavailable(); !why.empty()) GTEST_SKIP() << why;
    home_ = std::make_unique<TempDir>("strait-procmet-home");
  }

  void startCluster(const std::string& name) {
    std::string err = c_.start(name, 90s, {"--runtime", "process", "--nodes", "1"});
    ASSERT_EQ(err, "") << err;
  }

  CommandResult kubectl(const std::vector<std::string>& args, const std::string& in = {}) {
    std::vector<std::string> argv = {"/usr/bin/kubectl"};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv,
                      {{"KUBECONFIG", c_.kubeconfig()},
                       {"KUBECACHEDIR", home_->file("cache-" + std::to_string(++calls_))},
                       {"HOME", home_->path()}},
                      60s, in);
  }

  void apply(const json& obj) {
    CommandResult r = kubectl({"apply", "-f", "-"}, obj.dump());
    ASSERT_EQ(r.exitCode, 0) << r.describe();
  }

  bool running(const std::string& pod) {
    return kubectl({"get", "pod", pod, "-o", "jsonpath={.status.phase}"}).out == "Running";
  }

  std::string diagnostics() {
    return "\n" + kubectl({"get", "pods", "-A", "-o", "wide"}).out + c_.serverLog();
  }

  Minicluster c_;
  std::unique_ptr<TempDir> home_;
  int calls_ = 0;
};

TEST_F(ProcessMetricsTest, KubectlTopShowsABusyPodsRealCpuAndTheNodes) {
  ASSERT_NO_FATAL_FAILURE(startCluster("procmet-top"));
  ASSERT_NO_FATAL_FAILURE(apply(shellPod("burn", "while :; do :; done")));
  ASSERT_NO_FATAL_FAILURE(apply(shellPod("idle", "exec sleep 3600")));
  ASSERT_TRUE(waitFor([&] { return running("burn") && running("idle"); }, 90s, 250ms))
      << diagnostics();

  // The metrics API is discovered (kubectl top refuses to run otherwise).
  CommandResult resources = kubectl({"api-resources", "--api-group=metrics.k8s.io"});
  EXPECT_NE(resources.out.find("PodMetrics"), std::string::npos) << resources.describe();

  std::map<std::string, int> top;
  CommandResult r;
  ASSERT_TRUE(waitFor(
      [&] {
        r = kubectl({"top", "pods"});
        top = topCpu(r.out, false);
        return r.exitCode == 0 && top.count("burn") && top["burn"] > 100 && top.count("idle");
      },
      60s, 1s))
      << r.describe() << diagnostics();
  EXPECT_LT(top["idle"], 50) << r.out;

  // All namespaces, with a label selector: only burn, under its namespace.
  CommandResult all = kubectl({"top", "pods", "-A", "-l", "app=burn"});
  ASSERT_EQ(all.exitCode, 0) << all.describe();
  std::map<std::string, int> allTop = topCpu(all.out, true);
  EXPECT_EQ(allTop.size(), 1u) << all.out;
  EXPECT_TRUE(allTop.count("default/burn")) << all.out;

  // One Pod by name, and a Pod without metrics is NotFound as with metrics-server.
  EXPECT_EQ(kubectl({"top", "pod", "burn"}).exitCode, 0);
  CommandResult absent = kubectl({"get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/nope"});
  EXPECT_NE(absent.exitCode, 0);
  EXPECT_NE(absent.err.find("NotFound"), std::string::npos) << absent.describe();

  // The node's usage includes the busy Pod.
  CommandResult nodes;
  ASSERT_TRUE(waitFor(
      [&] {
        nodes = kubectl({"top", "nodes"});
        auto n = topCpu(nodes.out, false);
        return nodes.exitCode == 0 && n.count("node-0") && n["node-0"] > 100;
      },
      30s, 1s))
      << nodes.describe();

  // The kubelet's Summary itself, through the metrics API's raw shape.
  CommandResult raw = kubectl({"get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/node-0"});
  json nm = json::parse(raw.out, nullptr, false);
  ASSERT_TRUE(nm.is_object()) << raw.describe();
  EXPECT_EQ(nm["kind"], "NodeMetrics");
  EXPECT_NE(nm["usage"].value("memory", ""), "");
}

TEST_F(ProcessMetricsTest, AContainerOverItsMemoryLimitIsOOMKilledOrTheNodeSaysLimitsAreNotEnforced) {
  ASSERT_NO_FATAL_FAILURE(startCluster("procmet-oom"));
  json node = json::parse(kubectl({"get", "node", "node-0", "-o", "json"}).out, nullptr, false);
  ASSERT_TRUE(node.is_object());
  std::string limits = node["metadata"]["annotations"].value(kLimitsAnnotation, "");
  ASSERT_FALSE(limits.empty()) << node.dump(2);
  if (limits.rfind("none:", 0) == 0) {
    // No usable cgroups: said at start, on the Node, and in an Event.
    EXPECT_NE(c_.serverLog().find("event=resource_limits_not_enforced"), std::string::npos);
    CommandResult ev = kubectl({"get", "events", "-A", "--field-selector",
                                "reason=ResourceLimitsNotEnforced"});
    EXPECT_NE(ev.out.find("not enforced"), std::string::npos) << ev.describe();
    GTEST_SKIP() << "no usable memory controller here: " << limits;
  }
  EXPECT_TRUE(limits == "cgroup v1" || limits == "cgroup v2") << limits;

  // 32Mi allowed, 256Mi written: the kernel kills it, the kubelet says OOMKilled, 137.
  ASSERT_NO_FATAL_FAILURE(apply(shellPod(
      "hog", "exec python3 -c \"import time; b = b'x' * (256 << 20); time.sleep(600)\"",
      json{{"limits", {{"memory", "32Mi"}}}})));
  json last;
  ASSERT_TRUE(waitFor(
      [&] {
        json p = json::parse(kubectl({"get", "pod", "hog", "-o", "json"}).out, nullptr, false);
        if (!p.is_object()) return false;
        for (const auto& cs : p["status"].value("containerStatuses", json::array())) {
          last = cs.value("lastState", json::object()).value("terminated", json::object());
        }
        return !last.empty();
      },
      90s, 500ms))
      << diagnostics();
  EXPECT_EQ(last.value("reason", ""), "OOMKilled") << last.dump();
  EXPECT_EQ(last.value("exitCode", 0), 137) << last.dump();

  // A CPU limit holds a busy loop near its quota; without one it takes more.
  ASSERT_NO_FATAL_FAILURE(apply(shellPod("capped", "while :; do :; done",
                                         json{{"limits", {{"cpu", "100m"}}}})));
  ASSERT_TRUE(waitFor([&] { return running("capped"); }, 90s, 250ms)) << diagnostics();
  std::map<std::string, int> top;
  CommandResult r;
  ASSERT_TRUE(waitFor(
      [&] {
        r = kubectl({"top", "pods", "-l", "app=capped"});
        top = topCpu(r.out, false);
        return r.exitCode == 0 && top.count("capped");
      },
      60s, 1s))
      << r.describe();
  EXPECT_LE(top["capped"], 150) << r.out;
}

}  // namespace
}  // namespace strait::e2e
