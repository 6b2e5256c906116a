#pragma once
// Where an offloaded namespace's Pods may run, as the required node affinity the offloading
// webhook writes (pure; toleration_webhook.h applies it). A namespace's record
// (offloading.h) gives a strategy and, optionally, one provider or a selector on the virtual
// nodes' labels:
//
//   real nodes     R = strait.io/remote-cluster-id DoesNotExist
//   chosen vnodes  V = kubernetes.io/hostname In [strait-<provider>]        (one provider)
//                    | type In [virtual-kubelet] + the selector's requirements (selector)
//                    | type In [virtual-kubelet]                           (any provider)
//
//   LocalAndRemote  R or V   (nothing to write when neither provider nor selector is set)
//   Remote          V only
//   Local           R only
//
// Every existing required term T becomes one term per allowed branch, T + branch (terms are
// ORed, expressions ANDed, so the Pod's own constraints still hold). Selector requirements
// map one to one to node selector operators (a=b and a==b: In [b]; a!=b: NotIn [b]; in,
// notin, exists, !a; a>n and a<n: Gt and Lt), with the same meaning for nodes that lack the
// label. The forge (reflection/pod_forge.h) strips the expressions on the virtual node's own
// label keys from the remote Pod, so the provider's scheduler sees only the Pod's own terms.
// Thread-safe (pure).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kube/selector.h"
#include "kube/status.h"
#include "vnode/offloading.h"

namespace strait::vnode {

// The node selector requirements (NodeSelectorRequirement objects) of a label selector.
nlohmann::json nodeSelectorRequirements(const kube::LabelSelector& selector);

// The spec.affinity `spec` should have under `offloading`, or nullopt when the offloading
// restricts nothing (LocalAndRemote to any provider). An unparsable selector leaves no
// virtual node allowed (Remote then allows no node at all; the Pod stays Pending, which
// `kubectl describe` shows), never an error: the webhook must answer.
std::optional<nlohmann::json> offloadingAffinity(const nlohmann::json& spec,
                                                 const Offloading& offloading);

}  // namespace strait::vnode
