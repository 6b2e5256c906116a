// The pure helpers every subcommand's flags go through: HOST:PORT, durations, number ranges,
// log levels, resource lists and the closest subcommand name.
#include "cmd/cli_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "kube/pki.h"

namespace strait::cmd {
namespace {

std::string check(CLI::Validator v, std::string value) { return v(value); }

TEST(ParseHostPortTest, AcceptsAddressesNamesAndPorts) {
  auto hp = parseHostPort("127.0.0.1:7443", false);
  ASSERT_TRUE(hp.ok()) << hp.error().message;
  EXPECT_EQ(hp->host, "127.0.0.1");
  EXPECT_EQ(hp->port, 7443);
  hp = parseHostPort("[::1]:0", true);
  ASSERT_TRUE(hp.ok()) << hp.error().message;
  EXPECT_EQ(hp->host, "::1");
  EXPECT_EQ(hp->port, 0);
  EXPECT_TRUE(parseHostPort("agent.example-1.com:65535", false).ok());
  EXPECT_TRUE(parseHostPort("0.0.0.0:1", false).ok());
}

TEST(ParseHostPortTest, RefusesWhatNoListenerCouldUse) {
  for (const char* bad :
       {"127.0.0.1:99999", "127.0.0.1:-1", "127.0.0.1:", "127.0.0.1", ":80", "::1:80", "[::1:80",
        "[nope]:80", "bad host:80", "-a.com:80", "999.1.2.3:80", "127.0.0.1:8x"}) {
    EXPECT_FALSE(parseHostPort(bad, true).ok()) << bad;
  }
  auto zero = parseHostPort("127.0.0.1:0", false);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("1-65535"), std::string::npos) << zero.error().message;
  auto big = parseHostPort("127.0.0.1:99999", true);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("0 for any free port"), std::string::npos);
}

TEST(ValidatorsTest, SayWhatIsAccepted) {
  auto d = durationValidator(std::chrono::seconds(1), std::chrono::hours(720));
  EXPECT_EQ(check(d, "1h"), "");
  EXPECT_NE(check(d, "100000h").find("from 1s to 720h"), std::string::npos) << check(d, "100000h");
  EXPECT_NE(check(d, "0s").find("out of range"), std::string::npos);
  EXPECT_NE(check(d, "soon").find("not a duration"), std::string::npos);

  auto n = numberRange(0, 1e6);
  EXPECT_EQ(check(n, "1000"), "");
  EXPECT_EQ(check(n, "-5"), "\"-5\" is out of range (expected 0 to 1000000)");
  EXPECT_NE(check(n, "many").find("not a number"), std::string::npos);

  auto l = logLevelValidator();
  for (const std::string& level : kLogLevels) EXPECT_EQ(check(l, level), "") << level;
  EXPECT_NE(check(l, "verbose").find("trace, debug, info, warn, error, critical, off"),
            std::string::npos);

  auto q = positiveQuantityValidator();
  EXPECT_EQ(check(q, "500m"), "");
  EXPECT_NE(check(q, "0"), "");
  EXPECT_NE(check(q, "-1Gi"), "");
  EXPECT_NE(check(q, "lots"), "");

  auto r = resourceListValidator();
  EXPECT_EQ(check(r, "cpu=8,memory=16Gi,pods=110"), "");
  EXPECT_EQ(check(r, "nvidia.com/gpu=0"), "");  // lending no GPU is a choice
  EXPECT_NE(check(r, "cpu=8,pods=0").find("pods=0"), std::string::npos);
  EXPECT_NE(check(r, "cpu=-1"), "");
  EXPECT_NE(check(r, "cpu"), "");
}

TEST(ClosestNameTest, SuggestsNearMissesOnly) {
  const std::vector<std::string> names = {"agent",  "offload",     "unoffload", "status", "peer",
                                          "unpeer", "minicluster", "token",     "version"};
  EXPECT_EQ(closestName("ofload", names), "offload");
  EXPECT_EQ(closestName("agnet", names), "agent");
  EXPECT_EQ(closestName("stauts", names), "status");
  EXPECT_EQ(closestName("minicluser", names), "minicluster");
  EXPECT_EQ(closestName("unper", names), "unpeer");
  EXPECT_EQ(closestName("foo", names), "");
  EXPECT_EQ(closestName("kubectl", names), "");
}

TEST(FormatDurationTest, Readable) {
  EXPECT_EQ(formatDuration(std::chrono::hours(720)), "720h");
  EXPECT_EQ(formatDuration(std::chrono::milliseconds(10)), "10ms");
  EXPECT_EQ(formatDuration(std::chrono::milliseconds(90'500)), "1m30s500ms");
  EXPECT_EQ(formatDuration(std::chrono::milliseconds(0)), "0s");
}

// Without --kubeconfig (and KUBECONFIG) a command talks to the cluster it runs in, through
// its Pod's service account, as client-go's loading rules do.
TEST(RestConfigForTest, EmptyPathUsesTheServiceAccountOfThePod) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("strait-sa-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  kube::Result<kube::KeyPair> ca = kube::makeCa("test-ca");
  ASSERT_TRUE(ca.ok()) << ca.error().message;
  kube::InClusterOptions pod{"10.96.0.1", "443", write("token", "sa-token\n"),
                             write("ca.crt", ca->certPem), write("namespace", "strait-system")};
  kube::Result<kube::RestConfig> rc = restConfigFor("", pod);
  ASSERT_TRUE(rc.ok()) << rc.error().message;
  EXPECT_EQ(rc->server, "https://10.96.0.1:443");
  EXPECT_EQ(rc->bearerTokenFile, pod.tokenFile);
  EXPECT_EQ(rc->caPem, ca->certPem);
  EXPECT_EQ(rc->defaultNamespace, "strait-system");
  EXPECT_EQ(rc->source, "in-cluster");

  // Not in a Pod: the error names every source that was tried.
  kube::Result<kube::RestConfig> none = restConfigFor("", {});
  ASSERT_FALSE(none.ok());
  for (const char* named : {"--kubeconfig", "KUBECONFIG", "KUBERNETES_SERVICE_HOST"}) {
    EXPECT_NE(none.error().message.find(named), std::string::npos) << none.error().message;
  }
  // In a Pod without a mounted token (automountServiceAccountToken: false): names the file.
  kube::InClusterOptions noToken = pod;
  noToken.tokenFile = (dir / "missing-token").string();
  kube::Result<kube::RestConfig> missing = restConfigFor("", noToken);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("in-cluster"), std::string::npos);
  EXPECT_NE(missing.error().message.find(noToken.tokenFile), std::string::npos)
      << missing.error().message;
  // An explicit kubeconfig wins over the Pod's service account.
  kube::Result<kube::RestConfig> file = restConfigFor((dir / "no-such-kubeconfig").string(), pod);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().message.find("no-such-kubeconfig"), std::string::npos)
      << file.error().message;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strait::cmd
