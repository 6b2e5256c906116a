// rbac.authorization.k8s.io/v1 in the minicluster: upstream's validation messages, defaults,
// the immutable roleRef, the default policy, ClusterRole aggregation, table columns and the
// OpenAPI schemas clients validate against.
#include <gtest/gtest.h>

#include "controller_fixture.h"
#include "minicluster/rbac_aggregation.h"
#include "minicluster/rbac_bootstrap.h"
#include "minicluster/tables.h"

namespace strait::minicluster {
namespace {

using testing::ControllerTest;
using testing::eventually;
using nlohmann::json;

constexpr const char* kGroup = "rbac.authorization.k8s.io";

json role(const std::string& name, json rules) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "Role"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"rules", std::move(rules)}};
}

json binding(const std::string& kind, const std::string& name, json roleRef, json subjects) {
  json b = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
            {"kind", kind},
            {"metadata", {{"name", name}}},
            {"roleRef", std::move(roleRef)},
            {"subjects", std::move(subjects)}};
  if (kind == "RoleBinding") b["metadata"]["namespace"] = "default";
  return b;
}

class RbacTest : public ControllerTest {
 protected:
  std::string createError(const std::string& resource, const std::string& ns, json obj) {
    auto r = create(kGroup, resource, ns, std::move(obj));
    if (r.ok()) return "";
    EXPECT_EQ(r.error().code, kube::Code::Invalid);
    return r.error().message;
  }
};

TEST_F(RbacTest, RoleRulesNeedVerbsGroupsAndResources) {
  EXPECT_EQ(createError("roles", "default", role("r", json::array({json::object()}))),
            "Role.rbac.authorization.k8s.io \"r\" is invalid: [rules[0].verbs: Required value: "
            "verbs must contain at least one value, rules[0].apiGroups: Required value: resource "
            "rules must supply at least one api group, rules[0].resources: Required value: "
            "resource rules must supply at least one resource]");
  EXPECT_EQ(createError("roles", "default",
                        role("r", json::array({{{"verbs", {"get"}},
                                                {"nonResourceURLs", {"/healthz"}}}}))),
            "Role.rbac.authorization.k8s.io \"r\" is invalid: rules[0].nonResourceURLs: Invalid "
            "value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs");
  EXPECT_EQ(createError("roles", "default", role("a/b", json::array())),
            "Role.rbac.authorization.k8s.io \"a/b\" is invalid: metadata.name: Invalid value: "
            "\"a/b\": may not contain '/'");
  // Names are path segments, not DNS names: upstream accepts "system:foo".
  EXPECT_EQ(createError("roles", "default",
                        role("system:ok", json::array({{{"verbs", {"get"}},
                                                        {"apiGroups", {""}},
                                                        {"resources", {"pods"}}}}))),
            "");
}

TEST_F(RbacTest, ClusterRoleRulesAndAggregationRule) {
  json cr = {{"metadata", {{"name", "c"}}},
             {"rules", json::array({{{"verbs", {"get"}},
                                     {"resources", {"pods"}},
                                     {"nonResourceURLs", {"/metrics"}}}})}};
  EXPECT_EQ(createError("clusterroles", "", cr),
            "ClusterRole.rbac.authorization.k8s.io \"c\" is invalid: rules[0].nonResourceURLs: "
            "Invalid value: []string{\"/metrics\"}: rules cannot apply to both regular resources "
            "and non-resource URLs");
  json agg = {{"metadata", {{"name", "agg"}}},
              {"aggregationRule", {{"clusterRoleSelectors", json::array()}}}};
  EXPECT_EQ(createError("clusterroles", "", agg),
            "ClusterRole.rbac.authorization.k8s.io \"agg\" is invalid: "
            "aggregationRule.clusterRoleSelectors: Required value: at least one "
            "clusterRoleSelector required if aggregationRule is non-nil");
  json urls = {{"metadata", {{"name", "urls"}}},
               {"rules", json::array({{{"verbs", {"get"}}, {"nonResourceURLs", {"/metrics"}}}})}};
  EXPECT_EQ(createError("clusterroles", "", urls), "");
}

