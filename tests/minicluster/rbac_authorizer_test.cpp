// The RBAC authorizer (minicluster/authorizer.h): upstream's rule matching, bindings by
// user, group and ServiceAccount, the snapshot following role edits, the request-to-verb
// mapping and messages, and escalation prevention on RBAC writes (rbac_escalation.h).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "minicluster/admission.h"
#include "minicluster/authorizer.h"
#include "minicluster/rbac_bootstrap.h"
#include "minicluster/rbac_escalation.h"
#include "minicluster/rbac_rules.h"
#include "minicluster/registry.h"
#include "minicluster/rest.h"
#include "minicluster/store.h"

namespace strait::minicluster {
namespace {

using nlohmann::json;

constexpr const char* kGroup = "rbac.authorization.k8s.io";

AuthorizationAttributes res(const std::string& verb, const std::string& group,
                            const std::string& resource, const std::string& sub = "",
                            const std::string& name = "", const std::string& ns = "") {
  AuthorizationAttributes a;
  a.resourceRequest = true;
  a.verb = verb;
  a.apiGroup = group;
  a.resource = resource;
  a.subresource = sub;
  a.name = name;
  a.ns = ns;
  return a;
}

AuthorizationAttributes path(const std::string& verb, const std::string& p) {
  AuthorizationAttributes a;
  a.verb = verb;
  a.path = p;
  return a;
}

TEST(RbacRuleTest, MatchingTable) {
  struct Case {
    PolicyRule rule;
    AuthorizationAttributes attrs;
    bool allowed;
  };
  const PolicyRule pods{{"get", "list"}, {""}, {"pods"}, {}, {}};
  const std::vector<Case> cases = {
      {pods, res("get", "", "pods"), true},
      {pods, res("list", "", "pods"), true},
      {pods, res("watch", "", "pods"), false},
      {pods, res("get", "apps", "pods"), false},
      {pods, res("get", "", "pods", "log"), false},  // a subresource needs its own rule
      {{{"*"}, {"*"}, {"*"}, {}, {}}, res("delete", "apps", "deployments", "scale"), true},
      {{{"get"}, {""}, {"pods/log"}, {}, {}}, res("get", "", "pods", "log"), true},
      {{{"get"}, {""}, {"pods/log"}, {}, {}}, res("get", "", "pods"), false},
      {{{"get"}, {""}, {"*/status"}, {}, {}}, res("get", "", "nodes", "status"), true},
      {{{"get"}, {""}, {"*/status"}, {}, {}}, res("get", "", "nodes"), false},
      {{{"get"}, {""}, {"pods"}, {"web"}, {}}, res("get", "", "pods", "", "web"), true},
      {{{"get"}, {""}, {"pods"}, {"web"}, {}}, res("get", "", "pods", "", "db"), false},
      {{{"get"}, {""}, {"pods"}, {"web"}, {}}, res("list", "", "pods"), false},
      {{{"get"}, {}, {}, {}, {"/healthz"}}, path("get", "/healthz"), true},
      {{{"get"}, {}, {}, {}, {"/healthz"}}, path("get", "/healthz/etcd"), false},
      {{{"get"}, {}, {}, {}, {"/apis/*"}}, path("get", "/apis/apps/v1"), true},
      {{{"get"}, {}, {}, {}, {"/apis/*"}}, path("get", "/apis"), false},
      {{{"get"}, {}, {}, {}, {"*"}}, path("get", "/anything"), true},
      {{{"get"}, {}, {}, {}, {"/version"}}, path("post", "/version"), false},
      {{{"get"}, {""}, {"pods"}, {}, {}}, path("get", "/pods"), false},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(ruleAllows(cases[i].attrs, cases[i].rule), cases[i].allowed) << "case " << i;
  }
}

TEST(RbacRuleTest, CoversAndCompactString) {
  std::vector<PolicyRule> owner = {{{"get", "list"}, {""}, {"pods", "*/status"}, {}, {}},
                                   {{"get"}, {}, {}, {}, {"/logs/*"}}};
  EXPECT_TRUE(covers(owner, {{{"get"}, {""}, {"pods", "deployments/status"}, {}, {}}}, nullptr));
  EXPECT_TRUE(covers(owner, {{{"get"}, {""}, {"pods"}, {"a", "b"}, {}}}, nullptr));
  EXPECT_TRUE(covers(owner, {{{"get"}, {}, {}, {}, {"/logs/kubelet"}}}, nullptr));
  std::vector<PolicyRule> missing;
  EXPECT_FALSE(covers(owner, {{{"get", "delete", "patch"}, {"", "apps"}, {"pods"}, {}, {}}},
                      &missing));
  auto compact = compactRules(missing);
  std::vector<std::string> shown;
  for (const auto& r : compact) shown.push_back(compactString(r));
  std::sort(shown.begin(), shown.end());
  EXPECT_EQ(shown, (std::vector<std::string>{
                       R"({APIGroups:[""], Resources:["pods"], Verbs:["delete" "patch"]})",
                       R"({APIGroups:["apps"], Resources:["pods"], Verbs:["get" "delete" "patch"]})"}));
}

// A store with the default policy, a namespace "team" and helpers to write RBAC objects.
class RbacAuthorizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = newStore({});
    ASSERT_TRUE(store_->open().ok());
    registry_ = std::make_unique<Registry>();
    rest_ = std::make_unique<Rest>(*store_, *registry_);
    for (const char* ns : {"default", "team"}) {
      ASSERT_TRUE(rest_->create(info("", "namespaces"), "", {{"metadata", {{"name", ns}}}}, {},
                                nullptr)
                      .ok());
    }
    ASSERT_TRUE(bootstrapRbacPolicy(*rest_, *registry_).ok());
    authz_ = newRbacAuthorizer(*store_);
  }

