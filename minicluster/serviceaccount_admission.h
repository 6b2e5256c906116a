#pragma once
// Upstream's ServiceAccount admission plugin, for Pod creates (private to minicluster/): a
// Pod without spec.serviceAccountName gets "default", and unless automountServiceAccountToken
// is false (on the Pod, or on its ServiceAccount when the Pod does not say) it gets the
// projected volume `kube-api-access-<5 random characters>` (a serviceAccountToken valid for
// 3607 s at `token`, the kube-root-ca.crt ConfigMap's ca.crt, and the namespace from the
// downward API) mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount in every
// container and init container that has no mount there already.
//
// Thread-safe: the wrapper keeps no state of its own.

#include <memory>

#include <nlohmann/json.hpp>

#include "minicluster/admission.h"
#include "minicluster/store.h"

namespace strait::minicluster {

inline constexpr const char* kServiceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount";

// Applies the plugin to `pod` (a core/v1 Pod being created); `serviceAccount` is the Pod's
// ServiceAccount object, or null when it is not (yet) stored. `suffix` names the volume.
void admitServiceAccount(nlohmann::json& pod, const nlohmann::json* serviceAccount, const std::string& suffix);

// Admission that applies admitServiceAccount to Pod creates, then hands every request to
// `next`, which must outlive the result.
std::unique_ptr<Admission> newServiceAccountAdmission(Store& store, Admission& next);

}  // namespace strait::minicluster
