#include "reflection/provider_applier.h"

#include <spdlog/spdlog.h>

#include "kube/json_access.h"
#include "kube/object.h"
#include "reflection/labels.h"
#include "reflection/pod_dependencies.h"
#include "reflection/pod_forge.h"
#include "reflection/service_forge.h"

namespace strait::reflection {

using nlohmann::json;
namespace res = kube::resources;

namespace {

// Who an object that is not this consumer's belongs to, for a Conflict message.
std::string describeOwner(const json& obj) {
  auto labels = kube::getLabels(obj);
  auto origin = labels.find(std::string(kLabelOriginClusterId));
  if (origin != labels.end()) return "reflected from consumer " + origin->second;
  auto sliceManager = labels.find("endpointslice.kubernetes.io/managed-by");
  if (sliceManager != labels.end()) return "managed by " + sliceManager->second;
  if (kube::hasObject(obj, "metadata") && kube::hasArray(obj["metadata"], "managedFields") &&
      !obj["metadata"]["managedFields"].empty()) {
    const std::string manager = kube::stringOf(obj["metadata"]["managedFields"][0], "manager");
    if (!manager.empty()) return "created by " + manager + ", not by Strait";
  }
  return "not created by Strait";
}

kube::Error notOursError(const std::string& kind, const std::string& ns, const std::string& name,
                         const json& current) {
  return kube::makeError(kube::Code::Conflict, kind + " " + ns + "/" + name +
                                                   " exists in the provider and is not "
                                                   "reflected from this consumer (" +
                                                   describeOwner(current) + ")");
}

// The parts of an existing Service the provider allocated, kept in `next` where its type
// still has them.
void keepAllocatedServiceFields(const json& current, json& next) {
  if (!kube::hasObject(current, "spec") || !kube::hasObject(next, "spec")) return;
  const json& cur = current["spec"];
  json& spec = next["spec"];
  const std::string type = kube::stringOf(spec, "type", "ClusterIP");
  if (type != "ExternalName" && !spec.contains("clusterIP")) {
    for (const char* k : {"clusterIP", "clusterIPs"}) {
      if (cur.contains(k)) spec[k] = cur[k];
    }
  }
  if ((type == "NodePort" || type == "LoadBalancer") && kube::hasArray(spec, "ports") &&
      kube::hasArray(cur, "ports")) {
    for (json& p : spec["ports"]) {
      if (!p.is_object() || p.contains("nodePort")) continue;
      for (const json& c : cur["ports"]) {
        if (c.is_object() && c.value("port", json()) == p.value("port", json()) &&
            kube::stringOf(c, "protocol", "TCP") == kube::stringOf(p, "protocol", "TCP") &&
            c.contains("nodePort")) {
          p["nodePort"] = c["nodePort"];
        }
      }
    }
  }
  if (type == "LoadBalancer" && kube::stringOf(spec, "externalTrafficPolicy") == "Local" &&
      cur.contains("healthCheckNodePort")) {
    spec["healthCheckNodePort"] = cur["healthCheckNodePort"];
  }
  if (current.contains("status")) next["status"] = current["status"];
}

}  // namespace

kube::Result<json> sanitizeProviderPod(const json& pod, kube::PodSecurityLevel level) {
  json out = pod;
  if (out.is_object() && kube::hasObject(out, "spec")) {
    stripSchedulingFields(out["spec"], virtualNodeOwnLabelKeys());
  }
  std::vector<kube::PodSecurityViolation> v = kube::checkPodSecurity(level, out);
  if (!v.empty()) {
    kube::Error e = kube::makeError(kube::Code::Forbidden,
                                    "pods \"" + kube::getName(out) + "\" is forbidden: " +
                                        kube::formatPodSecurityViolations(level, "latest", v));
    e.kind = "pods";
    e.name = kube::getName(out);
    return e;
  }
  return out;
}

bool isProviderReservedNamespace(std::string_view ns) {
  return ns == "default" || ns == "strait-system" || ns.rfind("kube-", 0) == 0 ||
         ns.rfind("strait-tenant-", 0) == 0;
}

json podSecurityNamespaceLabels(kube::PodSecurityLevel level) {
  return {{std::string(kube::kPodSecurityEnforceLabel), std::string(kube::podSecurityLevelName(level))},
          {std::string(kube::kPodSecurityEnforceVersionLabel), "latest"}};
}

ProviderApplier::ProviderApplier(kube::Client& provider, NamespaceMapping mapping,
                                 kube::PodSecurityLevel podSecurity, json namespaceLabels,
                                 EndpointAddressTranslator translateAddress,
                                 std::function<bool()> endpointsHeld)
    : provider_(provider),
      mapping_(std::move(mapping)),
      podSecurity_(podSecurity),
      translateAddress_(std::move(translateAddress)),
      endpointsHeld_(std::move(endpointsHeld)),
      namespaceLabels_(std::move(namespaceLabels)) {}

kube::Status ProviderApplier::ensureNamespace(const std::string& ns) {
  {
    base::MutexLock lock(mu_);
    if (namespaces_.count(ns)) return kube::Status::OK();
  }
  auto remember = [&] {
    base::MutexLock lock(mu_);
    namespaces_.insert(ns);
    return kube::Status::OK();
  };
  kube::Result<json> got = provider_.get(res::kNamespaces, "", ns);
  if (got.ok()) {
    if (kube::Status st = namespaceRefusal(*got); !st.ok()) return st;
    // Created under another level (the agent's --pod-security changed): the provider's
    // admission must agree with the level checked here.
    const json want = podSecurityNamespaceLabels(podSecurity_);
    auto labels = kube::getLabels(*got);
    for (const auto& [k, v] : want.items()) {
      auto it = labels.find(k);
      if (it != labels.end() && it->second == v.get<std::string>()) continue;
      kube::Result<json> patched =
          provider_.patch(res::kNamespaces, "", ns, kube::PatchType::Merge,
                          json{{"metadata", {{"labels", want}}}});
      if (!patched.ok()) return patched.error();
      spdlog::info("event=remote_namespace_relabelled namespace={} pod_security={}", ns,
                   kube::podSecurityLevelName(podSecurity_));
      break;
    }
    return remember();
  }
  if (!kube::isNotFound(got.error())) return got.error();
  json labels = podSecurityNamespaceLabels(podSecurity_);
  if (namespaceLabels_.is_object()) labels.update(namespaceLabels_);
  labels[std::string(kLabelManagedBy)] = std::string(kManagedByValue);
  labels[std::string(kLabelOriginClusterId)] = mapping_.consumerId();
  labels[std::string(kLabelOriginUid)] = "namespace";
  json nsObj = {{"apiVersion", "v1"},
                {"kind", "Namespace"},
                {"metadata", {{"name", ns}, {"labels", std::move(labels)}}}};
  kube::Result<json> created = provider_.create(res::kNamespaces, "", nsObj);
  if (created.ok()) {
    spdlog::info("event=remote_namespace_created namespace={}", ns);
    return remember();
  }
  if (!kube::isAlreadyExists(created.error())) return created.error();
  got = provider_.get(res::kNamespaces, "", ns);  // created meanwhile: by whom?
  if (!got.ok()) return got.error();
  if (kube::Status st = namespaceRefusal(*got); !st.ok()) return st;
  return remember();
}

kube::Status ProviderApplier::namespaceRefusal(const json& nsObj) const {
  if (isOwnedBy(nsObj, mapping_.consumerId())) return kube::Status::OK();
  const std::string ns = kube::getName(nsObj);
  auto labels = kube::getLabels(nsObj);
  auto other = labels.find(std::string(kLabelOriginClusterId));
  if (other != labels.end() && !other->second.empty()) {
    return kube::makeError(kube::Code::Forbidden,
                           "namespace " + ns + " in the provider is already mapped by another "
                           "consumer (cluster " + other->second + ")",
                           "metadata.namespace");
  }
  return kube::makeError(kube::Code::Forbidden,
                         "namespace " + ns + " exists in the provider and was not created by "
                         "Strait for consumer " + mapping_.consumerId() +
                         "; a namespace Strait did not create is never taken over (use the "
                         "default naming or another namespace)",
                         "metadata.namespace");
}

kube::Result<json> ProviderApplier::removeNamespace(const std::string& ns) {
  {
    base::MutexLock lock(mu_);
    namespaces_.erase(ns);
  }
  kube::Result<json> got = provider_.get(res::kNamespaces, "", ns);
  if (!got.ok()) {
    if (kube::isNotFound(got.error())) return json();
    return got;
  }
  if (kube::Status s = namespaceRefusal(*got); !s.ok()) return s.error();
  if (kube::isBeingDeleted(*got)) return json();
  kube::DeleteOptions o;
  o.preconditionUid = kube::getUid(*got);
  kube::Result<json> d = provider_.remove(res::kNamespaces, "", ns, o);
  if (!d.ok() && !kube::isNotFound(d.error())) return d;
  spdlog::info("event=remote_namespace_deleted namespace={} consumer={}", ns,
               mapping_.consumerId());
  return json();
}

kube::Result<json> ProviderApplier::get(const std::string& kind, const std::string& ns,
                                        const std::string& name) {
  auto r = resourceOfKind(kind);
  if (!r.ok()) return r.error();
  kube::Result<json> got = provider_.get(*r, ns, name);
  if (!got.ok()) return got;
  if (!isOwnedBy(*got, mapping_.consumerId())) return notOursError(kind, ns, name, *got);
  return got;
}

kube::Result<json> ProviderApplier::apply(const StreamMessage& m, bool likelyNew) {
  if (m.type != StreamMessageType::Apply) {
    return kube::makeError(kube::Code::BadRequest, "apply: not an APPLY message");
  }
  if (!mapping_.localNamespace(m.ns) || isProviderReservedNamespace(m.ns)) {
    return kube::makeError(kube::Code::Forbidden,
                           "namespace " + m.ns + " is not offloaded by consumer " +
                               mapping_.consumerId(),
                           "metadata.namespace");
  }
  auto r = resourceOfKind(m.kind);
  if (!r.ok()) return r.error();
  if (!isOwnedBy(m.object, mapping_.consumerId()) || originUid(m.object) != m.originUid) {
    return kube::makeError(kube::Code::BadRequest,
                           "apply: the object does not carry this consumer's origin labels");
  }
  // A Pod is re-validated here whatever the consumer's forge did.
  json sanitized;
  if (m.kind == "Pod") {
    kube::Result<json> pod = sanitizeProviderPod(m.object, podSecurity_);
    if (!pod.ok()) return pod.error();
    sanitized = std::move(*pod);
  }
  if (m.kind == "EndpointSlice") {
    // The addresses as this provider reaches the consumer's Pods.
    sanitized = m.object;
    if (translateAddress_ && kube::hasArray(sanitized, "endpoints")) {
      for (json& e : sanitized["endpoints"]) {
        if (!kube::hasArray(e, "addresses")) continue;
        for (json& a : e["addresses"]) {
          if (a.is_string()) a = translateAddress_(mapping_.consumerId(), a.get<std::string>());
        }
      }
    }
    // The consumer's tunnel is down: stored not ready, what it sent kept for the heal.
    if (endpointsHeld_ && endpointsHeld_()) sanitized = holdEndpointSlice(sanitized);
  }
  const json& object = m.kind == "Pod" || m.kind == "EndpointSlice" ? sanitized : m.object;
  if (kube::Status s = ensureNamespace(m.ns); !s.ok()) return s.error();

  auto create = [&]() {
    kube::Result<json> created = provider_.create(*r, m.ns, object);
    if (!created.ok() && !kube::isAlreadyExists(created.error())) {
      // The namespace may have gone (or be terminating) since it was checked: the next
      // apply checks it again; a missing one is created again right now, once.
      {
        base::MutexLock lock(mu_);
        namespaces_.erase(m.ns);
      }
      if (kube::isNotFound(created.error())) {
        if (kube::Status s = ensureNamespace(m.ns); !s.ok()) return kube::Result<json>(s.error());
        created = provider_.create(*r, m.ns, object);
      }
    }
    if (created.ok()) {
      spdlog::info("event=remote_created kind={} namespace={} name={} origin_uid={}", m.kind,
                   m.ns, m.name, m.originUid);
    }
    return created;
  };
  if (likelyNew) {
    kube::Result<json> created = create();
    if (created.ok() || !kube::isAlreadyExists(created.error())) return created;
  }
  kube::Result<json> current = provider_.get(*r, m.ns, m.name);
  if (!current.ok()) {
    if (!kube::isNotFound(current.error())) return current;
    return create();
  }
  if (!isOwnedBy(*current, mapping_.consumerId())) {
    return notOursError(m.kind, m.ns, m.name, *current);
  }
  if (originUid(*current) != m.originUid) {
    return kube::makeError(kube::Code::Conflict,
                           m.kind + " " + m.ns + "/" + m.name + " mirrors origin uid " +
                               originUid(*current) + ", not " + m.originUid +
                               "; delete it first");
  }
  json next = *current;
  if (m.kind == "Pod") {
    if (mutablePodFields(next) == mutablePodFields(object)) return current;
    next["metadata"]["labels"] = object["metadata"].value("labels", json::object());
    next["metadata"]["annotations"] = object["metadata"].value("annotations", json::object());
    const json spec = kube::hasObject(object, "spec") ? object["spec"] : json::object();
    for (const char* list : {"containers", "initContainers"}) {
      if (!kube::hasArray(next["spec"], list) || !kube::hasArray(spec, list)) continue;
      for (json& c : next["spec"][list]) {
        for (const json& w : spec[list]) {
          if (c.is_object() && kube::stringOf(w, "name") == kube::stringOf(c, "name")) {
            c["image"] = kube::stringOf(w, "image");
          }
        }
      }
    }
    if (spec.contains("activeDeadlineSeconds")) {
      next["spec"]["activeDeadlineSeconds"] = spec["activeDeadlineSeconds"];
    }
    if (spec.contains("tolerations")) next["spec"]["tolerations"] = spec["tolerations"];
  } else {
    json keepMeta = next["metadata"];
    next = object;
    keepMeta["labels"] = object["metadata"].value("labels", json::object());
    keepMeta["annotations"] = object["metadata"].value("annotations", json::object());
    next["metadata"] = std::move(keepMeta);
    if (m.kind == "Service") keepAllocatedServiceFields(*current, next);
    if (next == *current) return current;
  }
  return provider_.update(*r, m.ns, next);
}

kube::Result<json> ProviderApplier::remove(const StreamMessage& m) {
  if (m.type != StreamMessageType::Delete) {
    return kube::makeError(kube::Code::BadRequest, "remove: not a DELETE message");
  }
  if (!mapping_.localNamespace(m.ns)) {
    return kube::makeError(kube::Code::Forbidden, "namespace " + m.ns +
                                                      " is not offloaded by consumer " +
                                                      mapping_.consumerId());
  }
  auto r = resourceOfKind(m.kind);
  if (!r.ok()) return r.error();
  kube::Result<json> current = get(m.kind, m.ns, m.name);
  if (!current.ok()) {
    if (kube::isNotFound(current.error())) return json();
    return current;
  }
  if (originUid(*current) != m.originUid) return json();  // another incarnation: not ours to end
  kube::DeleteOptions o;
  o.gracePeriodSeconds = m.gracePeriodSeconds();
  o.preconditionUid = kube::getUid(*current);
  kube::Result<json> deleted = provider_.remove(*r, m.ns, m.name, o);
  if (!deleted.ok()) {
    if (kube::isNotFound(deleted.error())) return json();
    return deleted;
  }
  spdlog::info("event=remote_deleted kind={} namespace={} name={} origin_uid={} grace={}",
               m.kind, m.ns, m.name, m.originUid,
               o.gracePeriodSeconds ? std::to_string(*o.gracePeriodSeconds) : "default");
  if (deleted->is_object() && deleted->value("kind", json("")) == m.kind &&
      kube::isBeingDeleted(*deleted)) {
    return deleted;
  }
  return json();
}

kube::Result<int> ProviderApplier::deleteOrphans(const std::string& kind,
                                                 const std::set<std::string>& liveOrigins) {
  return deleteOrphans(kind, [&](const std::string& uid) { return liveOrigins.count(uid) > 0; });
}

kube::Result<int> ProviderApplier::deleteOrphans(
    const std::string& kind, const std::function<bool(const std::string&)>& isLive) {
  auto r = resourceOfKind(kind);
  if (!r.ok()) return r.error();
  kube::ListOptions lo;
  lo.labelSelector = std::string(kLabelOriginClusterId) + "=" + mapping_.consumerId();
  kube::Result<json> list = provider_.list(*r, "", lo);
  if (!list.ok()) return list.error();
  int deleted = 0;
  if (!list->contains("items") || !(*list)["items"].is_array()) return deleted;
  for (const json& item : (*list)["items"]) {
    if (!mapping_.localNamespace(kube::getNamespace(item))) continue;
    if (kube::isBeingDeleted(item) || isLive(originUid(item))) continue;
    kube::DeleteOptions o;
    o.preconditionUid = kube::getUid(item);
    kube::Result<json> d = provider_.remove(*r, kube::getNamespace(item), kube::getName(item), o);
    if (!d.ok() && !kube::isNotFound(d.error()) && !kube::isConflict(d.error())) return d.error();
    if (d.ok()) {
      ++deleted;
      spdlog::info("event=remote_orphan_deleted kind={} namespace={} name={} origin_uid={}", kind,
                   kube::getNamespace(item), kube::getName(item), originUid(item));
    }
  }
  return deleted;
}

kube::Result<int> ProviderApplier::rewriteEndpointSlices(
    const std::function<json(const json&, bool*)>& rewrite) {
  kube::ListOptions lo;
  lo.labelSelector = std::string(kLabelOriginClusterId) + "=" + mapping_.consumerId();
  kube::Result<json> list = provider_.list(res::kEndpointSlices, "", lo);
  if (!list.ok()) return list.error();
  int written = 0;
  for (json item : list->value("items", json::array())) {
    const std::string ns = kube::getNamespace(item);
    const std::string name = kube::getName(item);
    // A slice the consumer applied between the list and the write is read again (a few
    // times: the consumer writes a slice at most once per change).
    for (int attempt = 0; attempt < 5; ++attempt) {
      if (!mapping_.localNamespace(ns) || !isOwnedBy(item, mapping_.consumerId())) break;
      bool changed = false;
      json next = rewrite(item, &changed);
      if (!changed) break;
      kube::Result<json> r = provider_.update(res::kEndpointSlices, ns, next);
      if (r.ok()) {
        ++written;
        break;
      }
      if (kube::isNotFound(r.error())) break;
      if (!kube::isConflict(r.error())) return r.error();
      kube::Result<json> fresh = provider_.get(res::kEndpointSlices, ns, name);
      if (!fresh.ok()) {
        if (kube::isNotFound(fresh.error())) break;
        return fresh.error();
      }
      item = std::move(*fresh);
    }
  }
  return written;
}

kube::Result<int> ProviderApplier::markEndpointsNotReady() {
  return rewriteEndpointSlices(
      [](const json& slice, bool* changed) { return holdEndpointSlice(slice, changed); });
}

kube::Result<int> ProviderApplier::restoreEndpoints() {
  return rewriteEndpointSlices(
      [](const json& slice, bool* changed) { return releaseEndpointSlice(slice, changed); });
}

kube::Result<int> ProviderApplier::deleteOrphanDependencies(
    const std::set<std::string>& liveOrigins) {
  kube::ListOptions lo;
  lo.labelSelector = std::string(kLabelOriginClusterId) + "=" + mapping_.consumerId();
  // "ns/Kind/name" of what this consumer's remaining Pods use. A Pod being deleted whose
  // origin is gone (an orphan just swept) uses nothing any more.
  std::set<std::string> used;
  kube::Result<json> pods = provider_.list(res::kPods, "", lo);
  if (!pods.ok()) return pods.error();
  for (const json& p : pods->value("items", json::array())) {
    if (kube::isBeingDeleted(p) && !liveOrigins.count(originUid(p))) continue;
    const std::string ns = kube::getNamespace(p);
    PodDependencies deps = podDependencies(p);
    for (const std::string& n : deps.configMaps) used.insert(ns + "/ConfigMap/" + n);
    for (const std::string& n : deps.secrets) used.insert(ns + "/Secret/" + n);
    if (!deps.serviceAccount.empty()) used.insert(ns + "/ServiceAccount/" + deps.serviceAccount);
  }
  int deleted = 0;
  // ServiceAccounts first: the Secrets a used one names are in use too.
  for (const char* kind : {"ServiceAccount", "ConfigMap", "Secret"}) {
    auto r = resourceOfKind(kind);
    if (!r.ok()) return r.error();
    kube::Result<json> list = provider_.list(*r, "", lo);
    if (!list.ok()) return list.error();
    for (const json& item : list->value("items", json::array())) {
      const std::string ns = kube::getNamespace(item);
      const std::string key = ns + "/" + kind + "/" + kube::getName(item);
      if (!mapping_.localNamespace(ns) || !isOwnedBy(item, mapping_.consumerId())) continue;
      if (used.count(key)) {
        if (std::string(kind) == "ServiceAccount") {
          for (const char* field : {"secrets", "imagePullSecrets"}) {
            for (const json& ref : item.value(field, json::array())) {
              if (ref.is_object() && ref.contains("name") && ref["name"].is_string()) {
                used.insert(ns + "/Secret/" + ref["name"].get<std::string>());
              }
            }
          }
        }
        continue;
      }
      if (liveOrigins.count(originUid(item)) || kube::isBeingDeleted(item)) continue;
      kube::DeleteOptions o;
      o.preconditionUid = kube::getUid(item);
      kube::Result<json> d = provider_.remove(*r, ns, kube::getName(item), o);
      if (!d.ok() && !kube::isNotFound(d.error()) && !kube::isConflict(d.error())) return d.error();
      if (d.ok()) {
        ++deleted;
        spdlog::info("event=remote_orphan_deleted kind={} namespace={} name={} origin_uid={}",
                     kind, ns, kube::getName(item), originUid(item));
      }
    }
  }
  return deleted;
}

}  // namespace strait::reflection
