#pragma once
// The ForeignCluster custom resource (strait.io/v1alpha1, cluster-scoped): one per peering on
// each side, describing the *remote* cluster.
//
//   spec:   clusterID, clusterName, role (Provider: the remote lends us capacity; Consumer:
//           we lend to it), endpoint (remote agent), mode (push|pull), requested{},
//           tokenSecretRef (consumer, until joined), tenantNamespace
//   status: conditions Authenticated, Connected, VirtualNodeReady, TunnelUp (each with
//           reason, message, lastTransitionTime); latencyMs; granted{}; used{};
//           lastHeartbeatTime; certificateNotAfter; network{} (the tunnel: network.h)
//
// Pure helpers over JSON plus the Kubernetes resource references; safe from any thread.

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/client.h"
#include "kube/time.h"
#include "peering/network_state.h"

namespace strait::peering {

inline const kube::ResourceRef kForeignClusters{"strait.io", "v1alpha1", "foreignclusters", false};
inline const kube::ResourceRef kCrds{"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                     false};

// The CustomResourceDefinition the agent installs (status subresource, printer columns).
nlohmann::json foreignClusterCrd();

// Labels every peering object carries: managed-by and remote-cluster-id.
nlohmann::json ownershipLabels(const std::string& remoteClusterId);
// "strait.io/managed-by=strait,strait.io/remote-cluster-id=ID" (ID empty: any peering).
std::string ownershipSelector(const std::string& remoteClusterId = {});

// A ForeignCluster object (no status).
nlohmann::json makeForeignCluster(const std::string& name, const std::string& remoteId,
                                  const std::string& remoteName, const std::string& role,
                                  const std::string& endpoint);

// Sets condition `type` in status.conditions of `fc` (lastTransitionTime changes only when
// the status flips). Returns true if anything changed.
bool setCondition(nlohmann::json& fc, const std::string& type, bool status,
                  const std::string& reason, const std::string& message,
                  std::chrono::system_clock::time_point now);
// The condition's status ("True"/"False"/"Unknown" when absent) and message.
std::string conditionStatus(const nlohmann::json& fc, const std::string& type);
std::string conditionMessage(const nlohmann::json& fc, const std::string& type);
std::string conditionReason(const nlohmann::json& fc, const std::string& type);

// Merge-patches `status` into the ForeignCluster's status subresource. A missing object is
// not an error (it was deleted meanwhile); other failures are logged, not returned (the next
// pass writes again).
void patchForeignClusterStatus(kube::Client& client, const std::string& name,
                               const nlohmann::json& status);

// The four conditions, with `connected` as given, for a status patch (a merge patch replaces
// the whole list, so every write carries all four). TunnelUp is `tunnel` (network_state.h).
nlohmann::json peeringConditions(bool authenticated, const std::string& authReason,
                                 const std::string& authMessage, bool connected,
                                 const std::string& connReason, const std::string& connMessage,
                                 const std::string& vnodeReason, const std::string& vnodeMessage,
                                 const nlohmann::json& previousConditions,
                                 std::chrono::system_clock::time_point now,
                                 const TunnelCondition& tunnel = TunnelCondition());

// As above, with VirtualNodeReady set to `vnodeReady` (the consumer side, from its virtual
// Node's Ready condition).
nlohmann::json peeringConditions(bool authenticated, const std::string& authReason,
                                 const std::string& authMessage, bool connected,
                                 const std::string& connReason, const std::string& connMessage,
                                 bool vnodeReady, const std::string& vnodeReason,
                                 const std::string& vnodeMessage,
                                 const nlohmann::json& previousConditions,
                                 std::chrono::system_clock::time_point now,
                                 const TunnelCondition& tunnel = TunnelCondition());

// RFC 3339 UTC with seconds (metav1.Time), as the rest of the project writes it.
using kube::rfc3339;

}  // namespace strait::peering
