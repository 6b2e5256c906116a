#pragma once
// Pod Security Admission (upstream's built-in PodSecurity admission plugin): the namespace
// labels pod-security.kubernetes.io/enforce|warn|audit (each with an optional -version)
// name a Pod Security Standards level (kube/pod_security.h) for the Pods of the namespace.
//  - enforce: a Pod create (or a Pod update that changes more than images and metadata)
//    violating the level is refused with 403 Forbidden and upstream's message
//    `pods "x" is forbidden: violates PodSecurity "baseline:latest": ...`;
//  - warn: the request succeeds with a warning `would violate PodSecurity "...": ...` (the
//    API server sends it as a `Warning: 299 - "..."` header that kubectl prints);
//  - audit: the violation is logged.
// Workload resources (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs,
// ReplicationControllers, PodTemplates) are checked on their Pod template against both the
// enforce and warn levels, and only warned about, as upstream does. A label value that is
// not a level counts as restricted (the safe reading). Subresource writes are not checked.
//
// Thread-safe: reads the namespace from the store on each call.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/status.h"
#include "minicluster/admission.h"
#include "minicluster/store.h"

namespace strait::minicluster {

// Checks `obj` being written as `a` describes. Returns Forbidden when the namespace's enforce
// level refuses it; appends warnings to `warnings` (may be null: warnings dropped).
kube::Status admitPodSecurity(const Store& store, const AdmissionAttributes& a,
                              const nlohmann::json& obj, std::vector<std::string>* warnings);

}  // namespace strait::minicluster
