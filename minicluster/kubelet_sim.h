#pragma once
// Simulated kubelets: one Node object per configured node (full status, a Lease in
// kube-node-lease renewed every leaseRenewInterval), and the lifecycle of the pods bound to
// those nodes — Pending/ContainerCreating, Running after the start latency with a pod IP from
// the node's podCIDR, containers that exit on request (annotations below) with restartPolicy
// and CrashLoopBackOff honoured, graceful termination ending in a grace-0 delete.
// All nodes share one thread and one timer queue (no thread or server per node).
//
// Annotations on a Pod:
//   strait.io/exit-after: 5s        every container exits this long after it starts
//   strait.io/exit-code: "1"        with this exit code (default 0)
//   strait.io/restart-backoff: 1s   first CrashLoopBackOff delay (default 10s, doubling, 5m cap)
// Annotation on a Node:
//   strait.io/simulate: stop-heartbeat   the kubelet stops renewing the lease, posting node
//                                        status and syncing the node's pods; remove it to
//                                        recover.
//
// Thread-safe. Constructor does no I/O; start() registers the nodes and launches the thread.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "minicluster/registry.h"
#include "minicluster/rest.h"
#include "minicluster/simulation.h"
#include "minicluster/store.h"

namespace strait::minicluster {

class ContainerProcesses;  // runtime_process.h

// One container instance as the simulated runtime sees it.
struct ContainerRuntime {
  std::string name, image;
  int restartCount = 0;
  // Current instance: started (running or terminated) when startedAt is set.
  std::optional<std::chrono::system_clock::time_point> startedAt, finishedAt;
  int exitCode = 0;
  // The previous instance, if it restarted.
  std::optional<std::chrono::system_clock::time_point> prevStartedAt, prevFinishedAt;
  int prevExitCode = 0;
};

// Snapshot of a pod on a simulated node (for the kubelet API). A value: safe to keep.
struct PodRuntime {
  std::string ns, name, uid, node, podIP, hostIP;
  nlohmann::json pod;  // the pod object as last seen (spec, metadata)
  std::vector<ContainerRuntime> containers;
};

class SimulatedKubelets {
 public:
  virtual ~SimulatedKubelets() = default;
  // Registers the nodes (create or update) with kubeletEndpoint.Port = `kubeletPort`, then
  // runs. Fails if the pod CIDR cannot hold the nodes or a Node cannot be written.
  virtual kube::Status start(uint16_t kubeletPort) = 0;
  // Idempotent.
  virtual void stop() = 0;
  // The pod ns/name if it runs on a simulated node. Any thread.
  virtual std::optional<PodRuntime> pod(const std::string& ns, const std::string& name) const = 0;
  // All pods on simulated nodes. Any thread.
  virtual std::vector<PodRuntime> pods() const = 0;
  // Names of the simulated nodes.
  virtual std::vector<std::string> nodeNames() const = 0;
  // Optional capability: the real containers of a runtime whose Pods run (the process
  // runtime), for the kubelet API's logs and exec; nullptr when Pods are simulated.
  virtual ContainerProcesses* processes() { return nullptr; }
};

std::unique_ptr<SimulatedKubelets> newSimulatedKubelets(Store& store, Registry& registry,
                                                        Rest& rest, SimulationOptions opts);

}  // namespace strait::minicluster
