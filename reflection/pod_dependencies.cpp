#include "reflection/pod_dependencies.h"

#include "kube/object.h"
#include "reflection/json_util.h"
#include "reflection/labels.h"

namespace strait::reflection {

using detail::isArr;
using detail::isObj;
using detail::str;
using nlohmann::json;

namespace {

constexpr const char* kRootCaConfigMap = "kube-root-ca.crt";

void addName(std::set<std::string>& out, const json& ref) {
  std::string name = str(ref, "name");
  if (!name.empty()) out.insert(name);
}

void scanVolumeSource(const json& v, PodDependencies& d) {
  if (isObj(v, "configMap")) addName(d.configMaps, v["configMap"]);
  if (isObj(v, "secret")) {
    std::string name = str(v["secret"], "secretName");
    if (!name.empty()) d.secrets.insert(name);
  }
  if (isObj(v, "projected") && isArr(v["projected"], "sources")) {
    for (const json& s : v["projected"]["sources"]) {
      if (isObj(s, "configMap")) addName(d.configMaps, s["configMap"]);
      if (isObj(s, "secret")) addName(d.secrets, s["secret"]);
    }
  }
}

void scanContainer(const json& c, PodDependencies& d) {
  if (isArr(c, "env")) {
    for (const json& e : c["env"]) {
      if (!isObj(e, "valueFrom")) continue;
      const json& vf = e["valueFrom"];
      if (isObj(vf, "configMapKeyRef")) addName(d.configMaps, vf["configMapKeyRef"]);
      if (isObj(vf, "secretKeyRef")) addName(d.secrets, vf["secretKeyRef"]);
    }
  }
  if (isArr(c, "envFrom")) {
    for (const json& e : c["envFrom"]) {
      if (isObj(e, "configMapRef")) addName(d.configMaps, e["configMapRef"]);
      if (isObj(e, "secretRef")) addName(d.secrets, e["secretRef"]);
    }
  }
}

kube::Result<json> forgeMeta(const json& local, const ObjectForgeContext& ctx,
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

void copyFields(const json& from, json& to, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (from.contains(k)) to[k] = from[k];
  }
}

}  // namespace

PodDependencies podDependencies(const json& pod) {
  PodDependencies d;
  if (!isObj(pod, "spec")) return d;
  const json& spec = pod["spec"];
  if (isArr(spec, "volumes")) {
    for (const json& v : spec["volumes"]) scanVolumeSource(v, d);
  }
  for (const char* list : {"containers", "initContainers"}) {
    if (!isArr(spec, list)) continue;
    for (const json& c : spec[list]) scanContainer(c, d);
  }
  if (isArr(spec, "imagePullSecrets")) {
    for (const json& s : spec["imagePullSecrets"]) addName(d.secrets, s);
  }
  d.serviceAccount = str(spec, "serviceAccountName");
  d.configMaps.erase(kRootCaConfigMap);
  return d;
}

kube::Result<json> forgeRemoteConfigMap(const json& local, const ObjectForgeContext& ctx) {
  auto out = forgeMeta(local, ctx, "ConfigMap");
  if (!out.ok()) return out;
  copyFields(local, *out, {"data", "binaryData", "immutable"});
  return out;
}

kube::Result<json> forgeRemoteSecret(const json& local, const ObjectForgeContext& ctx) {
  auto out = forgeMeta(local, ctx, "Secret");
  if (!out.ok()) return out;
  if (str(local, "type") == "kubernetes.io/service-account-token") {
    return kube::makeError(kube::Code::Forbidden,
                           "secret " + kube::getNamespace(local) + "/" + kube::getName(local) +
                               " is a service account token and is not reflected",
                           "type");
  }
  copyFields(local, *out, {"type", "data", "stringData", "immutable"});
  return out;
}

kube::Result<json> forgeRemoteServiceAccount(const json& local, const ObjectForgeContext& ctx) {
  auto out = forgeMeta(local, ctx, "ServiceAccount");
  if (!out.ok()) return out;
  copyFields(local, *out, {"automountServiceAccountToken", "imagePullSecrets"});
  return out;
}

bool sameReflectedContent(const json& a, const json& b) {
  auto content = [](const json& o) {
    json c = json::object();
    if (!o.is_object()) return c;
    c["labels"] = isObj(o, "metadata") ? o["metadata"].value("labels", json::object())
                                       : json::object();
    c["annotations"] = isObj(o, "metadata")
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
