// The built-in resource table of the minicluster: what upstream Kubernetes 1.32 discovery
// reports for the resources the minicluster serves (names, kinds, scope, short names,
// categories, verbs, subresources), and the field-selector fields of each built-in kind.
//
// Everything here is immutable data or a pure function; Registry (registry.cpp) owns the
// table and the locking.

#include <map>
#include <string>
#include <vector>

#include "minicluster/registry_internal.h"

namespace strait::minicluster::detail {


namespace {

using Strings = std::vector<std::string>;

const Strings kAllVerbs = {"create", "delete", "deletecollection", "get",
                           "list",   "patch",  "update",           "watch"};
// Namespaces have no deletecollection upstream.
const Strings kNamespaceVerbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
const Strings kCreateOnly = {"create"};
const Strings kStatusVerbs = {"get", "patch", "update"};

ResourceInfo make(std::string group, std::string resource, std::string kind, std::string singular,
                  bool namespaced, Strings shortNames, Strings categories, Strings verbs,
                  Strings subresources) {
  ResourceInfo r;
  r.group = std::move(group);
  r.version = "v1";
  r.resource = std::move(resource);
  r.kind = std::move(kind);
  r.listKind = r.kind + "List";
  r.singular = std::move(singular);
  r.namespaced = namespaced;
  r.shortNames = std::move(shortNames);
  r.categories = std::move(categories);
  r.verbs = std::move(verbs);
  r.subresources = std::move(subresources);
  return r;
}

constexpr bool kNamespaced = true;
constexpr bool kCluster = false;

}  // namespace

std::vector<ResourceInfo> builtinResources() {
  // Order: core first, then groups in upstream's /apis order; resources alphabetical within
  // a group version, as upstream's APIResourceList is.
  return {
      // core/v1
      make("", "bindings", "Binding", "binding", kNamespaced, {}, {}, kCreateOnly, {}),
      make("", "configmaps", "ConfigMap", "configmap", kNamespaced, {"cm"}, {}, kAllVerbs, {}),
      make("", "endpoints", "Endpoints", "endpoints", kNamespaced, {"ep"}, {}, kAllVerbs, {}),
      make("", "events", "Event", "event", kNamespaced, {"ev"}, {}, kAllVerbs, {}),
      make("", "namespaces", "Namespace", "namespace", kCluster, {"ns"}, {}, kNamespaceVerbs,
           {"status"}),
      make("", "nodes", "Node", "node", kCluster, {"no"}, {}, kAllVerbs, {"status"}),
      make("", "pods", "Pod", "pod", kNamespaced, {"po"}, {"all"}, kAllVerbs,
           {"attach", "binding", "eviction", "exec", "log", "portforward", "status"}),
      make("", "secrets", "Secret", "secret", kNamespaced, {}, {}, kAllVerbs, {}),
      make("", "serviceaccounts", "ServiceAccount", "serviceaccount", kNamespaced, {"sa"}, {},
           kAllVerbs, {"token"}),
      make("", "services", "Service", "service", kNamespaced, {"svc"}, {"all"}, kAllVerbs,
           {"status"}),
      // apps/v1
      make("apps", "daemonsets", "DaemonSet", "daemonset", kNamespaced, {"ds"}, {"all"},
           kAllVerbs, {"status"}),
      make("apps", "deployments", "Deployment", "deployment", kNamespaced, {"deploy"}, {"all"},
           kAllVerbs, {"scale", "status"}),
      make("apps", "replicasets", "ReplicaSet", "replicaset", kNamespaced, {"rs"}, {"all"},
           kAllVerbs, {"scale", "status"}),
      // authentication.k8s.io/v1
      make("authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview",
           "selfsubjectreview", kCluster, {}, {}, kCreateOnly, {}),
      // authorization.k8s.io/v1
      make("authorization.k8s.io", "localsubjectaccessreviews", "LocalSubjectAccessReview",
           "localsubjectaccessreview", kNamespaced, {}, {}, kCreateOnly, {}),
      make("authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview",
           "selfsubjectaccessreview", kCluster, {}, {}, kCreateOnly, {}),
      make("authorization.k8s.io", "selfsubjectrulesreviews", "SelfSubjectRulesReview",
           "selfsubjectrulesreview", kCluster, {}, {}, kCreateOnly, {}),
      make("authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview",
           "subjectaccessreview", kCluster, {}, {}, kCreateOnly, {}),
      // certificates.k8s.io/v1
      make("certificates.k8s.io", "certificatesigningrequests", "CertificateSigningRequest",
           "certificatesigningrequest", kCluster, {"csr"}, {}, kAllVerbs, {"approval", "status"}),
      // rbac.authorization.k8s.io/v1
      make("rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding",
           "clusterrolebinding", kCluster, {}, {}, kAllVerbs, {}),
      make("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", "clusterrole", kCluster, {},
           {}, kAllVerbs, {}),
      make("rbac.authorization.k8s.io", "rolebindings", "RoleBinding", "rolebinding", kNamespaced,
           {}, {}, kAllVerbs, {}),
      make("rbac.authorization.k8s.io", "roles", "Role", "role", kNamespaced, {}, {}, kAllVerbs,
           {}),
      // admissionregistration.k8s.io/v1
      make("admissionregistration.k8s.io", "mutatingwebhookconfigurations",
           "MutatingWebhookConfiguration", "mutatingwebhookconfiguration", kCluster, {},
           {"api-extensions"}, kAllVerbs, {}),
      make("admissionregistration.k8s.io", "validatingwebhookconfigurations",
           "ValidatingWebhookConfiguration", "validatingwebhookconfiguration", kCluster, {},
           {"api-extensions"}, kAllVerbs, {}),
      // apiextensions.k8s.io/v1
      make("apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition",
           "customresourcedefinition", kCluster, {"crd", "crds"}, {"api-extensions"}, kAllVerbs,
           {"status"}),
      // coordination.k8s.io/v1
      make("coordination.k8s.io", "leases", "Lease", "lease", kNamespaced, {}, {}, kAllVerbs, {}),
      // discovery.k8s.io/v1
      make("discovery.k8s.io", "endpointslices", "EndpointSlice", "endpointslice", kNamespaced, {},
           {}, kAllVerbs, {}),
  };
}

SubresourceShape subresourceShape(const ResourceInfo& info, const std::string& sub) {
  if (sub == "status" || sub == "approval" || sub == "ephemeralcontainers") {
    return {info.group, info.version, info.kind, kStatusVerbs};
  }
  if (sub == "scale") return {"autoscaling", "v1", "Scale", kStatusVerbs};
  if (sub == "binding") return {"", "v1", "Binding", kCreateOnly};
  if (sub == "eviction") return {"policy", "v1", "Eviction", kCreateOnly};
  if (sub == "token") return {"authentication.k8s.io", "v1", "TokenRequest", kCreateOnly};
  if (sub == "exec") return {"", "v1", "PodExecOptions", {"create", "get"}};
  if (sub == "attach") return {"", "v1", "PodAttachOptions", {"create", "get"}};
  if (sub == "portforward") return {"", "v1", "PodPortForwardOptions", {"create", "get"}};
  if (sub == "log") return {"", "v1", "Pod", {"get"}};
  if (sub == "proxy") {
    return {"", "v1", info.kind + "ProxyOptions", {"create", "delete", "get", "patch", "update"}};
  }
  if (sub == "finalize") return {info.group, info.version, info.kind, {"update"}};
  if (sub == "token") return {"authentication.k8s.io", "v1", "TokenRequest", kCreateOnly};
  return {info.group, info.version, info.kind, {"get"}};
}

// --- Field selectors (upstream pkg/registry/<group>/<kind>/strategy.go GetAttrs). ---

namespace {

struct FieldSpec {
  const char* resource;  // groupResource()
  Strings fields;
};

const std::vector<FieldSpec>& fieldTable() {
  static const std::vector<FieldSpec> table = {
      {"pods",
       {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"}},
      {"events",
       {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"}},
      {"secrets", {"type"}},
      {"nodes", {"spec.unschedulable"}},
      {"namespaces", {"status.phase"}},
      {"services", {"spec.clusterIP", "spec.type"}},
      {"replicasets.apps", {"status.replicas"}},
      {"certificatesigningrequests.certificates.k8s.io", {"spec.signerName"}},
  };
  return table;
}

const Strings* kindFields(const ResourceInfo& info) {
  const std::string gr = info.groupResource();
  for (const auto& spec : fieldTable()) {
    if (gr == spec.resource) return &spec.fields;
  }
  return nullptr;
}

}  // namespace

std::string selectableValue(const json& obj, const std::string& dottedPath) {
  const json* cur = &obj;
  size_t start = 0;
  while (start <= dottedPath.size()) {
    size_t dot = dottedPath.find('.', start);
    std::string part =
        dottedPath.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object()) return "";
    auto it = cur->find(part);
    if (it == cur->end()) return "";
    cur = &*it;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_boolean()) return cur->get<bool>() ? "true" : "false";
  if (cur->is_number()) return cur->dump();
  return "";
}

std::vector<std::string> builtinSelectableFields(const ResourceInfo& info) {
  Strings out = {"metadata.name", "metadata.namespace"};
  if (const Strings* extra = kindFields(info)) out.insert(out.end(), extra->begin(), extra->end());
  return out;
}

std::map<std::string, std::string> builtinFieldValues(const ResourceInfo& info, const json& obj) {
  std::map<std::string, std::string> out;
  out["metadata.name"] = selectableValue(obj, "metadata.name");
  out["metadata.namespace"] = info.namespaced ? selectableValue(obj, "metadata.namespace") : "";
  const Strings* extra = kindFields(info);
  if (extra == nullptr) return out;
  for (const auto& f : *extra) out[f] = selectableValue(obj, f);

  const std::string gr = info.groupResource();
  // Defaults of the typed objects upstream reads these from.
  if (gr == "pods" && out["spec.hostNetwork"].empty()) out["spec.hostNetwork"] = "false";
  if (gr == "nodes" && out["spec.unschedulable"].empty()) out["spec.unschedulable"] = "false";
  if (gr == "replicasets.apps" && out["status.replicas"].empty()) out["status.replicas"] = "0";
  if (gr == "events") {
    // source is Source.Component, falling back to ReportingController.
    out["source"] = selectableValue(obj, "source.component");
    out["reportingComponent"] = selectableValue(obj, "reportingController");
    if (out["source"].empty()) out["source"] = out["reportingComponent"];
  }
  return out;
}

}  // namespace strait::minicluster::detail
