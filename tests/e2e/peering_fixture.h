#pragma once
// Two-cluster test support for peering: two `strait minicluster` processes ("consumer" and
// "provider") and a `strait agent` process on each, shared by the tests of a suite. Each
// agent's logs are kept so that tests can check what they contain (and what they never do).
//
// Not thread-safe: call from the test thread only.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/cluster_fixture.h"
#include "peering/transport.h"

namespace strait::e2e {

// The "data" of a Secret, base64-decoded; entries that do not decode are left out.
std::map<std::string, std::string> decodeSecretData(const nlohmann::json& secret);
// How a consumer dials the agent of the provider `providerId` with the decoded data of its
// credential Secret (endpoint, ca.crt, tls.crt, tls.key).
peering::ClientConfig credentialClientConfig(const std::map<std::string, std::string>& data,
                                             const std::string& providerId);

// One `strait agent` process for a cluster.
class AgentProcess {
 public:
  AgentProcess() = default;
  ~AgentProcess() { stop(); }

  // Starts the agent with `extraArgs` and waits for its event=agent_started log line.
  // `listen` "127.0.0.1:0" picks a port; restart() reuses the bound port. Returns "" on
  // success or what went wrong (with the agent's stderr).
  // `readyEvent` other than event=agent_started (e.g. event=standby for a second agent of
  // the same cluster) is waited for instead, and no endpoint is read.
  std::string start(const std::string& kubeconfig, const std::string& clusterName,
                    const std::vector<std::string>& extraArgs,
                    const std::string& listen = "127.0.0.1:0",
                    const std::string& readyEvent = "event=agent_started");
  // Stops (SIGTERM, then SIGKILL) and starts again on the same port. Logs accumulate.
  std::string restart();
  // Stops the process. Idempotent.
  void stop();
  // SIGKILL, as a crash.
  void kill();
  bool running() { return process_ && process_->running(); }
  // Every log line this agent wrote so far, across restarts.
  std::string logs() const;
  const std::string& endpoint() const { return endpoint_; }
  // The running agent's pid; -1 when not started.
  pid_t pid() const { return process_ ? process_->pid() : -1; }
  // The link port provider agents dial in pull mode (as published).
  const std::string& linkEndpoint() const { return linkEndpoint_; }

 private:
  std::string kubeconfig_;
  std::string clusterName_;
  std::vector<std::string> extraArgs_;
  std::string endpoint_;
  std::string linkEndpoint_;
  std::string listen_;  // host:bound-port, for restarts
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<BackgroundProcess> process_;
  std::string previousLogs_;
  int starts_ = 0;
};

// Suite fixture: consumer and provider miniclusters, each with an agent. Agents use short
// timings (heartbeat 200ms, lost after 1s, client certificates valid 8s) so that renewal and
// loss detection happen within a test.
class TwoClusterTest : public ::testing::Test {
 public:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  // SetUpTestSuite with `strait minicluster` flags for the provider (e.g. --nodes 1 so that
  // its simulated kubelets run Pods).
  // `consumerAgentArgs` are added to the consumer agent's flags.
  static void SetUpTestSuiteWithProviderArgs(std::vector<std::string> providerArgs,
                                             std::vector<std::string> consumerAgentArgs = {});

 protected:
  void SetUp() override;

  // `strait ARGS...` (60 s timeout).
  CommandResult strait(const std::vector<std::string>& args,
                       std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;
  // kubectl against one cluster with a fresh cache dir.
  CommandResult kubectlOn(const Minicluster& c, const std::vector<std::string>& args) const;
  // Names ("kind/name" as kubectl -o name prints them) of objects carrying the peering
  // ownership label strait.io/remote-cluster-id, across namespaces, secrets, configmaps,
  // nodes and foreignclusters.
  std::vector<std::string> labelledObjects(const Minicluster& c) const;
  // `strait status -o json` on `c` (an empty array if it fails, with a test failure).
  nlohmann::json status(const Minicluster& c) const;
  // The single row of `strait status` on `c`, or null.
  nlohmann::json onlyRow(const Minicluster& c) const;
  // Waits (30 s each) until neither cluster holds a labelled object; a test failure if not.
  void expectNothingLeft() const;

  static Minicluster& consumer() { return *consumer_; }
  static Minicluster& provider() { return *provider_; }
  static AgentProcess& consumerAgent() { return *consumerAgent_; }
  static AgentProcess& providerAgent() { return *providerAgent_; }
  const std::string& testDir() const { return testDir_->path(); }

  static std::vector<std::string> agentArgs();

 private:
  static Minicluster* consumer_;
  static Minicluster* provider_;
  static AgentProcess* consumerAgent_;
  static AgentProcess* providerAgent_;
  static std::vector<std::string> consumerAgentArgs_;
  static std::string startError_;
  static std::vector<std::string> providerArgs_;
  std::unique_ptr<TempDir> testDir_;
};

}  // namespace strait::e2e
