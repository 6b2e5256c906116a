// Admission webhooks, in process: the real REST layer with webhook admission, webhooks
// served over HTTPS by the project's own HttpServer with a certificate from a test CA.
#include <atomic>
#include <mutex>

#include "controller_fixture.h"
#include "kube/base64.h"
#include "kube/object.h"
#include "minicluster/admission.h"
#include "kube/http_server.h"

namespace strait::minicluster::testing {
namespace {

using kube::Handler;
using kube::HttpRequest;
using kube::HttpResponse;
using kube::HttpServer;
using kube::HttpServerOptions;
using kube::Responder;
using kube::newHttpServer;

// A webhook server: /mutate labels objects, /deny refuses names starting with "bad",
// /slow answers after 3 s, /wrong-uid answers with another uid. Records every review.
class TestWebhooks : public Handler {
 public:
  void handle(const HttpRequest& req, Responder& out) override {
    json review = json::parse(req.body, nullptr, false);
    json request = review.is_object() ? review.value("request", json::object()) : json::object();
    {
      std::lock_guard<std::mutex> l(mu_);
      seen.push_back({req.path, request});
      remotes.push_back(req.remoteAddr);
    }
    json resp = {{"uid", request.value("uid", "")}, {"allowed", true}};
    if (req.path == "/mutate" && request["object"].is_object()) {
      json ops = json::array();
      if (!request["object"]["metadata"].contains("labels")) {
        ops.push_back({{"op", "add"}, {"path", "/metadata/labels"}, {"value", json::object()}});
      }
      ops.push_back({{"op", "add"}, {"path", "/metadata/labels/webhook"}, {"value", "added"}});
      resp["patchType"] = "JSONPatch";
      resp["patch"] = kube::base64Encode(ops.dump());
    } else if (req.path == "/deny") {
      if (request.value("name", "").rfind("bad", 0) == 0) {
        resp["allowed"] = false;
        resp["status"] = {{"code", 403}, {"reason", "Forbidden"},
                          {"message", "no pods named bad"}};
      }
    } else if (req.path == "/slow") {
      std::this_thread::sleep_for(3s);
    } else if (req.path == "/wrong-uid") {
      resp["uid"] = "not-the-request-uid";
    }
    json body = {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"},
                 {"response", resp}};
    out.respond(HttpResponse{200, {{"Content-Type", "application/json"}}, body.dump()});
  }
  std::vector<std::pair<std::string, json>> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return seen;
  }
  std::vector<std::string> remoteAddresses() {
    std::lock_guard<std::mutex> l(mu_);
    return remotes;
  }
  std::mutex mu_;
  std::vector<std::pair<std::string, json>> seen;
  std::vector<std::string> remotes;  // the client's address and port of each review
};

class AdmissionWebhookTest : public ControllerTest {
 protected:
  void SetUp() override {
    ControllerTest::SetUp();
    admission_ = newWebhookAdmission(*store_, *registry_);
    rest_->setAdmission(admission_.get());
    auto cert = kube::issueCert(ca_, "webhook", {}, {"localhost", "websvc.default.svc"},
                                {"127.0.0.1"}, true);
    ASSERT_TRUE(cert.ok());
    HttpServerOptions o;
    o.tls.certPem = cert->certPem;
    o.tls.keyPem = cert->keyPem;
    server_ = newHttpServer(o, hooks_);
    ASSERT_TRUE(server_->start().ok());
  }
  void TearDown() override {
    server_->stop();
    ControllerTest::TearDown();
    rest_->setAdmission(nullptr);
  }

  std::string url(const std::string& path) {
    return "https://127.0.0.1:" + std::to_string(server_->port()) + path;
  }

