#pragma once
// The offloading suites' shared setup: two `strait minicluster` processes, "home" (the
// consumer) and "cloud" (the provider), a `strait agent` on each, `strait peer` home ->
// cloud, the virtual node strait-cloud Ready, and namespaces offloaded with
// `strait offload namespace`. Each suite derives from OffloadSuite, calls startAll() (or the
// steps one by one when it needs something in between, e.g. a proxy) in its
// SetUpTestSuite() and stopAll() in TearDownTestSuite(); the clusters are shared by the
// suite's tests (ctest runs a suite's tests in one process, in order). The two clusters
// start side by side, then the two agents. SetUp() fails the test with the setup's error,
// if any.
//
// Not thread-safe: call from the test thread only.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e/cluster_fixture.h"
#include "e2e/peering_fixture.h"

namespace strait::e2e {

class TcpProxy;

struct OffloadSetup {
  std::vector<std::string> homeArgs = {"--nodes", "2", "--node-cpu", "2", "--node-memory", "8Gi"};
  std::vector<std::string> cloudArgs = {"--nodes", "4", "--node-cpu", "8", "--node-memory",
                                        "32Gi"};
  // Added to kAgentArgs (and, for the cloud, to --share 1).
  std::vector<std::string> homeAgentArgs;
  std::vector<std::string> cloudAgentArgs;
  std::vector<std::string> peerArgs = {"--cpu", "32", "--memory", "64Gi", "--pods", "100"};
  bool peer = true;                              // false: stop after starting the agents
  std::vector<std::string> namespaces = {"demo"};  // created and offloaded after the peering
};

class OffloadSuite : public ::testing::Test {
 public:
  // Short timings, so that loss and renewal happen within a test; the kubelet API on any
  // free port.
  static const std::vector<std::string> kAgentArgs;
  static constexpr const char* kVirtualNode = "strait-cloud";

  // Every step below, in order. Returns "" or what failed (also kept for SetUp()).
  static std::string startAll(const OffloadSetup& setup);
  static void stopAll();

  // The steps. Each returns "" or what failed.
  static std::string startClusters(const OffloadSetup& setup);
  static std::string startAgents(const OffloadSetup& setup);
  // startAgents with the home agent reaching the cloud agent only through `proxy` (started
  // here; the cloud agent advertises its port), which a test cuts and heals.
  static std::string startAgentsThroughProxy(TcpProxy& proxy, const OffloadSetup& setup);
  // `strait peer --remote-kubeconfig` with `args`, then the virtual node Ready.
  static std::string peer(const std::vector<std::string>& args);
  static std::string waitVirtualNodeReady(std::chrono::milliseconds deadline =
                                              std::chrono::seconds(60));
  // `kubectl create namespace` (unless it exists) and `strait offload namespace`.
  static std::string offloadNamespace(const std::string& ns,
                                      const std::vector<std::string>& extraArgs = {});

 protected:
  void SetUp() override;

  // `strait ARGS...`.
  CommandResult strait(const std::vector<std::string>& args,
                       std::chrono::milliseconds timeout = std::chrono::seconds(120)) const;
  // kubectl against `c` with a fresh discovery cache per call.
  CommandResult kubectl(const Minicluster& c, const std::vector<std::string>& args,
                        const std::string& stdinText = "");
  // `kubectl get ARGS -o json`, parsed; null when it fails.
  nlohmann::json getJson(const Minicluster& c, const std::vector<std::string>& args);
  // The virtual node's Ready status ("True", "False"), "" when it cannot be read.
  std::string vnodeReady();
  // home's cluster ID (strait-system/strait-agent data.clusterID).
  std::string consumerId();
  // Where home's namespace `ns` lives in the cloud (the default naming).
  std::string remoteNamespace(const std::string& ns) { return ns + "-" + consumerId(); }
  // The last lines of both agents' logs, for failure messages.
  static std::string agentLogs();

  static Minicluster* home_;
  static Minicluster* cloud_;
  static AgentProcess* homeAgent_;
  static AgentProcess* cloudAgent_;
  static std::string error_;
  std::unique_ptr<TempDir> dir_;  // per test: kubectl caches and scratch files

 private:
  int kubectlCalls_ = 0;
};

// An OffloadSuite whose provider ("cloud") runs Pods as real processes (`--runtime
// process`): one node in each cluster, a peering of 4 CPUs, 8Gi and 20 Pods, and namespace
// demo offloaded. The process runtime needs root: without it the suite starts nothing and
// every test is skipped.
class ProcessOffloadSuite : public OffloadSuite {
 public:
  static void SetUpTestSuite();
  static void TearDownTestSuite() { stopAll(); }

 protected:
  void SetUp() override;
  // Both clusters' Pods and the agents' logs, for failure messages.
  std::string diagnostics();
};

}  // namespace strait::e2e
