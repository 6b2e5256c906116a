// `kubectl top` in the consumer shows an offloaded Pod's real usage: the provider runs the
// Pod as a process (`--runtime process`), its minicluster serves metrics.k8s.io from its
// kubelet's cgroups, the provider agent's RemoteKubelet reads those PodMetrics and maps them
// to the consumer's namespace and names, the virtual kubelet's /stats/summary relays them,
// and the consumer's metrics.k8s.io (what kubectl reads) builds PodMetrics and the virtual
// node's NodeMetrics from that Summary.
// Skipped when not root (the provider's process runtime needs it).

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "e2e/offload_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// Millicores of `name` in `kubectl top` output (NAME first, or NAMESPACE NAME); -1 if absent.
int cpuOf(const std::string& out, const std::string& name, bool withNamespace) {
  std::stringstream ss(out);
  std::regex row(withNamespace ? R"(^(\S+)\s+(\S+)\s+(\d+)m\s+)" : R"(^(\S+)\s+(\d+)m\s+)");
  for (std::string line; std::getline(ss, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    std::string key = withNamespace ? m[1].str() + "/" + m[2].str() : m[1].str();
    if (key == name) return std::stoi(m[withNamespace ? 3 : 2]);
  }
  return -1;
}

class OffloadMetricsTest : public ProcessOffloadSuite {};

TEST_F(OffloadMetricsTest, KubectlTopInTheConsumerShowsTheOffloadedPodsRealUsage) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "burn"}, {"namespace", "demo"}, {"labels", {{"app", "burn"}}}}},
              {"spec",
               {{"nodeSelector", {{"kubernetes.io/hostname", kVirtualNode}}},
                {"terminationGracePeriodSeconds", 1},
                {"containers",
                 json::array({{{"name", "main"},
                               {"image", "debian:12"},
                               {"command", {"sh", "-c", "while :; do :; done"}},
                               {"resources", {{"requests", {{"cpu", "100m"}}}}}}})}}}};
  ASSERT_EQ(kubectl(*home_, {"apply", "-f", "-"}, pod.dump()).exitCode, 0);
  ASSERT_TRUE(waitFor(
      [&] {
        return kubectl(*home_, {"get", "pod", "burn", "-n", "demo", "-o",
                                "jsonpath={.status.phase}"})
                   .out == "Running";
      },
      90s, 500ms))
      << diagnostics();

  // Under the consumer's namespace and name, with the provider's measured CPU.
  CommandResult top;
  ASSERT_TRUE(waitFor(
      [&] {
        top = kubectl(*home_, {"top", "pods", "-n", "demo"});
        return top.exitCode == 0 && cpuOf(top.out, "burn", false) > 100;
      },
      60s, 1s))
      << top.describe() << diagnostics();
  CommandResult all = kubectl(*home_, {"top", "pods", "-A"});
  EXPECT_GT(cpuOf(all.out, "demo/burn", true), 100) << all.describe();

  // The virtual node's usage is its offloaded Pods'.
  CommandResult nodes;
  ASSERT_TRUE(waitFor(
      [&] {
        nodes = kubectl(*home_, {"top", "nodes"});
        return nodes.exitCode == 0 && cpuOf(nodes.out, kVirtualNode, false) > 100;
      },
      30s, 1s))
      << nodes.describe();
}

}  // namespace
}  // namespace strait::e2e
