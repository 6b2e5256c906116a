// One consumer peered with two providers, its agent started with a fixed --kubelet-port:
// each virtual node gets its own kubelet port (the first the given one, the next one above
// it), advertises it in its Node, and `kubectl logs` reaches a Pod on either virtual node
// through the consumer's API server. Also: a namespace offloaded to any provider, and one
// Pod pinned to each virtual node, each running in its own provider.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "e2e/cluster_fixture.h"
#include "e2e/peering_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// True when nothing listens on 127.0.0.1:port (we could bind it just now).
bool portFree(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// A base port P with P and P+1 free (from the ephemeral port a bind to 0 got).
int freePortPair() {
  for (int attempt = 0; attempt < 50; ++attempt) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port = ntohs(a.sin_port);
    }
    ::close(fd);
    if (port > 0 && port < 65535 && portFree(port) && portFree(port + 1)) return port;
  }
  return 0;
}

std::string podJson(const std::string& name, const std::string& node) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         R"(","namespace":"multi"},"spec":{"nodeSelector":{"kubernetes.io/hostname":")" + node +
         R"("},"terminationGracePeriodSeconds":1,"containers":[{"name":"c","image":"busybox",
         "resources":{"requests":{"cpu":"100m"}}}]}})";
}

TEST(OffloadTwoProvidersTest, EachVirtualNodeServesItsKubeletApiOnItsOwnPort) {
  const int base = freePortPair();
  ASSERT_GT(base, 0) << "no two consecutive free ports";
  Minicluster home, cloudA, cloudB;
  const std::vector<std::string> timing = {"--heartbeat-interval", "300ms", "--lost-after", "3s"};
  AgentProcess homeAgent, agentA, agentB;
  std::vector<std::string> homeArgs = timing;
  homeArgs.insert(homeArgs.end(), {"--kubelet-port", std::to_string(base)});
  std::vector<std::string> cloudArgs = timing;
  cloudArgs.insert(cloudArgs.end(), {"--share", "1", "--kubelet-port", "0"});
  // Each cluster with its agent; the three side by side.
  auto startOne = [](Minicluster& cluster, AgentProcess& agent, const std::string& name,
                     const std::vector<std::string>& clusterArgs,
                     const std::vector<std::string>& agentArgs) -> std::string {
    if (auto e = cluster.start(name, 60s, clusterArgs); !e.empty()) return name + ": " + e;
    if (auto e = agent.start(cluster.kubeconfig(), name, agentArgs); !e.empty()) {
      return name + " agent: " + e;
    }
    return "";
  };
  ASSERT_EQ(inParallel({
                [&] {
                  return startOne(home, homeAgent, "home", {"--nodes", "1", "--node-cpu", "1"},
                                  homeArgs);
                },
                [&] {
                  return startOne(cloudA, agentA, "cloud-a", {"--nodes", "1", "--node-cpu", "4"},
                                  cloudArgs);
                },
                [&] {
                  return startOne(cloudB, agentB, "cloud-b", {"--nodes", "1", "--node-cpu", "4"},
                                  cloudArgs);
                },
            }),
            "");
  auto diagnostics = [&] {
    std::string l = homeAgent.logs();
    return "\n--- home agent ---\n" + (l.size() > 6000 ? l.substr(l.size() - 6000) : l);
  };

  TempDir dir("strait-two-providers");
  int n = 0;
  auto kubectl = [&](const std::vector<std::string>& args, const std::string& in = "") {
    std::vector<std::string> argv = {"kubectl", "--kubeconfig", home.kubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, {{"KUBECACHEDIR", dir.path() + "/k" + std::to_string(++n)},
                             {"HOME", dir.path()}},
                      60s, in);
  };
  // Peered one after the other: cloud-a's virtual node gets the base port, cloud-b's the next.
  for (Minicluster* cloud : {&cloudA, &cloudB}) {
    CommandResult p = runCommand({straitBinary(), "peer", "--kubeconfig", home.kubeconfig(),
                                  "--remote-kubeconfig", cloud->kubeconfig(), "--cpu", "4"},
                                 {}, 120s);
    ASSERT_EQ(p.exitCode, 0) << p.describe();
    const std::string node = cloud == &cloudA ? "strait-cloud-a" : "strait-cloud-b";
    CommandResult ready;
    ASSERT_TRUE(waitFor([&] {
      ready = kubectl({"get", "node", node, "-o",
                       "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"});
      return ready.out == "True";
    }, 60s)) << node << ": " << ready.describe() << diagnostics();
  }
  auto port = [&](const std::string& node) {
    return kubectl({"get", "node", node, "-o",
                    "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}"}).out;
  };
  EXPECT_EQ(port("strait-cloud-a"), std::to_string(base));
  EXPECT_EQ(port("strait-cloud-b"), std::to_string(base + 1));

  ASSERT_EQ(kubectl({"create", "namespace", "multi"}).exitCode, 0);
  CommandResult off = runCommand(
      {straitBinary(), "offload", "namespace", "multi", "--kubeconfig", home.kubeconfig()}, {},
      60s);
  ASSERT_EQ(off.exitCode, 0) << off.describe();
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, podJson("on-a", "strait-cloud-a")).exitCode, 0);
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, podJson("on-b", "strait-cloud-b")).exitCode, 0);
  for (const std::string pod : {"on-a", "on-b"}) {
    CommandResult st;
    ASSERT_TRUE(waitFor([&] {
      st = kubectl({"get", "pod", pod, "-n", "multi", "-o", "jsonpath={.status.phase}"});
      return st.out == "Running";
    }, 90s)) << pod << ": " << st.describe() << diagnostics();
    CommandResult logs;
    EXPECT_TRUE(waitFor([&] {
      logs = kubectl({"logs", "-n", "multi", pod});
      return logs.exitCode == 0 && logs.out.find("started") != std::string::npos;
    }, 30s)) << pod << ": " << logs.describe() << diagnostics();
  }
  // Each Pod runs in its own provider (the mapped namespace carries the consumer's id).
  auto remotePods = [&](const Minicluster& cloud) {
    CommandResult r = runCommand(
        {"kubectl", "--kubeconfig", cloud.kubeconfig(), "get", "pods", "-A", "-l",
         "strait.io/origin-cluster-id", "-o", "jsonpath={.items[*].metadata.name}"},
        {{"KUBECACHEDIR", dir.path() + "/r" + std::to_string(++n)}, {"HOME", dir.path()}}, 60s);
    return r.out;
  };
  EXPECT_EQ(remotePods(cloudA), "on-a");
  EXPECT_EQ(remotePods(cloudB), "on-b");
}

}  // namespace
}  // namespace strait::e2e
