// Pull mode between two real miniclusters and two real `strait agent` processes: the
// provider agent advertises an address that refuses connections (127.0.0.1:1), so the
// consumer agent cannot reach it; everything travels over the link the provider agent dials
// to the consumer agent.
#include <nlohmann/json.hpp>

#include "e2e/peering_fixture.h"
#include "peering/encoding.h"
#include "peering/names.h"
#include "peering/transport.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;

class PullPeeringTest : public TwoClusterTest {
 public:
  static void SetUpTestSuite() {
    TwoClusterTest::SetUpTestSuite();
    if (!providerAgent().running()) return;  // SetUp reports the fixture's error
    providerAgent().stop();
    std::vector<std::string> args = agentArgs();
    args.insert(args.end(), {"--advertise", kUnreachable});
    setupError_ = providerAgent().start(provider().kubeconfig(), "provider", args);
  }

 protected:
  static constexpr const char* kUnreachable = "127.0.0.1:1";
  static std::string setupError_;

  void SetUp() override {
    TwoClusterTest::SetUp();
    ASSERT_EQ(setupError_, "");
    ASSERT_EQ(providerAgent().endpoint(), kUnreachable);
  }
  bool bothConnected() {
    json c = onlyRow(consumer()), p = onlyRow(provider());
    return c.is_object() && p.is_object() && c["connected"] == "True" && p["connected"] == "True";
  }
  std::string agentData(const Minicluster& c, const std::string& key) {
    CommandResult r = kubectlOn(c, {"get", "configmap", "-n", "strait-system", "strait-agent",
                                    "-o", "jsonpath={.data." + key + "}"});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    return r.out;
  }
  std::string credentialCert() {
    CommandResult r = kubectlOn(
        consumer(), {"get", "secret", "-n", "strait-system",
                     peering::credentialSecretName(agentData(provider(), "clusterID")), "-o",
                     "jsonpath={.data.tls\\.crt}"});
    return r.exitCode == 0 ? r.out : std::string();
  }
  std::string pullToken(const std::string& fingerprint) {
    CommandResult r = strait({"token", "--kubeconfig", provider().kubeconfig(), "--mode", "pull",
                              "--consumer-endpoint", agentData(consumer(), "linkEndpoint"),
                              "--consumer-ca-fingerprint", fingerprint});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    std::string t = r.out;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    return t;
  }
  static size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }
};

std::string PullPeeringTest::setupError_;

