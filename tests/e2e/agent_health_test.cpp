// `strait agent` where it runs as a Deployment: without --kubeconfig it takes $KUBECONFIG (and
// in a Pod its service account; tests/cmd covers that part), and --health-listen answers the
// kubelet's probes over plain HTTP. Real minicluster, real agents, real curl.

#include <gtest/gtest.h>

#include <regex>

#include "e2e/cluster_fixture.h"

namespace strait::e2e {
namespace {

using namespace std::chrono_literals;

struct Answer {
  int status = 0;
  std::string body;
};

// GET http://127.0.0.1:`port``path` with curl; status 0 when nothing answered.
Answer get(int port, const std::string& path) {
  CommandResult r = runCommand({"curl", "-s", "-m", "10", "-w", "\n%{http_code}",
                                "http://127.0.0.1:" + std::to_string(port) + path},
                               {}, 20s);
  Answer a;
  size_t nl = r.out.rfind('\n');
  if (nl == std::string::npos) return a;
  a.status = std::atoi(r.out.c_str() + nl + 1);
  a.body = r.out.substr(0, nl);
  return a;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// An agent started from `env` (no --kubeconfig) with its health port on any free port.
struct HealthAgent {
  BackgroundProcess process;
  int healthPort = 0;

  std::string start(const TempDir& dir, const std::string& name, const Env& env,
                    const std::string& waitFor) {
    std::string error;
    if (!process.start({straitBinary(), "agent", "--cluster-name", "health", "--listen",
                        "127.0.0.1:0", "--kubelet-port", "0", "--webhook-listen", "127.0.0.1:0",
                        "--leader-lease-duration", "2s", "--health-listen", "127.0.0.1:0"},
                       env, dir.file(name + ".out"), dir.file(name + ".err"), &error)) {
      return error;
    }
    std::smatch m;
    std::regex portLine("event=health_listening port=([0-9]+)");
    bool up = e2e::waitFor(
        [&] {
          std::string log = process.stderrText();
          if (!contains(log, waitFor)) return false;
          if (!std::regex_search(log, m, portLine)) return false;
          healthPort = std::stoi(m[1]);
          return true;
        },
        60s);
    return up ? "" : "agent did not log " + waitFor + ":\n" + process.stderrText();
  }
};

TEST(AgentHealthTest, LeaderAndStandbyAnswerProbesAndReadyzFailsWithoutTheApiServer) {
  Minicluster cluster;
  ASSERT_EQ(cluster.start("health"), "");
  TempDir dir("strait-agent-health");
  // KUBECONFIG instead of --kubeconfig, as client-go's loading rules.
  Env env{{"KUBECONFIG", cluster.kubeconfig()}};
  HealthAgent leader;
  ASSERT_EQ(leader.start(dir, "leader", env, "event=agent_started"), "");

  Answer healthz = get(leader.healthPort, "/healthz");
  EXPECT_EQ(healthz.status, 200);
  EXPECT_EQ(healthz.body, "ok\n");
  EXPECT_EQ(get(leader.healthPort, "/livez").status, 200);
  Answer ready = get(leader.healthPort, "/readyz");
  EXPECT_EQ(ready.status, 200) << ready.body;
  EXPECT_TRUE(contains(ready.body, "[+]apiserver ok")) << ready.body;
  EXPECT_TRUE(contains(ready.body, "[+]grpc ok (leader)")) << ready.body;
  Answer leaderReady = get(leader.healthPort, "/readyz/leader");
  EXPECT_EQ(leaderReady.status, 200) << leaderReady.body;
  EXPECT_EQ(get(leader.healthPort, "/metrics").status, 404);

  // A second agent of the same cluster waits for the Lease: ready, and says it is a standby.
  HealthAgent standby;
  ASSERT_EQ(standby.start(dir, "standby", env, "standby"), "");
  Answer standbyReady = get(standby.healthPort, "/readyz");
  EXPECT_EQ(standbyReady.status, 200) << standbyReady.body;
  EXPECT_TRUE(contains(standbyReady.body, "standby")) << standbyReady.body;
  // ... but not for a Service's traffic: it serves no gRPC.
  Answer standbyLeader = get(standby.healthPort, "/readyz/leader");
  EXPECT_EQ(standbyLeader.status, 503) << standbyLeader.body;
  EXPECT_TRUE(contains(standbyLeader.body, "[-]leader failed: standby")) << standbyLeader.body;
  EXPECT_EQ(get(standby.healthPort, "/healthz").status, 200);

  // The API server goes away: the standby stays alive but is not ready, naming the check.
  leader.process.stop();
  cluster.stop();
  Answer down;
  bool notReady = e2e::waitFor(
      [&] {
        down = get(standby.healthPort, "/readyz");
        return down.status == 503;
      },
      30s, 500ms);
  EXPECT_TRUE(notReady) << down.status << " " << down.body << standby.process.stderrText();
  EXPECT_TRUE(contains(down.body, "[-]apiserver failed")) << down.body;
  EXPECT_TRUE(contains(down.body, "readyz check failed")) << down.body;
  EXPECT_EQ(get(standby.healthPort, "/healthz").status, 200);
}

TEST(AgentHealthTest, WithoutAnyClusterConfigurationTheAgentNamesWhatIsMissing) {
  TempDir dir("strait-agent-health");
  CommandResult r = runCommand({straitBinary(), "agent", "--cluster-name", "x", "--listen",
                                "127.0.0.1:0"},
                               {{"KUBECONFIG", ""},
                                {"KUBERNETES_SERVICE_HOST", ""},
                                {"KUBERNETES_SERVICE_PORT", ""},
                                {"HOME", dir.path()}},
                               30s);
  EXPECT_EQ(r.exitCode, 1) << r.describe();
  for (const char* named : {"--kubeconfig", "KUBECONFIG", "KUBERNETES_SERVICE_HOST"}) {
    EXPECT_TRUE(contains(r.err, named)) << r.describe();
  }
}

TEST(AgentHealthTest, HealthListenIsValidatedLikeTheOtherListenFlags) {
  CommandResult r = runCommand({straitBinary(), "agent", "--cluster-name", "x",
                                "--health-listen", "127.0.0.1:99999"},
                               {}, 30s);
  EXPECT_EQ(r.exitCode, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--health-listen")) << r.describe();
}

}  // namespace
}  // namespace strait::e2e
