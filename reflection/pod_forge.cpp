#include "reflection/pod_forge.h"

#include <string_view>

#include "kube/json_access.h"
#include "kube/object.h"
#include "reflection/labels.h"

namespace strait::reflection {

using nlohmann::json;

namespace {

kube::Error invalid(const std::string& what, const std::string& field) {
  return kube::makeError(kube::Code::Invalid, "cannot forge remote pod: " + what, field);
}

using kube::hasArray;
using kube::hasObject;
using kube::stringOf;

// Metadata of the remote Pod: copied labels/annotations plus origin markers.
json forgeMetadata(const json& local, const PodForgeContext& ctx) {
  json meta = json::object();
  meta["name"] = kube::getName(local);
  meta["namespace"] = ctx.remoteNamespace;
  json labels = json::object();
  for (const auto& [k, v] : kube::getLabels(local)) labels[k] = v;
  labels[std::string(kLabelOriginClusterId)] = ctx.consumerId;
  labels[std::string(kLabelOriginUid)] = kube::getUid(local);
  labels[std::string(kLabelManagedBy)] = std::string(kManagedByValue);
  meta["labels"] = std::move(labels);
  json annotations = json::object();
  for (const auto& [k, v] : kube::getAnnotations(local)) annotations[k] = v;
  annotations[std::string(kAnnotationOriginNamespace)] = kube::getNamespace(local);
  annotations[std::string(kAnnotationOriginName)] = kube::getName(local);
  meta["annotations"] = std::move(annotations);
  return meta;
}

// Removes expressions on the virtual node's own label keys from a NodeSelectorTerm.
// Returns true when the term is left empty (it selected only the virtual node).
bool stripTerm(json& term, const std::set<std::string>& nodeLabelKeys) {
  bool had = false;
  if (hasArray(term, "matchExpressions")) {
    json kept = json::array();
    for (const json& e : term["matchExpressions"]) {
      had = true;
      if (nodeLabelKeys.count(stringOf(e, "key"))) {
        continue;
      }
      kept.push_back(e);
    }
    if (kept.empty()) {
      term.erase("matchExpressions");
    } else {
      term["matchExpressions"] = std::move(kept);
    }
  }
  if (hasArray(term, "matchFields")) {
    json kept = json::array();
    for (const json& f : term["matchFields"]) {
      had = true;
      // The only field a node selector term may use is metadata.name: the virtual node's.
      if (f.is_object() && stringOf(f, "key") == "metadata.name") continue;
      kept.push_back(f);
    }
    if (kept.empty()) {
      term.erase("matchFields");
    } else {
      term["matchFields"] = std::move(kept);
    }
  }
  return had && !hasArray(term, "matchExpressions") && !hasArray(term, "matchFields");
}

void stripNodeAffinity(json& spec, const std::set<std::string>& nodeLabelKeys) {
  if (!hasObject(spec, "affinity") || !hasObject(spec["affinity"], "nodeAffinity")) return;
  json& na = spec["affinity"]["nodeAffinity"];
  const char* kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
  if (hasObject(na, kRequired) && hasArray(na[kRequired], "nodeSelectorTerms")) {
    bool anyTermSelectedOnlyVnode = false;
    for (json& term : na[kRequired]["nodeSelectorTerms"]) {
      if (term.is_object() && stripTerm(term, nodeLabelKeys)) anyTermSelectedOnlyVnode = true;
    }
    // Terms are ORed: one satisfied by the virtual node alone satisfies the requirement.
    if (anyTermSelectedOnlyVnode) na.erase(kRequired);
  }
  const char* kPreferred = "preferredDuringSchedulingIgnoredDuringExecution";
  if (hasArray(na, kPreferred)) {
    json kept = json::array();
    for (json p : na[kPreferred]) {
      if (p.is_object() && hasObject(p, "preference") &&
          stripTerm(p["preference"], nodeLabelKeys)) {
        continue;
      }
      kept.push_back(std::move(p));
    }
    if (kept.empty()) {
      na.erase(kPreferred);
    } else {
      na[kPreferred] = std::move(kept);
    }
  }
  if (na.empty()) spec["affinity"].erase("nodeAffinity");
  if (spec["affinity"].empty()) spec.erase("affinity");
}

// Maps `namespaces` lists of pod (anti-)affinity terms through the namespace mapping. The
// mapping of one namespace is given by the caller's context only for the Pod's own
// namespace; other namespaces keep their names (they are not offloaded by this Pod).
void mapAffinityNamespaces(json& spec, const std::string& localNs, const std::string& remoteNs) {
  if (!hasObject(spec, "affinity")) return;
  for (const char* kind : {"podAffinity", "podAntiAffinity"}) {
    if (!hasObject(spec["affinity"], kind)) continue;
    json& a = spec["affinity"][kind];
    auto mapTerm = [&](json& term) {
      if (!term.is_object() || !hasArray(term, "namespaces")) return;
      for (json& n : term["namespaces"]) {
        if (n.is_string() && n.get<std::string>() == localNs) n = remoteNs;
      }
    };
    if (hasArray(a, "requiredDuringSchedulingIgnoredDuringExecution")) {
      for (json& t : a["requiredDuringSchedulingIgnoredDuringExecution"]) mapTerm(t);
    }
    if (hasArray(a, "preferredDuringSchedulingIgnoredDuringExecution")) {
      for (json& w : a["preferredDuringSchedulingIgnoredDuringExecution"]) {
        if (hasObject(w, "podAffinityTerm")) mapTerm(w["podAffinityTerm"]);
      }
    }
  }
}

bool isTokenVolume(const json& v) {
  if (!v.is_object() || !hasObject(v, "projected") || !hasArray(v["projected"], "sources")) {
    return false;
  }
  for (const json& s : v["projected"]["sources"]) {
    if (hasObject(s, "serviceAccountToken")) return true;
  }
  return false;
}

void removeMounts(json& spec, const std::set<std::string>& volumes) {
  for (const char* list : {"containers", "initContainers"}) {
    if (!hasArray(spec, list)) continue;
    for (json& c : spec[list]) {
      if (!hasArray(c, "volumeMounts")) continue;
      json kept = json::array();
      for (const json& m : c["volumeMounts"]) {
        if (m.is_object() && volumes.count(stringOf(m, "name"))) continue;
        kept.push_back(m);
      }
      if (kept.empty()) {
        c.erase("volumeMounts");
      } else {
        c["volumeMounts"] = std::move(kept);
      }
    }
  }
}

void handleServiceAccountToken(json& spec, const PodForgeContext& ctx) {
  if (!hasArray(spec, "volumes")) return;
  std::set<std::string> removed;
  json kept = json::array();
  for (json v : spec["volumes"]) {
    if (!isTokenVolume(v)) {
      kept.push_back(std::move(v));
      continue;
    }
    if (ctx.serviceAccountTokenSecret.empty()) {
      removed.insert(stringOf(v, "name"));
      continue;
    }
    for (json& s : v["projected"]["sources"]) {
      if (!hasObject(s, "serviceAccountToken")) continue;
      std::string path = stringOf(s["serviceAccountToken"], "path");
      if (path.empty()) path = "token";
      s = json{{"secret",
                {{"name", ctx.serviceAccountTokenSecret},
                 {"items", json::array({{{"key", "token"}, {"path", path}}})}}}};
    }
    kept.push_back(std::move(v));
  }
  if (kept.empty()) {
    spec.erase("volumes");
  } else {
    spec["volumes"] = std::move(kept);
  }
  removeMounts(spec, removed);
}

// Resolves downward-API env fields whose remote value would be wrong.
void resolveDownwardEnv(json& spec, const json& local, const PodForgeContext& ctx) {
  for (const char* list : {"containers", "initContainers"}) {
    if (!hasArray(spec, list)) continue;
    for (json& c : spec[list]) {
      if (!hasArray(c, "env")) continue;
      for (json& e : c["env"]) {
        if (!hasObject(e, "valueFrom") || !hasObject(e["valueFrom"], "fieldRef")) continue;
        const json& ref = e["valueFrom"]["fieldRef"];
        std::string path = stringOf(ref, "fieldPath");
        std::optional<std::string> value;
        if (path == "metadata.name") value = kube::getName(local);
        if (path == "metadata.namespace") value = kube::getNamespace(local);
        if (path == "metadata.uid") value = kube::getUid(local);
        if (path == "spec.nodeName") value = ctx.virtualNodeName;
        if (path == "status.hostIP" || path == "status.hostIPs") value = ctx.virtualNodeAddress;
        if (!value) continue;  // left to the provider's kubelet (status.podIP among them)
        e.erase("valueFrom");
        e["value"] = *value;
      }
    }
  }
}

kube::Status checkLocal(const json& local) {
  if (!local.is_object()) return invalid("the pod is not a JSON object", "");
  if (kube::getName(local).empty()) return invalid("metadata.name is missing", "metadata.name");
  if (kube::getNamespace(local).empty()) {
    return invalid("metadata.namespace is missing", "metadata.namespace");
  }
  if (kube::getUid(local).empty()) return invalid("metadata.uid is missing", "metadata.uid");
  if (!hasObject(local, "spec")) return invalid("spec is missing or not an object", "spec");
  if (!hasArray(local["spec"], "containers") || local["spec"]["containers"].empty()) {
    return invalid("spec.containers is missing or empty", "spec.containers");
  }
  for (const json& c : local["spec"]["containers"]) {
    if (!c.is_object()) return invalid("a container is not an object", "spec.containers");
  }
  return kube::Status::OK();
}

}  // namespace

bool isDaemonSetPod(const json& pod) {
  std::optional<json> owner = kube::getControllerOf(pod);
  return owner && owner->is_object() && stringOf(*owner, "kind") == "DaemonSet";
}

std::set<std::string> virtualNodeOwnLabelKeys() {
  return {"type", std::string(peering::kLabelRemoteCluster), "kubernetes.io/hostname",
          "kubernetes.io/role"};
}

void stripSchedulingFields(json& spec, const std::set<std::string>& nodeLabelKeys) {
  if (!spec.is_object()) return;
  for (const char* field :
       {"nodeName", "schedulerName", "schedulingGates", "priority", "priorityClassName",
        "preemptionPolicy", "overhead", "readinessGates", "ephemeralContainers"}) {
    spec.erase(field);
  }
  if (hasObject(spec, "nodeSelector")) {
    json kept = json::object();
    for (auto& [k, v] : spec["nodeSelector"].items()) {
      if (!nodeLabelKeys.count(k)) kept[k] = v;
    }
    if (kept.empty()) {
      spec.erase("nodeSelector");
    } else {
      spec["nodeSelector"] = std::move(kept);
    }
  }
  stripNodeAffinity(spec, nodeLabelKeys);
  if (hasArray(spec, "tolerations")) {
    json kept = json::array();
    for (const json& t : spec["tolerations"]) {
      if (t.is_object() && stringOf(t, "key") == kVirtualNodeTaintKey) continue;
      kept.push_back(t);
    }
    if (kept.empty()) {
      spec.erase("tolerations");
    } else {
      spec["tolerations"] = std::move(kept);
    }
  }
}

kube::Result<json> forgeRemotePod(const json& local, const PodForgeContext& ctx) {
  if (kube::Status s = checkLocal(local); !s.ok()) return s.error();
  if (isDaemonSetPod(local)) {
    return kube::makeError(kube::Code::Forbidden,
                           "pod " + kube::getNamespace(local) + "/" + kube::getName(local) +
                               " belongs to a DaemonSet: DaemonSet pods are not offloaded to "
                               "virtual nodes",
                           "metadata.ownerReferences");
  }
  const std::string boundTo = kube::stringOf(local["spec"], "nodeName");
  std::optional<peering::PoolSpec> pool;
  if (ctx.poolOfNode && !boundTo.empty() && boundTo != ctx.virtualNodeName) {
    pool = ctx.poolOfNode(boundTo);
  }
  json spec = local["spec"];
  stripSchedulingFields(spec, ctx.virtualNodeLabelKeys);
  mapAffinityNamespaces(spec, kube::getNamespace(local), ctx.remoteNamespace);
  handleServiceAccountToken(spec, ctx);
  if (pool) {
    PodForgeContext onPool = ctx;
    onPool.virtualNodeName = boundTo;  // the downward spec.nodeName
    resolveDownwardEnv(spec, local, onPool);
  } else {
    resolveDownwardEnv(spec, local, ctx);
  }

  json remote = json::object();
  remote["apiVersion"] = "v1";
  remote["kind"] = "Pod";
  remote["metadata"] = forgeMetadata(local, ctx);
  remote["spec"] = std::move(spec);
  for (const std::shared_ptr<const PodOverride>& o : ctx.overrides) {
    if (kube::Status st = applyPodOverride(remote, *o); !st.ok()) return st.error();
  }
  if (pool) {
    if (kube::Status st = peering::pinPodToPool(remote, *pool); !st.ok()) return st.error();
  }
  return remote;
}

json mutablePodFields(const json& pod) {
  json out = json::object();
  if (!pod.is_object()) return out;
  json labels = json::object();
  for (const auto& [k, v] : kube::getLabels(pod)) labels[k] = v;
  json annotations = json::object();
  for (const auto& [k, v] : kube::getAnnotations(pod)) annotations[k] = v;
  out["labels"] = std::move(labels);
  out["annotations"] = std::move(annotations);
  if (!hasObject(pod, "spec")) return out;
  const json& spec = pod["spec"];
  for (const char* list : {"containers", "initContainers"}) {
    json images = json::object();
    if (hasArray(spec, list)) {
      for (const json& c : spec[list]) {
        if (c.is_object()) images[stringOf(c, "name")] = stringOf(c, "image");
      }
    }
    out[list] = std::move(images);
  }
  out["activeDeadlineSeconds"] = spec.value("activeDeadlineSeconds", json());
  out["tolerations"] = spec.value("tolerations", json::array());
  return out;
}

}  // namespace strait::reflection
