// Each kubeconfig authentication kind of kube::Client against a minicluster process started
// with --token-auth-file: client certificates (files and -data), token, tokenFile, an exec
// plugin (a shell script printing an ExecCredential; re-run after a 401), in-cluster config
// with injected paths, tls-server-name and insecure-skip-tls-verify.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "e2e/cluster_fixture.h"
#include "kube/client.h"
#include "kube/pki.h"

namespace strait::e2e {
namespace {

using kube::Code;
using ::testing::HasSubstr;
namespace res = kube::resources;

constexpr const char* kToken = "s3cr3t-token-for-alice";

class ClientAuthTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    dir_ = new TempDir("strait-auth");
    writeFile(dir_->file("tokens.csv"),
              std::string(kToken) + ",alice,uid-1,\"devs,ops\"\nother-token,bob,uid-2\n");
    server_ = new Minicluster();
    startError_ = server_->start("auth", 60s, {"--token-auth-file", dir_->file("tokens.csv")});
    if (!startError_.empty()) return;
    // RBAC is enforced: alice's group "devs" may read (the probe gets a Namespace); bob has
    // no grant.
    CommandResult bind = runCommand(
        {"kubectl", "--kubeconfig", server_->kubeconfig(), "create", "clusterrolebinding",
         "devs-view", "--clusterrole=view", "--group=devs"},
        {{"KUBECACHEDIR", dir_->file("kubecache")}, {"HOME", dir_->path()}});
    if (bind.exitCode != 0) startError_ = "cannot bind view to devs: " + bind.describe();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
    server_ = nullptr;
    dir_ = nullptr;
  }

 protected:
  void SetUp() override {
    ASSERT_EQ(startError_, "");
    auto admin = kube::loadKubeconfig({{server_->kubeconfig()}, ""});
    ASSERT_TRUE(admin.ok()) << admin.error().message;
    admin_ = *admin;
    ASSERT_TRUE(writeFile(dir_->file("ca.crt"), admin_.caPem));
    ASSERT_TRUE(writeFile(dir_->file("admin.crt"), admin_.clientCertPem));
    ASSERT_TRUE(writeFile(dir_->file("admin.key"), admin_.clientKeyPem));
  }

  // A kubeconfig with one cluster (server + `clusterExtra` lines) and one user (`userYaml`
  // lines, indented 4) written to a file; returns the client made from it.
  kube::Result<std::unique_ptr<kube::Client>> clientFrom(const std::string& clusterExtra,
                                                         const std::string& userYaml,
                                                         const std::string& name) {
    std::string path = dir_->file(name + ".kubeconfig");
    writeFile(path, "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n"
                    "- name: k\n  cluster:\n    server: " + admin_.server + "\n" + clusterExtra +
                        "users:\n- name: u\n  user:\n" + userYaml +
                        "contexts:\n- name: c\n  context: {cluster: k, user: u}\n");
    auto cfg = kube::loadKubeconfig({{path}, ""});
    if (!cfg) return cfg.error();
    cfg->maxRetries = 0;
    return kube::newClient(*cfg);
  }

  static std::string caFileLine() { return "    certificate-authority: ca.crt\n"; }

  // A request that needs authentication.
  static kube::Code probe(kube::Client& c) {
    return c.get(res::kNamespaces, "", "default").code();
  }

  static TempDir* dir_;
  static Minicluster* server_;
  static std::string startError_;
  kube::RestConfig admin_;
};

TempDir* ClientAuthTest::dir_ = nullptr;
Minicluster* ClientAuthTest::server_ = nullptr;
std::string ClientAuthTest::startError_;

TEST_F(ClientAuthTest, ClientCertificateData) {
  auto cfg = kube::loadKubeconfig({{server_->kubeconfig()}, ""});
  ASSERT_TRUE(cfg.ok());
  auto c = kube::newClient(*cfg);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(probe(**c), Code::Ok);
}

TEST_F(ClientAuthTest, ClientCertificateFiles) {
  auto c = clientFrom(caFileLine(), "    client-certificate: admin.crt\n    client-key: admin.key\n",
                      "certfiles");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(probe(**c), Code::Ok);
}

TEST_F(ClientAuthTest, AnonymousIsUnauthorized) {
  auto c = clientFrom(caFileLine(), "    {}\n", "anon");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(probe(**c), Code::Unauthorized);
}

TEST_F(ClientAuthTest, StaticToken) {
  auto good = clientFrom(caFileLine(), std::string("    token: ") + kToken + "\n", "token");
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(probe(**good), Code::Ok);
  auto bad = clientFrom(caFileLine(), "    token: wrong\n", "badtoken");
  ASSERT_TRUE(bad.ok());
  auto r = (*bad)->get(res::kNamespaces, "", "default");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::Unauthorized);
}

TEST_F(ClientAuthTest, StaticTokenWithoutGrantIsForbidden) {
  auto bob = clientFrom(caFileLine(), "    token: other-token\n", "bob");
  ASSERT_TRUE(bob.ok()) << bob.error().message;
  auto r = (*bob)->get(res::kNamespaces, "", "default");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::Forbidden);
  EXPECT_THAT(r.error().message,
              HasSubstr("namespaces \"default\" is forbidden: User \"bob\" cannot get resource "
                        "\"namespaces\" in API group \"\" in the namespace \"default\""));
}

TEST_F(ClientAuthTest, TokenFile) {
  writeFile(dir_->file("token"), std::string(kToken) + "\n");
  auto c = clientFrom(caFileLine(), "    tokenFile: token\n", "tokenfile");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(probe(**c), Code::Ok);
}