TEST_F(PullPeeringTest, InBandPullPeeringSurvivesRenewalRestartAndLossThenUnpeersCleanly) {
  // The consumer cannot reach the provider agent: push-mode pinning fails outright.
  auto unreachable = peering::fetchPinnedCa(kUnreachable, std::string(64, '0'), 2s);
  ASSERT_FALSE(unreachable.ok());
  EXPECT_EQ(unreachable.code(), kube::Code::Unavailable);

  CommandResult p = strait({"peer", "--kubeconfig", consumer().kubeconfig(), "--remote-kubeconfig",
                            provider().kubeconfig(), "--mode", "pull", "--cpu", "2", "--memory",
                            "4Gi", "--pods", "20"});
  ASSERT_EQ(p.exitCode, 0) << p.describe() << providerAgent().logs() << consumerAgent().logs();
  ASSERT_TRUE(waitFor([&] { return bothConnected(); }, 30s))
      << status(consumer()).dump(2) << status(provider()).dump(2);
  json c = onlyRow(consumer()), pr = onlyRow(provider());
  EXPECT_EQ(c["mode"], "pull");
  EXPECT_EQ(c["role"], "Provider");
  EXPECT_EQ(c["granted"]["cpu"], "2");
  EXPECT_TRUE(c["latencyMs"].is_number());
  EXPECT_EQ(pr["mode"], "pull");
  EXPECT_EQ(pr["role"], "Consumer");
  EXPECT_EQ(pr["endpoint"], consumerAgent().linkEndpoint());
  CommandResult table = strait({"status", "--kubeconfig", consumer().kubeconfig()});
  EXPECT_NE(table.out.find("MODE"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("pull"), std::string::npos) << table.out;
  EXPECT_NE(providerAgent().logs().find("event=link_up"), std::string::npos);

  // Renewal (client certificates live 8 s): a new certificate arrives over the link.
  std::string firstCert = credentialCert();
  ASSERT_FALSE(firstCert.empty());
  EXPECT_TRUE(waitFor([&] { std::string now = credentialCert(); return !now.empty() && now != firstCert; },
                      30s));
  EXPECT_NE(consumerAgent().logs().find("event=certificate_renewed"), std::string::npos);
  EXPECT_TRUE(waitFor([&] { return bothConnected(); }, 15s));

  // Provider agent restart: it dials again and calls go through.
  size_t linksBefore = count(providerAgent().logs(), "event=link_up");
  ASSERT_EQ(providerAgent().restart(), "");
  EXPECT_TRUE(waitFor([&] { return count(providerAgent().logs(), "event=link_up") > linksBefore; },
                      30s))
      << providerAgent().logs();
  std::string hbBefore = onlyRow(consumer()).value("lastHeartbeatTime", "");
  EXPECT_TRUE(waitFor([&] {
    json row = onlyRow(consumer());
    return row.is_object() && row["connected"] == "True" &&
           row.value("lastHeartbeatTime", "") != hbBefore;
  }, 30s)) << status(consumer()).dump(2);

  // A lost provider is noticed as in push mode, and found again.
  providerAgent().kill();
  EXPECT_TRUE(waitFor([&] { return onlyRow(consumer()).value("connected", "") == "False"; }, 30s))
      << status(consumer()).dump(2);
  ASSERT_EQ(providerAgent().restart(), "");
  EXPECT_TRUE(waitFor([&] { return bothConnected(); }, 30s)) << status(consumer()).dump(2);

  CommandResult u = strait({"unpeer", "--kubeconfig", consumer().kubeconfig(),
                            "--remote-kubeconfig", provider().kubeconfig()});
  ASSERT_EQ(u.exitCode, 0) << u.describe() << status(consumer()).dump(2)
                           << consumerAgent().logs() << providerAgent().logs();
  EXPECT_NE(u.out.find("provider deleted"), std::string::npos) << u.out;
  expectNothingLeft();
  EXPECT_EQ(status(consumer()).size(), 0u);
  EXPECT_EQ(status(provider()).size(), 0u);
  // The provider agent stops dialing once its pull target is gone.
  EXPECT_TRUE(waitFor([&] { return providerAgent().logs().find("event=pull_dialer_stopped") !=
                                   std::string::npos; }, 15s));
}

TEST_F(PullPeeringTest, OutOfBandPullPeeringWithTokenAndUnpeerByName) {
  std::string t = pullToken(agentData(consumer(), "caFingerprint"));
  ASSERT_EQ(t.rfind("strait1.", 0), 0u) << t;
  CommandResult p = strait({"peer", "--kubeconfig", consumer().kubeconfig(), "--token", t,
                            "--mode", "pull"});
  ASSERT_EQ(p.exitCode, 0) << p.describe();
  ASSERT_TRUE(waitFor([&] { return bothConnected(); }, 30s))
      << status(consumer()).dump(2) << status(provider()).dump(2);
  EXPECT_EQ(onlyRow(consumer())["mode"], "pull");
  EXPECT_EQ(onlyRow(provider())["mode"], "pull");
  CommandResult u = strait({"unpeer", "--kubeconfig", consumer().kubeconfig(), "--remote-name",
                            "provider"});
  ASSERT_EQ(u.exitCode, 0) << u.describe() << status(consumer()).dump(2)
                           << consumerAgent().logs() << providerAgent().logs();
  expectNothingLeft();
}

TEST_F(PullPeeringTest, WrongTokenOrWrongConsumerCaIsRefusedSayingWhy) {
  // Flags: pull mode needs the consumer's link endpoint and CA fingerprint.
  CommandResult bare = strait({"token", "--kubeconfig", provider().kubeconfig(), "--mode", "pull"});
  EXPECT_NE(bare.exitCode, 0);
  EXPECT_NE(bare.err.find("--consumer-endpoint"), std::string::npos) << bare.describe();
  CommandResult badFp = strait({"token", "--kubeconfig", provider().kubeconfig(), "--mode", "pull",
                                "--consumer-endpoint", "127.0.0.1:9", "--consumer-ca-fingerprint",
                                "abc"});
  EXPECT_NE(badFp.exitCode, 0);
  EXPECT_NE(badFp.err.find("64 lowercase hex"), std::string::npos) << badFp.describe();

  // A provider told the wrong consumer CA never links: the provider agent says why, and the
  // consumer keeps waiting for it. (First: a link made for another token of the same
  // provider, with the right fingerprint, would serve this peering too.)
  std::string wrongFp(64, 'a');
  std::string w = pullToken(wrongFp);
  CommandResult p = strait({"peer", "--kubeconfig", consumer().kubeconfig(), "--token", w,
                            "--mode", "pull", "--timeout", "5s"});
  EXPECT_NE(p.exitCode, 0);
  EXPECT_NE(p.err.find("waiting for the provider agent"), std::string::npos) << p.describe();
  EXPECT_TRUE(waitFor([&] {
    return providerAgent().logs().find("is not the consumer: the peer's CA is not the pinned one") !=
           std::string::npos;
  }, 15s)) << providerAgent().logs();
  // The timed-out peer removed what it created: nothing is left to unpeer.
  EXPECT_TRUE(waitFor([&] { return labelledObjects(consumer()).empty(); }, 30s))
      << ::testing::PrintToString(labelledObjects(consumer()));

  // An altered token: the link comes up, and the provider refuses the Join over it.
  std::string t = pullToken(agentData(consumer(), "caFingerprint"));
  std::string altered = t;
  size_t pos = altered.size() - 10;
  altered[pos] = altered[pos] == 'A' ? 'B' : 'A';
  CommandResult a = strait({"peer", "--kubeconfig", consumer().kubeconfig(), "--token", altered,
                            "--mode", "pull", "--timeout", "30s"});
  EXPECT_NE(a.exitCode, 0);
  EXPECT_NE(a.err.find("altered"), std::string::npos) << a.describe();
}

}  // namespace
}  // namespace strait::e2e
