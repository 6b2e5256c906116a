// The virtual node's kubelet API end to end: real `kubectl logs`, `logs -f`, `exec` and
// `exec -i` on a Pod bound to the virtual node travel
//   consumer API server -> the virtual kubelet API (vnode::KubeletServer, in this process,
//   with a serving certificate from a CSR in the consumer) -> gRPC over the peering's mutual
//   TLS -> the provider's `strait agent` process (RemoteKubelet) -> the provider API server's
//   pods/log and pods/exec -> the provider's (simulated) kubelet running the remote Pod.
// Every request is authorized like a kubelet's: a SubjectAccessReview to the consumer's API
// server (its RBAC) for nodes/proxy, nodes/stats...: the API server's own kubelet client
// passes, a user the consumer's RBAC does not allow gets 403 with the kubelet's message.
// Two real miniclusters, two real agents peered by `strait peer`. What the virtual kubelet's
// reflection would do (the Node object, the remote Pod with its origin labels) is done here
// by the test, so that this file exercises the kubelet path alone.

#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>

#include "e2e/peering_fixture.h"
#include "kube/base64.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/object.h"
#include "kube/pki.h"
#include "peering/encoding.h"
#include "peering/kubelet_transport.h"
#include "peering/names.h"
#include "peering/policy.h"
#include "peering/transport.h"
#include "reflection/labels.h"
#include "vnode/kubelet_authorizer.h"
#include "vnode/kubelet_server.h"
#include "vnode/node_builder.h"
#include "vnode/serving_cert.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
namespace res = kube::resources;

const std::string kNode = "strait-provider";

std::unique_ptr<kube::Client> clientFor(const std::string& kubeconfig) {
  auto cfg = kube::loadKubeconfig({{kubeconfig}, ""});
  if (!cfg.ok()) return nullptr;
  auto c = kube::newClient(*cfg);
  return c.ok() ? std::move(*c) : nullptr;
}

json podJson(const std::string& ns, const std::string& name) {
  return json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
                     R"(","namespace":")" + ns + R"("},
    "spec":{"terminationGracePeriodSeconds":1,
      "containers":[{"name":"app","image":"busybox:1.36"}]}})");
}

// What the suite builds once: the peering, the kubelet server, the Node, the Pods.
struct SuiteState {
  std::string error;
  std::string consumerId, providerId;
  std::unique_ptr<kube::Client> home, cloud;
  std::unique_ptr<vnode::KubeletServer> server;
  std::unique_ptr<TempDir> dir;
  // The current credential (renewed by the consumer agent every few seconds) and its client.
  std::mutex mu;
  std::string certPem;
  std::shared_ptr<peering::KubeletClient> kubelet;

  // The RemoteKubelet client for the credential the consumer agent holds now, as the
  // VirtualKubelet gets it from its peering.
  std::shared_ptr<peering::KubeletClient> current() {
    auto secret = home->get(res::kSecrets, "strait-system",
                            peering::credentialSecretName(providerId));
    if (!secret.ok()) return nullptr;
    std::map<std::string, std::string> data = decodeSecretData(*secret);
    std::lock_guard<std::mutex> lock(mu);
    if (data["tls.crt"] == certPem && kubelet) return kubelet;
    auto rpc = peering::makeRpcClient(credentialClientConfig(data, providerId));
    if (!rpc.ok()) return nullptr;
    certPem = data["tls.crt"];
    kubelet = (*rpc)->kubelet();
    return kubelet;
  }
};

class VnodeKubeletApiTest : public TwoClusterTest {
 public:
  // One simulated node in the provider runs the remote Pods (100 ms after their binding).
  // The consumer agent runs no virtual node itself: this suite registers the Node and serves
  // its kubelet API in-process (OffloadTest covers the agent's own).
  static void SetUpTestSuite() {
    SetUpTestSuiteWithProviderArgs({"--nodes", "1", "--pod-start-latency", "100ms"},
                                   {"--no-virtual-nodes"});
  }
  static void TearDownTestSuite() {
    if (setup_ && setup_->server) setup_->server->stop();
    delete setup_;
    setup_ = nullptr;
    TwoClusterTest::TearDownTestSuite();
  }

