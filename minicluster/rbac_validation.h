#pragma once
// rbac.authorization.k8s.io/v1 rules of the API server (upstream pkg/apis/rbac/v1 defaults and
// pkg/apis/rbac/validation): which objects are RBAC objects, their top-level fields, the
// defaults (roleRef and subject apiGroups), and validation with upstream's field paths and
// messages. Pure functions of JSON; used by strategy.cpp.
//
// Authorization (evaluating these objects on each request) is not done here: the objects are
// stored and served only. An authorizer reads them through the store.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/status.h"
#include "minicluster/registry.h"

namespace strait::minicluster {

inline constexpr const char* kRbacGroup = "rbac.authorization.k8s.io";

// True for roles, clusterroles, rolebindings and clusterrolebindings of rbac.authorization.k8s.io.
bool isRbacResource(const ResourceInfo& info);

// Top-level fields besides apiVersion/kind/metadata the kind has ("rules", "roleRef", ...).
std::vector<std::string> rbacTopLevelFields(const ResourceInfo& info);

// Upstream's ValidateRBACName (path-segment names): "may not be '.'", "may not contain '/'"...
std::vector<std::string> validateRbacName(const std::string& name);

// v1 defaults: roleRef.apiGroup and User/Group subjects' apiGroup become
// rbac.authorization.k8s.io when empty.
void defaultRbacObject(const ResourceInfo& info, nlohmann::json& obj);

// Problems of a whole object (not its metadata.name): rules, aggregationRule, roleRef,
// subjects, with upstream's paths and messages.
std::vector<kube::Cause> validateRbacObject(const ResourceInfo& info, const nlohmann::json& obj);

// Update-only problems: a binding's roleRef may not change ("cannot change roleRef").
std::vector<kube::Cause> validateRbacUpdate(const ResourceInfo& info, const nlohmann::json& obj,
                                            const nlohmann::json& old);

}  // namespace strait::minicluster