TEST_F(RbacTest, BindingRoleRefAndSubjects) {
  EXPECT_EQ(createError("rolebindings", "default",
                        binding("RoleBinding", "b", {{"kind", "Pod"}, {"name", "x"}},
                                json::array({{{"kind", "Robot"}, {"name", "r2"}}}))),
            "RoleBinding.rbac.authorization.k8s.io \"b\" is invalid: [roleRef.kind: Unsupported "
            "value: \"Pod\": supported values: \"Role\", \"ClusterRole\", subjects[0].kind: "
            "Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", "
            "\"Group\"]");
  EXPECT_EQ(createError("clusterrolebindings", "",
                        binding("ClusterRoleBinding", "cb", {{"kind", "Role"}, {"name", "x"}},
                                json::array({{{"kind", "ServiceAccount"}, {"name", "sa"}},
                                             {{"kind", "User"},
                                              {"name", "u"},
                                              {"apiGroup", "example.com"}}}))),
            "ClusterRoleBinding.rbac.authorization.k8s.io \"cb\" is invalid: [roleRef.kind: "
            "Unsupported value: \"Role\": supported values: \"ClusterRole\", "
            "subjects[0].namespace: Required value, subjects[1].apiGroup: Unsupported value: "
            "\"example.com\": supported values: \"rbac.authorization.k8s.io\"]");
  EXPECT_EQ(createError("rolebindings", "default",
                        binding("RoleBinding", "b", {{"kind", "Role"}, {"name", ""}},
                                json::array({{{"kind", "ServiceAccount"},
                                              {"name", "sa"},
                                              {"apiGroup", "rbac.authorization.k8s.io"}}}))),
            "RoleBinding.rbac.authorization.k8s.io \"b\" is invalid: [roleRef.name: Required "
            "value, subjects[0].apiGroup: Unsupported value: \"rbac.authorization.k8s.io\": "
            "supported values: \"\"]");
}

TEST_F(RbacTest, BindingDefaultsAndImmutableRoleRef) {
  ASSERT_EQ(createError("rolebindings", "default",
                        binding("RoleBinding", "b", {{"kind", "ClusterRole"}, {"name", "view"}},
                                json::array({{{"kind", "User"}, {"name", "alice"}},
                                             {{"kind", "ServiceAccount"}, {"name", "default"}}}))),
            "");
  auto stored = get(kGroup, "rolebindings", "default", "b");
  ASSERT_TRUE(stored);
  EXPECT_EQ((*stored)["roleRef"]["apiGroup"], kGroup);
  EXPECT_EQ((*stored)["subjects"][0]["apiGroup"], kGroup);
  EXPECT_EQ((*stored)["subjects"][1]["apiGroup"], "");

  auto r = mutate(kGroup, "rolebindings", "default", "b", "",
                  [](json& o) { o["roleRef"]["name"] = "edit"; });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "RoleBinding.rbac.authorization.k8s.io \"b\" is invalid: roleRef: Invalid value: "
            "rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", "
            "Name:\"edit\"}: cannot change roleRef");
  // Subjects may change.
  r = mutate(kGroup, "rolebindings", "default", "b", "",
             [](json& o) { o["subjects"].push_back({{"kind", "Group"}, {"name", "devs"}}); });
  EXPECT_TRUE(r.ok()) << r.error().message;
}

TEST_F(RbacTest, AggregatedRulesAreTheUnionInNameOrder) {
  json agg = {{"metadata", {{"name", "agg"}}},
              {"aggregationRule",
               {{"clusterRoleSelectors", json::array({{{"matchLabels", {{"x", "1"}}}},
                                                      {{"matchLabels", {{"y", "1"}}}}})}}}};
  json a = {{"metadata", {{"name", "b-role"}, {"labels", {{"x", "1"}}}}},
            {"rules", json::array({{{"verbs", {"get"}}}, {{"verbs", {"list"}}}})}};
  json b = {{"metadata", {{"name", "a-role"}, {"labels", {{"y", "1"}}}}},
            {"rules", json::array({{{"verbs", {"list"}}}, {{"verbs", {"watch"}}}})}};
  json other = {{"metadata", {{"name", "c-role"}, {"labels", {{"z", "1"}}}}},
                {"rules", json::array({{{"verbs", {"delete"}}}})}};
  json self = agg;
  self["metadata"]["labels"] = {{"x", "1"}};
  self["rules"] = json::array({{{"verbs", {"patch"}}}});
  EXPECT_EQ(aggregatedRules(self, {a, b, other, self}),
            json::array({{{"verbs", {"list"}}}, {{"verbs", {"watch"}}}, {{"verbs", {"get"}}}}));
}

