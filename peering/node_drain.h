#pragma once
// Draining the virtual nodes of a peering or a pool before it goes, as `kubectl drain` does a
// node: cordon it, evict the Pods bound to it through the Eviction API, and wait until none
// is left. The wait lists the nodes again each round and evicts what it had not seen: a Pod
// bound while the drain runs (a scheduler that had not yet seen the cordon) goes too.
//
// Plain functions over a kube::Client; they block (the wait up to its deadline) and are meant
// for the CLI's one thread.

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "kube/client.h"

namespace strait::peering {

// A Pod bound to a node that has not finished (phase neither Succeeded nor Failed).
struct BoundPod {
  std::string ns;
  std::string name;
  std::string uid;
  bool terminating = false;  // metadata.deletionTimestamp is set
};

// The unfinished Pods bound to `node`, terminating ones included. Errors: the list's.
kube::Result<std::vector<BoundPod>> unfinishedPodsOn(kube::Client& cluster,
                                                     const std::string& node);

// Sets spec.unschedulable of `node` to `on` (merge patch). Errors: the patch's, NotFound
// when the node does not exist.
kube::Status setUnschedulable(kube::Client& cluster, const std::string& node, bool on);

// Evicts every unfinished Pod bound to `nodes` (cordon them first) and waits until none is
// left, listing again every 100 ms and evicting each Pod not evicted before; a Pod already
// terminating is waited for, not evicted. Returns the number of Pods evicted. Errors: an
// eviction refused (anything but NotFound: "evicting NS/NAME: ..."), and ServerTimeout at
// `deadline` naming the Pods still there and their nodes. A failed list is retried until
// the deadline.
kube::Result<size_t> evictAndWait(kube::Client& cluster, const std::vector<std::string>& nodes,
                                  std::chrono::steady_clock::time_point deadline);

}  // namespace strait::peering