  const ResourceInfo& info(const std::string& group, const std::string& resource) {
    return *registry_->find(group, "v1", resource);
  }

  void put(const std::string& resource, const std::string& ns, json obj) {
    obj["apiVersion"] = "rbac.authorization.k8s.io/v1";
    if (!ns.empty()) obj["metadata"]["namespace"] = ns;
    const std::string name = obj["metadata"]["name"];
    auto existing = rest_->get(info(kGroup, resource), ns, name);
    auto r = existing ? rest_->update(info(kGroup, resource), ns, name, obj, {}, nullptr)
                      : rest_->create(info(kGroup, resource), ns, obj, {}, nullptr);
    ASSERT_TRUE(r.ok()) << r.error().message;
  }

  static json roleRef(const std::string& kind, const std::string& name) {
    return {{"apiGroup", kGroup}, {"kind", kind}, {"name", name}};
  }

  AuthorizationResult can(const std::string& user, std::vector<std::string> groups,
                          AuthorizationAttributes a) {
    a.user = user;
    a.groups = std::move(groups);
    return authz_->authorize(a);
  }

  std::unique_ptr<Store> store_;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<Rest> rest_;
  std::unique_ptr<Authorizer> authz_;
};

TEST_F(RbacAuthorizerTest, BindingsBySubjectKindAndScope) {
  put("roles", "team",
      {{"metadata", {{"name", "pod-reader"}}},
       {"rules", json::array({{{"verbs", {"get", "list"}}, {"apiGroups", {""}},
                               {"resources", {"pods", "pods/log"}}}})}});
  put("rolebindings", "team",
      {{"metadata", {{"name", "readers"}}},
       {"roleRef", roleRef("Role", "pod-reader")},
       {"subjects", json::array({{{"kind", "ServiceAccount"}, {"name", "bot"}},
                                 {{"kind", "User"}, {"name", "alice"}, {"apiGroup", kGroup}},
                                 {{"kind", "Group"}, {"name", "devs"}, {"apiGroup", kGroup}}})}});
  const std::string sa = "system:serviceaccount:team:bot";
  auto allowed = can(sa, {"system:serviceaccounts"}, res("list", "", "pods", "", "", "team"));
  EXPECT_TRUE(allowed.allowed());
  EXPECT_EQ(allowed.reason, "RBAC: allowed by RoleBinding \"readers/team\" of Role \"pod-reader\" "
                            "to ServiceAccount \"bot/team\"");
  EXPECT_TRUE(can(sa, {}, res("get", "", "pods", "log", "web", "team")).allowed());
  EXPECT_FALSE(can(sa, {}, res("list", "", "pods", "", "", "default")).allowed());
  EXPECT_FALSE(can(sa, {}, res("list", "", "pods")).allowed());  // all namespaces
  EXPECT_FALSE(can(sa, {}, res("delete", "", "pods", "", "web", "team")).allowed());
  EXPECT_FALSE(can("system:serviceaccount:default:bot", {}, res("list", "", "pods", "", "", "team"))
                   .allowed());
  EXPECT_TRUE(can("alice", {}, res("get", "", "pods", "", "x", "team")).allowed());
  EXPECT_TRUE(can("carol", {"devs"}, res("get", "", "pods", "", "x", "team")).allowed());
  EXPECT_FALSE(can("carol", {"ops"}, res("get", "", "pods", "", "x", "team")).allowed());
  // system:masters needs no binding; cluster-admin's binding is to that group anyway.
  EXPECT_TRUE(can("root", {"system:masters"}, res("delete", "", "nodes", "", "n1")).allowed());
  // The default discovery roles: every authenticated user reads /api and /version.
  EXPECT_TRUE(can(sa, {"system:authenticated"}, path("get", "/apis/apps/v1")).allowed());
  EXPECT_TRUE(can(sa, {"system:authenticated"}, path("get", "/version")).allowed());
  EXPECT_TRUE(can("system:anonymous", {"system:unauthenticated"}, path("get", "/healthz"))
                  .allowed());
  EXPECT_FALSE(can("system:anonymous", {"system:unauthenticated"}, path("get", "/api")).allowed());
  EXPECT_TRUE(can(sa, {"system:authenticated"},
                  res("create", "authorization.k8s.io", "selfsubjectaccessreviews"))
                  .allowed());
}