 protected:
  void SetUp() override {
    TwoClusterTest::SetUp();
    if (HasFatalFailure()) return;
    if (!setup_) {
      setup_ = new SuiteState();
      setup_->error = build(*setup_);
    }
    ASSERT_EQ(setup_->error, "");
  }

  std::string agentClusterId(const Minicluster& c) {
    CommandResult r = kubectlOn(c, {"get", "configmap", "-n", "strait-system", "strait-agent",
                                    "-o", "jsonpath={.data.clusterID}"});
    return r.exitCode == 0 ? r.out : "";
  }

  std::string build(SuiteState& s) {
    CommandResult p = strait({"peer", "--kubeconfig", consumer().kubeconfig(),
                              "--remote-kubeconfig", provider().kubeconfig(), "--cpu", "2",
                              "--memory", "4Gi", "--pods", "20"});
    if (p.exitCode != 0) return "peer: " + p.describe();
    s.consumerId = agentClusterId(consumer());
    s.providerId = agentClusterId(provider());
    s.home = clientFor(consumer().kubeconfig());
    s.cloud = clientFor(provider().kubeconfig());
    if (s.consumerId.empty() || s.providerId.empty() || !s.home || !s.cloud) return "clients";
    s.dir = std::make_unique<TempDir>("strait-kubelet-api");

    // The virtual kubelet API with a serving certificate from the consumer's signer.
    vnode::ServingCertRequest csr;
    csr.nodeName = kNode;
    csr.ips = {"127.0.0.1"};
    auto serving = vnode::requestServingCertificate(*s.home, csr);
    if (!serving.ok()) return "serving certificate: " + serving.error().message;
    vnode::KubeletServerConfig kc;
    kc.nodeName = kNode;
    kc.servingCert = *serving;
    kc.clientCaPem = s.home->config().caPem;
    kc.provider = [&s] { return s.current(); };
    // Authorized by the consumer's API server, as the VirtualKubelet wires it.
    kc.authorize = [authz = std::make_shared<vnode::KubeletAuthorizer>(
                        vnode::subjectAccessReviewer(*s.home))](
                       const vnode::KubeletRequestAttributes& a) { return authz->authorize(a); };
    auto server = vnode::KubeletServer::create(std::move(kc));
    if (!server.ok()) return server.error().message;
    s.server = std::move(*server);
    if (kube::Status st = s.server->start(); !st.ok()) return st.error().message;

    // The Node as the virtual kubelet registers it, pointing at that server.
    vnode::VirtualNodeConfig nc;
    nc.providerName = "provider";
    nc.providerClusterId = s.providerId;
    nc.address = "127.0.0.1";
    nc.kubeletPort = s.server->port();
    auto alloc = peering::parseResourceArg("cpu=2,memory=4Gi,pods=20");
    json node = vnode::buildNode(nc, *alloc, {}, {true, "KubeletReady", "ready"}, nullptr,
                                 std::chrono::system_clock::now());
    auto created = s.home->create(res::kNodes, "", node);
    if (!created.ok()) return "node: " + created.error().message;
    // The API server's node controllers may write the new Node first (a taint, a condition):
    // the status goes onto the latest version, read again after a conflict.
    json latest = *created;
    for (int attempt = 1;; ++attempt) {
      latest["status"] = node["status"];
      auto st = kube::updateStatus(*s.home, res::kNodes, "", latest);
      if (st.ok()) break;
      if (!kube::isConflict(st.error()) || attempt == 10) {
        return "node status: " + st.error().message;
      }
      auto again = s.home->get(res::kNodes, "", kNode);
      if (!again.ok()) return "node: " + again.error().message;
      latest = *again;
    }

    // Consumer Pods bound to the virtual node; their remote twins (as the reflection makes
    // them) in the mapped namespace. "foreign" remotely belongs to another consumer.
    (void)s.home->create(res::kNamespaces, "",
                         {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "web"}}}});
    const std::string remoteNs = "web-" + s.consumerId;
    (void)s.cloud->create(res::kNamespaces, "",
                          {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", remoteNs}}}});
    for (const std::string name : {"logger", "foreign"}) {
      json local = podJson("web", name);
      local["spec"]["nodeName"] = kNode;
      local["spec"]["tolerations"] = json::array(
          {{{"key", "virtual-node.strait.io/not-allowed"}, {"operator", "Exists"}}});
      auto lp = s.home->create(res::kPods, "web", local);
      if (!lp.ok()) return "local pod: " + lp.error().message;
      json remote = podJson(remoteNs, name);
      remote["metadata"]["labels"] = {
          {std::string(reflection::kLabelOriginClusterId),
           name == "logger" ? s.consumerId : "another-consumer"},
          {std::string(reflection::kLabelOriginUid), kube::getUid(*lp)},
          {std::string(reflection::kLabelManagedBy), std::string(reflection::kManagedByValue)}};
      remote["metadata"]["annotations"] = {
          {std::string(reflection::kAnnotationOriginNamespace), "web"},
          {std::string(reflection::kAnnotationOriginName), name}};
      auto rp = s.cloud->create(res::kPods, remoteNs, remote);
      if (!rp.ok()) return "remote pod: " + rp.error().message;
    }
    bool running = waitFor(
        [&] {
          auto p = s.cloud->get(res::kPods, remoteNs, "logger");
          return p.ok() && (*p)["status"].value("phase", "") == "Running";
        },
        60s);
    return running ? "" : "the remote Pod never ran";
  }

  CommandResult kubectlHome(const std::vector<std::string>& args, const std::string& in = {}) {
    static int n = 0;
    std::vector<std::string> argv = {"kubectl", "--kubeconfig", consumer().kubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    Env env = {{"KUBECACHEDIR", testDir() + "/home-cache" + std::to_string(++n)},
               {"HOME", testDir()}};
    return runCommand(argv, env, 60s, in);
  }

  // The highest "heartbeat K" in a synthetic log, -1 if none.
  static int lastHeartbeat(const std::string& log) {
    static const std::regex re("heartbeat ([0-9]+)");
    int last = -1;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
         ++it) {
      last = std::max(last, std::stoi((*it)[1].str()));
    }
    return last;
  }

  // curl to the kubelet API; `cert` "" = no client certificate; `user` names the files
  // <certDir>/<user>.crt and .key.
  CommandResult curlKubelet(const std::string& path, const std::string& certDir,
                            const std::string& user = "admin",
                            const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {"curl", "-sS", "--max-time", "20", "--cacert",
                                     setup_->dir->file("home/ca.crt")};
    argv.insert(argv.end(), extra.begin(), extra.end());
    if (!certDir.empty()) {
      argv.insert(argv.end(), {"--cert", certDir + "/" + user + ".crt", "--key",
                               certDir + "/" + user + ".key"});
    }
    argv.push_back("https://127.0.0.1:" + std::to_string(setup_->server->port()) + path);
    return runCommand(argv);
  }

  static SuiteState* setup_;
};

