#pragma once
// The node lifecycle controller of kube-controller-manager, for the minicluster:
//  - health: a node is healthy while its Ready condition's lastHeartbeatTime or its Lease's
//    renewTime keeps advancing; after `gracePeriod` without either, its Ready, MemoryPressure,
//    DiskPressure and PIDPressure conditions go Unknown ("NodeStatusUnknown", "Kubelet stopped
//    posting node status.") and its pods' Ready condition goes False;
//  - taints from the Ready condition: Unknown -> node.kubernetes.io/unreachable, False ->
//    node.kubernetes.io/not-ready, each NoExecute and NoSchedule; removed when Ready is True;
//  - NoExecute eviction (the taint manager): a pod on a node with a NoExecute taint it does
//    not tolerate is deleted at once; one that tolerates it for tolerationSeconds is deleted
//    when that time has passed since the taint was added.
//
// Thread-safe. Constructors do no I/O; start() launches one thread each, stop() joins.

#include <chrono>
#include <memory>

#include "minicluster/registry.h"
#include "minicluster/rest.h"
#include "minicluster/store.h"

namespace strait::minicluster {

struct NodeLifecycleOptions {
  std::chrono::milliseconds gracePeriod{40000};   // --node-monitor-grace-period
  std::chrono::milliseconds monitorPeriod{1000};  // how often health is checked
};

class NodeLifecycleController {
 public:
  virtual ~NodeLifecycleController() = default;
  virtual void start() = 0;
  virtual void stop() = 0;  // idempotent
};

std::unique_ptr<NodeLifecycleController> newNodeLifecycleController(Store& store,
                                                                     Registry& registry,
                                                                     Rest& rest,
                                                                     NodeLifecycleOptions opts);

// The NoExecute taint manager (same lifecycle contract).
std::unique_ptr<NodeLifecycleController> newTaintEvictionController(Store& store,
                                                                     Registry& registry,
                                                                     Rest& rest);

}  // namespace strait::minicluster
