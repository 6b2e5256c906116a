#pragma once
// RBAC escalation prevention on writes of Roles, ClusterRoles, RoleBindings and
// ClusterRoleBindings (upstream pkg/registry/rbac/*/policybased), as admission in front of
// the rest of the chain:
//  - a Role or ClusterRole may be created or updated by a user who holds every permission it
//    grants (in its namespace, or cluster-wide for a ClusterRole) or has the `escalate` verb
//    on it; a ClusterRole with an aggregationRule needs full authority;
//  - a RoleBinding or ClusterRoleBinding needs the `bind` verb on the referenced role, or the
//    user holding every permission of that role.
// Members of system:masters and the API server's own controllers (no user) are not checked.
// A refusal is Forbidden with upstream's message ("... is attempting to grant RBAC
// permissions not currently held: ...").
//
// Thread-safe: no state of its own.

#include <memory>

#include "minicluster/admission.h"
#include "minicluster/authorizer.h"
#include "minicluster/store.h"

namespace strait::minicluster {

// `authorizer`, `store` and `next` are borrowed and must outlive the result.
std::unique_ptr<Admission> newRbacEscalationAdmission(const Authorizer& authorizer, Store& store,
                                                      Admission& next);

// The check itself, for one RBAC object `obj` (v1 JSON) of resource `resource` (roles,
// clusterroles, rolebindings, clusterrolebindings) being written by `user` in `ns`; `old` is
// the stored object on update (null on create). OK or Forbidden.
kube::Status checkRbacEscalation(const Authorizer& authorizer, Store& store,
                                 const UserInfo& user, const std::string& resource,
                                 const std::string& ns, const nlohmann::json& obj,
                                 const nlohmann::json* old);

}  // namespace strait::minicluster