SuiteState* VnodeKubeletApiTest::setup_ = nullptr;

TEST_F(VnodeKubeletApiTest, LogsTailTimestampsAndFollowThroughTheVirtualNode) {
  // The remote container's log through the consumer's API server.
  CommandResult all;
  ASSERT_TRUE(waitFor(
      [&] {
        all = kubectlHome({"logs", "logger", "-n", "web"});
        return all.exitCode == 0 && lastHeartbeat(all.out) >= 2;
      },
      60s))
      << all.describe() << providerAgent().logs().substr(0, 3000);
  EXPECT_NE(all.out.find("[strait] container app of pod web-" + setup_->consumerId + "/logger started"),
            std::string::npos)
      << all.out;

  CommandResult tail = kubectlHome({"logs", "logger", "-n", "web", "--tail=1"});
  ASSERT_EQ(tail.exitCode, 0) << tail.describe();
  EXPECT_EQ(std::count(tail.out.begin(), tail.out.end(), '\n'), 1) << tail.out;
  EXPECT_NE(tail.out.find("heartbeat"), std::string::npos) << tail.out;

  CommandResult ts = kubectlHome({"logs", "logger", "-n", "web", "--tail=2", "--timestamps"});
  ASSERT_EQ(ts.exitCode, 0) << ts.describe();
  EXPECT_TRUE(std::regex_search(ts.out, std::regex("^20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z ")))
      << ts.out;

  CommandResult limited = kubectlHome({"logs", "logger", "-n", "web", "--limit-bytes=10"});
  ASSERT_EQ(limited.exitCode, 0) << limited.describe();
  EXPECT_EQ(limited.out.size(), 10u) << limited.out;

  // -f: lines written after kubectl started arrive while it runs.
  int before = lastHeartbeat(kubectlHome({"logs", "logger", "-n", "web"}).out);
  BackgroundProcess follow;
  std::string err;
  Env env = {{"KUBECACHEDIR", testDir() + "/follow-cache"}, {"HOME", testDir()}};
  ASSERT_TRUE(follow.start({"kubectl", "--kubeconfig", consumer().kubeconfig(), "logs", "-f",
                            "logger", "-n", "web", "--tail=1"},
                           env, testDir() + "/follow.out", testDir() + "/follow.err", &err))
      << err;
  EXPECT_TRUE(waitFor([&] { return lastHeartbeat(follow.stdoutText()) >= before + 2; }, 30s))
      << "before=" << before << " out=" << follow.stdoutText() << " err=" << follow.stderrText();
  EXPECT_TRUE(follow.running()) << follow.stderrText();
  follow.stop();

  // A Pod on the virtual node whose remote twin belongs to another consumer: not found,
  // exactly as if it did not exist.
  CommandResult foreign = kubectlHome({"logs", "foreign", "-n", "web"});
  EXPECT_NE(foreign.exitCode, 0) << foreign.describe();
  EXPECT_NE(foreign.err.find("not found"), std::string::npos) << foreign.describe();
}

