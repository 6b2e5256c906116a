#pragma once
// Per-kind rules of the API server, as upstream's registry strategies: defaults and status
// reset on create, which parts of an object a main-resource or status write may change,
// generation bumps, and validation. Pure functions of JSON; unit-testable without a server.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/status.h"
#include "minicluster/registry.h"

namespace strait::minicluster {

// True when the resource has a status subresource (writes to the main resource then keep
// the stored status, and /status writes keep everything else).
bool hasStatusSubresource(const ResourceInfo& info);

// Defaults and status reset for a new object (metadata already set by the caller).
void prepareForCreate(const ResourceInfo& info, nlohmann::json& obj);

// Reconciles an incoming object with the stored one for a write to `subresource` ("" for
// the main resource): immutable metadata is copied from `old`, the part the subresource may
// not touch is restored, generation is bumped when the spec changed.
void prepareForUpdate(const ResourceInfo& info, const std::string& subresource,
                      nlohmann::json& obj, const nlohmann::json& old);

// Validation of a complete object; an Invalid error lists every problem as upstream does
// (`Pod "x" is invalid: metadata.name: Invalid value: ...`). `old`, on an update, is the
// stored object (for rules about what may not change, like a binding's roleRef).
kube::Status validateObject(const ResourceInfo& info, const nlohmann::json& obj, bool isCreate,
                            const nlohmann::json* old = nullptr);

// Fields of `obj` the server does not know (for fieldValidation), as dotted paths.
std::vector<std::string> unknownFields(const ResourceInfo& info, const nlohmann::json& obj);

// The tolerationSeconds the DefaultTolerationSeconds admission step gives new pods for the
// node.kubernetes.io/not-ready and unreachable NoExecute taints (default 300). Process-wide;
// set it before serving (`--default-toleration-seconds`). Thread-safe.
void setDefaultTolerationSeconds(int64_t seconds);

// DaemonSet rules (daemonset_strategy.cpp), used by the functions above. The annotation
// holding the template generation (upstream's deprecated.daemonset.template.generation:
// "1" on create, +1 on each update that changes spec.template).
inline constexpr const char* kDaemonSetTemplateGenerationAnnotation =
    "deprecated.daemonset.template.generation";
// Defaults: updateStrategy RollingUpdate (maxUnavailable 1, maxSurge 0), revisionHistoryLimit 10.
void defaultDaemonSet(nlohmann::json& obj);
// Create: defaults, template generation 1, zero status.
void prepareDaemonSetCreate(nlohmann::json& obj);
// Main-resource update: defaults, template generation bumped when the template changed.
void prepareDaemonSetUpdate(nlohmann::json& obj, const nlohmann::json& old);
// Spec problems with upstream paths and messages (selector required, non-empty, matching the
// template labels; restartPolicy Always; update strategy type and rolling parameters).
std::vector<kube::Cause> validateDaemonSetSpec(const nlohmann::json& obj);

// Pod QoS class from requests and limits: Guaranteed, Burstable or BestEffort.
std::string podQosClass(const nlohmann::json& pod);

}  // namespace strait::minicluster
