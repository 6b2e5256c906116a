#pragma once
// Pod Security Standards (Kubernetes' pod-security-admission): the levels privileged,
// baseline and restricted, and the checks of the "latest" policy version. Pure: evaluates a
// Pod's metadata and spec (or a Pod template's), touches no cluster. Thread-safe.
//
// Checks, by upstream ID (the order violations are listed in):
//   baseline   capabilities_baseline, hostNamespaces, hostPathVolumes, hostPorts,
//              appArmorProfile, privileged, procMount, seLinuxOptions,
//              seccompProfile_baseline, sysctls, windowsHostProcess
//   restricted allowPrivilegeEscalation, capabilities_restricted (replaces
//              capabilities_baseline), restrictedVolumes (replaces hostPathVolumes),
//              runAsNonRoot, runAsUser, seccompProfile_restricted (replaces
//              seccompProfile_baseline)
// Each violation carries upstream's reason and detail, so a message reads as upstream's:
//   violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), hostPath
//   volumes (volume "root")

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kube/status.h"

namespace strait::kube {

enum class PodSecurityLevel { Privileged, Baseline, Restricted };

// Namespace labels of Pod Security Admission.
inline constexpr std::string_view kPodSecurityEnforceLabel = "pod-security.kubernetes.io/enforce";
inline constexpr std::string_view kPodSecurityEnforceVersionLabel =
    "pod-security.kubernetes.io/enforce-version";
inline constexpr std::string_view kPodSecurityWarnLabel = "pod-security.kubernetes.io/warn";
inline constexpr std::string_view kPodSecurityWarnVersionLabel =
    "pod-security.kubernetes.io/warn-version";
inline constexpr std::string_view kPodSecurityAuditLabel = "pod-security.kubernetes.io/audit";
inline constexpr std::string_view kPodSecurityAuditVersionLabel =
    "pod-security.kubernetes.io/audit-version";

// "privileged", "baseline", "restricted".
std::string_view podSecurityLevelName(PodSecurityLevel level);
// The level named `name`; Invalid (naming the allowed values) for anything else.
Result<PodSecurityLevel> parsePodSecurityLevel(std::string_view name);

struct PodSecurityViolation {
  std::string check;   // upstream check ID: "hostNamespaces"
  std::string reason;  // upstream ForbiddenReason: "host namespaces"
  std::string detail;  // upstream ForbiddenDetail: "hostNetwork=true, hostPID=true"
  // "reason (detail)", or only the reason when there is no detail.
  std::string message() const;
};

// The checks of `level` that `podMetadata` + `podSpec` violate, in check-ID order; empty
// when allowed (always for Privileged). Missing or mistyped fields count as unset.
std::vector<PodSecurityViolation> checkPodSecurity(PodSecurityLevel level,
                                                   const nlohmann::json& podMetadata,
                                                   const nlohmann::json& podSpec);
// The same for a Pod object (its metadata and spec).
std::vector<PodSecurityViolation> checkPodSecurity(PodSecurityLevel level,
                                                   const nlohmann::json& pod);

// Upstream's message: `violates PodSecurity "baseline:latest": a (x), b (y)`. `version` is
// the policy version as the namespace label names it ("latest" when empty).
std::string formatPodSecurityViolations(PodSecurityLevel level, std::string_view version,
                                        const std::vector<PodSecurityViolation>& violations);

}  // namespace strait::kube
