#include "kube/kubeconfig.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "kube/credentials.h"
#include "kube/pki.h"

namespace strait::kube {
namespace {

namespace fs = std::filesystem;

std::string b64(const std::string& in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(t[(n >> s) & 63]);
  }
  if (i + 1 == in.size()) {
    uint32_t n = uint8_t(in[i]) << 16;
    out += {t[(n >> 18) & 63], t[(n >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {t[(n >> 18) & 63], t[(n >> 12) & 63], t[(n >> 6) & 63], '='};
  }
  return out;
}

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("strait-kcfg-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    auto ca = makeCa("test-ca");
    ASSERT_TRUE(ca.ok());
    ca_ = *ca;
    auto cl = issueCert(ca_, "alice", {"devs"}, {}, {}, false);
    ASSERT_TRUE(cl.ok());
    client_ = *cl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name) << content;
    return (dir_ / name).string();
  }

  fs::path dir_;
  KeyPair ca_, client_;
};

TEST_F(KubeconfigTest, InlineDataAndCurrentContext) {
  std::string y = "apiVersion: v1\nkind: Config\ncurrent-context: c1\nclusters:\n"
                  "- name: k\n  cluster:\n    server: https://10.0.0.1:6443/\n"
                  "    certificate-authority-data: " + b64(ca_.certPem) + "\n"
                  "    tls-server-name: kubernetes\n"
                  "users:\n- name: u\n  user:\n    client-certificate-data: " +
                  b64(client_.certPem) + "\n    client-key-data: " + b64(client_.keyPem) + "\n"
                  "contexts:\n- name: c1\n  context: {cluster: k, user: u, namespace: team}\n";
  auto rc = parseKubeconfig(y, "/x/config");
  ASSERT_TRUE(rc.ok()) << rc.error().message;
  EXPECT_EQ(rc->server, "https://10.0.0.1:6443");
  EXPECT_EQ(rc->caPem, ca_.certPem);
  EXPECT_EQ(rc->clientCertPem, client_.certPem);
  EXPECT_EQ(rc->clientKeyPem, client_.keyPem);
  EXPECT_EQ(rc->tlsServerName, "kubernetes");
  EXPECT_EQ(rc->defaultNamespace, "team");
}

TEST_F(KubeconfigTest, FilesRelativeToTheKubeconfigAndTokens) {
  write("ca.crt", ca_.certPem);
  write("token", "tok-from-file\n");
  std::string y = "current-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://h\n"
                  "    certificate-authority: ca.crt\n    insecure-skip-tls-verify: false\n"
                  "users:\n- name: u\n  user:\n    tokenFile: token\n"
                  "contexts:\n- name: c\n  context: {cluster: k, user: u}\n";
  std::string path = write("config", y);
  auto rc = loadKubeconfig({{path}, ""});
  ASSERT_TRUE(rc.ok()) << rc.error().message;
  EXPECT_EQ(rc->caPem, ca_.certPem);
  EXPECT_EQ(rc->bearerTokenFile, (dir_ / "token").string());
  CredentialSource cs(*rc);
  auto c = cs.get();
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->token, "tok-from-file");
}

TEST_F(KubeconfigTest, MergedFilesFirstDefinitionWins) {
  std::string a = write("a", "current-context: ctx-a\nclusters:\n- name: k\n  cluster: "
                             "{server: https://first}\nusers:\n- name: u\n  user: {token: t1}\n"
                             "contexts:\n- name: ctx-a\n  context: {cluster: k, user: u}\n");
  std::string b = write("b", "current-context: ctx-b\nclusters:\n- name: k\n  cluster: "
                             "{server: https://second}\n- name: k2\n  cluster: {server: "
                             "https://other}\nusers:\n- name: u\n  user: {token: t2}\n"
                             "contexts:\n- name: ctx-b\n  context: {cluster: k2, user: u}\n");
  auto rc = loadKubeconfig({splitKubeconfigPaths(a + "::" + (dir_ / "missing").string() + ":" + b),
                            ""});
  ASSERT_TRUE(rc.ok()) << rc.error().message;
  EXPECT_EQ(rc->server, "https://first");
  EXPECT_EQ(rc->bearerToken, "t1");
  auto other = loadKubeconfig({{a, b}, "ctx-b"});
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_EQ(other->server, "https://other");
  EXPECT_EQ(other->bearerToken, "t1");  // user "u" from the first file
  auto none = loadKubeconfig({{a}, "nope"});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.code(), Code::NotFound);
  EXPECT_NE(none.error().message.find("context \"nope\" not found"), std::string::npos);
}

