// Default ClusterRoles and ClusterRoleBindings, after upstream bootstrappolicy/policy.go
// (Kubernetes 1.32): the same names, labels, annotations, aggregation rules and rules.
#include "minicluster/rbac_bootstrap.h"

#include "minicluster/rbac_validation.h"

namespace strait::minicluster {
namespace {

using nlohmann::json;
using Strings = std::vector<std::string>;

const Strings kRead = {"get", "list", "watch"};
const Strings kWrite = {"create", "delete", "deletecollection", "patch", "update"};
const Strings kReadWrite = {"get", "list", "watch", "create", "delete", "deletecollection",
                            "patch", "update"};

json rule(const Strings& verbs, const Strings& groups, const Strings& resources) {
  return {{"verbs", verbs}, {"apiGroups", groups}, {"resources", resources}};
}

json urlRule(const Strings& verbs, const Strings& urls) {
  return {{"verbs", verbs}, {"nonResourceURLs", urls}};
}

json meta(const std::string& name, json labels) {
  labels["kubernetes.io/bootstrapping"] = "rbac-defaults";
  return {{"name", name},
          {"labels", labels},
          {"annotations", {{"rbac.authorization.kubernetes.io/autoupdate", "true"}}}};
}

json clusterRole(const std::string& name, json rules, json labels = json::object()) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRole"},
          {"metadata", meta(name, std::move(labels))},
          {"rules", std::move(rules)}};
}

json aggregated(const std::string& name, const std::string& selectorLabel, json labels) {
  json role = clusterRole(name, json::array(), std::move(labels));
  role["aggregationRule"] = {
      {"clusterRoleSelectors",
       json::array({{{"matchLabels", {{"rbac.authorization.k8s.io/" + selectorLabel, "true"}}}}})}};
  return role;
}

// upstream eventsRule(): what components need to record events.
json eventsRule() {
  return rule({"create", "update", "patch"}, {"", "events.k8s.io"}, {"events"});
}

json bindingTo(const std::string& name, json subjects) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRoleBinding"},
          {"metadata", meta(name, json::object())},
          {"roleRef", {{"apiGroup", kRbacGroup}, {"kind", "ClusterRole"}, {"name", name}}},
          {"subjects", std::move(subjects)}};
}

json userSubject(const std::string& user) {
  return {{"apiGroup", kRbacGroup}, {"kind", "User"}, {"name", user}};
}

json groupBinding(const std::string& name, const Strings& groups) {
  json subjects = json::array();
  for (const auto& g : groups) {
    subjects.push_back({{"apiGroup", kRbacGroup}, {"kind", "Group"}, {"name", g}});
  }
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRoleBinding"},
          {"metadata", meta(name, json::object())},
          {"roleRef", {{"apiGroup", kRbacGroup}, {"kind", "ClusterRole"}, {"name", name}}},
          {"subjects", subjects}};
}

}  // namespace