TEST_F(VnodeKubeletApiTest, ExecEchoStdinAndExitCodeThroughTheVirtualNode) {
  CommandResult echo = kubectlHome({"exec", "logger", "-n", "web", "--", "echo", "hello", "from",
                                    "the", "provider"});
  ASSERT_EQ(echo.exitCode, 0) << echo.describe() << providerAgent().logs().substr(0, 3000);
  EXPECT_EQ(echo.out, "hello from the provider\n");

  // The command runs in the remote Pod: its hostname is the remote Pod's.
  CommandResult host = kubectlHome({"exec", "logger", "-n", "web", "--", "hostname"});
  ASSERT_EQ(host.exitCode, 0) << host.describe();
  EXPECT_EQ(host.out, "logger\n");

  // -i: standard input travels to the provider and back.
  CommandResult cat = kubectlHome({"exec", "-i", "logger", "-n", "web", "--", "cat"},
                                  "first line\nsecond line\n");
  ASSERT_EQ(cat.exitCode, 0) << cat.describe();
  EXPECT_EQ(cat.out, "first line\nsecond line\n");

  // A failing command: its exit code reaches kubectl.
  CommandResult fail = kubectlHome({"exec", "logger", "-n", "web", "--", "sh", "-c",
                                    "nosuchcommand; exit 3"});
  EXPECT_EQ(fail.exitCode, 3) << fail.describe();
  EXPECT_NE(fail.err.find("nosuchcommand"), std::string::npos) << fail.describe();  // its stderr

  CommandResult foreign = kubectlHome({"exec", "foreign", "-n", "web", "--", "echo", "x"});
  EXPECT_NE(foreign.exitCode, 0) << foreign.describe();
  EXPECT_EQ(foreign.out.find("x\n"), std::string::npos) << foreign.describe();
  EXPECT_NE(foreign.err.find("not found"), std::string::npos) << foreign.describe();
}

