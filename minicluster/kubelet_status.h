#pragma once
// What a simulated kubelet writes, as pure functions (private to minicluster/): the Node
// object and its conditions, the node Lease, and a pod's status from its simulated runtime
// state. Unit-testable without a server.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/status.h"
#include "minicluster/kubelet_sim.h"
#include "minicluster/rest.h"
#include "minicluster/simulation.h"

namespace strait::minicluster {

enum class PodStage { Creating, Running, Finished, Terminating };

// Runtime state of one container (ContainerRuntime plus what only the status needs).
struct SimContainer : ContainerRuntime {
  std::string waitingReason = "ContainerCreating";  // when not started
  std::string waitingMessage;
  // Readiness from probes (process runtime): a running container is ready only when true;
  // started only once its startup probe succeeded.
  bool probeReady = true;
  bool probeStarted = true;
  // The terminated reason of the current and of the previous instance when not the one the
  // exit code gives ("Completed" / "Error"): "OOMKilled" (process runtime, cgroups).
  std::string terminatedReason, prevTerminatedReason;
};

struct SimPod {
  std::string key, ns, name, uid, node, podIP, hostIP, restartPolicy = "Always";
  nlohmann::json pod;
  std::chrono::system_clock::time_point startTime;
  PodStage stage = PodStage::Creating;
  std::vector<SimContainer> containers;
  std::vector<std::string> initContainers;  // names (they complete at once)
  std::optional<std::chrono::milliseconds> exitAfter;
  int exitCode = 0;
  std::chrono::milliseconds backoff{10000};
  uint64_t gen = 0;  // bumps invalidate pending timers
};

// "nginx" -> "docker.io/library/nginx:latest", "ghcr.io/a/b" -> "ghcr.io/a/b:latest".
std::string normalizeImage(const std::string& image);
// "docker.io/library/nginx@sha256:<hex of sha256(image)>".
std::string imageIdFor(const std::string& image);

// The status a kubelet posts for `p` (phase, conditions, IPs, startTime, containerStatuses);
// `old` supplies qosClass, the PodScheduled condition and unchanged transition times.
nlohmann::json buildPodStatus(const SimPod& p, const nlohmann::json& old,
                              std::chrono::system_clock::time_point now);

// The Node object a kubelet registers (metadata, spec.podCIDR(s), taints, full status).
nlohmann::json buildNode(const std::string& name, const NodePool& pool, const std::string& podCidr,
                         const std::string& hostIP, uint16_t kubeletPort,
                         std::chrono::system_clock::time_point now);
// The four kubelet conditions (Ready True, pressure False) with heartbeat `now`; transition
// times kept from `old` conditions when the status did not change.
nlohmann::json nodeConditions(const nlohmann::json& oldConditions,
                              std::chrono::system_clock::time_point now);
// Registers Node `node` (built by buildNode) as a kubelet does: creates it, or, restarted over
// a data directory, refreshes what the kubelet owns (its labels, spec.podCIDR(s), status with
// the old conditions' transition times). Returns the Node's uid.
kube::Result<std::string> registerNodeObject(Rest& rest, const ResourceInfo& nodes,
                                             const nlohmann::json& node,
                                             std::chrono::system_clock::time_point now);
// The node Lease (kube-node-lease/<node>) owned by the Node.
nlohmann::json buildLease(const std::string& node, const std::string& nodeUid,
                          std::chrono::system_clock::time_point now);

}  // namespace strait::minicluster
