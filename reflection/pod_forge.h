#pragma once
// Forging the provider-side Pod from the consumer's Pod (pure; no cluster needed).
//
// What changes, and why (upstream virtual kubelets and Liqo do the same where noted):
//  - metadata: name kept; namespace mapped (NamespaceMapping); labels and annotations copied,
//    plus strait.io/origin-cluster-id, strait.io/origin-uid, strait.io/managed-by=strait and
//    the origin namespace/name annotations; uid, resourceVersion, generation,
//    creationTimestamp, deletion fields, finalizers, managedFields, generateName and
//    ownerReferences dropped (the owners do not exist in the provider).
//  - spec.nodeName, schedulerName, schedulingGates, priority, priorityClassName,
//    preemptionPolicy, overhead, readinessGates and ephemeralContainers are dropped: the
//    provider's own scheduler and admission place and admit the Pod (a priority class or
//    runtime-class overhead of the consumer may not exist there; readiness gates are
//    evaluated on the local Pod).
//  - Scheduling constraints that select the virtual node itself (nodeSelector entries and
//    node-affinity expressions on the virtual node's own label keys, matchFields on its
//    name) are removed; constraints on other labels (zone, region, instance type...) are
//    kept, so they select provider nodes. A required node-affinity term that selected only
//    the virtual node makes the whole required affinity satisfied, so it is dropped.
//  - The toleration of the virtual node's taint is dropped (the provider has no such taint);
//    other tolerations are kept. Pod (anti-)affinity is kept, with `namespaces` mapped.
//  - Service account token: the projected volume the consumer's admission injected
//    (kube-api-access-*: a serviceAccountToken source) is removed with its mounts, so the
//    provider's admission injects a token for the reflected ServiceAccount; or, with
//    `serviceAccountTokenSecret` set, its token source is replaced by that Secret's "token"
//    key (a consumer-issued token reflected as a Secret, as Liqo does).
//  - Downward API in env: metadata.name, metadata.namespace, metadata.uid, spec.nodeName,
//    status.hostIP and status.hostIPs are resolved to the *local* values (the Pod sees the
//    namespace and node it was created in, and the virtual node's address as host IP);
//    status.podIP / status.podIPs, labels, annotations, serviceAccountName and resource
//    fields are left to the provider's kubelet, which fills in the IP the Pod really has.
//    Downward API *volumes* are passed unchanged (metadata.namespace there shows the remote
//    namespace: a known gap).
//  - status is dropped.
//  - Then the OffloadingOverrides in `overrides` (pod_overrides.h), in order; one that fails
//    makes the forge fail (Invalid naming the override).
//  - Last, a Pod bound to a pool's virtual node (`poolOfNode` knows its spec.nodeName) is
//    pinned to the pool (peering::pinPodToPool: the strait.io/peering-pool label and the
//    pool's node selector), so the provider admits it and schedules it on the pool's nodes;
//    its downward spec.nodeName is the pool node. A Pod selecting another value for one of
//    the pool's selector keys is Invalid (it could never run there).
// Refused (Forbidden): Pods controlled by a DaemonSet (they belong on real nodes; a virtual
// node must never run them). Invalid: input that is not a Pod with metadata.name, uid,
// namespace and spec.containers.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "kube/status.h"
#include "peering/pools.h"
#include "reflection/pod_overrides.h"

namespace strait::reflection {

struct PodForgeContext {
  std::string consumerId;          // origin cluster ID label value
  std::string remoteNamespace;     // from NamespaceMapping
  std::string virtualNodeName;     // "strait-cloud": spec.nodeName as the Pod sees it
  std::string virtualNodeAddress;  // the virtual node's InternalIP: status.hostIP
  // Label keys only the virtual node carries (type, strait.io/remote-cluster-id,
  // kubernetes.io/hostname...): selectors on them are removed.
  std::set<std::string> virtualNodeLabelKeys;
  // When non-empty, the Secret (in the remote namespace) whose "token" key replaces the
  // projected service account token.
  std::string serviceAccountTokenSecret;
  // The overrides for this Pod and provider (chosen by the caller), applied in order.
  PodOverrides overrides;
  // The pool whose virtual node is `nodeName`, or nullopt when it is no pool node of this
  // peering. Optional (then no Pod is pinned); must be thread-safe and must not block.
  std::function<std::optional<peering::PoolSpec>(const std::string& nodeName)> poolOfNode;
};

// The remote Pod for `local`. Pure; thread-safe.
kube::Result<nlohmann::json> forgeRemotePod(const nlohmann::json& local,
                                            const PodForgeContext& ctx);

// Removes from a Pod spec the scheduling fields a Pod in the provider must not carry:
// nodeName, schedulerName, schedulingGates, priority, priorityClassName, preemptionPolicy,
// overhead, readinessGates, ephemeralContainers; nodeSelector entries and node-affinity
// expressions on `nodeLabelKeys`, node-affinity matchFields on metadata.name; the toleration
// of the virtual node's taint. forgeRemotePod strips with this, and the provider strips
// every Pod it receives again, so a Pod never picks its provider node. Pure; thread-safe;
// a non-object `spec` is left as is.
void stripSchedulingFields(nlohmann::json& spec, const std::set<std::string>& nodeLabelKeys);

// The label keys of a virtual node that select it and nothing else (type,
// strait.io/remote-cluster-id, kubernetes.io/hostname, kubernetes.io/role). The provider
// strips selectors on them: in the provider they could only pin a Pod to a named node.
std::set<std::string> virtualNodeOwnLabelKeys();

// True when `pod` has a controller owner reference of kind DaemonSet.
bool isDaemonSetPod(const nlohmann::json& pod);

// The fields of the remote Pod that a Pod update may change (labels, annotations, container
// and init-container images, activeDeadlineSeconds, tolerations): equal when no update of
// the remote Pod is needed. Used to decide whether to send an update.
nlohmann::json mutablePodFields(const nlohmann::json& pod);

}  // namespace strait::reflection
