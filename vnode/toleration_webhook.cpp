// Toleration and affinity mutation of offloaded Pods (see toleration_webhook.h).
#include "vnode/toleration_webhook.h"

#include "kube/base64.h"
#include "peering/names.h"
#include "reflection/pod_forge.h"
#include "vnode/node_builder.h"
#include "vnode/offloading_affinity.h"

namespace strait::vnode {

using nlohmann::json;

namespace {

const json* childObject(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? &*it : nullptr;
}

// Whether `spec` tolerates the taint `key` with `effect` (any value).
bool tolerates(const json& spec, const std::string& taintKey, const std::string& taintEffect) {
  auto it = spec.find("tolerations");
  if (it == spec.end() || !it->is_array()) return false;
  for (const json& t : *it) {
    if (!t.is_object()) continue;
    std::string key = t.value("key", "");
    std::string op = t.value("operator", "Equal");
    std::string effect = t.value("effect", "");
    bool keyOk = (key.empty() && op == "Exists") || key == taintKey;
    bool effectOk = effect.empty() || effect == taintEffect;
    bool valueOk = op == "Exists" || t.value("value", "") == "true";
    if (keyOk && effectOk && valueOk) return true;
  }
  return false;
}

}  // namespace

json tolerationPatch(const json& pod, const Offloading& o, const TolerationWebhookConfig& c) {
  json ops = json::array();
  const json* spec = childObject(pod, "spec");
  if (!o.offloaded || !spec || reflection::isDaemonSetPod(pod)) return ops;
  const bool toVirtualNodes = reflection::offloadsPods(o.strategy);
  json missing = json::array();
  if (toVirtualNodes && !c.taintEffect.empty() && !tolerates(*spec, c.taintKey, c.taintEffect)) {
    missing.push_back({{"key", c.taintKey}, {"operator", "Exists"}, {"effect", c.taintEffect}});
  }
  if (toVirtualNodes && c.tolerateNetworkUnavailable &&
      !tolerates(*spec, kNetworkUnavailableTaint, "NoSchedule")) {
    missing.push_back(
        {{"key", kNetworkUnavailableTaint}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
  }
  auto it = spec->find("tolerations");
  if (!missing.empty() && (it == spec->end() || !it->is_array())) {
    ops.push_back({{"op", "add"}, {"path", "/spec/tolerations"}, {"value", missing}});
  } else {
    for (json& tol : missing) {
      ops.push_back({{"op", "add"}, {"path", "/spec/tolerations/-"}, {"value", std::move(tol)}});
    }
  }
  if (std::optional<json> affinity = offloadingAffinity(*spec, o)) {
    ops.push_back({{"op", "add"}, {"path", "/spec/affinity"}, {"value", std::move(*affinity)}});
  }
  return ops;
}

json admitPod(const json& review, const OffloadingLookup& lookup,
              const TolerationWebhookConfig& config) {
  const json* req = childObject(review, "request");
  json resp = {{"uid", req && (*req).contains("uid") && (*req)["uid"].is_string()
                           ? (*req)["uid"].get<std::string>()
                           : std::string()},
               {"allowed", true}};
  json out = {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}};
  if (req && req->value("operation", "") == "CREATE") {
    const json* pod = childObject(*req, "object");
    std::string ns = req->value("namespace", "");
    if (pod && ns.empty()) {
      const json* meta = childObject(*pod, "metadata");
      if (meta) ns = meta->value("namespace", "");
    }
    std::optional<Offloading> o = pod && !ns.empty() && lookup ? lookup(ns) : std::nullopt;
    if (o) {
      json ops = tolerationPatch(*pod, *o, config);
      if (!ops.empty()) {
        resp["patchType"] = "JSONPatch";
        resp["patch"] = kube::base64Encode(ops.dump());
      }
    }
  }
  out["response"] = std::move(resp);
  return out;
}

}  // namespace strait::vnode
