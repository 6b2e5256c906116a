// Leader election on a coordination.k8s.io/v1 Lease of a real minicluster: two electors,
// each with its own Client and thread. Exactly one leads; when it stops without releasing
// the Lease, the other takes over once the lease duration has passed.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "e2e/cluster_fixture.h"
#include "kube/client.h"
#include "kube/leader_election.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
namespace res = kube::resources;

class ClientLeaderElectionTest : public ClusterTest {
 protected:
  std::unique_ptr<kube::Client> newClient() {
    auto cfg = kube::loadKubeconfig({{cluster().kubeconfig()}, ""});
    EXPECT_TRUE(cfg.ok());
    auto c = kube::newClient(*cfg);
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }

  kube::LeaderElectionConfig config(const std::string& id, std::atomic<int>& leading) {
    kube::LeaderElectionConfig c;
    c.leaseNamespace = "kube-system";
    c.leaseName = "strait-test-leader";
    c.identity = id;
    c.leaseDuration = 3000ms;
    c.renewDeadline = 2000ms;
    c.retryPeriod = 250ms;
    c.onStartedLeading = [&leading](std::stop_token) { ++leading; };
    c.onStoppedLeading = [&leading] { --leading; };
    return c;
  }
};

TEST_F(ClientLeaderElectionTest, ExactlyOneLeadsAndTheOtherTakesOverAfterTheLease) {
  auto ca = newClient();
  auto cb = newClient();
  std::atomic<int> leading{0};
  auto cfgA = config("candidate-a", leading);
  auto cfgB = config("candidate-b", leading);
  ASSERT_TRUE(kube::validate(cfgA).ok());
  kube::LeaderElector a(*ca, cfgA);
  kube::LeaderElector b(*cb, cfgB);
  std::jthread ta([&](std::stop_token st) { a.run(st); });
  std::jthread tb([&](std::stop_token st) { b.run(st); });

  ASSERT_TRUE(waitFor([&] { return a.isLeader() || b.isLeader(); }, 30s));
  // For several lease periods, never two leaders at once, and the leader stays.
  kube::LeaderElector& first = a.isLeader() ? a : b;
  kube::LeaderElector& second = a.isLeader() ? b : a;
  std::jthread& firstThread = a.isLeader() ? ta : tb;
  auto until = std::chrono::steady_clock::now() + 4s;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_FALSE(a.isLeader() && b.isLeader());
    ASSERT_LE(leading.load(), 1);
    ASSERT_TRUE(first.isLeader());
    std::this_thread::sleep_for(20ms);
  }
  const std::string firstId = &first == &a ? "candidate-a" : "candidate-b";
  EXPECT_EQ(second.leader(), firstId);  // the follower knows who leads

  auto lease = ca->get(res::kLeases, "kube-system", "strait-test-leader");
  ASSERT_TRUE(lease.ok());
  const json& spec = (*lease)["spec"];
  EXPECT_EQ(spec["holderIdentity"], firstId);
  EXPECT_EQ(spec["leaseDurationSeconds"], 3);
  // MicroTime: RFC 3339 with six fractional digits.
  EXPECT_THAT(spec["renewTime"].get<std::string>(),
              ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{6}Z"));
  int64_t transitions = spec["leaseTransitions"].get<int64_t>();

  // Stop the leader without releasing: the lease stays held until it expires.
  auto stoppedAt = std::chrono::steady_clock::now();
  firstThread.request_stop();
  firstThread.join();
  EXPECT_FALSE(first.isLeader());
  ASSERT_TRUE(waitFor([&] { return second.isLeader(); }, 30s));
  auto takeover = std::chrono::steady_clock::now() - stoppedAt;
  // Not before the lease duration (the lease was not released) and not much after it (one
  // retry period plus jitter and scheduling slack on a busy machine).
  EXPECT_GE(takeover, 3000ms - 500ms);  // the last renewal happened up to one retry before
  EXPECT_LE(takeover, 3000ms + 2000ms) << "took "
      << std::chrono::duration_cast<std::chrono::milliseconds>(takeover).count() << " ms";
  std::cerr << "takeover_ms="
            << std::chrono::duration_cast<std::chrono::milliseconds>(takeover).count() << "\n";
  auto after = ca->get(res::kLeases, "kube-system", "strait-test-leader");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)["spec"]["leaseTransitions"].get<int64_t>(), transitions + 1);
  EXPECT_EQ(leading.load(), 1);
}

TEST_F(ClientLeaderElectionTest, ReleaseOnCancelHandsOverAtOnce) {
  auto ca = newClient();
  auto cb = newClient();
  std::atomic<int> leading{0};
  auto cfgA = config("rel-a", leading);
  cfgA.leaseName = "strait-test-release";
  cfgA.releaseOnCancel = true;
  auto cfgB = config("rel-b", leading);
  cfgB.leaseName = "strait-test-release";
  kube::LeaderElector a(*ca, cfgA);
  std::jthread ta([&](std::stop_token st) { a.run(st); });
  ASSERT_TRUE(waitFor([&] { return a.isLeader(); }, 30s));
  kube::LeaderElector b(*cb, cfgB);
  std::jthread tb([&](std::stop_token st) { b.run(st); });
  ta.request_stop();
  ta.join();
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] { return b.isLeader(); }, 30s));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2500ms);  // well under the 3 s lease
}

TEST(LeaderElectionConfig, ValidateNamesTheField) {
  kube::LeaderElectionConfig c;
  c.leaseNamespace = "ns";
  c.leaseName = "l";
  EXPECT_THAT(kube::validate(c).error().message, ::testing::HasSubstr("identity"));
  c.identity = "me";
  c.renewDeadline = c.leaseDuration;
  EXPECT_THAT(kube::validate(c).error().message, ::testing::HasSubstr("leaseDuration"));
}

}  // namespace
}  // namespace strait::e2e