TEST_F(RbacTest, AggregationControllerFillsAndFollows) {
  json agg = {{"metadata", {{"name", "monitoring"}}},
              {"aggregationRule",
               {{"clusterRoleSelectors",
                 json::array({{{"matchLabels", {{"example.com/aggregate-to-monitoring", "true"}}}}})}}}};
  ASSERT_EQ(createError("clusterroles", "", agg), "");
  json part = {{"metadata",
                {{"name", "monitoring-endpoints"},
                 {"labels", {{"example.com/aggregate-to-monitoring", "true"}}}}},
               {"rules", json::array({{{"verbs", {"get", "list", "watch"}},
                                       {"apiGroups", {""}},
                                       {"resources", {"endpoints"}}}})}};
  ASSERT_EQ(createError("clusterroles", "", part), "");
  EXPECT_TRUE(eventually([&] {
    auto o = get(kGroup, "clusterroles", "", "monitoring");
    return o && (*o)["rules"] == part["rules"];
  }));
  ASSERT_TRUE(mutate(kGroup, "clusterroles", "", "monitoring-endpoints", "", [](json& o) {
                o["rules"][0]["resources"] = {"endpoints", "services"};
              }).ok());
  EXPECT_TRUE(eventually([&] {
    auto o = get(kGroup, "clusterroles", "", "monitoring");
    return o && o->value("rules", json::array()).size() == 1 &&
           (*o)["rules"][0]["resources"] == json({"endpoints", "services"});
  }));
}

