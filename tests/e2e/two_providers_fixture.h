#pragma once
// One consumer ("home") and two providers ("cloud-a", "cloud-b"): sim-runtime miniclusters with
// real agents (fast heartbeats, 3 s lost-after), home peered with both by `strait peer`, and
// real kubectl with a fresh discovery cache per call.

#include <string>
#include <vector>

#include "e2e/cluster_fixture.h"
#include "e2e/peering_fixture.h"

namespace strait::e2e {

struct TwoProviders {
  Minicluster home, cloudA, cloudB;
  AgentProcess homeAgent, agentA, agentB;
  TempDir dir;
  int kubectlCalls = 0;

  explicit TwoProviders(const std::string& tempPrefix) : dir(tempPrefix) {}

  // Starts the clusters (home 1 CPU, each cloud 4; simulated kubelets that run a Pod 100 ms
  // after its binding) and agents (`homeAgentArgs` added to home's), peers home with both
  // clouds (4 CPUs each). "" or what failed.
  std::string start(const std::vector<std::string>& homeAgentArgs = {}) {
    const std::vector<std::string> timing = {"--heartbeat-interval", "300ms", "--lost-after",
                                             "3s", "--kubelet-port", "0"};
    std::vector<std::string> cloudArgs = timing;
    cloudArgs.insert(cloudArgs.end(), {"--share", "1"});
    std::vector<std::string> homeArgs = timing;
    homeArgs.insert(homeArgs.end(), homeAgentArgs.begin(), homeAgentArgs.end());
    // Each cluster with its agent; the three side by side.
    auto startOne = [](Minicluster& cluster, AgentProcess& agent, const std::string& name,
                       const std::vector<std::string>& clusterArgs,
                       const std::vector<std::string>& agentArgs) -> std::string {
      if (auto e = cluster.start(name, std::chrono::seconds(60), clusterArgs); !e.empty()) {
        return name + ": " + e;
      }
      if (auto e = agent.start(cluster.kubeconfig(), name, agentArgs); !e.empty()) {
        return name + " agent: " + e;
      }
      return "";
    };
    if (auto e = inParallel({
            [&] {
              return startOne(home, homeAgent, "home",
                              {"--nodes", "1", "--node-cpu", "1", "--pod-start-latency", "100ms"},
                              homeArgs);
            },
            [&] {
              return startOne(cloudA, agentA, "cloud-a",
                              {"--nodes", "1", "--node-cpu", "4", "--pod-start-latency", "100ms"},
                              cloudArgs);
            },
            [&] {
              return startOne(cloudB, agentB, "cloud-b",
                              {"--nodes", "1", "--node-cpu", "4", "--pod-start-latency", "100ms"},
                              cloudArgs);
            },
        });
        !e.empty()) {
      return e;
    }
    for (Minicluster* cloud : {&cloudA, &cloudB}) {
      CommandResult p = runCommand({straitBinary(), "peer", "--kubeconfig", home.kubeconfig(),
                                    "--remote-kubeconfig", cloud->kubeconfig(), "--cpu", "4"},
                                   {}, std::chrono::seconds(120));
      if (p.exitCode != 0) return "strait peer: " + p.describe();
    }
    return "";
  }

  CommandResult kubectlOn(const Minicluster& c, const std::vector<std::string>& args,
                          const std::string& in = "") {
    std::vector<std::string> argv = {"kubectl", "--kubeconfig", c.kubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv,
                      {{"KUBECACHEDIR", dir.path() + "/k" + std::to_string(++kubectlCalls)},
                       {"HOME", dir.path()}},
                      std::chrono::seconds(60), in);
  }
  CommandResult kubectl(const std::vector<std::string>& args, const std::string& in = "") {
    return kubectlOn(home, args, in);
  }

  // The tail of home's agent log, for failure messages.
  std::string diagnostics() {
    std::string l = homeAgent.logs();
    return "\n--- home agent ---\n" + (l.size() > 6000 ? l.substr(l.size() - 6000) : l);
  }
};

}  // namespace strait::e2e
