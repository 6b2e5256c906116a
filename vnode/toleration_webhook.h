#pragma once
// The mutating admission webhook of the consumer agent (pure part; webhook_server.h serves
// it). For a Pod created in a namespace offloaded to a provider (offloading.h) it adds:
//  - the toleration for the virtual node's taint (key virtual-node.strait.io/not-allowed,
//    operator Exists, the configured effect), unless the Pod already tolerates it;
//  - the toleration for node.kubernetes.io/network-unavailable:NoSchedule: a virtual node
//    whose peering has no tunnel says NetworkUnavailable=True, which the node lifecycle
//    controller turns into that taint; offloaded Pods still run in the provider then (their
//    traffic does not cross), so they tolerate it;
//  - the required node affinity of the namespace's strategy, provider or selector
//    (offloading_affinity.h): e.g. one provider's virtual node or real nodes; only virtual
//    nodes (Remote); only real nodes (Local).
// Under the Local strategy neither toleration is added: the Pods stay home.
// DaemonSet Pods are never mutated (they never run on a virtual node). Every answer allows
// the request: the webhook only adds, it never refuses (and is installed with
// failurePolicy Ignore, so Strait being down never blocks Pod creation).
// Pure functions; thread-safe.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "peering/names.h"
#include "vnode/offloading.h"

namespace strait::vnode {

inline constexpr const char* kNetworkUnavailableTaint = "node.kubernetes.io/network-unavailable";

struct TolerationWebhookConfig {
  std::string taintKey = std::string(peering::kVirtualNodeTaintKey);
  std::string taintEffect = "NoExecute";  // "" = the virtual nodes carry no taint
  bool tolerateNetworkUnavailable = true;
};

// RFC 6902 operations for `pod` under `offloading` (empty array: nothing to change).
nlohmann::json tolerationPatch(const nlohmann::json& pod, const Offloading& offloading,
                               const TolerationWebhookConfig& config);

// The offloading of a namespace by name (nullopt when it cannot be told: the Pod is then
// left unchanged).
using OffloadingLookup = std::function<std::optional<Offloading>(const std::string& ns)>;

// Answers an admission.k8s.io/v1 AdmissionReview (the POST body, parsed). Malformed reviews
// get an allowing answer without a patch (and uid "" if there was none).
nlohmann::json admitPod(const nlohmann::json& review, const OffloadingLookup& lookup,
                        const TolerationWebhookConfig& config);

}  // namespace strait::vnode
