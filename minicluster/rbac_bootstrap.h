#pragma once
// The default RBAC policy the API server creates at start (upstream
// plugin/pkg/auth/authorizer/rbac/bootstrappolicy): the user-facing ClusterRoles cluster-admin,
// admin, edit and view (the last three aggregated from the system:aggregate-to-* roles), the
// discovery roles system:basic-user, system:discovery and system:public-info-viewer, the
// component roles (system:auth-delegator, system:node-proxier, system:kube-dns, system:heapster,
// system:monitoring, system:kubelet-api-admin, system:volume-scheduler, ...), and their
// ClusterRoleBindings.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/status.h"
#include "minicluster/registry.h"
#include "minicluster/rest.h"

namespace strait::minicluster {

// The default ClusterRoles, then the default ClusterRoleBindings, as v1 objects. Pure.
std::vector<nlohmann::json> defaultClusterRoles();
std::vector<nlohmann::json> defaultClusterRoleBindings();

// Creates every default object that does not exist yet (an existing one, possibly edited by
// the user, is left alone). Error: the first create that failed for another reason than
// AlreadyExists. Call once at start, before serving; not thread-safe with itself.
kube::Status bootstrapRbacPolicy(Rest& rest, const Registry& registry);

}  // namespace strait::minicluster