TEST_F(VnodeKubeletApiTest, PodsStatsAndClientCertificatesRequired) {
  std::string why;
  std::filesystem::create_directories(setup_->dir->path() + "/home");
  auto home = loadAdminCredentials(consumer().kubeconfig(), setup_->dir->path() + "/home", &why);
  ASSERT_TRUE(home.has_value()) << why;
  std::filesystem::create_directories(setup_->dir->path() + "/cloud");
  auto cloud = loadAdminCredentials(provider().kubeconfig(), setup_->dir->path() + "/cloud", &why);
  ASSERT_TRUE(cloud.has_value()) << why;
  const std::string homeCerts = setup_->dir->path() + "/home";

  CommandResult health = curlKubelet("/healthz", homeCerts);
  EXPECT_EQ(health.out, "ok\n") << health.describe();

  CommandResult pods = curlKubelet("/pods", homeCerts);
  ASSERT_EQ(pods.exitCode, 0) << pods.describe();
  json list = json::parse(pods.out, nullptr, false);
  ASSERT_TRUE(list.is_object()) << pods.out;
  std::vector<std::string> names;
  for (const json& p : list["items"]) names.push_back(kube::getNamespace(p) + "/" + kube::getName(p));
  EXPECT_EQ(names, std::vector<std::string>{"web/logger"}) << pods.out.substr(0, 2000);
  auto localUid = setup_->home->get(res::kPods, "web", "logger");
  ASSERT_TRUE(localUid.ok());
  EXPECT_EQ(kube::getUid(list["items"][0]), kube::getUid(*localUid));

  CommandResult stats = curlKubelet("/stats/summary", homeCerts);
  json summary = json::parse(stats.out, nullptr, false);
  ASSERT_TRUE(summary.is_object()) << stats.describe();
  EXPECT_EQ(summary["node"]["nodeName"], kNode);
  ASSERT_EQ(summary["pods"].size(), 1u) << stats.out;
  EXPECT_EQ(summary["pods"][0]["podRef"]["name"], "logger");
  EXPECT_EQ(summary["pods"][0]["podRef"]["namespace"], "web");

  // No client certificate, or one from another cluster's CA: no TLS session at all.
  CommandResult anonymous = curlKubelet("/pods", "");
  EXPECT_NE(anonymous.exitCode, 0) << anonymous.describe();
  EXPECT_EQ(anonymous.out.find("logger"), std::string::npos);
  CommandResult stranger = curlKubelet("/pods", setup_->dir->path() + "/cloud");
  EXPECT_NE(stranger.exitCode, 0) << stranger.describe();
  EXPECT_EQ(stranger.out.find("logger"), std::string::npos);
}

