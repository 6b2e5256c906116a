#pragma once
// What the DaemonSet controller decides per node, as pure functions of JSON (upstream
// pkg/controller/daemon/util and NodeShouldRunDaemonPod): the tolerations every daemon Pod
// gets, whether a node should run the daemon Pod and whether an existing one may stay, the
// Pod built for one node, and the node a daemon Pod targets. Thread-safe (no state).

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace strait::minicluster {

// Label carrying the template generation a daemon Pod was built from.
inline constexpr const char* kPodTemplateGenerationLabel = "pod-template-generation";

// Adds (or replaces, dropping tolerationSeconds) the tolerations upstream gives every daemon
// Pod: node.kubernetes.io/not-ready and unreachable (NoExecute), disk-pressure,
// memory-pressure, pid-pressure and unschedulable (NoSchedule), and network-unavailable
// (NoSchedule) when spec.hostNetwork is true.
void addDaemonPodTolerations(nlohmann::json& podSpec);

struct DaemonNodeDecision {
  bool shouldRun = false;              // a daemon Pod should be created here
  bool shouldContinueRunning = false;  // an existing daemon Pod may stay here
};

// Upstream NodeShouldRunDaemonPod for `ds` (a DaemonSet) and `node`: the template's nodeName,
// nodeSelector and required node affinity must match (else neither); every NoSchedule and
// NoExecute taint must be tolerated by the template's plus the daemon tolerations for
// shouldRun; an untolerated NoSchedule taint alone lets an existing Pod continue, an
// untolerated NoExecute taint does not.
DaemonNodeDecision nodeShouldRunDaemonPod(const nlohmann::json& node, const nlohmann::json& ds);

// The Pod the controller creates for `ds` on `nodeName`: template labels and annotations,
// label pod-template-generation, generateName "<ds>-", a controller ownerReference, the
// daemon tolerations, and required node affinity replaced by one term matchFields
// metadata.name In [nodeName] (upstream ReplaceDaemonSetPodNodeNameNodeAffinity), so the
// scheduler binds it to that node.
nlohmann::json newDaemonPod(const nlohmann::json& ds, const std::string& nodeName,
                            const nlohmann::json& ownerRef);

// The node a daemon Pod runs on or targets: spec.nodeName, else the single value of a
// matchFields metadata.name In requirement of its required node affinity.
std::optional<std::string> daemonPodTargetNode(const nlohmann::json& pod);

// The DaemonSet's template generation (its deprecated.daemonset.template.generation
// annotation; 0 if absent or not a number).
int64_t daemonSetTemplateGeneration(const nlohmann::json& ds);

// Whether `pod` was built from the DaemonSet's current template generation.
bool isDaemonPodUpdated(const nlohmann::json& pod, int64_t templateGeneration);

// spec.updateStrategy.rollingUpdate.maxUnavailable resolved against `desired` (integer, or
// a percentage rounded up); at least 1 when it resolves to 0 (maxSurge is always 0 here).
int64_t daemonSetMaxUnavailable(const nlohmann::json& ds, int64_t desired);

}  // namespace strait::minicluster
