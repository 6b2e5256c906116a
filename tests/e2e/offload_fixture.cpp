// The offloading suites' shared setup (see offload_fixture.h).
#include "e2e/offload_fixture.h"

#include <unistd.h>

#include <cstdlib>

#include "e2e/tcp_proxy.h"

namespace strait::e2e {

using json = nlohmann::json;
using namespace std::chrono_literals;

const std::vector<std::string> OffloadSuite::kAgentArgs = {
    "--heartbeat-interval", "300ms", "--lost-after", "3s", "--kubelet-port", "0"};

Minicluster* OffloadSuite::home_ = nullptr;
Minicluster* OffloadSuite::cloud_ = nullptr;
AgentProcess* OffloadSuite::homeAgent_ = nullptr;
AgentProcess* OffloadSuite::cloudAgent_ = nullptr;
std::string OffloadSuite::error_;

namespace {

// kubectl against `kubeconfig` with a throw-away discovery cache.
CommandResult setupKubectl(const std::string& kubeconfig, const std::vector<std::string>& args) {
  TempDir cache("strait-offload-setup");
  std::vector<std::string> argv = {"kubectl", "--kubeconfig", kubeconfig};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv, {{"KUBECACHEDIR", cache.path() + "/kcache"}, {"HOME", cache.path()}},
                    60s);
}

}  // namespace

std::string OffloadSuite::startAll(const OffloadSetup& setup) {
  error_ = startClusters(setup);
  if (error_.empty()) error_ = startAgents(setup);
  if (error_.empty() && setup.peer) error_ = peer(setup.peerArgs);
  for (const std::string& ns : setup.namespaces) {
    if (!error_.empty() || !setup.peer) break;
    error_ = offloadNamespace(ns);
  }
  return error_;
}

void OffloadSuite::stopAll() {
  delete homeAgent_;
  delete cloudAgent_;
  delete home_;
  delete cloud_;
  homeAgent_ = cloudAgent_ = nullptr;
  home_ = cloud_ = nullptr;
}

std::string OffloadSuite::startClusters(const OffloadSetup& setup) {
  error_.clear();
  home_ = new Minicluster();
  cloud_ = new Minicluster();
  homeAgent_ = new AgentProcess();
  cloudAgent_ = new AgentProcess();
  // A process-runtime cluster holds a machine-wide lock and namespaces named after it: two
  // suites running at once under ctest -j must not both call theirs "cloud".
  std::string suffix = "-" + std::to_string(::getpid());
  // The two clusters start side by side.
  return inParallel({
      [&] {
        std::string e = home_->start("home" + suffix, 60s, setup.homeArgs);
        return e.empty() ? e : "home: " + e;
      },
      [&] {
        std::string e = cloud_->start("cloud" + suffix, 60s, setup.cloudArgs);
        return e.empty() ? e : "cloud: " + e;
      },
  });
}

std::string OffloadSuite::startAgents(const OffloadSetup& setup) {
  std::vector<std::string> cloudArgs = kAgentArgs;
  cloudArgs.insert(cloudArgs.end(), {"--share", "1"});
  cloudArgs.insert(cloudArgs.end(), setup.cloudAgentArgs.begin(), setup.cloudAgentArgs.end());
  std::vector<std::string> homeArgs = kAgentArgs;
  homeArgs.insert(homeArgs.end(), setup.homeAgentArgs.begin(), setup.homeAgentArgs.end());
  // The agents start side by side (neither needs the other until the peering).
  return inParallel({
      [&] {
        std::string e = cloudAgent_->start(cloud_->kubeconfig(), "cloud", cloudArgs);
        return e.empty() ? e : "cloud agent: " + e;
      },
      [&] {
        std::string e = homeAgent_->start(home_->kubeconfig(), "home", homeArgs);
        return e.empty() ? e : "home agent: " + e;
      },
  });
}

std::string OffloadSuite::startAgentsThroughProxy(TcpProxy& proxy, const OffloadSetup& setup) {
  if (std::string e = proxy.start(); !e.empty()) return "proxy: " + e;
  std::vector<std::string> cloudArgs = kAgentArgs;
  cloudArgs.insert(cloudArgs.end(), {"--share", "1"});
  cloudArgs.insert(cloudArgs.end(), setup.cloudAgentArgs.begin(), setup.cloudAgentArgs.end());
  cloudArgs.insert(cloudArgs.end(), {"--advertise", "127.0.0.1:" + std::to_string(proxy.port())});
  std::vector<std::string> homeArgs = kAgentArgs;
  homeArgs.insert(homeArgs.end(), setup.homeAgentArgs.begin(), setup.homeAgentArgs.end());
  // The agents start side by side; the proxy forwards to the port the cloud agent bound (its
  // agent_started line), set before anything dials it (the peering comes later).
  return inParallel({
      [&]() -> std::string {
        if (std::string e = cloudAgent_->start(cloud_->kubeconfig(), "cloud", cloudArgs);
            !e.empty()) {
          return "cloud agent: " + e;
        }
        const std::string log = cloudAgent_->logs();
        const size_t started = log.rfind("event=agent_started ");
        const size_t at = started == std::string::npos ? started : log.find(" port=", started);
        const long port =
            at == std::string::npos ? -1 : std::strtol(log.c_str() + at + 6, nullptr, 10);
        if (port <= 0 || port > 65535) return "no port in the cloud agent's log:\n" + log;
        proxy.setUpstreamPort(static_cast<uint16_t>(port));
        return "";
      },
      [&] {
        std::string e = homeAgent_->start(home_->kubeconfig(), "home", homeArgs);
        return e.empty() ? e : "home agent: " + e;
      },
  });
}