TEST_F(KubeconfigTest, ExecPluginConfig) {
  std::string y = "current-context: c\nclusters:\n- name: k\n  cluster: {server: https://h}\n"
                  "users:\n- name: u\n  user:\n    exec:\n      apiVersion: "
                  "client.authentication.k8s.io/v1\n      command: ./plugin.sh\n      args: [a, b]\n"
                  "      env: [{name: FOO, value: bar}]\n      interactiveMode: Never\n"
                  "contexts:\n- name: c\n  context: {cluster: k, user: u}\n";
  auto rc = parseKubeconfig(y, "/etc/kube/config");
  ASSERT_TRUE(rc.ok()) << rc.error().message;
  ASSERT_TRUE(rc->exec.has_value());
  EXPECT_EQ(rc->exec->command, "/etc/kube/plugin.sh");
  EXPECT_EQ(rc->exec->args, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(rc->exec->env.size(), 1u);
  EXPECT_EQ(rc->exec->env[0].second, "bar");
}

struct BadCase {
  std::string yaml;
  std::string wantInMessage;
};

TEST_F(KubeconfigTest, BadInputNamesFileAndField) {
  std::string ctx = "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n";
  std::string cluster = "clusters:\n- name: k\n  cluster: {server: https://h}\n";
  std::vector<BadCase> cases = {
      {cluster + ctx + "users:\n- name: u\n  user: {client-certificate-data: '!!notbase64', "
                       "client-key-data: eA==}\n",
       "/x/config: users[0].user.client-certificate-data: not valid base64"},
      {cluster + ctx + "users:\n- name: u\n  user: {client-certificate-data: " + b64("hello") +
           ", client-key-data: " + b64(client_.keyPem) + "}\n",
       "/x/config: users[0].user.client-certificate-data: not a PEM certificate"},
      {cluster + ctx + "users:\n- name: u\n  user: {client-certificate-data: " +
           b64(client_.certPem) + ", client-key-data: " + b64(client_.certPem) + "}\n",
       "/x/config: users[0].user.client-key-data: not a PEM private key"},
      {"clusters:\n- name: k\n  cluster: {server: https://h, certificate-authority-data: " +
           b64("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n") + "}\n" + ctx +
           "users:\n- name: u\n  user: {}\n",
       "/x/config: clusters[0].cluster.certificate-authority-data: not a PEM certificate"},
      {"clusters:\n- name: k\n  cluster: {server: 42}\n" + ctx + "users: []\n",
       "/x/config: clusters[0].cluster.server: must be a string"},
      {"clusters:\n- name: k\n  cluster: {server: ftp://h}\n" + ctx + "users: []\n",
       "/x/config: clusters[0].cluster.server: must start with https://"},
      {"clusters:\n- name: k\n  cluster: {}\n" + ctx + "users: []\n",
       "/x/config: clusters[0].cluster.server: required"},
      {cluster + ctx + "users:\n- name: u\n  user: {client-certificate: /nonexistent/c.crt, "
                       "client-key: /nonexistent/c.key}\n",
       "/x/config: users[0].user.client-certificate: cannot read /nonexistent/c.crt"},
      {cluster + ctx + "users:\n- user: {token: x}\n", "/x/config: users[0].name: required string"},
      {cluster + ctx + "users: {a: b}\n", "/x/config: users: must be a list"},
      {cluster + ctx + "users:\n- name: u\n  user:\n    exec: {apiVersion: v9, command: x}\n",
       "/x/config: users[0].user.exec.apiVersion: must be client.authentication.k8s.io/v1"},
      {cluster + ctx + "users:\n- name: u\n  user:\n    exec: {apiVersion: "
                       "client.authentication.k8s.io/v1, command: x}\n",
       "/x/config: users[0].user.exec.interactiveMode: required"},
      {cluster + ctx + "users:\n- name: u\n  user: {insecure: [\n", "/x/config: "},
      {"- just\n- a list\n", "/x/config: a kubeconfig must be a mapping"},
      // JSON kubeconfigs: malformed JSON names the file and where parsing stopped.
      {"{\"clusters\": [{\"name\": \"k\", \"cluster\": {\"server\": }}]}",
       "/x/config: "},
      {"{\"clusters\": {\"name\": 1}}", "/x/config: clusters: must be a list"},
      {cluster + "current-context: c\ncontexts:\n- name: c\n  context: {cluster: zz}\n",
       "/x/config: contexts[0].context.cluster: cluster \"zz\" not found"},
  };
  for (const auto& c : cases) {
    auto rc = parseKubeconfig(c.yaml, "/x/config");
    ASSERT_FALSE(rc.ok()) << c.yaml;
    EXPECT_NE(rc.error().message.find(c.wantInMessage), std::string::npos)
        << "got: " << rc.error().message << "\nwant: " << c.wantInMessage;
  }
}

TEST_F(KubeconfigTest, InClusterConfig) {
  std::string token = write("token", "sa-token\n");
  std::string ca = write("ca.crt", ca_.certPem);
  std::string ns = write("namespace", "kube-system");
  auto rc = inClusterConfig({"10.96.0.1", "443", token, ca, ns});
  ASSERT_TRUE(rc.ok()) << rc.error().message;
  EXPECT_EQ(rc->server, "https://10.96.0.1:443");
  EXPECT_EQ(rc->defaultNamespace, "kube-system");
  auto v6 = inClusterConfig({"fd00::1", "443", token, ca, ns});
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->server, "https://[fd00::1]:443");
  auto notInPod = inClusterConfig({"", "", token, ca, ns});
  EXPECT_EQ(notInPod.code(), Code::NotFound);
  auto badCa = inClusterConfig({"h", "1", token, token, ns});
  ASSERT_FALSE(badCa.ok());
  EXPECT_NE(badCa.error().message.find(token), std::string::npos);
}

TEST(ExecCredential, ParsesTokenCertsAndExpiry) {
  auto c = parseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
      R"("status":{"token":"abc","expirationTimestamp":"2030-01-02T03:04:05Z"}})",
      "client.authentication.k8s.io/v1", "plugin");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->token, "abc");
  ASSERT_TRUE(c->expiry.has_value());
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*c->expiry), 1893553445);
  for (const char* bad :
       {"not json", R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1"})",
        R"({"kind":"Other","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"x"}})",
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"x"}})",
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{}})",
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"x","expirationTimestamp":"tomorrow"}})",
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"clientCertificateData":"x","clientKeyData":"y"}})"}) {
    auto r = parseExecCredential(bad, "client.authentication.k8s.io/v1", "plugin p");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.code(), Code::Unauthorized);
    EXPECT_EQ(r.error().message.rfind("plugin p", 0), 0u) << r.error().message;
  }
}

}  // namespace
}  // namespace strait::kube
