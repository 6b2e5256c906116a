// A failed `strait peer` never leaves the user stuck, with real agents, the real CLI and
// kubectl: a token whose endpoint answers nothing fails within seconds with the cause and
// leaves nothing behind; the next plain `peer` with a good token succeeds; a peering that
// never joined is removed by a plain `unpeer`; the consumer agent backs off between failed
// joins instead of retrying ten times a second.
#include <nlohmann/json.hpp>
#include <thread>

#include "e2e/peering_fixture.h"
#include "peering/foreign_cluster.h"
#include "peering/names.h"
#include "peering/token.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;

class PeeringRecoveryTest : public TwoClusterTest {
 protected:
  std::string token() {
    CommandResult r = strait({"token", "--kubeconfig", provider().kubeconfig(), "--ttl", "1h"});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    std::string t = r.out;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    return t;
  }
  // `good` with its endpoint replaced by one where nothing listens (the same token ID, as a
  // token copied with a wrong address would be; its HMAC no longer matters: the provider is
  // never reached).
  static std::string withDeadEndpoint(const std::string& good) {
    kube::Result<peering::Token> t = peering::parseToken(good);
    EXPECT_TRUE(t.ok());
    t->endpoint = "127.0.0.1:1";
    return std::string(peering::encodeToken(*t, peering::SecretString("not-the-key")).reveal());
  }
  std::string foreignClusters(const Minicluster& c) {
    return kubectlOn(c, {"get", "foreignclusters", "-o", "name"}).out;
  }
  static size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }
};

TEST_F(PeeringRecoveryTest, BadEndpointFailsFastAndTheNextPlainPeerSucceeds) {
  const std::string good = token();
  const std::string bad = withDeadEndpoint(good);
  const auto start = std::chrono::steady_clock::now();
  CommandResult failed = strait({"peer", "--kubeconfig", consumer().kubeconfig(), "--token", bad,
                                 "--timeout", "60s"});
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_NE(failed.exitCode, 0) << failed.describe();
  EXPECT_LT(took, std::chrono::seconds(5))
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  EXPECT_NE(failed.err.find("Connection refused"), std::string::npos) << failed.describe();
  EXPECT_NE(failed.err.find("127.0.0.1:1"), std::string::npos) << failed.describe();
  // Nothing of the attempt is left.
  EXPECT_EQ(foreignClusters(consumer()), "");
  EXPECT_TRUE(labelledObjects(consumer()).empty());

  CommandResult ok = strait({"peer", "--kubeconfig", consumer().kubeconfig(), "--token", good,
                             "--cpu", "1", "--memory", "1Gi", "--pods", "5"});
  ASSERT_EQ(ok.exitCode, 0) << ok.describe();
  EXPECT_TRUE(waitFor([&] { return onlyRow(consumer()).value("connected", "") == "True"; }, 30s))
      << status(consumer()).dump(1);
  CommandResult un = strait({"unpeer", "--kubeconfig", consumer().kubeconfig(), "--remote-name",
                             "provider"});
  EXPECT_EQ(un.exitCode, 0) << un.describe();
  expectNothingLeft();
}

TEST_F(PeeringRecoveryTest, ExpiredTimeoutRemovesWhatThePeerCreated) {
  CommandResult r = strait({"peer", "--kubeconfig", consumer().kubeconfig(), "--token", token(),
                            "--timeout", "0s"});
  EXPECT_NE(r.exitCode, 0) << r.describe();
  // The failure reported stays true: no peering appears afterwards.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(foreignClusters(consumer()), "");
}

TEST_F(PeeringRecoveryTest, NeverJoinedPeeringBacksOffAndPlainUnpeerRemovesIt) {
  // What an interrupted `strait peer` leaves: the token Secret and a ForeignCluster whose
  // join keeps failing.
  const std::string bad = withDeadEndpoint(token());
  kube::Result<peering::Token> t = peering::parseToken(bad);
  ASSERT_TRUE(t.ok());
  const std::string secretName = "strait-peer-token-" + t->id;
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"type", "Opaque"},
                 {"metadata",
                  {{"name", secretName},
                   {"namespace", "strait-system"},
                   {"labels", peering::ownershipLabels(t->clusterId)}}},
                 {"data", {{"token", peering::base64Encode(bad)}}}};
  json fc = peering::makeForeignCluster("provider", t->clusterId, t->clusterName,
                                        std::string(peering::kRoleProvider), t->endpoint);
  fc["spec"]["tokenSecretRef"] = secretName;
  const std::string manifest = json{{"apiVersion", "v1"},
                                    {"kind", "List"},
                                    {"items", json::array({secret, fc})}}
                                   .dump();
  const size_t before = count(consumerAgent().logs(), "event=join_failed");
  // --validate=false: the minicluster publishes no OpenAPI schema for custom resources.
  std::vector<std::string> argv = {"kubectl", "--kubeconfig", consumer().kubeconfig(), "create",
                                   "--validate=false", "-f", "-"};
  CommandResult made = runCommand(argv, {{"KUBECACHEDIR", testDir() + "/kc-create"}}, 60s,
                                  manifest);
  ASSERT_EQ(made.exitCode, 0) << made.describe();
  ASSERT_TRUE(waitFor([&] { return count(consumerAgent().logs(), "event=join_failed") > before; },
                      10s));
  std::this_thread::sleep_for(std::chrono::seconds(4));
  // 100 ms doubling: about 6 attempts in 4 s (a spinning agent makes 40).
  const size_t attempts = count(consumerAgent().logs(), "event=join_failed") - before;
  EXPECT_LE(attempts, 9u) << consumerAgent().logs();
  EXPECT_GE(attempts, 3u);
  EXPECT_EQ(onlyRow(consumer()).value("authenticated", ""), "False");

  CommandResult un = strait({"unpeer", "--kubeconfig", consumer().kubeconfig(), "--remote-name",
                             "provider"});
  ASSERT_EQ(un.exitCode, 0) << un.describe();
  EXPECT_NE(un.out.find("never joined"), std::string::npos) << un.out;
  EXPECT_EQ(foreignClusters(consumer()), "");
  EXPECT_TRUE(labelledObjects(consumer()).empty());
}

}  // namespace
}  // namespace strait::e2e
