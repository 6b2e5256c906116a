// The `strait` command line as a user meets it, with the real binary: the list of commands,
// `help` and `version`, an unknown command with a suggestion, one exit-code convention
// (0 ok, 1 failure, 2 bad usage), every bad flag value refused naming its flag, a taken
// --listen port, system namespaces refused by `strait offload`, `strait status` in a cluster
// without Strait, and a kubeconfig whose CA does not verify the server.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>

#include "e2e/cluster_fixture.h"
#include "e2e/peering_fixture.h"

namespace strait::e2e {
namespace {

constexpr int kUsage = 2;

CommandResult strait(const std::vector<std::string>& args,
                     std::chrono::milliseconds timeout = 60s) {
  std::vector<std::string> argv = {straitBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv, {}, timeout);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const std::vector<std::string> kCommands = {"minicluster", "agent",  "token",   "peer",
                                            "unpeer",      "status", "gateway", "offload",
                                            "unoffload",   "demo",   "version", "help"};

TEST(CliTest, BareStraitListsTheCommandsAsBadUsage) {
  CommandResult r = strait({});
  EXPECT_EQ(r.exitCode, kUsage) << r.describe();
  for (const std::string& c : kCommands) EXPECT_TRUE(contains(r.err, c)) << c << r.describe();
}

TEST(CliTest, HelpListsTheCommandsAndTheExitCodes) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"help"}, std::vector<std::string>{"--help"}}) {
    CommandResult r = strait(args);
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    for (const std::string& c : kCommands) EXPECT_TRUE(contains(r.out, c)) << c << r.describe();
    EXPECT_TRUE(contains(r.out, "Exit codes: 0 ok; 1 the command failed; 2 bad usage"))
        << r.describe();
  }
}

TEST(CliTest, VersionSubcommandAndFlagPrintTheVersion) {
  CommandResult sub = strait({"version"});
  EXPECT_EQ(sub.exitCode, 0) << sub.describe();
  EXPECT_TRUE(std::regex_search(sub.out, std::regex(R"(^strait \d+\.\d+\.\d+)"))) << sub.describe();
  CommandResult flag = strait({"--version"});
  EXPECT_EQ(flag.exitCode, 0) << flag.describe();
  EXPECT_EQ(flag.out, sub.out) << flag.describe();
}

TEST(CliTest, UnknownSubcommandIsNamedWithTheClosestOne) {
  struct Case {
    std::string typed;
    std::string suggested;  // "" = no suggestion expected
  };
  for (const Case& c : {Case{"ofload", "offload"}, Case{"agnet", "agent"}, Case{"stauts", "status"},
                        Case{"minicluser", "minicluster"}, Case{"foo", ""}}) {
    CommandResult r = strait({c.typed});
    EXPECT_EQ(r.exitCode, kUsage) << r.describe();
    EXPECT_TRUE(contains(r.err, "unknown subcommand \"" + c.typed + "\"")) << r.describe();
    if (!c.suggested.empty()) {
      EXPECT_TRUE(contains(r.err, "did you mean \"" + c.suggested + "\"")) << r.describe();
    } else {
      EXPECT_FALSE(contains(r.err, "did you mean")) << r.describe();
    }
  }
}

TEST(CliTest, ParseErrorsExitTwo) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"agent"},                                   // required flags
        std::vector<std::string>{"status", "--kubeconfig", "x", "--bogus"},  // unknown flag
        std::vector<std::string>{"offload"},                                 // no subcommand
        std::vector<std::string>{"status", "--kubeconfig"}}) {               // missing value
    CommandResult r = strait(args);
    EXPECT_EQ(r.exitCode, kUsage) << args[0] << " " << r.describe();
  }
}

