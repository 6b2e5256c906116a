// ServiceAccount controller and root-CA publisher, in process.
#include "controller_fixture.h"

namespace strait::minicluster::testing {
namespace {

class NamespaceDefaultsTest : public ControllerTest {};

TEST_F(NamespaceDefaultsTest, NewNamespaceGetsDefaultAccountAndRootCa) {
  ASSERT_TRUE(create("", "namespaces", "", {{"metadata", {{"name", "team"}}}}).ok());
  ASSERT_TRUE(eventually([&] {
    return get("", "serviceaccounts", "team", "default") &&
           get("", "configmaps", "team", "kube-root-ca.crt");
  }));
  auto cm = *get("", "configmaps", "team", "kube-root-ca.crt");
  EXPECT_EQ(cm["data"]["ca.crt"], ca_.certPem);
  EXPECT_TRUE(cm["metadata"]["annotations"].contains("kubernetes.io/description"));
  // The namespaces that existed before the controllers started are covered too.
  EXPECT_TRUE(get("", "serviceaccounts", "default", "default"));
  EXPECT_TRUE(get("", "configmaps", "kube-system", "kube-root-ca.crt"));
}

TEST_F(NamespaceDefaultsTest, DeletedOrEditedObjectsComeBack) {
  ASSERT_TRUE(eventually([&] {
    return get("", "serviceaccounts", "default", "default") &&
           get("", "configmaps", "default", "kube-root-ca.crt");
  }));
  ASSERT_TRUE(rest_->remove(info("", "serviceaccounts"), "default", "default", DeleteOptions{}).ok());
  ASSERT_TRUE(mutate("", "configmaps", "default", "kube-root-ca.crt", "", [](json& cm) {
                cm["data"]["ca.crt"] = "tampered";
              }).ok());
  ASSERT_TRUE(eventually([&] {
    auto cm = get("", "configmaps", "default", "kube-root-ca.crt");
    return get("", "serviceaccounts", "default", "default") && cm &&
           (*cm)["data"]["ca.crt"] == ca_.certPem;
  }));
  ASSERT_TRUE(rest_->remove(info("", "configmaps"), "default", "kube-root-ca.crt", DeleteOptions{}).ok());
  ASSERT_TRUE(eventually([&] { return get("", "configmaps", "default", "kube-root-ca.crt").has_value(); }));
}

}  // namespace
}  // namespace strait::minicluster::testing
