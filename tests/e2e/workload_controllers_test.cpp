// Workload controllers and admission webhooks with the real kubectl against a minicluster
// process: deployments (create, scale, rolling update, rollout status/undo), Services'
// EndpointSlices, namespace deletion, default ServiceAccount and kube-root-ca.crt, CSR
// approval and signing, and webhooks served by a python3 HTTPS server. No kubelets run
// here: the tests make pods Running and Ready through the status subresource.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "e2e/cluster_fixture.h"

namespace strait::e2e {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;
namespace fs = std::filesystem;


class WorkloadTest : public ClusterTest {
 protected:
  json getJson(const std::vector<std::string>& args) {
    std::vector<std::string> a = args;
    a.push_back("-o");
    a.push_back("json");
    auto r = kubectl(a);
    if (r.exitCode != 0) return json();
    return json::parse(r.out, nullptr, false);
  }

  // Plays the kubelet: every pod of the selector not yet Ready becomes Running and Ready.
  int readyPods(const std::string& ns, const std::string& selector) {
    json pods = getJson({"get", "pods", "-n", ns, "-l", selector});
    int n = 0;
    for (const auto& p : pods.value("items", json::array())) {
      if (p["metadata"].contains("deletionTimestamp")) continue;
      ++n;
      if (p["status"].contains("podIP")) continue;
      std::string ip = "10.244.0." + std::to_string(++ip_);
      json patch = {{"status",
                     {{"phase", "Running"},
                      {"podIP", ip},
                      {"podIPs", json::array({{{"ip", ip}}})},
                      {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
      kubectl({"patch", "pod", p["metadata"]["name"], "-n", ns, "--subresource=status",
               "--type=merge", "-p", patch.dump()});
    }
    return n;
  }

  int ip_ = 0;
};

TEST_F(WorkloadTest, DeploymentCreateScaleRollingUpdateAndUndo) {
  auto r = kubectl({"create", "deployment", "web", "--image=nginx", "--replicas=3"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  ASSERT_TRUE(waitFor([&] { return readyPods("default", "app=web") == 3; }, 60s));
  r = kubectl({"rollout", "status", "deployment/web", "--timeout=60s"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_THAT(r.out, HasSubstr("deployment \"web\" successfully rolled out"));

  json rs = getJson({"get", "rs", "-l", "app=web"});
  ASSERT_EQ(rs["items"].size(), 1u);
  std::string hash = rs["items"][0]["metadata"]["labels"]["pod-template-hash"];
  EXPECT_EQ(rs["items"][0]["metadata"]["name"], "web-" + hash);
  r = kubectl({"get", "deployment", "web"});
  EXPECT_THAT(r.out, HasSubstr("3/3"));

  r = kubectl({"scale", "deployment", "web", "--replicas=5"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  ASSERT_TRUE(waitFor([&] { return readyPods("default", "app=web") == 5; }, 60s));
  ASSERT_EQ(kubectl({"rollout", "status", "deployment/web", "--timeout=60s"}).exitCode, 0);

  r = kubectl({"set", "image", "deployment/web", "nginx=nginx:1.27"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  auto status = kubectlBackground({"rollout", "status", "deployment/web", "--timeout=90s"});
  ASSERT_TRUE(waitFor(
      [&] {
        readyPods("default", "app=web");
        return !status->running();
      },
      90s));
  EXPECT_EQ(status->exitCode(), 0) << status->stdoutText() << status->stderrText();
  EXPECT_THAT(status->stdoutText(), HasSubstr("successfully rolled out"));
  rs = getJson({"get", "rs", "-l", "app=web"});
  ASSERT_EQ(rs["items"].size(), 2u);
  for (const auto& s : rs["items"]) {
    bool isNew = s["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27";
    EXPECT_EQ(s["spec"]["replicas"], isNew ? 5 : 0);
    EXPECT_EQ(s["metadata"]["annotations"]["deployment.kubernetes.io/revision"], isNew ? "2" : "1");
  }
  r = kubectl({"rollout", "history", "deployment/web"});
  EXPECT_EQ(r.exitCode, 0) << r.describe();

  r = kubectl({"rollout", "undo", "deployment/web"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  ASSERT_TRUE(waitFor(
      [&] {
        readyPods("default", "app=web");
        json d = getJson({"get", "deployment", "web"});
        return d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx" &&
               d["status"].value("updatedReplicas", 0) == 5 &&
               d["status"].value("availableReplicas", 0) == 5 &&
               d["status"].value("replicas", 0) == 5;
      },
      90s));
  EXPECT_EQ(getJson({"get", "deployment", "web"})["metadata"]["annotations"]
                ["deployment.kubernetes.io/revision"],
            "3");
}

TEST_F(WorkloadTest, ServiceGetsEndpointSlicesWithTheReadyPods) {
  ASSERT_EQ(kubectl({"create", "deployment", "api", "--image=nginx", "--replicas=2", "--port=8080"})
                .exitCode,
            0);
  ASSERT_EQ(kubectl({"expose", "deployment", "api", "--port=80", "--target-port=8080"}).exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return readyPods("default", "app=api") == 2; }, 60s));
  json slices;
  ASSERT_TRUE(waitFor(
      [&] {
        slices = getJson({"get", "endpointslices", "-l", "kubernetes.io/service-name=api"});
        if (slices.value("items", json::array()).size() != 1) return false;
        const json& eps = slices["items"][0].value("endpoints", json::array());
        return eps.size() == 2 && eps[0]["conditions"]["ready"] == true &&
               eps[1]["conditions"]["ready"] == true;
      },
      60s))
      << slices.dump();
  EXPECT_EQ(slices["items"][0]["ports"][0]["port"], 8080);
  auto r = kubectl({"get", "endpointslices"});
  EXPECT_THAT(r.out, HasSubstr("api-"));
  EXPECT_THAT(r.out, HasSubstr("IPv4"));
  r = kubectl({"get", "endpoints", "api"});
  EXPECT_THAT(r.out, HasSubstr(":8080"));
}

TEST_F(WorkloadTest, DeletingANamespaceRemovesEverythingInIt) {
  ASSERT_EQ(kubectl({"create", "namespace", "doomed"}).exitCode, 0);
  ASSERT_TRUE(waitFor(
      [&] {
        return kubectl({"get", "serviceaccount", "default", "-n", "doomed"}).exitCode == 0 &&
               kubectl({"get", "configmap", "kube-root-ca.crt", "-n", "doomed"}).exitCode == 0;
      },
      30s));
  ASSERT_EQ(kubectl({"create", "deployment", "app", "--image=x", "--replicas=2", "-n", "doomed"})
                .exitCode,
            0);
  ASSERT_EQ(kubectl({"create", "configmap", "cfg", "--from-literal=a=b", "-n", "doomed"}).exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return readyPods("doomed", "app=app") == 2; }, 60s));
  auto r = kubectl({"delete", "namespace", "doomed", "--timeout=90s"}, {}, 120s);
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  r = kubectl({"get", "namespace", "doomed"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("not found"));
  r = kubectl({"get", "all,configmaps,serviceaccounts", "-n", "doomed", "-o", "name"});
  EXPECT_EQ(r.out, "") << r.describe();
}

TEST_F(WorkloadTest, ApprovedCsrIsSignedByTheClusterCa) {
  std::string key = testDir() + "/alice.key", csr = testDir() + "/alice.csr";
  auto r = runCommand({"openssl", "req", "-new", "-newkey", "ec", "-pkeyopt",
                       "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", csr,
                       "-subj", "/O=devs/CN=alice"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  r = runCommand({"base64", "-w0", csr});
  json obj = {{"apiVersion", "certificates.k8s.io/v1"},
              {"kind", "CertificateSigningRequest"},
              {"metadata", {{"name", "alice"}}},
              {"spec",
               {{"request", r.out},
                {"signerName", "kubernetes.io/kube-apiserver-client"},
                {"expirationSeconds", 86400},
                {"usages", {"client auth"}}}}};
  r = kubectl({"apply", "-f", "-"}, obj.dump());
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  r = kubectl({"certificate", "approve", "alice"});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  std::string cert;
  ASSERT_TRUE(waitFor(
      [&] {
        cert = kubectl({"get", "csr", "alice", "-o", "jsonpath={.status.certificate}"}).out;
        return !cert.empty();
      },
      30s));
  ASSERT_TRUE(writeFile(testDir() + "/alice.b64", cert));
  r = runCommand({"sh", "-c", "base64 -d " + testDir() + "/alice.b64 > " + testDir() + "/alice.crt"});
  ASSERT_EQ(r.exitCode, 0);
  std::string error;
  auto creds = loadAdminCredentials(cluster().kubeconfig(), testDir(), &error);
  ASSERT_TRUE(creds) << error;
  r = runCommand({"openssl", "verify", "-purpose", "sslclient", "-CAfile", creds->caFile,
                  testDir() + "/alice.crt"});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  // The new credentials authenticate as alice.
  r = runCommand({"curl", "-sS", "--cacert", creds->caFile, "--cert", testDir() + "/alice.crt",
                  "--key", key, creds->server + "/api/v1/namespaces/default"});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_THAT(r.out, HasSubstr("\"name\":\"default\""));
  r = kubectl({"get", "csr", "alice"});
  EXPECT_THAT(r.out, HasSubstr("Approved,Issued"));
}

class WebhookTest : public WorkloadTest {
 protected:
  void SetUp() override {
    WorkloadTest::SetUp();
    // The webhook's certificate comes from the test's own CA.
    std::string d = testDir();
    auto r = runCommand({"sh", "-c",
                         "set -e; cd " + d +
                             "; openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1"
                             " -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=webhook-ca;"
                             " openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1"
                             " -nodes -keyout hook.key -out hook.csr -subj /CN=webhook;"
                             " printf 'subjectAltName=IP:127.0.0.1\\n' > ext.cnf;"
                             " openssl x509 -req -in hook.csr -CA ca.crt -CAkey ca.key"
                             " -CAcreateserial -days 1 -extfile ext.cnf -out hook.crt"});
    ASSERT_EQ(r.exitCode, 0) << r.describe();
    std::string err;
    ASSERT_TRUE(server_.start({"/usr/bin/python3", pythonScript("webhook_server.py"), d + "/hook.crt",
                               d + "/hook.key", d + "/port"},
                              {}, d + "/hook.out", d + "/hook.err", &err))
        << err;
    ASSERT_TRUE(waitFor([&] { return !readFile(d + "/port").empty(); }, 30s)) << server_.stderrText();
    port_ = readFile(d + "/port");
    r = runCommand({"base64", "-w0", d + "/ca.crt"});
    caBundle_ = r.out;
  }
  void TearDown() override {
    server_.stop();
    // Configurations are cluster-scoped and the cluster is shared by the suite.
    kubectl({"delete", "mutatingwebhookconfigurations,validatingwebhookconfigurations", "--all"});
    WorkloadTest::TearDown();
  }
  json hook(const std::string& name, const std::string& url, const std::string& policy) {
    return {{"name", name},
            {"clientConfig", {{"url", url}, {"caBundle", caBundle_}}},
            {"rules", json::array({{{"operations", {"CREATE"}}, {"apiGroups", {""}},
                                    {"apiVersions", {"v1"}}, {"resources", {"pods"}}}})},
            {"failurePolicy", policy},
            {"sideEffects", "None"},
            {"timeoutSeconds", 5},
            {"admissionReviewVersions", {"v1"}}};
  }
  void apply(const std::string& kind, const std::string& name, json webhooks) {
    json cfg = {{"apiVersion", "admissionregistration.k8s.io/v1"},
                {"kind", kind},
                {"metadata", {{"name", name}}},
                {"webhooks", webhooks}};
    auto r = kubectl({"apply", "-f", "-"}, cfg.dump());
    ASSERT_EQ(r.exitCode, 0) << r.describe();
  }

  BackgroundProcess server_;
  std::string port_, caBundle_;
};

TEST_F(WebhookTest, MutatingWebhookLabelsNewPodsAndValidatingOneDenies) {
  apply("MutatingWebhookConfiguration", "labeler",
        json::array({hook("label.strait.test", "https://127.0.0.1:" + port_ + "/mutate", "Fail")}));
  apply("ValidatingWebhookConfiguration", "guard",
        json::array({hook("deny.strait.test", "https://127.0.0.1:" + port_ + "/deny", "Fail")}));
  auto r = kubectl({"run", "hooked", "--image=nginx"});
  ASSERT_EQ(r.exitCode, 0) << r.describe() << server_.stderrText();
  r = kubectl({"get", "pod", "hooked", "--show-labels"});
  EXPECT_THAT(r.out, HasSubstr("webhook=added"));
  // Pods made by a Deployment's ReplicaSet are labelled too.
  ASSERT_EQ(kubectl({"create", "deployment", "hooked-dep", "--image=nginx", "--replicas=2"}).exitCode, 0);
  ASSERT_TRUE(waitFor(
      [&] {
        return getJson({"get", "pods", "-l", "app=hooked-dep,webhook=added"})
                   .value("items", json::array())
                   .size() == 2;
      },
      60s));
  r = kubectl({"run", "bad-pod", "--image=nginx"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("admission webhook \"deny.strait.test\" denied the request: "
                               "no objects named bad"));
  EXPECT_NE(kubectl({"get", "pod", "bad-pod"}).exitCode, 0);
  EXPECT_THAT(readFile(testDir() + "/hook.out"), HasSubstr("/mutate CREATE default/hooked"));
}

TEST_F(WebhookTest, FailurePolicyIgnoreVersusFailWithTheWebhookDown) {
  std::string down = "https://127.0.0.1:" + port_ + "/deny";
  server_.stop();
  apply("ValidatingWebhookConfiguration", "lenient",
        json::array({hook("ignore.strait.test", down, "Ignore")}));
  auto r = kubectl({"run", "while-down-ignored", "--image=nginx"});
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  apply("ValidatingWebhookConfiguration", "strict",
        json::array({hook("fail.strait.test", down, "Fail")}));
  r = kubectl({"run", "while-down-refused", "--image=nginx"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("failed calling webhook \"fail.strait.test\""));
  EXPECT_NE(kubectl({"get", "pod", "while-down-refused"}).exitCode, 0);
}

}  // namespace
}  // namespace strait::e2e