TEST(CliTest, EveryBadValueIsRefusedNamingItsFlag) {
  const std::vector<std::string> agent = {"agent", "--kubeconfig", "/nonexistent", "--cluster-name",
                                          "x"};
  const std::vector<std::string> peer = {"peer", "--kubeconfig", "/nonexistent", "--token", "t"};
  const std::vector<std::string> token = {"token", "--kubeconfig", "/nonexistent"};
  const std::vector<std::string> gateway = {"gateway", "--config", "/nonexistent"};
  struct Case {
    std::vector<std::string> base;
    std::vector<std::string> args;
    std::string flag;
    std::string range;  // what the message says is accepted
  };
  const std::vector<Case> cases = {
      {agent, {"--listen", "127.0.0.1:99999"}, "--listen", "65535"},
      {agent, {"--listen", ":7443"}, "--listen", "host"},
      {agent, {"--listen", "not a host:7443"}, "--listen", "host name"},
      {agent, {"--listen", "127.0.0.1"}, "--listen", "HOST:PORT"},
      {agent, {"--advertise", "10.0.0.1:0"}, "--advertise", "1-65535"},
      {agent, {"--link-listen", "127.0.0.1:-1"}, "--link-listen", "65535"},
      {agent, {"--webhook-listen", "127.0.0.1:70000"}, "--webhook-listen", "65535"},
      {agent, {"--kubelet-port", "70000"}, "--kubelet-port", "65535"},
      {agent, {"--heartbeat-interval", "0s"}, "--heartbeat-interval", "10ms to 1h"},
      {agent, {"--lost-after", "soon"}, "--lost-after", "10ms to 24h"},
      {agent, {"--cert-ttl", "0s"}, "--cert-ttl", "1s to 8760h"},
      {agent, {"--stream-keepalive", "0s"}, "--stream-keepalive", "10ms to 1h"},
      {agent, {"--vnode-stream-grace", "0s"}, "--vnode-stream-grace", "1s to 24h"},
      {agent, {"--kube-qps", "-5"}, "--kube-qps", "1000000"},
      {agent, {"--kube-burst", "0"}, "--kube-burst", "1000000"},
      {agent, {"--stream-workers", "0"}, "--stream-workers", "1024"},
      {agent, {"--vnode-pod-workers", "5000"}, "--vnode-pod-workers", "1024"},
      {agent, {"--share", "0"}, "--share", "at most 1"},
      {agent, {"--budget", "cpu=8,memory=16Gi,pods=0"}, "--budget", "above zero"},
      {agent, {"--max-per-consumer", "cpu=0"}, "--max-per-consumer", "above zero"},
      {agent, {"--vnode-taint-effect", "Sometimes"}, "--vnode-taint-effect", "NoExecute"},
      {agent, {"--log-level", "verbose"}, "--log-level", "critical"},
      {agent, {"--leader-lease-duration", "0s"}, "--leader-lease-duration", "1s to 1h"},
      {agent, {"--vnode-address", "not an address"}, "--vnode-address", "host name"},
      {{"offload", "namespace", "web", "--kubeconfig", "/nonexistent"},
       {"--naming", "random"},
       "--naming",
       "same"},
      {{"minicluster"}, {"--nodes", "-1"}, "--nodes", "5000"},
      {{"minicluster"}, {"--listen", "127.0.0.1:99999"}, "--listen", "65535"},
      {{"minicluster"}, {"--log-level", "verbose"}, "--log-level", "trace"},
      {{"minicluster"}, {"--node-pods", "0"}, "--node-pods", "greater than zero"},
      {{"minicluster"},
       {"--node-monitor-grace-period", "0s"},
       "--node-monitor-grace-period",
       "1s to 24h"},
      {{"minicluster"},
       {"--default-toleration-seconds", "-1"},
       "--default-toleration-seconds",
       "31536000"},
      {token, {"--ttl", "100000h"}, "--ttl", "720h"},
      {token, {"--ttl", "0s"}, "--ttl", "1s to 720h"},
      {token, {"--mode", "sideways"}, "--mode", "pull"},
      {token, {"--consumer-endpoint", "nohost"}, "--consumer-endpoint", "HOST:PORT"},
      {peer, {"--pods", "0"}, "--pods", "greater than zero"},
      {peer, {"--cpu", "0"}, "--cpu", "greater than zero"},
      {peer, {"--memory", "-1Gi"}, "--memory", "greater than zero"},
      {peer, {"--resource", "pods=0"}, "--resource", "above zero"},
      {peer, {"--timeout", "0s"}, "--timeout", "1s to 24h"},
      {peer, {"--mode", "sideways"}, "--mode", "push"},
      {{"unpeer", "--kubeconfig", "/nonexistent", "--remote-name", "x"},
       {"--timeout", "forever"},
       "--timeout",
       "1s to 24h"},
      {{"status", "--kubeconfig", "/nonexistent"}, {"-o", "yaml"}, "--output", "json"},
      {gateway, {"--handshake-load-threshold", "0"}, "--handshake-load-threshold", "1000000"},
      {gateway, {"--log-level", "verbose"}, "--log-level", "critical"},
      {{"demo"}, {"--replicas", "0"}, "--replicas", "1000"},
      {{"demo"}, {"--timeout", "0s"}, "--timeout", "1s to 24h"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.base;
    args.insert(args.end(), c.args.begin(), c.args.end());
    CommandResult r = strait(args, 30s);
    std::string what = c.base[0] + " " + c.args[0] + " " + c.args[1];
    EXPECT_EQ(r.exitCode, kUsage) << what << "\n" << r.describe();
    EXPECT_TRUE(contains(r.err, c.flag)) << what << ": the message names no " << c.flag << "\n"
                                         << r.describe();
    EXPECT_TRUE(contains(r.err, c.range))
        << what << ": the message does not say \"" << c.range << "\"\n"
        << r.describe();
  }
}

TEST(CliTest, TokenTtlCapIsInTheHelp) {
  CommandResult r = strait({"token", "--help"});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "720h")) << r.describe();
}

