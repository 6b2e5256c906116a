#pragma once
// The Pod informer handlers of a controller that owns Pods through a controller reference and
// counts its own writes with Expectations (upstream's addPod/updatePod/deletePod, shared by
// the ReplicaSet and DaemonSet controllers):
//  - a Pod added with a controller reference to an existing owner of `ownerKind` is an
//    observed creation for that owner, which is queued; an orphan queues every owner of its
//    namespace whose selector matches it (one of them may adopt it);
//  - an updated Pod queues its old and new owners; an orphan whose labels changed (or which
//    was just released) queues the owners that may adopt it;
//  - a Pod deleted, or marked for deletion, is an observed deletion for its owner.
//
// The handlers run on the Pod informer's thread; `owners`, `queue` and `expectations` must
// outlive the informer.

#include <optional>
#include <string>

#include "kube/worker_pool.h"
#include "minicluster/expectations.h"
#include "minicluster/local_informer.h"

namespace strait::minicluster {

InformerHandlers controlledPodHandlers(std::string ownerKind, const LocalInformer& owners,
                                       kube::WorkerPool& queue, Expectations& expectations);

// "ns/name" of the owner of `ownerKind` controlling `pod`, if that owner exists in `owners`
// with the uid the reference names.
std::optional<std::string> controllingOwnerKey(const std::string& ownerKind,
                                               const LocalInformer& owners,
                                               const CachedObject& pod);

}  // namespace strait::minicluster
