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

  // Starts the clusters (home 1 CPU, each cloud 4) and agents (`homeAgentArgs` added to
  // home's), peers home with both clouds (4 CPUs each). "" or what failed.
  std::string start(const std::vector<std::string>& homeAgentArgs = {}) {
    if (auto e = home.start("home", std::chrono::seconds(60), {"--nodes", "1", "--node-cpu", "1"});
        !e.empty()) {
      return "home: " + e;
    }
    for (auto [cluster, name] : {std::pair{&cloudA, "cloud-a"}, std::pair{&cloudB, "cloud-b"}}) {
      if (auto e = cluster->start(name, std::chrono::seconds(60),
                                  {"--nodes", "1", "--node-cpu", "4"});
          !e.empty()) {
        return std::string(name) + ": " + e;
      }
    }
    const std::vector<std::string> timing = {"--heartbeat-interval", "300ms", "--lost-after",
                                             "3s", "--kubelet-port", "0"};
    std::vector<std::string> cloudArgs = timing;
    cloudArgs.insert(cloudArgs.end(), {"--share", "1"});
    std::vector<std::string> homeArgs = timing;
    homeArgs.insert(homeArgs.end(), homeAgentArgs.begin(), homeAgentArgs.end());
    if (auto e = agentA.start(cloudA.kubeconfig(), "cloud-a", cloudArgs); !e.empty()) {
      return "cloud-a agent: " + e;
    }
    if (auto e = agentB.start(cloudB.kubeconfig(), "cloud-b", cloudArgs); !e.empty()) {
      return "cloud-b agent: " + e;
    }
    if (auto e = homeAgent.start(home.kubeconfig(), "home", homeArgs); !e.empty()) {
      return "home agent: " + e;
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
