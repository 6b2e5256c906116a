#pragma once
// Pure helpers of the Deployment controller (upstream pkg/controller/deployment/util and
// controller.ComputeHash): pod-template-hash, maxSurge/maxUnavailable resolution, revision
// annotations, template comparison and status conditions. Functions of JSON only; no
// locking needed; unit-tested without a cluster.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kube/status.h"

namespace strait::minicluster {

inline constexpr const char* kPodTemplateHashLabel = "pod-template-hash";
inline constexpr const char* kRevisionAnnotation = "deployment.kubernetes.io/revision";
inline constexpr const char* kDesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas";
inline constexpr const char* kMaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas";

// Upstream rand.SafeEncodeString: each character of `s` mapped into
// "bcdfghjklmnpqrstvwxz2456789" by its code modulo 27.
std::string safeEncodeString(const std::string& s);
// FNV-32a of the bytes.
uint32_t fnv32a(const std::string& bytes, uint32_t h = 2166136261u);
// The pod-template-hash: FNV-32a over the template's canonical JSON (sorted keys, compact),
// then, when collisionCount is set, its value as 8 little-endian bytes; the decimal value
// of the hash encoded by safeEncodeString. (Upstream hashes a Go-struct dump, which JSON
// cannot reproduce: values differ from a real cluster's, the construction is the same.)
std::string computePodTemplateHash(const nlohmann::json& podTemplate,
                                   std::optional<int32_t> collisionCount);

// Upstream intstr.GetScaledValueFromIntOrPercent: an integer, or "N%" of `total` rounded
// up or down. Error (Invalid) for other strings.
kube::Result<int64_t> scaledValue(const nlohmann::json& intOrPercent, int64_t total, bool roundUp);

struct Fenceposts {
  int64_t maxSurge = 0;
  int64_t maxUnavailable = 0;
};
// maxSurge rounded up, maxUnavailable rounded down, of spec.replicas; both 0 gives
// maxUnavailable 1 (upstream ResolveFenceposts). Recreate (or no rolling parameters) gives
// {0, 0}. Defaults 25%/25% when absent.
kube::Result<Fenceposts> resolveFenceposts(const nlohmann::json& deployment);
// Upstream MaxUnavailable(d): 0 for Recreate or 0 replicas, capped at replicas.
int64_t maxUnavailableOf(const nlohmann::json& deployment);
// Upstream MaxSurge(d): 0 unless RollingUpdate.
int64_t maxSurgeOf(const nlohmann::json& deployment);

// Templates equal once the pod-template-hash label is removed from both.
bool equalIgnoreHash(const nlohmann::json& a, const nlohmann::json& b);
// The revision annotation as a number (0 when absent or not a number).
int64_t revisionOf(const nlohmann::json& obj);

// Sets a DeploymentCondition like upstream SetDeploymentCondition: nothing changes when a
// condition of that type has the same status and reason; lastTransitionTime is kept when the
// status is unchanged. `now` is an RFC 3339 time.
void setDeploymentCondition(nlohmann::json& status, const std::string& type,
                            const std::string& condStatus, const std::string& reason,
                            const std::string& message, const std::string& now);
// The condition of that type in status.conditions, or null.
const nlohmann::json* findCondition(const nlohmann::json& status, const std::string& type);

}  // namespace strait::minicluster