  json hook(const std::string& name, const std::string& target, json rules,
            const std::string& failurePolicy = "Fail") {
    return {{"name", name},
            {"clientConfig", {{"url", target}, {"caBundle", kube::base64Encode(ca_.certPem)}}},
            {"rules", rules},
            {"failurePolicy", failurePolicy},
            {"sideEffects", "None"},
            {"timeoutSeconds", 1},
            {"admissionReviewVersions", {"v1"}}};
  }
  static json podRules(json ops = {"CREATE"}) {
    return json::array({{{"operations", ops}, {"apiGroups", {""}}, {"apiVersions", {"v1"}},
                         {"resources", {"pods"}}}});
  }
  void configure(const std::string& resource, const std::string& name, json webhooks) {
    auto r = create("admissionregistration.k8s.io", resource, "",
                    {{"metadata", {{"name", name}}}, {"webhooks", webhooks}});
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  kube::Result<ObjectPtr> createPod(const std::string& name, const std::string& ns = "default",
                                    json labels = json::object()) {
    return create("", "pods", ns,
                  {{"metadata", {{"name", name}, {"labels", labels}}},
                   {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "x"}}})}}}});
  }

  TestWebhooks hooks_;
  std::unique_ptr<Admission> admission_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(AdmissionWebhookTest, MutatingWebhookLabelsNewPodsIncludingControllerCreatedOnes) {
  configure("mutatingwebhookconfigurations", "labeler",
            json::array({hook("label.example.com", url("/mutate"), podRules())}));
  auto r = createPod("direct");
  ASSERT_TRUE(r.ok()) << r.error().message;
  json pod = json::parse((*r)->json);
  EXPECT_EQ(pod["metadata"]["labels"]["webhook"], "added");
  auto reqs = hooks_.requests();
  ASSERT_EQ(reqs.size(), 1u);
  const json& req = reqs[0].second;
  EXPECT_EQ(req["operation"], "CREATE");
  EXPECT_EQ(req["kind"], json::parse(R"({"group":"","version":"v1","kind":"Pod"})"));
  EXPECT_EQ(req["resource"]["resource"], "pods");
  EXPECT_EQ(req["namespace"], "default");
  EXPECT_EQ(req["name"], "direct");
  EXPECT_EQ(req["object"]["metadata"]["name"], "direct");
  EXPECT_TRUE(req["oldObject"].is_null());

  // Pods a ReplicaSet creates go through admission too.
  ASSERT_TRUE(create("apps", "replicasets", "default",
                     {{"metadata", {{"name", "rs"}}},
                      {"spec",
                       {{"replicas", 2},
                        {"selector", {{"matchLabels", {{"app", "rs"}}}}},
                        {"template",
                         {{"metadata", {{"labels", {{"app", "rs"}}}}},
                          {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "x"}}})}}}}}}}})
                  .ok());
  ASSERT_TRUE(eventually([&] { return list("", "pods", "default", "app=rs").size() == 2; }));
  for (const auto& p : list("", "pods", "default", "app=rs")) {
    EXPECT_EQ(p["metadata"]["labels"]["webhook"], "added");
  }
}

TEST_F(AdmissionWebhookTest, ValidatingWebhookDeniesWithUpstreamMessage) {
  configure("validatingwebhookconfigurations", "guard",
            json::array({hook("deny.example.com", url("/deny"), podRules({"CREATE", "UPDATE"}))}));
  auto bad = createPod("bad-pod");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "admission webhook \"deny.example.com\" denied the request: no pods named bad");
  EXPECT_EQ(bad.error().code, kube::Code::Forbidden);
  EXPECT_FALSE(get("", "pods", "default", "bad-pod"));
  ASSERT_TRUE(createPod("good").ok());
  // Updates are reviewed with the old object.
  ASSERT_TRUE(mutate("", "pods", "default", "good", "", [](json& p) {
                p["metadata"]["labels"]["x"] = "y";
              }).ok());
  auto reqs = hooks_.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[2].second["operation"], "UPDATE");
  EXPECT_EQ(reqs[2].second["oldObject"]["metadata"]["name"], "good");
  EXPECT_EQ(reqs[2].second["object"]["metadata"]["labels"]["x"], "y");
}

TEST_F(AdmissionWebhookTest, FailurePolicyDecidesWhenTheWebhookIsDown) {
  std::string down = "https://127.0.0.1:1/down";  // nothing listens on port 1
  configure("validatingwebhookconfigurations", "ignored",
            json::array({hook("ignore.example.com", down, podRules(), "Ignore")}));
  ASSERT_TRUE(createPod("passes").ok());
  configure("validatingwebhookconfigurations", "strict",
            json::array({hook("fail.example.com", down, podRules(), "Fail")}));
  auto r = createPod("refused");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, kube::Code::Internal);
  EXPECT_NE(r.error().message.find("failed calling webhook \"fail.example.com\""),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("Post \"https://127.0.0.1:1/down?timeout=1s\""),
            std::string::npos)
      << r.error().message;
}

TEST_F(AdmissionWebhookTest, ConnectionsAreKeptBetweenCallsAndARestartedWebhookIsReachedAgain) {
  configure("mutatingwebhookconfigurations", "labeler",
            json::array({hook("label.example.com", url("/mutate"), podRules())}));
  for (const char* name : {"k1", "k2", "k3"}) ASSERT_TRUE(createPod(name).ok()) << name;
  std::vector<std::string> remotes = hooks_.remoteAddresses();
  ASSERT_EQ(remotes.size(), 3u);
  // One connection (the same client port) served the three reviews.
  EXPECT_EQ(remotes[1], remotes[0]);
  EXPECT_EQ(remotes[2], remotes[0]);

  // The webhook server restarts on the same port: the connection kept for it is closed, and
  // the next create still reaches the webhook, on a new connection, without an error.
  const uint16_t port = server_->port();
  server_->stop();
  auto cert = kube::issueCert(ca_, "webhook", {}, {"localhost"}, {"127.0.0.1"}, true);
  ASSERT_TRUE(cert.ok());
  HttpServerOptions o;
  o.listenPort = port;
  o.tls.certPem = cert->certPem;
  o.tls.keyPem = cert->keyPem;
  server_ = newHttpServer(o, hooks_);
  ASSERT_TRUE(server_->start().ok());
  auto r = createPod("k4");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(json::parse((*r)->json)["metadata"]["labels"]["webhook"], "added");
  remotes = hooks_.remoteAddresses();
  ASSERT_EQ(remotes.size(), 4u);
  EXPECT_NE(remotes[3], remotes[0]);
}

