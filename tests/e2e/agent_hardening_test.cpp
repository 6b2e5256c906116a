// The consumer agent with real processes when things go wrong around it: two `strait
// minicluster` ("home": 1 node x 1 CPU, "cloud": 2 nodes x 8 CPU), a `strait agent` on each,
// `strait peer`, `strait offload namespace demo`, real kubectl.
//  - One agent per cluster: a second agent for home waits as a standby ("standby: leader is
//    ..."), takes over within the lease duration after the first is killed with SIGKILL, and
//    points the toleration webhook at itself, so new Pods still offload; what the agent
//    publishes (endpoint ConfigMap, webhook configuration) is restored when someone changes it.
//  - Pods created while the consumer agent was down (the webhook skipped: failurePolicy
//    Ignore) get the toleration once the agent is back, with an Event, and run on the
//    virtual node.
//  - `strait status` tells the truth: USED is what the provider admitted, VNODE-READY
//    follows the virtual Node, TUNNEL is False and the virtual Node's NetworkUnavailable
//    agrees, CONNECTED on the provider turns False within --lost-after of the consumer
//    agent's death.
// Each test starts from the suite's clusters (ctest runs every test in a process of its own).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "e2e/offload_fixture.h"
#include "kube/quantity.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr auto kLeaseDuration = 3s;
constexpr auto kLostAfter = 3s;

class AgentHardeningTest : public OffloadSuite {
 public:
  static void SetUpTestSuite() {
    OffloadSetup s;
    s.homeArgs = {"--nodes", "1", "--node-cpu", "1", "--node-memory", "4Gi"};
    s.cloudArgs = {"--nodes", "2", "--node-cpu", "8", "--node-memory", "16Gi"};
    s.peerArgs = {"--cpu", "8", "--memory", "16Gi", "--pods", "50"};
    startAll(s);
  }
  static void TearDownTestSuite() { stopAll(); }
  // With a short Lease, so that a standby takes over within the test.
  static std::vector<std::string> shortLeaseArgs() {
    std::vector<std::string> args = kAgentArgs;
    args.insert(args.end(), {"--leader-lease-duration", "3s"});
    return args;
  }

