#pragma once
// The virtual Node object (pure; no cluster needed). One virtual node per peering, named
// strait-<provider-name>, as a kubelet would register it:
//  - labels: type=virtual-kubelet, strait.io/remote-cluster-id=<provider id>,
//    kubernetes.io/hostname=<node name>, kubernetes.io/os, kubernetes.io/arch,
//    kubernetes.io/role=agent, node.kubernetes.io/exclude-from-external-load-balancers, the
//    provider's region/zone when uniform (capacity.h), plus configured extra labels;
//  - taint virtual-node.strait.io/not-allowed=true with a configurable effect (NoExecute by
//    default; empty effect = no taint);
//  - capacity = allocatable = virtualAllocatable(grant, provider free);
//  - conditions Ready, MemoryPressure, DiskPressure, PIDPressure, NetworkUnavailable with
//    lastHeartbeatTime = now and lastTransitionTime kept from the previous Node while the
//    status is unchanged; Ready requires a healthy reflection stream and allocatable cpu and
//    memory > 0 (as Liqo); TunnelUp is the peering's tunnel condition (the ForeignCluster's
//    TunnelUp, peering/network.h) and NetworkUnavailable its opposite: True with the
//    tunnel's reason (TunnelNotConfigured without gateways) while pod traffic cannot cross
//    to the provider. (On a cluster whose node lifecycle controller taints nodes by
//    condition this adds node.kubernetes.io/network-unavailable:NoSchedule, which the
//    offloaded Pods then need to tolerate as well.) Ready does not depend on the tunnel.
//  - addresses InternalIP and Hostname; daemonEndpoints.kubeletEndpoint.Port; nodeInfo.
// Thread-safe (pure).

#include <chrono>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/status.h"
#include "peering/network_state.h"
#include "vnode/capacity.h"

namespace strait::vnode {

inline constexpr std::string_view kNodeNamePrefix = "strait-";
inline constexpr std::string_view kLabelType = "type";
inline constexpr std::string_view kTypeVirtualKubelet = "virtual-kubelet";

struct VirtualNodeConfig {
  std::string providerName;       // node name = strait-<providerName>
  std::string providerClusterId;  // strait.io/remote-cluster-id
  std::string address;            // InternalIP (where the kubelet API listens)
  int kubeletPort = 10250;
  std::string taintEffect = "NoExecute";  // NoExecute, NoSchedule, PreferNoSchedule or ""
  std::string os = "linux";
  std::string arch = "amd64";
  std::string kubeletVersion = "v1.32.0-strait";
  std::map<std::string, std::string> extraLabels;
};

// Validates a config: provider name giving a valid node name, cluster ID, address, port in
// 1..65535, a known taint effect. Invalid naming the field.
kube::Status validateConfig(const VirtualNodeConfig& c);

// "strait-" + providerName.
std::string virtualNodeName(const std::string& providerName);

// The label keys that only the virtual node carries (selectors on them are stripped from
// offloaded Pods, reflection/pod_forge.h).
std::set<std::string> virtualNodeOwnLabelKeys();

// Why the node is or is not Ready (from StreamHealth, stream_health.h).
struct Readiness {
  bool ready = false;
  std::string reason;   // KubeletReady, ReflectionStreamDown, NoCapacity...
  std::string message;
};

// The whole Node object. `previous` is the Node as currently stored (or null): its
// conditions' lastTransitionTime are kept when the status did not change, and its
// metadata.resourceVersion/uid are carried over so the result can be PUT.
nlohmann::json buildNode(const VirtualNodeConfig& c, const ResourceMap& allocatable,
                         const ProviderSummary& provider, const Readiness& readiness,
                         const nlohmann::json& previous,
                         std::chrono::system_clock::time_point now,
                         const peering::TunnelCondition& tunnel = peering::TunnelCondition());

// The Ready condition of a Node object: "True", "False", "Unknown", or "" when absent.
std::string nodeReadyStatus(const nlohmann::json& node);

}  // namespace strait::vnode