TEST_F(RbacTest, DefaultPolicyAggregatesIntoAdminEditView) {
  ASSERT_TRUE(bootstrapRbacPolicy(*rest_, *registry_).ok());
  ASSERT_TRUE(bootstrapRbacPolicy(*rest_, *registry_).ok());  // idempotent
  auto admin = get(kGroup, "clusterrolebindings", "", "cluster-admin");
  ASSERT_TRUE(admin);
  EXPECT_EQ((*admin)["subjects"][0]["name"], "system:masters");
  for (const char* name : {"cluster-admin", "system:basic-user", "system:discovery",
                           "system:public-info-viewer"}) {
    auto o = get(kGroup, "clusterroles", "", name);
    ASSERT_TRUE(o) << name;
    EXPECT_EQ((*o)["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults");
  }
  // view holds the aggregate-to-view rules; edit also those (view carries aggregate-to-edit);
  // admin everything edit has plus roles/rolebindings.
  auto has = [&](const std::string& role, const std::string& resource, const std::string& verb) {
    auto o = get(kGroup, "clusterroles", "", role);
    if (!o) return false;
    for (const auto& r : o->value("rules", json::array())) {
      auto res = r.value("resources", json::array());
      auto verbs = r.value("verbs", json::array());
      if (std::find(res.begin(), res.end(), resource) != res.end() &&
          std::find(verbs.begin(), verbs.end(), verb) != verbs.end()) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(eventually([&] {
    return has("view", "pods", "list") && has("edit", "pods", "list") &&
           has("edit", "deployments", "create") && has("admin", "rolebindings", "create") &&
           has("admin", "pods", "list");
  }));
  EXPECT_FALSE(has("view", "secrets", "get"));
  EXPECT_FALSE(has("edit", "rolebindings", "create"));
}

TEST_F(RbacTest, BindingTableColumns) {
  ASSERT_EQ(createError("clusterrolebindings", "",
                        binding("ClusterRoleBinding", "cb", {{"kind", "ClusterRole"}, {"name", "view"}},
                                json::array({{{"kind", "User"}, {"name", "alice"}},
                                             {{"kind", "Group"}, {"name", "devs"}},
                                             {{"kind", "ServiceAccount"},
                                              {"name", "robot"},
                                              {"namespace", "ci"}}}))),
            "");
  auto o = get(kGroup, "clusterrolebindings", "", "cb");
  ASSERT_TRUE(o);
  json t = makeTable(info(kGroup, "clusterrolebindings"), {*o}, json::object(), "None", 0);
  std::vector<std::string> names;
  for (const auto& c : t["columnDefinitions"]) names.push_back(c["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"Name", "Role", "Age", "Users", "Groups",
                                             "ServiceAccounts"}));
  EXPECT_EQ(t["rows"][0]["cells"][1], "ClusterRole/view");
  EXPECT_EQ(t["rows"][0]["cells"][3], "alice");
  EXPECT_EQ(t["rows"][0]["cells"][4], "devs");
  EXPECT_EQ(t["rows"][0]["cells"][5], "ci/robot");
  json rt = makeTable(info(kGroup, "clusterroles"), {}, json::object(), "None", 0);
  EXPECT_EQ(rt["columnDefinitions"][1]["name"], "Created At");
}

TEST_F(RbacTest, OpenApiDocumentDescribesTheKinds) {
  auto doc = registry_->openApiDocument("apis/rbac.authorization.k8s.io/v1");
  ASSERT_TRUE(doc);
  const json& schemas = (*doc)["components"]["schemas"];
  ASSERT_TRUE(schemas.contains("io.k8s.api.rbac.v1.Role"));
  EXPECT_TRUE(schemas["io.k8s.api.rbac.v1.Role"]["properties"].contains("rules"));
  EXPECT_TRUE(schemas["io.k8s.api.rbac.v1.ClusterRole"]["properties"].contains("aggregationRule"));
  EXPECT_TRUE(schemas["io.k8s.api.rbac.v1.RoleBinding"]["properties"].contains("roleRef"));
  EXPECT_TRUE(schemas.contains("io.k8s.api.rbac.v1.ClusterRoleBindingList"));
  // kubectl and helm look for the fieldValidation parameter on the kind's patch operation.
  const json& patch =
      (*doc)["paths"]["/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles/{name}"]
            ["patch"];
  EXPECT_EQ(patch["x-kubernetes-group-version-kind"]["kind"], "Role");
  bool fieldValidation = false;
  for (const auto& p : patch["parameters"]) {
    if (p.value("name", "") == "fieldValidation") fieldValidation = true;
  }
  EXPECT_TRUE(fieldValidation);
}

TEST_F(RbacTest, OpenApiV2HasEveryKind) {
  json doc = registry_->openApiV2Document();
  EXPECT_EQ(doc["swagger"], "2.0");
  const json& defs = doc["definitions"];
  for (const char* name : {"io.k8s.api.rbac.v1.Role", "io.k8s.api.rbac.v1.ClusterRoleBinding",
                           "io.k8s.api.core.v1.Pod", "io.k8s.api.apps.v1.Deployment",
                           "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}) {
    EXPECT_TRUE(defs.contains(name)) << name;
  }
  EXPECT_EQ(defs["io.k8s.api.rbac.v1.Role"]["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
  const json& patch =
      doc["paths"]["/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}"]["patch"];
  bool fieldValidation = false, body = false;
  for (const auto& p : patch["parameters"]) {
    if (p.value("name", "") == "fieldValidation") fieldValidation = p.value("type", "") == "string";
    if (p.value("in", "") == "body") body = true;
  }
  EXPECT_TRUE(fieldValidation);
  EXPECT_TRUE(body);
  EXPECT_EQ(patch["responses"]["200"]["schema"]["$ref"],
            "#/definitions/io.k8s.api.rbac.v1.ClusterRole");
}

}  // namespace
}  // namespace strait::minicluster
