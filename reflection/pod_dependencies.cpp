#include "reflection/pod_dependencies.h"

#include "kube/json_access.h"
#include "kube/object.h"
#include "reflection/labels.h"

namespace strait::reflection {

using kube::hasArray;
using kube::hasObject;
using kube::stringOf;
using nlohmann::json;

namespace {

constexpr const char* kRootCaConfigMap = "kube-root-ca.crt";

void addName(std::set<std::string>& out, const json& ref) {
  std::string name = stringOf(ref, "name");
  if (!name.empty()) out.insert(name);
}

void scanVolumeSource(const json& v, PodDependencies& d) {
  if (hasObject(v, "configMap")) addName(d.configMaps, v["configMap"]);
  if (hasObject(v, "secret")) {
    std::string name = stringOf(v["secret"], "secretName");
    if (!name.empty()) d.secrets.insert(name);
  }
  if (hasObject(v, "projected") && hasArray(v["projected"], "sources")) {
    for (const json& s : v["projected"]["sources"]) {
      if (hasObject(s, "configMap")) addName(d.configMaps, s["configMap"]);
      if (hasObject(s, "secret")) addName(d.secrets, s["secret"]);
    }
  }
}

void scanContainer(const json& c, PodDependencies& d) {
  if (hasArray(c, "env")) {
    for (const json& e : c["env"]) {
      if (!hasObject(e, "valueFrom")) continue;
      const json& vf = e["valueFrom"];
      if (hasObject(vf, "configMapKeyRef")) addName(d.configMaps, vf["configMapKeyRef"]);
      if (hasObject(vf, "secretKeyRef")) addName(d.secrets, vf["secretKeyRef"]);
    }
  }
  if (hasArray(c, "envFrom")) {
    for (const json& e : c["envFrom"]) {
      if (hasObject(e, "configMapRef")) addName(d.configMaps, e["configMapRef"]);
      if (hasObject(e, "secretRef")) addName(d.secrets, e["secretRef"]);
    }
  }
}

void copyFields(const json& from, json& to, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (from.contains(k)) to[k] = from[k];
  }
}

}  // namespace

kube::Result<json> forgeReflectedMeta(const json& local, const ObjectForgeContext& ctx,
                             const char* kind) {
  if (!local.is_object() || kube::getName(local).empty() || kube::getUid(local).empty()) {
    return kube::makeError(kube::Code::Invalid,
                           std::string("cannot forge remote ") + kind +
                               ": not an object with metadata.name and metadata.uid",
                           "metadata");
  }
  json out = json::object();
  out["apiVersion"] = "v1";
  out["kind"] = kind;
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
  for (const auto& [k, v] : kube::getAnnotations(local)) {
    if (k == "kubectl.kubernetes.io/last-applied-configuration") continue;
    annotations[k] = v;
  }
  annotations[std::string(kAnnotationOriginNamespace)] = kube::getNamespace(local);
  annotations[std::string(kAnnotationOriginName)] = kube::getName(local);
  meta["annotations"] = std::move(annotations);
  out["metadata"] = std::move(meta);
  return out;
}

PodDependencies podDependencies(const json& pod) {
  PodDependencies d;
  if (!hasObject(pod, "spec")) return d;
  const json& spec = pod["spec"];
  if (hasArray(spec, "volumes")) {
    for (const json& v : spec["volumes"]) scanVolumeSource(v, d);
  }
  for (const char* list : {"containers", "initContainers"}) {
    if (!hasArray(spec, list)) continue;
    for (const json& c : spec[list]) scanContainer(c, d);
  }
  if (hasArray(spec, "imagePullSecrets")) {
    for (const json& s : spec["imagePullSecrets"]) addName(d.secrets, s);
  }
  d.serviceAccount = stringOf(spec, "serviceAccountName");
  d.configMaps.erase(kRootCaConfigMap);
  return d;
}

kube::Result<json> forgeRemoteConfigMap(const json& local, const ObjectForgeContext& ctx) {
  auto out = forgeReflectedMeta(local, ctx, "ConfigMap");
  if (!out.ok()) return out;
  copyFields(local, *out, {"data", "binaryData", "immutable"});
  return out;
}

kube::Result<json> forgeRemoteSecret(const json& local, const ObjectForgeContext& ctx) {
  auto out = forgeReflectedMeta(local, ctx, "Secret");
  if (!out.ok()) return out;
  if (stringOf(local, "type") == "kubernetes.io/service-account-token") {
    return kube::makeError(kube::Code::Forbidden,
                           "secret " + kube::getNamespace(local) + "/" + kube::getName(local) +
                               " is a service account token and is not reflected",
                           "type");
  }
  copyFields(local, *out, {"type", "data", "stringData", "immutable"});
  return out;
}

kube::Result<json> forgeRemoteServiceAccount(const json& local, const ObjectForgeContext& ctx) {
  auto out = forgeReflectedMeta(local, ctx, "ServiceAccount");
  if (!out.ok()) return out;
  copyFields(local, *out, {"automountServiceAccountToken", "imagePullSecrets"});
  return out;
}

bool sameReflectedContent(const json& a, const json& b) {
  auto content = [](const json& o) {
    json c = json::object();
    if (!o.is_object()) return c;
    c["labels"] = hasObject(o, "metadata") ? o["metadata"].value("labels", json::object())
                                       : json::object();
    c["annotations"] = hasObject(o, "metadata")
                           ? o["metadata"].value("annotations", json::object())
                           : json::object();
    for (const char* k : {"type", "data", "binaryData", "stringData", "immutable",
                          "automountServiceAccountToken", "imagePullSecrets"}) {
      if (o.contains(k)) c[k] = o[k];
    }
    return c;
  };
  return content(a) == content(b);
}

}  // namespace strait::reflection