 protected:
  // The only row of `strait status -o json` on `c` (null if none).
  json row(const Minicluster& c) {
    CommandResult r = strait({"status", "--kubeconfig", c.kubeconfig(), "-o", "json"}, 30s);
    json rows = r.exitCode == 0 ? json::parse(r.out, nullptr, false) : json();
    return rows.is_array() && rows.size() == 1 ? rows[0] : json();
  }
  static bool tolerates(const json& pod) {
    for (const json& t : pod.value("/spec/tolerations"_json_pointer, json::array())) {
      if (t.value("key", "") == "virtual-node.strait.io/not-allowed") return true;
    }
    return false;
  }
  // A Pod of 2 CPU: more than the home node has, so only the virtual node can hold it.
  static std::string bigPod(const std::string& name) {
    return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
           R"(","namespace":"demo"},"spec":{"containers":[{"name":"c","image":"nginx:1.27",)"
           R"("resources":{"requests":{"cpu":"2","memory":"64Mi"}}}]}})";
  }
  static std::string bigDeployment(const std::string& name, int replicas) {
    return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":")" + name +
           R"(","namespace":"demo"},"spec":{"replicas":)" + std::to_string(replicas) +
           R"(,"selector":{"matchLabels":{"app":")" + name +
           R"("}},"template":{"metadata":{"labels":{"app":")" + name +
           R"("}},"spec":{"containers":[{"name":"c","image":"nginx:1.27",)"
           R"("resources":{"requests":{"cpu":"2","memory":"64Mi"}}}]}}}})";
  }
  // Pods with label app=`app` in demo: how many exist and how many run on the virtual node.
  std::pair<int, int> offloaded(const std::string& app) {
    json pods = getJson(*home_, {"get", "pods", "-n", "demo", "-l", "app=" + app});
    int total = 0, running = 0;
    for (const json& p : pods.value("items", json::array())) {
      ++total;
      if (p.value("/spec/nodeName"_json_pointer, std::string()) == "strait-cloud" &&
          p.value("/status/phase"_json_pointer, std::string()) == "Running") {
        ++running;
      }
    }
    return {total, running};
  }
  std::string webhookUrl() {
    return kubectl(*home_, {"get", "mutatingwebhookconfiguration", "strait-offloading", "-o",
                            "jsonpath={.webhooks[0].clientConfig.url}"})
        .out;
  }
  // The URL an agent registered, from its event=webhook_started line ("" if none yet).
  static std::string registeredUrl(const AgentProcess& a) {
    std::string logs = a.logs();
    size_t at = logs.rfind("event=webhook_started url=");
    if (at == std::string::npos) return {};
    at += std::string("event=webhook_started url=").size();
    return logs.substr(at, logs.find_first_of(" \n", at) - at);
  }

};

TEST_F(AgentHardeningTest, SecondAgentWaitsAsStandbyAndTakesOverAfterKill9) {
  // The suite's agent hands over (a clean stop releases the Lease) to one with a short Lease.
  homeAgent_->stop();
  AgentProcess leader;
  ASSERT_EQ(leader.start(home_->kubeconfig(), "home", shortLeaseArgs()), "");
  ASSERT_TRUE(waitFor([&] { return !registeredUrl(leader).empty(); }, 30s)) << leader.logs();
  const std::string urlA = registeredUrl(leader);
  EXPECT_TRUE(waitFor([&] { return webhookUrl() == urlA; }, 10s)) << webhookUrl();

  AgentProcess standby;
  ASSERT_EQ(standby.start(home_->kubeconfig(), "home", shortLeaseArgs(), "127.0.0.1:0",
                          "event=standby"),
            "");
  EXPECT_NE(standby.logs().find("standby: leader is "), std::string::npos) << standby.logs();
  // The standby acts on nothing: the webhook still points at the leader.
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(standby.logs().find("event=agent_started"), std::string::npos) << standby.logs();
  EXPECT_EQ(webhookUrl(), urlA);

  leader.kill();
  const auto killedAt = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] { return standby.logs().find("event=leading") != std::string::npos; },
                      30s, 20ms))
      << standby.logs();
  const auto tookOver = std::chrono::steady_clock::now() - killedAt;
  // The lease lapses kLeaseDuration after the last renewal the standby saw (it sees each
  // within a retry period, a seventh of the lease, jittered by up to 20%) and it tries again
  // within another retry period.
  const std::chrono::milliseconds lease = kLeaseDuration;
  EXPECT_LE(tookOver, lease + lease * 24 / 70 + 300ms)
      << std::chrono::duration_cast<std::chrono::milliseconds>(tookOver).count() << " ms";
  ASSERT_TRUE(waitFor([&] { return !registeredUrl(standby).empty(); }, 60s)) << standby.logs();
  const std::string urlB = registeredUrl(standby);
  EXPECT_NE(urlB, urlA);
  EXPECT_TRUE(waitFor([&] { return webhookUrl() == urlB; }, 10s)) << webhookUrl();

  // A new Pod in the offloaded namespace gets the toleration and runs on the virtual node.
  ASSERT_TRUE(waitFor([&] {
    CommandResult r = kubectl(*home_, {"get", "node", "strait-cloud", "-o",
                                       "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"});
    return r.out == "True";
  }, 60s));
  CommandResult made = kubectl(*home_, {"apply", "-f", "-"}, bigPod("after-takeover"));
  ASSERT_EQ(made.exitCode, 0) << made.describe();
  json pod = getJson(*home_, {"get", "pod", "after-takeover", "-n", "demo"});
  EXPECT_TRUE(tolerates(pod)) << pod.dump();
  EXPECT_TRUE(waitFor([&] {
    json p = getJson(*home_, {"get", "pod", "after-takeover", "-n", "demo"});
    return p.value("/spec/nodeName"_json_pointer, std::string()) == "strait-cloud" &&
           p.value("/status/phase"_json_pointer, std::string()) == "Running";
  }, 90s)) << getJson(*home_, {"get", "pod", "after-takeover", "-n", "demo"}).dump();

  // What the leader publishes is put back when someone else changes it.
  CommandResult patched = kubectl(
      *home_, {"patch", "mutatingwebhookconfiguration", "strait-offloading", "--type", "json", "-p",
               R"([{"op":"replace","path":"/webhooks/0/clientConfig/url","value":"https://127.0.0.1:1/mutate-pods"}])"});
  ASSERT_EQ(patched.exitCode, 0) << patched.describe();
  EXPECT_TRUE(waitFor([&] { return webhookUrl() == urlB; }, 15s)) << webhookUrl();
  CommandResult endpoint = kubectl(*home_, {"get", "configmap", "-n", "strait-system", "strait-agent",
                                            "-o", "jsonpath={.data.endpoint}"});
  ASSERT_EQ(endpoint.exitCode, 0) << endpoint.describe();
  ASSERT_EQ(kubectl(*home_, {"delete", "configmap", "-n", "strait-system", "strait-agent"}).exitCode, 0);
  EXPECT_TRUE(waitFor([&] {
    return kubectl(*home_, {"get", "configmap", "-n", "strait-system", "strait-agent", "-o",
                            "jsonpath={.data.endpoint}"})
               .out == endpoint.out;
  }, 15s));
  standby.stop();
}

TEST_F(AgentHardeningTest, PodsCreatedWhileTheAgentWasDownGetTheTolerationAndOffload) {
  homeAgent_->stop();
  CommandResult d = kubectl(*home_, {"apply", "-f", "-"}, bigDeployment("late", 2));
  ASSERT_EQ(d.exitCode, 0) << d.describe();
  ASSERT_TRUE(waitFor([&] { return offloaded("late").first == 2; }, 60s));
  json pods = getJson(*home_, {"get", "pods", "-n", "demo", "-l", "app=late"});
  for (const json& p : pods.value("items", json::array())) {
    EXPECT_FALSE(tolerates(p)) << "the webhook was down, yet: " << p.dump();
  }
  ASSERT_EQ(homeAgent_->restart(), "");
  EXPECT_TRUE(waitFor([&] { return offloaded("late").second == 2; }, 120s))
      << getJson(*home_, {"get", "pods", "-n", "demo", "-l", "app=late"}).dump(1);
  // Each says why it changed.
  json events = getJson(*home_, {"get", "events", "-n", "demo", "--field-selector",
                                 "reason=TolerationAdded"});
  EXPECT_GE(events.value("items", json::array()).size(), 2u) << events.dump(1);
}

TEST_F(AgentHardeningTest, StatusColumnsTellTheTruth) {
  // The suite's clusters are shared: what the earlier tests left in `demo` goes first, so
  // that USED counts this test's Pods only.
  CommandResult cleared = kubectl(*home_, {"delete", "deployment,pod", "--all", "-n", "demo",
                                           "--wait=true", "--timeout=90s"});
  ASSERT_EQ(cleared.exitCode, 0) << cleared.describe();
  ASSERT_TRUE(waitFor([&] {
    json r = row(*home_);
    return r.is_object() && (!r["used"].is_object() || r["used"].value("pods", "0") == "0");
  }, 60s)) << row(*home_).dump(1);
  CommandResult d = kubectl(*home_, {"apply", "-f", "-"}, bigDeployment("used", 3));
  ASSERT_EQ(d.exitCode, 0) << d.describe();
  ASSERT_TRUE(waitFor([&] { return offloaded("used").second == 3; }, 120s))
      << getJson(*home_, {"get", "pods", "-n", "demo", "-l", "app=used"}).dump(1);

  // USED: what the provider admitted for this consumer (3 Pods x 2 CPU x 64Mi).
  json r;
  EXPECT_TRUE(waitFor([&] {
    r = row(*home_);
    if (!r.is_object() || !r["used"].is_object()) return false;
    auto cpu = kube::Quantity::parse(r["used"].value("cpu", "0"));
    auto mem = kube::Quantity::parse(r["used"].value("memory", "0"));
    return r["used"].value("pods", "") == "3" && cpu.ok() && cpu->milliValue() == 6000 &&
           mem.ok() && mem->milliValue() == 3LL * 64 * 1024 * 1024 * 1000;
  }, 30s)) << r.dump(1);

  // VNODE-READY follows the virtual Node's Ready condition.
  EXPECT_TRUE(waitFor([&] { return row(*home_).value("virtualNodeReady", "") == "True"; }, 30s))
      << row(*home_).dump(1);

  // TUNNEL is False (no peering sets up a tunnel yet), and the virtual Node agrees.
  EXPECT_EQ(row(*home_).value("tunnel", ""), "False");
  CommandResult net = kubectl(*home_, {"get", "node", "strait-cloud", "-o",
                                       "jsonpath={.status.conditions[?(@.type==\"NetworkUnavailable\")]"
                                       ".status} {.status.conditions[?(@.type==\"NetworkUnavailable\")].reason}"});
  EXPECT_EQ(net.out, "True TunnelNotConfigured") << net.describe();

  // CONNECTED on the provider turns False within --lost-after of the consumer agent's death.
  ASSERT_TRUE(waitFor([&] { return row(*cloud_).value("connected", "") == "True"; }, 30s));
  homeAgent_->kill();
  const auto killedAt = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] { return row(*cloud_).value("connected", "") == "False"; }, 30s, 20ms))
      << row(*cloud_).dump(1);
  const auto noticed = std::chrono::steady_clock::now() - killedAt;
  // The provider marks it lost at most --lost-after after its last heartbeat, which came
  // before the kill; the status write and each `strait status` poll add a little.
  EXPECT_LE(noticed, kLostAfter + 1s)
      << std::chrono::duration_cast<std::chrono::milliseconds>(noticed).count() << " ms";
  // VNODE-READY follows the Node down too once its stream grace is over: not asserted here
  // (the grace is 40 s).
}

}  // namespace
}  // namespace strait::e2e