std::vector<json> defaultClusterRoles() {
  const json toAdmin = {{"rbac.authorization.k8s.io/aggregate-to-admin", "true"}};
  const json toEdit = {{"rbac.authorization.k8s.io/aggregate-to-edit", "true"}};
  const json toView = {{"rbac.authorization.k8s.io/aggregate-to-view", "true"}};
  std::vector<json> out;
  out.push_back(clusterRole("cluster-admin", json::array({rule({"*"}, {"*"}, {"*"}),
                                                          urlRule({"*"}, {"*"})})));
  out.push_back(aggregated("admin", "aggregate-to-admin", json::object()));
  out.push_back(aggregated("edit", "aggregate-to-edit", toAdmin));
  out.push_back(aggregated("view", "aggregate-to-view", toEdit));
  out.push_back(clusterRole(
      "system:aggregate-to-admin",
      json::array({rule({"create"}, {"authorization.k8s.io"}, {"localsubjectaccessreviews"}),
                   rule(kReadWrite, {kRbacGroup}, {"rolebindings", "roles"})}),
      toAdmin));
  out.push_back(clusterRole(
      "system:aggregate-to-edit",
      json::array({
          rule(kRead, {""},
               {"pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets",
                "services/proxy"}),
          rule({"impersonate"}, {""}, {"serviceaccounts"}),
          rule(kWrite, {""},
               {"pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"}),
          rule({"create"}, {""}, {"pods/eviction"}),
          rule(kWrite, {""},
               {"replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
                "services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets",
                "events"}),
          rule({"create"}, {""}, {"serviceaccounts/token"}),
          rule(kWrite, {"apps"},
               {"statefulsets", "statefulsets/scale", "daemonsets", "deployments",
                "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale"}),
          rule(kWrite, {"autoscaling"}, {"horizontalpodautoscalers"}),
          rule(kWrite, {"batch"}, {"jobs", "cronjobs"}),
          rule(kWrite, {"extensions"},
               {"daemonsets", "deployments", "deployments/scale", "deployments/rollback",
                "ingresses", "replicasets", "replicasets/scale", "replicationcontrollers/scale",
                "networkpolicies"}),
          rule(kWrite, {"policy"}, {"poddisruptionbudgets"}),
          rule(kWrite, {"networking.k8s.io"}, {"networkpolicies", "ingresses"}),
          rule(kReadWrite, {"coordination.k8s.io"}, {"leases"}),
      }),
      toEdit));
  out.push_back(clusterRole(
      "system:aggregate-to-view",
      json::array({
          rule(kRead, {""},
               {"pods", "replicationcontrollers", "replicationcontrollers/scale",
                "serviceaccounts", "services", "services/status", "endpoints",
                "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"}),
          rule(kRead, {""},
               {"limitranges", "resourcequotas", "bindings", "events", "pods/status",
                "resourcequotas/status", "namespaces/status", "replicationcontrollers/status",
                "pods/log"}),
          rule(kRead, {""}, {"namespaces"}),
          rule(kRead, {"discovery.k8s.io"}, {"endpointslices"}),
          rule(kRead, {"apps"},
               {"controllerrevisions", "statefulsets", "statefulsets/scale",
                "statefulsets/status", "daemonsets", "daemonsets/status", "deployments",
                "deployments/scale", "deployments/status", "replicasets", "replicasets/scale",
                "replicasets/status"}),
          rule(kRead, {"autoscaling"},
               {"horizontalpodautoscalers", "horizontalpodautoscalers/status"}),
          rule(kRead, {"batch"}, {"jobs", "cronjobs", "cronjobs/status", "jobs/status"}),
          rule(kRead, {"extensions"},
               {"daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                "deployments/status", "ingresses", "ingresses/status", "replicasets",
                "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
                "networkpolicies"}),
          rule(kRead, {"policy"}, {"poddisruptionbudgets", "poddisruptionbudgets/status"}),
          rule(kRead, {"networking.k8s.io"}, {"ingresses", "ingresses/status", "networkpolicies"}),
      }),
      toView));
  out.push_back(clusterRole(
      "system:basic-user",
      json::array({rule({"create"}, {"authorization.k8s.io"},
                        {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}),
                   rule({"create"}, {"authentication.k8s.io"}, {"selfsubjectreviews"})})));
  out.push_back(clusterRole(
      "system:discovery",
      json::array({urlRule({"get"}, {"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                                     "/openapi", "/openapi/*", "/readyz", "/version",
                                     "/version/"})})));
  out.push_back(clusterRole(
      "system:public-info-viewer",
      json::array({urlRule({"get"}, {"/healthz", "/livez", "/readyz", "/version", "/version/"})})));
  out.push_back(clusterRole(
      "system:monitoring",
      json::array({urlRule({"get"}, {"/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics",
                                     "/metrics/slis", "/readyz", "/readyz/*"})})));
  out.push_back(clusterRole(
      "system:service-account-issuer-discovery",
      json::array({urlRule({"get"}, {"/.well-known/openid-configuration",
                                     "/.well-known/openid-configuration/", "/openid/v1/jwks",
                                     "/openid/v1/jwks/"})})));
  out.push_back(clusterRole(
      "system:auth-delegator",
      json::array({rule({"create"}, {"authentication.k8s.io"}, {"tokenreviews"}),
                   rule({"create"}, {"authorization.k8s.io"}, {"subjectaccessreviews"})})));
  out.push_back(clusterRole(
      "system:heapster",
      json::array({rule(kRead, {""}, {"events", "pods", "nodes", "namespaces"}),
                   rule(kRead, {"extensions"}, {"deployments"})})));
  out.push_back(clusterRole(
      "system:kube-aggregator", json::array({rule(kRead, {""}, {"services", "endpoints"})})));
  out.push_back(clusterRole(
      "system:kube-dns", json::array({rule({"list", "watch"}, {""}, {"endpoints", "services"})})));
  out.push_back(clusterRole(
      "system:kubelet-api-admin",
      json::array({rule(kRead, {""}, {"nodes"}), rule({"proxy"}, {""}, {"nodes"}),
                   rule({"*"}, {""},
                        {"nodes/proxy", "nodes/metrics", "nodes/spec", "nodes/stats",
                         "nodes/log"})})));
  out.push_back(clusterRole(
      "system:node-bootstrapper",
      json::array({rule({"create", "get", "list", "watch"}, {"certificates.k8s.io"},
                        {"certificatesigningrequests"})})));
  out.push_back(clusterRole(
      "system:node-problem-detector",
      json::array({rule({"get"}, {""}, {"nodes"}), rule({"patch"}, {""}, {"nodes/status"}),
                   eventsRule()})));
  out.push_back(clusterRole(
      "system:node-proxier",
      json::array({rule({"list", "watch"}, {""}, {"services", "endpoints"}),
                   rule(kRead, {""}, {"nodes"}), eventsRule(),
                   rule({"list", "watch"}, {"discovery.k8s.io"}, {"endpointslices"})})));
  out.push_back(clusterRole(
      "system:persistent-volume-provisioner",
      json::array({rule({"get", "list", "watch", "create", "delete"}, {""}, {"persistentvolumes"}),
                   rule({"get", "list", "watch", "update"}, {""}, {"persistentvolumeclaims"}),
                   rule(kRead, {"storage.k8s.io"}, {"storageclasses"}),
                   rule({"watch"}, {""}, {"events"}), eventsRule()})));
  out.push_back(clusterRole(
      "system:volume-scheduler",
      json::array({rule({"get", "list", "watch", "update", "patch"}, {""}, {"persistentvolumes"}),
                   rule(kRead, {"storage.k8s.io"}, {"storageclasses"}),
                   rule({"get", "list", "watch", "update", "patch"}, {""},
                        {"persistentvolumeclaims"})})));
  out.push_back(clusterRole(
      "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
      json::array({rule({"create"}, {"certificates.k8s.io"},
                        {"certificatesigningrequests/nodeclient"})})));
  out.push_back(clusterRole(
      "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
      json::array({rule({"create"}, {"certificates.k8s.io"},
                        {"certificatesigningrequests/selfnodeclient"})})));
  return out;
}

std::vector<json> defaultClusterRoleBindings() {
  return {groupBinding("cluster-admin", {"system:masters"}),
          groupBinding("system:basic-user", {"system:authenticated"}),
          groupBinding("system:discovery", {"system:authenticated"}),
          groupBinding("system:public-info-viewer",
                       {"system:authenticated", "system:unauthenticated"}),
          groupBinding("system:monitoring", {"system:monitoring"}),
          groupBinding("system:service-account-issuer-discovery", {"system:serviceaccounts"}),
          bindingTo("system:kube-dns", json::array({{{"kind", "ServiceAccount"},
                                                     {"name", "kube-dns"},
                                                     {"namespace", "kube-system"}}})),
          bindingTo("system:node-proxier", json::array({userSubject("system:kube-proxy")})),
          bindingTo("system:volume-scheduler",
                    json::array({userSubject("system:kube-scheduler")}))};
}

kube::Status bootstrapRbacPolicy(Rest& rest, const Registry& registry) {
  auto roles = registry.find(kRbacGroup, "v1", "clusterroles");
  auto bindings = registry.find(kRbacGroup, "v1", "clusterrolebindings");
  if (!roles || !bindings) return kube::Status::OK();
  auto ensure = [&](const ResourceInfo& info, const std::vector<json>& objs) -> kube::Status {
    for (const auto& obj : objs) {
      const std::string name = obj["metadata"]["name"];
      if (rest.get(info, "", name)) continue;
      auto r = rest.create(info, "", obj, WriteOptions{}, nullptr);
      if (!r && r.error().code != kube::Code::AlreadyExists) return r.error();
    }
    return kube::Status::OK();
  };
  if (auto s = ensure(*roles, defaultClusterRoles()); !s) return s;
  return ensure(*bindings, defaultClusterRoleBindings());
}

}  // namespace strait::minicluster
