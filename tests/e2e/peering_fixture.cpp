#include "e2e/peering_fixture.h"

#include <signal.h>

#include <sstream>

#include "peering/encoding.h"
#include "peering/names.h"

namespace strait::e2e {

std::map<std::string, std::string> decodeSecretData(const nlohmann::json& secret) {
  std::map<std::string, std::string> data;
  if (!secret.is_object() || !secret.contains("data")) return data;
  for (auto& [k, v] : secret["data"].items()) {
    auto d = peering::base64Decode(v.get<std::string>(), k);
    if (d.ok()) data[k] = *d;
  }
  return data;
}

peering::ClientConfig credentialClientConfig(const std::map<std::string, std::string>& data,
                                             const std::string& providerId) {
  auto field = [&](const char* key) {
    auto it = data.find(key);
    return it == data.end() ? std::string() : it->second;
  };
  peering::ClientConfig cc;
  cc.endpoint = field("endpoint");
  cc.serverCaPem = field("ca.crt");
  cc.serverName = peering::agentServerName(providerId);
  cc.clientCert = {field("tls.crt"), field("tls.key")};
  return cc;
}

std::string AgentProcess::start(const std::string& kubeconfig, const std::string& clusterName,
                                const std::vector<std::string>& extraArgs,
                                const std::string& listen, const std::string& readyEvent) {
  kubeconfig_ = kubeconfig;
  clusterName_ = clusterName;
  extraArgs_ = extraArgs;
  if (!dir_) dir_ = std::make_unique<TempDir>("strait-agent");
  std::vector<std::string> argv = {straitBinary(), "agent",  "--kubeconfig", kubeconfig,
                                   "--cluster-name", clusterName, "--listen", listen};
  argv.insert(argv.end(), extraArgs.begin(), extraArgs.end());
  ++starts_;
  std::string err = dir_->file("agent" + std::to_string(starts_) + ".err");
  process_ = std::make_unique<BackgroundProcess>();
  std::string error;
  if (!process_->start(argv, {}, dir_->file("agent" + std::to_string(starts_) + ".out"), err,
                       &error)) {
    return "start agent: " + error;
  }
  if (readyEvent != "event=agent_started") {
    bool seen = waitFor(
        [&] {
          return process_->stderrText().find(readyEvent) != std::string::npos ||
                 !process_->running();
        },
        std::chrono::seconds(60));
    if (!seen || !process_->running()) {
      return "agent did not log " + readyEvent + ":\n" + process_->stderrText();
    }
    return {};
  }
  std::string endpointLine, portLine, linkLine;
  auto field = [](const std::string& log, size_t at, const std::string& key) {
    size_t p = log.find(" " + key + "=", at);
    if (p == std::string::npos) return std::string();
    p += key.size() + 2;
    return log.substr(p, log.find_first_of(" \n", p) - p);
  };
  bool ok = waitFor(
      [&] {
        std::string log = process_->stderrText();
        size_t at = log.find("event=agent_started");
        if (at == std::string::npos) return !process_->running();
        endpointLine = field(log, at, "endpoint");
        portLine = field(log, at, "port");
        linkLine = field(log, at, "link_endpoint");
        return true;
      },
      std::chrono::seconds(60));
  if (!ok || endpointLine.empty()) {
    return "agent did not start:\n" + process_->stderrText();
  }
  endpoint_ = endpointLine;
  linkEndpoint_ = linkLine;
  // Restarts listen on the same port (the advertised endpoint may be another address).
  if (!portLine.empty()) listen_ = listen.substr(0, listen.rfind(':') + 1) + portLine;
  return {};
}

std::string AgentProcess::restart() {
  stop();
  // The same link port too (a pull target on a provider names it).
  std::vector<std::string> args = extraArgs_;
  bool linkGiven = false;
  for (const std::string& a : args) linkGiven = linkGiven || a == "--link-listen";
  if (!linkGiven && !linkEndpoint_.empty()) {
    args.insert(args.end(), {"--link-listen", linkEndpoint_});
  }
  std::vector<std::string> keep = extraArgs_;
  std::string err = start(kubeconfig_, clusterName_, args, listen_.empty() ? endpoint_ : listen_);
  extraArgs_ = keep;
  return err;
}

void AgentProcess::stop() {
  if (process_) {
    process_->stop();
    previousLogs_ += process_->stderrText() + process_->stdoutText();
    process_.reset();
  }
}

void AgentProcess::kill() {
  if (process_ && process_->running()) ::kill(process_->pid(), SIGKILL);
  stop();
}

std::string AgentProcess::logs() const {
  return previousLogs_ + (process_ ? process_->stderrText() + process_->stdoutText() : "");
}

Minicluster* TwoClusterTest::consumer_ = nullptr;
Minicluster* TwoClusterTest::provider_ = nullptr;
AgentProcess* TwoClusterTest::consumerAgent_ = nullptr;
AgentProcess* TwoClusterTest::providerAgent_ = nullptr;
std::string TwoClusterTest::startError_;
std::vector<std::string> TwoClusterTest::providerArgs_;
std::vector<std::string> TwoClusterTest::consumerAgentArgs_;

std::vector<std::string> TwoClusterTest::agentArgs() {
  return {"--cert-ttl", "8s", "--heartbeat-interval", "200ms", "--lost-after", "1s",
          "--budget", "cpu=10,memory=20Gi,pods=200"};
}

void TwoClusterTest::SetUpTestSuiteWithProviderArgs(std::vector<std::string> providerArgs,
                                                    std::vector<std::string> consumerAgentArgs) {
  providerArgs_ = std::move(providerArgs);
  consumerAgentArgs_ = std::move(consumerAgentArgs);
  SetUpTestSuite();
  providerArgs_.clear();
  consumerAgentArgs_.clear();
}

void TwoClusterTest::SetUpTestSuite() {
  startError_.clear();
  consumer_ = new Minicluster();
  provider_ = new Minicluster();
  consumerAgent_ = new AgentProcess();
  providerAgent_ = new AgentProcess();
  // Each cluster with its agent, the two side by side.
  std::vector<std::string> consumerArgs = agentArgs();
  consumerArgs.insert(consumerArgs.end(), consumerAgentArgs_.begin(), consumerAgentArgs_.end());
  startError_ = inParallel({
      [&] {
        std::string e = consumer_->start("consumer");
        return e.empty() ? consumerAgent_->start(consumer_->kubeconfig(), "consumer", consumerArgs)
                         : e;
      },
      [&] {
        std::string e = provider_->start("provider", std::chrono::seconds(60), providerArgs_);
        return e.empty() ? providerAgent_->start(provider_->kubeconfig(), "provider", agentArgs())
                         : e;
      },
  });
}

void TwoClusterTest::TearDownTestSuite() {
  delete consumerAgent_;
  delete providerAgent_;
  delete consumer_;
  delete provider_;
  consumerAgent_ = providerAgent_ = nullptr;
  consumer_ = provider_ = nullptr;
}

void TwoClusterTest::SetUp() {
  ASSERT_TRUE(startError_.empty()) << startError_;
  testDir_ = std::make_unique<TempDir>("strait-peering-test");
  // A test may stop an agent; the next test starts with both running.
  if (!providerAgent_->running()) ASSERT_EQ(providerAgent_->restart(), "");
  if (!consumerAgent_->running()) ASSERT_EQ(consumerAgent_->restart(), "");
}

CommandResult TwoClusterTest::strait(const std::vector<std::string>& args,
                                     std::chrono::milliseconds timeout) const {
  std::vector<std::string> argv = {straitBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv, {}, timeout);
}

CommandResult TwoClusterTest::kubectlOn(const Minicluster& c,
                                        const std::vector<std::string>& args) const {
  static int n = 0;
  std::vector<std::string> argv = {"kubectl", "--kubeconfig", c.kubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  Env env = {{"KUBECACHEDIR", testDir() + "/kcache" + std::to_string(++n)},
             {"HOME", testDir()}};
  return runCommand(argv, env);
}

std::vector<std::string> TwoClusterTest::labelledObjects(const Minicluster& c) const {
  CommandResult r = kubectlOn(c, {"get", "namespaces,secrets,configmaps,nodes,foreignclusters",
                                  "-A", "-l", "strait.io/remote-cluster-id", "-o", "name"});
  std::vector<std::string> out;
  if (r.exitCode != 0) {
    out.push_back("kubectl failed: " + r.describe());
    return out;
  }
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

nlohmann::json TwoClusterTest::status(const Minicluster& c) const {
  CommandResult r = strait({"status", "--kubeconfig", c.kubeconfig(), "-o", "json"});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  return j.is_discarded() ? nlohmann::json::array() : j;
}

nlohmann::json TwoClusterTest::onlyRow(const Minicluster& c) const {
  nlohmann::json rows = status(c);
  return rows.size() == 1 ? rows[0] : nlohmann::json();
}

void TwoClusterTest::expectNothingLeft() const {
  EXPECT_TRUE(waitFor([&] { return labelledObjects(consumer()).empty(); }, std::chrono::seconds(30)))
      << "consumer still has:\n" << ::testing::PrintToString(labelledObjects(consumer()));
  EXPECT_TRUE(waitFor([&] { return labelledObjects(provider()).empty(); }, std::chrono::seconds(30)))
      << "provider still has:\n" << ::testing::PrintToString(labelledObjects(provider()));
}

}  // namespace strait::e2e
