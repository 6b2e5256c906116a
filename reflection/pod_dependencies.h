#pragma once
// The ConfigMaps, Secrets and ServiceAccount a Pod uses travel with it into the provider
// (full reflection of other kinds is a separate issue). This file finds what a Pod refers to
// and forges the remote copies (pure; no cluster needed). Thread-safe (pure).

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "kube/status.h"

namespace strait::reflection {

struct PodDependencies {
  // Names in the Pod's namespace. Optional references (optional: true) are included: the
  // object is reflected when it exists.
  std::set<std::string> configMaps;
  std::set<std::string> secrets;
  std::string serviceAccount;  // "" when the Pod names none ("default" is then implied)
};

// Every ConfigMap and Secret the Pod refers to: volumes (configMap, secret, projected
// sources), env valueFrom (configMapKeyRef, secretKeyRef), envFrom of containers and init
// containers, imagePullSecrets; and spec.serviceAccountName. The consumer's
// "kube-root-ca.crt" ConfigMap is left out: the provider publishes its own in every
// namespace, and the projected token volume that uses it is not reflected (pod_forge.h).
PodDependencies podDependencies(const nlohmann::json& pod);

struct ObjectForgeContext {
  std::string consumerId;
  std::string remoteNamespace;
};

// The skeleton every reflected object starts from: apiVersion v1, `kind`, metadata.name,
// metadata.namespace = ctx.remoteNamespace, the local labels plus the origin labels
// (consumer, origin uid, managed-by), the local annotations (without kubectl's
// last-applied-configuration) plus the origin namespace and name. Invalid when `local` is
// not an object with metadata.name and uid.
kube::Result<nlohmann::json> forgeReflectedMeta(const nlohmann::json& local,
                                                const ObjectForgeContext& ctx, const char* kind);

// The remote ConfigMap: data, binaryData, immutable kept; metadata as for Pods (labels and
// annotations copied plus origin markers; uid, resourceVersion, owners dropped).
// Invalid when `local` is not an object with metadata.name and uid.
kube::Result<nlohmann::json> forgeRemoteConfigMap(const nlohmann::json& local,
                                                  const ObjectForgeContext& ctx);
// The remote Secret: type, data, stringData, immutable kept. Service-account token Secrets
// (type kubernetes.io/service-account-token) are refused (Forbidden): a consumer token must
// not be reflected as such, the provider's token controller would overwrite it.
kube::Result<nlohmann::json> forgeRemoteSecret(const nlohmann::json& local,
                                               const ObjectForgeContext& ctx);
// The remote ServiceAccount: automountServiceAccountToken kept; secrets and
// imagePullSecrets kept by name (the Secrets themselves travel separately).
kube::Result<nlohmann::json> forgeRemoteServiceAccount(const nlohmann::json& local,
                                                       const ObjectForgeContext& ctx);

// Equal when the remote copy needs no update (everything forged from the local object).
bool sameReflectedContent(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace strait::reflection