// A listening TCP socket on 127.0.0.1, any port, without SO_REUSEPORT; closed on destruction.
class HeldPort {
 public:
  HeldPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        ::listen(fd_, 8) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return;
    }
    port_ = ntohs(a.sin_port);
  }
  ~HeldPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Runs `strait agent` on `kubeconfig` listening on `listen` and waits (60 s) for it to exit;
// a test failure (and the agent stopped) if it keeps running.
CommandResult agentThatMustExit(const std::string& kubeconfig, const std::string& listen,
                                const TempDir& dir) {
  BackgroundProcess p;
  std::string error;
  CommandResult r;
  if (!p.start({straitBinary(), "agent", "--kubeconfig", kubeconfig, "--cluster-name", "second",
                "--listen", listen, "--kubelet-port", "0"},
               {}, dir.file("agent.out"), dir.file("agent.err"), &error)) {
    ADD_FAILURE() << error;
    return r;
  }
  bool exited = waitFor([&] { return !p.running(); }, 60s);
  EXPECT_TRUE(exited) << "the agent runs on a port another process listens on:\n" << p.stderrText();
  r.exitCode = exited ? p.exitCode() : p.stop();
  r.out = p.stdoutText();
  r.err = p.stderrText();
  return r;
}

TEST(CliPortTest, ListenOnAPortHeldByASocketFailsNamingThePort) {
  Minicluster cluster;
  ASSERT_EQ(cluster.start("held-socket"), "");
  HeldPort held;
  ASSERT_GT(held.port(), 0);
  TempDir dir("strait-cli-port");
  std::string port = std::to_string(held.port());
  CommandResult r = agentThatMustExit(cluster.kubeconfig(), "127.0.0.1:" + port, dir);
  EXPECT_EQ(r.exitCode, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "port " + port + " is already in use")) << r.describe();
}

TEST(CliPortTest, SecondAgentOnAnAgentsPortFailsAndTheFirstKeepsItsPort) {
  Minicluster first, second;
  ASSERT_EQ(first.start("first"), "");
  ASSERT_EQ(second.start("second"), "");
  AgentProcess firstAgent;
  ASSERT_EQ(firstAgent.start(first.kubeconfig(), "first", {"--kubelet-port", "0"}), "");
  const std::string& endpoint = firstAgent.endpoint();  // 127.0.0.1:PORT
  std::string port = endpoint.substr(endpoint.rfind(':') + 1);
  TempDir dir("strait-cli-port");
  CommandResult r = agentThatMustExit(second.kubeconfig(), "127.0.0.1:" + port, dir);
  EXPECT_EQ(r.exitCode, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "port " + port + " is already in use")) << r.describe();
  EXPECT_TRUE(firstAgent.running()) << firstAgent.logs();
}