TEST_F(AdmissionWebhookTest, TimeoutAndBadResponsesFailTheCall) {
  configure("validatingwebhookconfigurations", "slow",
            json::array({hook("slow.example.com", url("/slow"), podRules())}));
  auto t0 = std::chrono::steady_clock::now();
  auto r = createPod("p1");
  auto elapsed = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("deadline exceeded"), std::string::npos) << r.error().message;
  EXPECT_LT(elapsed, 2900ms);  // timeoutSeconds 1, not the webhook's 3 s
  ASSERT_TRUE(rest_->remove(info("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
                            "", "slow", DeleteOptions{})
                  .ok());
  configure("validatingwebhookconfigurations", "liar",
            json::array({hook("uid.example.com", url("/wrong-uid"), podRules())}));
  r = createPod("p2");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("expected response.uid"), std::string::npos);
  // A webhook whose certificate does not verify against the caBundle fails the call too.
  auto otherCa = kube::makeCa("other");
  json h = hook("tls.example.com", url("/deny"), podRules());
  h["clientConfig"]["caBundle"] = kube::base64Encode(otherCa->certPem);
  ASSERT_TRUE(rest_->remove(info("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
                            "", "liar", DeleteOptions{})
                  .ok());
  configure("validatingwebhookconfigurations", "tls", json::array({h}));
  r = createPod("p3");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("tls"), std::string::npos) << r.error().message;
}

TEST_F(AdmissionWebhookTest, RulesAndSelectorsChooseWhichRequestsAreReviewed) {
  json statusRules = json::array({{{"operations", {"UPDATE"}}, {"apiGroups", {"*"}},
                                   {"apiVersions", {"*"}}, {"resources", {"pods/status"}}}});
  json nsSel = hook("ns.example.com", url("/deny"), podRules());
  nsSel["namespaceSelector"] = {{"matchLabels", {{"review", "yes"}}}};
  json objSel = hook("obj.example.com", url("/deny"), podRules());
  objSel["objectSelector"] = {{"matchExpressions", json::array({{{"key", "tier"},
                                                                 {"operator", "In"},
                                                                 {"values", {"web"}}}})}};
  configure("validatingwebhookconfigurations", "mixed",
            json::array({hook("status.example.com", url("/deny"), statusRules), nsSel, objSel}));
  ASSERT_TRUE(create("", "namespaces", "",
                     {{"metadata", {{"name", "reviewed"}, {"labels", {{"review", "yes"}}}}}})
                  .ok());
  ASSERT_TRUE(create("", "namespaces", "", {{"metadata", {{"name", "plain"}}}}).ok());

  ASSERT_TRUE(createPod("bad-1", "plain").ok());  // no rule matches: not reviewed
  EXPECT_EQ(createPod("bad-2", "reviewed").error().message,
            "admission webhook \"ns.example.com\" denied the request: no pods named bad");
  EXPECT_EQ(createPod("bad-3", "plain", {{"tier", "web"}}).error().message,
            "admission webhook \"obj.example.com\" denied the request: no pods named bad");
  // pods/status updates match only the subresource rule.
  ASSERT_TRUE(mutate("", "pods", "plain", "bad-1", "", [](json& p) {
                p["metadata"]["labels"]["a"] = "b";
              }).ok());
  auto st = mutate("", "pods", "plain", "bad-1", "status",
                   [](json& p) { p["status"]["phase"] = "Running"; });
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("status.example.com"), std::string::npos);
  for (const auto& [path, req] : hooks_.requests()) {
    if (req["name"] == "bad-1" && req["operation"] == "UPDATE") {
      EXPECT_EQ(req["subResource"], "status");
    }
  }
}

TEST_F(AdmissionWebhookTest, ServiceReferenceReachesTheServiceEndpoints) {
  ASSERT_TRUE(create("", "services", "default",
                     {{"metadata", {{"name", "websvc"}}},
                      {"spec", {{"ports", json::array({{{"name", "https"}, {"port", 443}}})}}}})
                  .ok());
  ASSERT_TRUE(create("", "endpoints", "default",
                     {{"metadata", {{"name", "websvc"}}},
                      {"subsets", json::array({{{"addresses", json::array({{{"ip", "127.0.0.1"}}})},
                                                {"ports", json::array({{{"name", "https"},
                                                                        {"port", server_->port()}}})}}})}})
                  .ok());
  json h = hook("svc.example.com", "", podRules());
  h["clientConfig"] = {{"service", {{"namespace", "default"}, {"name", "websvc"}, {"path", "/deny"}}},
                       {"caBundle", kube::base64Encode(ca_.certPem)}};
  configure("validatingwebhookconfigurations", "bysvc", json::array({h}));
  auto r = createPod("bad-svc");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "admission webhook \"svc.example.com\" denied the request: no pods named bad");
  ASSERT_TRUE(createPod("fine").ok());
}

}  // namespace
}  // namespace strait::minicluster::testing