TEST_F(RbacAuthorizerTest, ClusterRoleInRoleBindingAndMissingRole) {
  put("rolebindings", "team",
      {{"metadata", {{"name", "view"}}},
       {"roleRef", roleRef("ClusterRole", "system:aggregate-to-view")},
       {"subjects", json::array({{{"kind", "User"}, {"name", "bob"}, {"apiGroup", kGroup}}})}});
  EXPECT_TRUE(can("bob", {}, res("list", "apps", "deployments", "", "", "team")).allowed());
  EXPECT_FALSE(can("bob", {}, res("list", "apps", "deployments", "", "", "default")).allowed());
  EXPECT_FALSE(can("bob", {}, res("list", "", "secrets", "", "", "team")).allowed());
  put("clusterrolebindings", "",
      {{"metadata", {{"name", "dangling"}}},
       {"roleRef", roleRef("ClusterRole", "nope")},
       {"subjects", json::array({{{"kind", "User"}, {"name", "bob"}, {"apiGroup", kGroup}}})}});
  auto d = can("bob", {}, res("list", "", "secrets", "", "", "team"));
  EXPECT_FALSE(d.allowed());
  EXPECT_EQ(d.reason, "RBAC: clusterrole.rbac.authorization.k8s.io \"nope\" not found");
}

TEST_F(RbacAuthorizerTest, RoleEditsTakeEffectOnTheNextRequest) {
  put("clusterroles", "",
      {{"metadata", {{"name", "cm"}}},
       {"rules", json::array({{{"verbs", {"get"}}, {"apiGroups", {""}},
                               {"resources", {"configmaps"}}}})}});
  put("clusterrolebindings", "",
      {{"metadata", {{"name", "cm"}}},
       {"roleRef", roleRef("ClusterRole", "cm")},
       {"subjects", json::array({{{"kind", "User"}, {"name", "dave"}, {"apiGroup", kGroup}}})}});
  EXPECT_TRUE(can("dave", {}, res("get", "", "configmaps", "", "c", "team")).allowed());
  EXPECT_FALSE(can("dave", {}, res("delete", "", "configmaps", "", "c", "team")).allowed());
  put("clusterroles", "",
      {{"metadata", {{"name", "cm"}}},
       {"rules", json::array({{{"verbs", {"delete"}}, {"apiGroups", {""}},
                               {"resources", {"configmaps"}}}})}});
  EXPECT_FALSE(can("dave", {}, res("get", "", "configmaps", "", "c", "team")).allowed());
  EXPECT_TRUE(can("dave", {}, res("delete", "", "configmaps", "", "c", "team")).allowed());
  ASSERT_TRUE(rest_->remove(info(kGroup, "clusterrolebindings"), "", "cm", {}).ok());
  EXPECT_FALSE(can("dave", {}, res("delete", "", "configmaps", "", "c", "team")).allowed());
}