// A client certificate of the consumer's CA for a user its RBAC does not allow: the virtual
// kubelet refuses it as a kubelet would (403, the kubelet's message), while `kubectl logs`
// (the API server's kubelet client) still works; a ClusterRole granting nodes/stats then
// opens /stats/summary to that user, and nothing else.
TEST_F(VnodeKubeletApiTest, CallersAreAuthorizedBySubjectAccessReviewsToTheConsumer) {
  // The logger may not have written its first line yet when this test runs alone.
  CommandResult logs;
  EXPECT_TRUE(waitFor([&] {
    logs = kubectlHome({"logs", "logger", "-n", "web", "--tail", "1"});
    return logs.exitCode == 0 && logs.out.find("heartbeat") != std::string::npos;
  }, 30s)) << logs.describe();

  // mallory (group dev): a certificate signed through a CSR the admin approves.
  const std::string certDir = setup_->dir->path() + "/mallory";
  std::filesystem::create_directories(certDir);
  std::string why;
  // curlKubelet trusts home/ca.crt (ctest runs this test alone, in its own process).
  std::filesystem::create_directories(setup_->dir->path() + "/home");
  ASSERT_TRUE(loadAdminCredentials(consumer().kubeconfig(), setup_->dir->path() + "/home", &why)
                  .has_value())
      << why;
  ASSERT_TRUE(loadAdminCredentials(consumer().kubeconfig(), certDir, &why).has_value()) << why;
  auto key = kube::makeKeyAndCsr("mallory", {"dev"});
  ASSERT_TRUE(key.ok()) << key.error().message;
  json csr = {{"apiVersion", "certificates.k8s.io/v1"},
              {"kind", "CertificateSigningRequest"},
              {"metadata", {{"name", "mallory"}}},
              {"spec",
               {{"request", kube::base64Encode(key->csrPem)},
                {"signerName", "kubernetes.io/kube-apiserver-client"},
                {"usages", {"client auth"}}}}};
  CommandResult created = kubectlHome({"create", "-f", "-"}, csr.dump());
  ASSERT_EQ(created.exitCode, 0) << created.describe();
  CommandResult approved = kubectlHome({"certificate", "approve", "mallory"});
  ASSERT_EQ(approved.exitCode, 0) << approved.describe();
  std::string certPem;
  ASSERT_TRUE(waitFor([&] {
    auto c = setup_->home->get(kube::ResourceRef{"certificates.k8s.io", "v1",
                                                 "certificatesigningrequests", false},
                               "", "mallory");
    if (!c.ok() || !(*c)["status"].contains("certificate")) return false;
    std::optional<std::string> pem =
        kube::base64Decode((*c)["status"]["certificate"].get<std::string>());
    if (!pem) return false;
    certPem = *pem;
    return true;
  }, 30s));
  ASSERT_TRUE(writeFile(certDir + "/mallory.crt", certPem));
  ASSERT_TRUE(writeFile(certDir + "/mallory.key", key->keyPem));

  // The consumer's API server knows mallory: an authenticated user without permissions.
  CommandResult who = runCommand({"kubectl", "--server", consumer().server(), "--certificate-authority",
                                  certDir + "/ca.crt", "--client-certificate", certDir + "/mallory.crt",
                                  "--client-key", certDir + "/mallory.key", "auth", "can-i", "get",
                                  "nodes/proxy"},
                                 {{"KUBECACHEDIR", testDir() + "/mallory-cache"}, {"HOME", testDir()}});
  EXPECT_EQ(who.out, "no\n") << who.describe();

  CommandResult denied = curlKubelet("/containerLogs/web/logger/app", certDir, "mallory");
  EXPECT_EQ(denied.out, "Forbidden (user=mallory, verb=get, resource=nodes, subresource=proxy)\n")
      << denied.describe();
  CommandResult code = curlKubelet("/pods", certDir, "mallory",
                                   {"-o", "/dev/null", "-w", "%{http_code}"});
  EXPECT_EQ(code.out, "403") << code.describe();
  CommandResult exec = curlKubelet("/exec/web/logger/app?command=id&output=1", certDir, "mallory",
                                   {"-X", "POST"});
  EXPECT_EQ(exec.out, "Forbidden (user=mallory, verb=create, resource=nodes, subresource=proxy)\n")
      << exec.describe();
  // The admin certificate (group system:masters) is allowed.
  CommandResult admin = curlKubelet("/pods", certDir);
  EXPECT_NE(admin.out.find("logger"), std::string::npos) << admin.describe();

  // Granted nodes/stats by RBAC: /stats/summary opens (not asked before, so not cached),
  // nodes/proxy stays closed.
  CommandResult role = kubectlHome({"create", "clusterrole", "node-stats", "--verb=get",
                                    "--resource=nodes/stats"});
  ASSERT_EQ(role.exitCode, 0) << role.describe();
  CommandResult bind = kubectlHome({"create", "clusterrolebinding", "mallory-node-stats",
                                    "--clusterrole=node-stats", "--user=mallory"});
  ASSERT_EQ(bind.exitCode, 0) << bind.describe();
  CommandResult stats;
  EXPECT_TRUE(waitFor([&] {
    stats = curlKubelet("/stats/summary", certDir, "mallory");
    return stats.out.find("\"nodeName\"") != std::string::npos;
  }, 30s)) << stats.describe();
  CommandResult still = curlKubelet("/containerLogs/web/logger/app", certDir, "mallory");
  EXPECT_EQ(still.out.rfind("Forbidden (user=mallory", 0), 0u) << still.describe();
}

}  // namespace
}  // namespace strait::e2e
