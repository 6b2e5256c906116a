// Pod Security Admission in the minicluster's write path (Rest), by namespace labels.
#include "minicluster/pod_security_admission.h"

#include <gtest/gtest.h>

#include "minicluster/registry.h"
#include "minicluster/rest.h"
#include "minicluster/store.h"

namespace strait::minicluster {
namespace {

using nlohmann::json;

class PodSecurityAdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions so;
    store_ = newStore(so);
    ASSERT_TRUE(store_->open().ok());
    registry_ = std::make_unique<Registry>();
    rest_ = std::make_unique<Rest>(*store_, *registry_);
    pods_ = registry_->find("", "v1", "pods");
    namespaces_ = registry_->find("", "v1", "namespaces");
    deployments_ = registry_->find("apps", "v1", "deployments");
    ASSERT_TRUE(pods_ && namespaces_ && deployments_);
  }
  void makeNamespace(const std::string& name, const json& labels) {
    json ns = {{"apiVersion", "v1"},
               {"kind", "Namespace"},
               {"metadata", {{"name", name}, {"labels", labels}}}};
    ASSERT_TRUE(rest_->create(*namespaces_, "", ns, {}, nullptr).ok());
  }
  static json pod(const std::string& name, bool hostNetwork) {
    json p = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "nginx"}}}}}}};
    if (hostNetwork) p["spec"]["hostNetwork"] = true;
    return p;
  }
  Result<ObjectPtr> createPod(const std::string& ns, const json& p,
                              std::vector<std::string>* warnings) {
    return rest_->create(*pods_, ns, p, {}, warnings);
  }

  std::unique_ptr<Store> store_;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<Rest> rest_;
  ResourceInfoPtr pods_, namespaces_, deployments_;
};

TEST_F(PodSecurityAdmissionTest, EnforceRefusesAViolatingPodWithUpstreamsMessage) {
  makeNamespace("locked", {{"pod-security.kubernetes.io/enforce", "baseline"}});
  std::vector<std::string> warnings;
  auto r = createPod("locked", pod("x", true), &warnings);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, kube::Code::Forbidden);
  EXPECT_EQ(r.error().message,
            "pods \"x\" is forbidden: violates PodSecurity \"baseline:latest\": host namespaces "
            "(hostNetwork=true)");
  EXPECT_TRUE(createPod("locked", pod("y", false), &warnings).ok());
  EXPECT_TRUE(warnings.empty());
  // Unlabelled namespaces admit anything.
  makeNamespace("open", json::object());
  EXPECT_TRUE(createPod("open", pod("x", true), &warnings).ok());
  EXPECT_TRUE(warnings.empty());
}

TEST_F(PodSecurityAdmissionTest, EnforceVersionIsNamedAndUpdatesAreChecked) {
  makeNamespace("v", {{"pod-security.kubernetes.io/enforce", "baseline"},
                      {"pod-security.kubernetes.io/enforce-version", "v1.32"}});
  auto r = createPod("v", pod("x", true), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("violates PodSecurity \"baseline:v1.32\""), std::string::npos);
  // An update making a created Pod privileged is refused; an image change is not checked.
  ASSERT_TRUE(createPod("v", pod("ok", false), nullptr).ok());
  auto stored = rest_->get(*pods_, "v", "ok");
  ASSERT_TRUE(stored.ok());
  json updated = json::parse((*stored)->json);
  updated["spec"]["containers"][0]["securityContext"] = {{"privileged", true}};
  auto u = rest_->update(*pods_, "v", "ok", updated, {}, nullptr);
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.error().message.find("privileged (container \"c\" must not set "
                                   "securityContext.privileged=true)"),
            std::string::npos)
      << u.error().message;
}

TEST_F(PodSecurityAdmissionTest, WarnAddsUpstreamsWarningAndWorkloadsAreOnlyWarned) {
  makeNamespace("w", {{"pod-security.kubernetes.io/enforce", "baseline"},
                      {"pod-security.kubernetes.io/warn", "restricted"}});
  std::vector<std::string> warnings;
  ASSERT_TRUE(createPod("w", pod("p", false), &warnings).ok());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("would violate PodSecurity \"restricted:latest\": "
                              "allowPrivilegeEscalation != false (container \"c\" must set "
                              "securityContext.allowPrivilegeEscalation=false)",
                              0),
            0u)
      << warnings[0];
  // A Deployment whose Pods enforce would refuse: created, with both levels' warnings.
  json d = {{"apiVersion", "apps/v1"},
            {"kind", "Deployment"},
            {"metadata", {{"name", "d"}}},
            {"spec",
             {{"selector", {{"matchLabels", {{"app", "d"}}}}},
              {"template",
               {{"metadata", {{"labels", {{"app", "d"}}}}},
                {"spec",
                 {{"hostNetwork", true}, {"containers", {{{"name", "c"}, {"image", "nginx"}}}}}}}}}}};
  warnings.clear();
  auto r = rest_->create(*deployments_, "w", d, {}, &warnings);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0],
            "would violate PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)");
  EXPECT_EQ(warnings[1].rfind("would violate PodSecurity \"restricted:latest\": ", 0), 0u);
}

TEST_F(PodSecurityAdmissionTest, AnInvalidLevelReadsAsRestricted) {
  makeNamespace("bad", {{"pod-security.kubernetes.io/enforce", "strict"}});
  auto r = createPod("bad", pod("p", false), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("violates PodSecurity \"restricted:latest\""),
            std::string::npos);
}

}  // namespace
}  // namespace strait::minicluster