std::string OffloadSuite::peer(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {straitBinary(), "peer", "--kubeconfig", home_->kubeconfig(),
                                   "--remote-kubeconfig", cloud_->kubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult p = runCommand(argv, {}, 120s);
  if (p.exitCode != 0) return "peer: " + p.describe();
  return waitVirtualNodeReady();
}

std::string OffloadSuite::waitVirtualNodeReady(std::chrono::milliseconds deadline) {
  CommandResult ready;
  if (!waitFor([&] {
        ready = setupKubectl(home_->kubeconfig(),
                             {"get", "node", kVirtualNode, "-o",
                              "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"});
        return ready.exitCode == 0 && ready.out == "True";
      }, deadline)) {
    return std::string("virtual node ") + kVirtualNode + " not Ready: " + ready.describe() +
           agentLogs();
  }
  return "";
}

std::string OffloadSuite::offloadNamespace(const std::string& ns,
                                           const std::vector<std::string>& extraArgs) {
  CommandResult exists = setupKubectl(home_->kubeconfig(), {"get", "namespace", ns});
  if (exists.exitCode != 0) {
    CommandResult c = setupKubectl(home_->kubeconfig(), {"create", "namespace", ns});
    if (c.exitCode != 0) return "namespace " + ns + ": " + c.describe();
  }
  std::vector<std::string> argv = {straitBinary(), "offload", "namespace", ns, "--kubeconfig",
                                   home_->kubeconfig()};
  argv.insert(argv.end(), extraArgs.begin(), extraArgs.end());
  CommandResult off = runCommand(argv, {}, 120s);
  return off.exitCode == 0 ? "" : "offload " + ns + ": " + off.describe();
}

void OffloadSuite::SetUp() {
  ASSERT_TRUE(error_.empty()) << error_;
  dir_ = std::make_unique<TempDir>("strait-offload-test");
}

CommandResult OffloadSuite::strait(const std::vector<std::string>& args,
                                   std::chrono::milliseconds timeout) const {
  std::vector<std::string> argv = {straitBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv, {}, timeout);
}

CommandResult OffloadSuite::kubectl(const Minicluster& c, const std::vector<std::string>& args,
                                    const std::string& stdinText) {
  std::vector<std::string> argv = {"kubectl", "--kubeconfig", c.kubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  Env env = {{"KUBECACHEDIR", dir_->path() + "/kcache" + std::to_string(++kubectlCalls_)},
             {"HOME", dir_->path()}};
  return runCommand(argv, env, 60s, stdinText);
}

json OffloadSuite::getJson(const Minicluster& c, const std::vector<std::string>& args) {
  std::vector<std::string> a = args;
  a.insert(a.end(), {"-o", "json"});
  CommandResult r = kubectl(c, a);
  if (r.exitCode != 0) return json();
  json j = json::parse(r.out, nullptr, false);
  return j.is_discarded() ? json() : j;
}

std::string OffloadSuite::vnodeReady() {
  CommandResult r = kubectl(*home_, {"get", "node", kVirtualNode, "-o",
                                     "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"});
  return r.exitCode == 0 ? r.out : "";
}

std::string OffloadSuite::consumerId() {
  return kubectl(*home_, {"get", "configmap", "-n", "strait-system", "strait-agent", "-o",
                          "jsonpath={.data.clusterID}"})
      .out;
}

std::string OffloadSuite::agentLogs() {
  auto tail = [](const std::string& s) { return s.size() > 6000 ? s.substr(s.size() - 6000) : s; };
  std::string out;
  if (homeAgent_) out += "\n--- home agent ---\n" + tail(homeAgent_->logs());
  if (cloudAgent_) out += "\n--- cloud agent ---\n" + tail(cloudAgent_->logs());
  return out;
}

void ProcessOffloadSuite::SetUpTestSuite() {
  if (::geteuid() != 0) return;
  OffloadSetup s;
  s.homeArgs = {"--nodes", "1"};
  s.cloudArgs = {"--runtime", "process", "--nodes", "1"};
  s.peerArgs = {"--cpu", "4", "--memory", "8Gi", "--pods", "20"};
  s.namespaces = {"demo"};
  startAll(s);
}

void ProcessOffloadSuite::SetUp() {
  if (::geteuid() != 0) GTEST_SKIP() << "the provider's process runtime needs root";
  OffloadSuite::SetUp();
}

std::string ProcessOffloadSuite::diagnostics() {
  return "\n" + kubectl(*home_, {"get", "pods", "-A", "-o", "wide"}).out +
         kubectl(*cloud_, {"get", "pods", "-A", "-o", "wide"}).out + agentLogs();
}

}  // namespace strait::e2e