TEST_F(RbacAuthorizerTest, RequestAttributesAndMessages) {
  auto attrs = [](const std::string& method, const std::string& target) {
    kube::HttpRequest req;
    req.method = method;
    auto q = target.find('?');
    req.path = target.substr(0, q);
    if (q != std::string::npos) {
      std::string query = target.substr(q + 1);
      auto eq = query.find('=');
      req.query.push_back({query.substr(0, eq), query.substr(eq + 1)});
    }
    return requestAttributes(req, parseRequestPath(req.path), "u", {});
  };
  EXPECT_EQ(attrs("GET", "/api/v1/namespaces/y/pods").verb, "list");
  EXPECT_EQ(attrs("GET", "/api/v1/namespaces/y/pods?watch=true").verb, "watch");
  EXPECT_EQ(attrs("GET", "/api/v1/watch/namespaces/y/pods").verb, "watch");
  EXPECT_EQ(attrs("GET", "/api/v1/namespaces/y/pods/p").verb, "get");
  EXPECT_EQ(attrs("DELETE", "/api/v1/namespaces/y/pods").verb, "deletecollection");
  EXPECT_EQ(attrs("PATCH", "/apis/apps/v1/namespaces/y/deployments/d/scale").verb, "patch");
  EXPECT_EQ(attrs("POST", "/api/v1/namespaces/y/pods/p/exec").verb, "create");
  EXPECT_EQ(attrs("GET", "/api/v1/namespaces/y/pods/p/exec").verb, "get");
  EXPECT_EQ(attrs("GET", "/api/v1/namespaces/y").ns, "y");
  EXPECT_EQ(attrs("GET", "/api/v1/namespaces/y/pods?fieldSelector=metadata.name=web").name, "web");

  auto list = attrs("GET", "/api/v1/namespaces/y/pods");
  list.user = "system:serviceaccount:default:x";
  EXPECT_EQ(forbiddenError(list, "").message,
            "pods is forbidden: User \"system:serviceaccount:default:x\" cannot list resource "
            "\"pods\" in API group \"\" in the namespace \"y\"");
  auto log = attrs("GET", "/api/v1/namespaces/y/pods/web/log");
  EXPECT_EQ(forbiddenError(log, "").message,
            "pods \"web\" is forbidden: User \"u\" cannot get resource \"pods/log\" in API group "
            "\"\" in the namespace \"y\"");
  EXPECT_EQ(forbiddenError(attrs("GET", "/apis/apps/v1/deployments"), "").message,
            "deployments.apps is forbidden: User \"u\" cannot list resource \"deployments\" in "
            "API group \"apps\" at the cluster scope");
  EXPECT_EQ(forbiddenError(attrs("GET", "/foo"), "").message,
            "forbidden: User \"u\" cannot get path \"/foo\"");
  EXPECT_EQ(forbiddenError(attrs("GET", "/foo"), "").code, kube::Code::Forbidden);
}

// Escalation prevention through the admission chain a real write goes through.
class RbacEscalationTest : public RbacAuthorizerTest {
 protected:
  class Pass : public Admission {
   public:
    kube::Status mutate(const AdmissionAttributes&, json*) override { return kube::Status::OK(); }
    kube::Status validate(const AdmissionAttributes&, const json*) override {
      return kube::Status::OK();
    }
  };

  void SetUp() override {
    RbacAuthorizerTest::SetUp();
    escalation_ = newRbacEscalationAdmission(*authz_, *store_, pass_);
    rest_->setAdmission(escalation_.get());
    // erin may manage RBAC objects in "team" and read pods there.
    put("roles", "team",
        {{"metadata", {{"name", "rbac-manager"}}},
         {"rules", json::array({{{"verbs", {"create", "update", "get"}}, {"apiGroups", {kGroup}},
                                 {"resources", {"roles", "rolebindings"}}},
                                {{"verbs", {"get", "list"}}, {"apiGroups", {""}},
                                 {"resources", {"pods"}}}})}});
    put("rolebindings", "team",
        {{"metadata", {{"name", "erin"}}},
         {"roleRef", roleRef("Role", "rbac-manager")},
         {"subjects", json::array({{{"kind", "User"}, {"name", "erin"}, {"apiGroup", kGroup}}})}});
  }

  kube::Result<ObjectPtr> createAs(const std::string& user, const std::string& resource,
                                   json obj) {
    obj["apiVersion"] = "rbac.authorization.k8s.io/v1";
    obj["metadata"]["namespace"] = "team";
    WriteOptions wo;
    wo.user = {user, {"system:authenticated"}};
    return rest_->create(info(kGroup, resource), "team", obj, wo, nullptr);
  }

  Pass pass_;
  std::unique_ptr<Admission> escalation_;
};