TEST(CliClusterTest, OffloadOfASystemNamespaceIsRefusedUnlessForced) {
  Minicluster cluster;
  ASSERT_EQ(cluster.start("home"), "");
  AgentProcess agent;
  ASSERT_EQ(agent.start(cluster.kubeconfig(), "home", {"--kubelet-port", "0"}), "");
  for (const std::string ns : {"kube-system", "kube-public", "kube-node-lease", "strait-system"}) {
    CommandResult r = strait({"offload", "namespace", ns, "--kubeconfig", cluster.kubeconfig()});
    EXPECT_EQ(r.exitCode, kUsage) << ns << r.describe();
    EXPECT_TRUE(contains(r.err, "refusing to offload namespace " + ns)) << r.describe();
    EXPECT_TRUE(contains(r.err, "--force")) << r.describe();
  }
  CommandResult why =
      strait({"offload", "namespace", "kube-system", "--kubeconfig", cluster.kubeconfig()});
  EXPECT_TRUE(contains(why.err, "Kubernetes system namespace")) << why.describe();
  TempDir cache("strait-cli-kubectl");
  auto label = [&](const std::string& ns) {
    return runCommand({"kubectl", "--kubeconfig", cluster.kubeconfig(), "get", "namespace", ns,
                       "-o", "jsonpath={.metadata.labels.strait\\.io/offloaded}"},
                      {{"KUBECACHEDIR", cache.file("kcache")}, {"HOME", cache.path()}});
  };
  CommandResult untouched = label("kube-system");
  EXPECT_EQ(untouched.exitCode, 0) << untouched.describe();
  EXPECT_EQ(untouched.out, "") << "a refused offload labelled the namespace";

  CommandResult forced = strait(
      {"offload", "namespace", "kube-public", "--kubeconfig", cluster.kubeconfig(), "--force"});
  EXPECT_EQ(forced.exitCode, 0) << forced.describe();
  CommandResult offloaded = label("kube-public");
  EXPECT_EQ(offloaded.out, "true") << offloaded.describe();
  // An ordinary namespace needs no --force.
  ASSERT_EQ(
      runCommand({"kubectl", "--kubeconfig", cluster.kubeconfig(), "create", "namespace", "web"},
                 {{"KUBECACHEDIR", cache.file("kcache")}, {"HOME", cache.path()}})
          .exitCode,
      0);
  CommandResult web = strait({"offload", "namespace", "web", "--kubeconfig", cluster.kubeconfig()});
  EXPECT_EQ(web.exitCode, 0) << web.describe();
}

TEST(CliClusterTest, StatusWithoutAnAgentSaysHowToStartOne) {
  Minicluster cluster;
  ASSERT_EQ(cluster.start("bare"), "");
  CommandResult r = strait({"status", "--kubeconfig", cluster.kubeconfig()});
  EXPECT_EQ(r.exitCode, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "Strait is not running in the cluster at " + cluster.server()))
      << r.describe();
  EXPECT_TRUE(
      contains(r.err, "strait agent --kubeconfig " + cluster.kubeconfig() + " --cluster-name"))
      << r.describe();
  EXPECT_FALSE(contains(r.err, "could not find the requested resource")) << r.describe();
}

TEST(CliClusterTest, KubeconfigWithAnotherCaNamesTheServerAndWhatDidNotVerify) {
  Minicluster cluster;
  ASSERT_EQ(cluster.start("tls"), "");
  TempDir dir("strait-cli-tls");
  CommandResult ca =
      runCommand({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                  "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", dir.file("other.key"),
                  "-out", dir.file("other.crt"), "-days", "1", "-subj", "/CN=another-ca"});
  ASSERT_EQ(ca.exitCode, 0) << ca.describe();
  CommandResult b64 = runCommand({"base64", "-w0", dir.file("other.crt")});
  ASSERT_EQ(b64.exitCode, 0) << b64.describe();
  std::string kubeconfig = readFile(cluster.kubeconfig());
  std::regex caData(R"((certificate-authority-data:\s*)\S+)");
  ASSERT_TRUE(std::regex_search(kubeconfig, caData)) << kubeconfig;
  std::string wrong = std::regex_replace(kubeconfig, caData, "$1" + b64.out);
  ASSERT_TRUE(writeFile(dir.file("wrong-ca.kubeconfig"), wrong));

  CommandResult r = strait({"status", "--kubeconfig", dir.file("wrong-ca.kubeconfig")});
  EXPECT_EQ(r.exitCode, 1) << r.describe();
  EXPECT_TRUE(contains(r.err, "TLS handshake with " + cluster.server() + " failed"))
      << r.describe();
  EXPECT_TRUE(contains(r.err, "not signed by the kubeconfig's certificate-authority-data"))
      << r.describe();
  EXPECT_TRUE(contains(r.err, "certificate verify failed")) << r.describe();

  // The right CA, but the certificate is checked against a name it was not issued for.
  std::regex server(R"((\n(\s*)server:[^\n]*))");
  std::string renamed =
      std::regex_replace(kubeconfig, server, "$1\n$2tls-server-name: wrong.example");
  ASSERT_NE(renamed, kubeconfig);
  ASSERT_TRUE(writeFile(dir.file("wrong-name.kubeconfig"), renamed));
  CommandResult n = strait({"status", "--kubeconfig", dir.file("wrong-name.kubeconfig")});
  EXPECT_EQ(n.exitCode, 1) << n.describe();
  EXPECT_TRUE(contains(n.err, "TLS handshake with " + cluster.server() + " failed"))
      << n.describe();
  EXPECT_TRUE(contains(n.err, "not issued for wrong.example")) << n.describe();
}

}  // namespace
}  // namespace strait::e2e