// The plugin counts its runs in a file; the first run hands out a stale token, so the first
// request gets 401, the client re-runs the plugin and retries with the fresh token.
TEST_F(ClientAuthTest, ExecPluginRerunAfter401AndCached) {
  std::string script = dir_->file("plugin.sh");
  std::string counter = dir_->file("plugin.count");
  writeFile(counter, "0");
  writeFile(script,
            "#!/bin/sh\n"
            "set -e\n"
            "n=$(cat \"$COUNTER\")\nn=$((n+1))\necho $n > \"$COUNTER\"\n"
            "case \"$KUBERNETES_EXEC_INFO\" in *ExecCredential*) ;; *) echo no-info >&2; exit 3;; esac\n"
            "if [ $n -eq 1 ]; then tok=stale; else tok=\"$1\"; fi\n"
            "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
            "\"status\":{\"token\":\"%s\"}}' \"$tok\"\n");
  chmod(script.c_str(), 0755);
  auto c = clientFrom(caFileLine(),
                      "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                      "      command: ./plugin.sh\n      args: [\"" + std::string(kToken) + "\"]\n"
                      "      env: [{name: COUNTER, value: \"" + counter + "\"}]\n"
                      "      interactiveMode: Never\n",
                      "exec");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(probe(**c), Code::Ok);
  EXPECT_EQ(readFile(counter), "2\n");
  EXPECT_EQ(probe(**c), Code::Ok);
  EXPECT_EQ(readFile(counter), "2\n");  // cached: no expiry given
}

TEST_F(ClientAuthTest, ExecPluginClientCertificateAndFailures) {
  std::string script = dir_->file("certplugin.sh");
  nlohmann::json cred = {{"apiVersion", "client.authentication.k8s.io/v1beta1"},
                         {"kind", "ExecCredential"},
                         {"status",
                          {{"clientCertificateData", admin_.clientCertPem},
                           {"clientKeyData", admin_.clientKeyPem},
                           {"expirationTimestamp", "2099-01-01T00:00:00Z"}}}};
  writeFile(dir_->file("cred.json"), cred.dump());
  writeFile(script, "#!/bin/sh\ncat \"$(dirname \"$0\")/cred.json\"\n");
  chmod(script.c_str(), 0755);
  auto c = clientFrom(caFileLine(),
                      "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n"
                      "      command: " + script + "\n",
                      "execcert");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(probe(**c), Code::Ok);

  std::string failing = dir_->file("failing.sh");
  writeFile(failing, "#!/bin/sh\necho 'login required: run sso login' >&2\nexit 7\n");
  chmod(failing.c_str(), 0755);
  auto f = clientFrom(caFileLine(),
                      "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                      "      command: " + failing + "\n      interactiveMode: IfAvailable\n",
                      "execfail");
  ASSERT_TRUE(f.ok());
  auto r = (*f)->get(res::kNamespaces, "", "default");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::Unauthorized);
  EXPECT_THAT(r.error().message, HasSubstr("exited with 7"));
  EXPECT_THAT(r.error().message, HasSubstr("login required"));
  EXPECT_THAT(r.error().message, HasSubstr("users[0].user.exec"));
}

TEST_F(ClientAuthTest, InClusterConfigWithInjectedPaths) {
  writeFile(dir_->file("sa-token"), kToken);
  writeFile(dir_->file("sa-namespace"), "kube-system");
  std::string hostPort = admin_.server.substr(std::string("https://").size());
  auto colon = hostPort.rfind(':');
  kube::InClusterOptions o;
  o.host = hostPort.substr(0, colon);
  o.port = hostPort.substr(colon + 1);
  o.tokenFile = dir_->file("sa-token");
  o.caFile = dir_->file("ca.crt");
  o.namespaceFile = dir_->file("sa-namespace");
  auto cfg = kube::inClusterConfig(o);
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(cfg->defaultNamespace, "kube-system");
  auto c = kube::newClient(*cfg);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(probe(**c), Code::Ok);
}

TEST_F(ClientAuthTest, TlsServerNameAndVerification) {
  std::string user = std::string("    token: ") + kToken + "\n";
  // The serving certificate names "kubernetes" (and 127.0.0.1).
  auto sni = clientFrom(caFileLine() + "    tls-server-name: kubernetes\n", user, "sni");
  ASSERT_TRUE(sni.ok()) << sni.error().message;
  EXPECT_EQ(probe(**sni), Code::Ok);
  auto wrongName = clientFrom(caFileLine() + "    tls-server-name: wrong.example.com\n", user,
                              "wrongsni");
  ASSERT_TRUE(wrongName.ok());
  EXPECT_EQ(probe(**wrongName), Code::Unavailable);

  auto otherCa = kube::makeCa("someone-else");
  ASSERT_TRUE(otherCa.ok());
  writeFile(dir_->file("other-ca.crt"), otherCa->certPem);
  auto wrongCa = clientFrom("    certificate-authority: other-ca.crt\n", user, "wrongca");
  ASSERT_TRUE(wrongCa.ok());
  auto r = (*wrongCa)->get(res::kNamespaces, "", "default");
  EXPECT_EQ(r.code(), Code::Unavailable);

  auto insecure = clientFrom("    insecure-skip-tls-verify: true\n", user, "insecure");
  ASSERT_TRUE(insecure.ok());
  EXPECT_EQ(probe(**insecure), Code::Ok);
}

}  // namespace
}  // namespace strait::e2e