TEST_F(RbacEscalationTest, RoleWithUnheldPermissionsIsRefused) {
  json rules = json::array({{{"verbs", {"get", "delete"}}, {"apiGroups", {""}},
                             {"resources", {"pods"}}},
                            {{"verbs", {"get"}}, {"apiGroups", {""}}, {"resources", {"secrets"}}}});
  auto r = createAs("erin", "roles", {{"metadata", {{"name", "too-much"}}}, {"rules", rules}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, kube::Code::Forbidden);
  EXPECT_EQ(r.error().message,
            "roles.rbac.authorization.k8s.io \"too-much\" is forbidden: user \"erin\" "
            "(groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not "
            "currently held:\n"
            "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\"]}\n"
            "{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}");
  // What erin holds she may grant.
  EXPECT_TRUE(createAs("erin", "roles",
                       {{"metadata", {{"name", "readers"}}},
                        {"rules", json::array({{{"verbs", {"list"}}, {"apiGroups", {""}},
                                                {"resources", {"pods"}}}})}})
                  .ok());
  // The controllers (no user) are not checked.
  EXPECT_TRUE(createAs("", "roles", {{"metadata", {{"name", "any"}}}, {"rules", rules}}).ok());
}

TEST_F(RbacEscalationTest, BindingNeedsBindVerbOrTheRolesPermissions) {
  // (No aggregation controller runs here: the aggregated `edit` has no rules yet.)
  json binding = {{"metadata", {{"name", "edit-for-frank"}}},
                  {"roleRef", roleRef("ClusterRole", "system:aggregate-to-edit")},
                  {"subjects",
                   json::array({{{"kind", "User"}, {"name", "frank"}, {"apiGroup", kGroup}}})}};
  auto refused = createAs("erin", "rolebindings", binding);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, kube::Code::Forbidden);
  EXPECT_EQ(refused.error().message.rfind(
                "rolebindings.rbac.authorization.k8s.io \"edit-for-frank\" is forbidden: user "
                "\"erin\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC "
                "permissions not currently held:\n",
                0),
            0u)
      << refused.error().message;
  // A role erin holds entirely can be bound without `bind`.
  json own = binding;
  own["metadata"]["name"] = "manager-for-frank";
  own["roleRef"] = roleRef("Role", "rbac-manager");
  EXPECT_TRUE(createAs("erin", "rolebindings", own).ok());
  // With `bind` on the edit ClusterRole, the first binding goes through.
  put("roles", "team",
      {{"metadata", {{"name", "binder"}}},
       {"rules", json::array({{{"verbs", {"bind"}}, {"apiGroups", {kGroup}},
                               {"resources", {"clusterroles"}},
                               {"resourceNames", {"system:aggregate-to-edit"}}}})}});
  put("rolebindings", "team",
      {{"metadata", {{"name", "erin-binds"}}},
       {"roleRef", roleRef("Role", "binder")},
       {"subjects", json::array({{{"kind", "User"}, {"name", "erin"}, {"apiGroup", kGroup}}})}});
  EXPECT_TRUE(createAs("erin", "rolebindings", binding).ok());
  // A binding to a role that does not exist is refused as upstream refuses it.
  json ghost = binding;
  ghost["metadata"]["name"] = "ghost";
  ghost["roleRef"] = roleRef("Role", "ghost");
  auto g = createAs("erin", "rolebindings", ghost);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message,
            "rolebindings.rbac.authorization.k8s.io \"ghost\" is forbidden: "
            "role.rbac.authorization.k8s.io \"ghost\" not found");
}

TEST_F(RbacEscalationTest, EscalateVerbAllowsAnyRole) {
  put("roles", "team",
      {{"metadata", {{"name", "escalator"}}},
       {"rules", json::array({{{"verbs", {"escalate"}}, {"apiGroups", {kGroup}},
                               {"resources", {"roles"}}}})}});
  put("rolebindings", "team",
      {{"metadata", {{"name", "erin-escalates"}}},
       {"roleRef", roleRef("Role", "escalator")},
       {"subjects", json::array({{{"kind", "User"}, {"name", "erin"}, {"apiGroup", kGroup}}})}});
  EXPECT_TRUE(createAs("erin", "roles",
                       {{"metadata", {{"name", "all"}}},
                        {"rules", json::array({{{"verbs", {"*"}}, {"apiGroups", {"*"}},
                                                {"resources", {"*"}}}})}})
                  .ok());
}

}  // namespace
}  // namespace strait::minicluster
