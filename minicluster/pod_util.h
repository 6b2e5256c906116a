#pragma once
// Pod facts the workload controllers share (upstream pkg/api/v1/pod and
// pkg/controller/controller_utils.go): active, ready, available, and the order in which a
// ReplicaSet picks pods to delete. Pure functions of JSON; no locking needed.

#include <chrono>
#include <optional>

#include <nlohmann/json.hpp>

namespace strait::minicluster {

// Not terminal (phase Succeeded/Failed) and not being deleted.
bool isPodActive(const nlohmann::json& pod);
// Condition Ready is True.
bool isPodReady(const nlohmann::json& pod);
// lastTransitionTime of the Ready=True condition, if the pod is ready.
std::optional<std::chrono::system_clock::time_point> podReadySince(const nlohmann::json& pod);
// Ready for at least minReadySeconds at `now`.
bool isPodAvailable(const nlohmann::json& pod, int64_t minReadySeconds,
                    std::chrono::system_clock::time_point now);
// Sum of restartCount over containerStatuses.
int64_t podRestarts(const nlohmann::json& pod);

// True when pod `a` should be deleted before pod `b` on scale-down (upstream ActivePods
// ordering): unassigned before assigned; Pending before Unknown before Running; not ready
// before ready; ready for less time before longer; more restarts first; newer first.
bool deleteBefore(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace strait::minicluster
