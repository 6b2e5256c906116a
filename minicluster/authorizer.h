#pragma once
// Authorization of API requests (upstream k8s.io/apiserver/pkg/authorization/authorizer):
// the attributes of a request, an Authorizer's decision, the RBAC authorizer reading Roles,
// ClusterRoles and their bindings from the store, and the mapping from an HTTP request to
// attributes (upstream RequestInfoFactory: verbs get/list/watch/create/update/patch/delete/
// deletecollection, subresources, namespaces).
//
// Thread-safe: authorize() and rulesFor() run concurrently on connection threads.

#include <memory>
#include <string>
#include <vector>

#include "kube/http_server.h"
#include "minicluster/rbac_rules.h"
#include "minicluster/request_info.h"

namespace strait::minicluster {

class Store;

enum class Decision { Allow, Deny, NoOpinion };

struct AuthorizationResult {
  Decision decision = Decision::NoOpinion;
  // Why: "RBAC: allowed by ClusterRoleBinding ..." when allowed; on NoOpinion, the errors met
  // while resolving the rules ("RBAC: clusterrole.rbac.authorization.k8s.io \"x\" not found")
  // or empty.
  std::string reason;
  bool allowed() const { return decision == Decision::Allow; }
};

class Authorizer {
 public:
  virtual ~Authorizer() = default;
  virtual AuthorizationResult authorize(const AuthorizationAttributes& a) const = 0;
  // The rules `user` with `groups` holds in namespace `ns` ("" = cluster-wide only), in
  // binding order; `errors` (may be null) receives rule-resolution errors (a binding to a
  // missing role). `incomplete` is set when the authorizer cannot list rules.
  virtual std::vector<PolicyRule> rulesFor(const std::string& user,
                                           const std::vector<std::string>& groups,
                                           const std::string& ns,
                                           std::vector<std::string>* errors,
                                           bool* incomplete) const = 0;
};

enum class AuthorizationMode { RBAC, AlwaysAllow };

// "RBAC" or "AlwaysAllow"; Invalid naming the accepted values otherwise.
kube::Result<AuthorizationMode> parseAuthorizationMode(const std::string& s);

// Allows every request (--authorization-mode AlwaysAllow); rulesFor answers "*" on "*".
std::unique_ptr<Authorizer> newAlwaysAllowAuthorizer();

// RBAC over the Roles, ClusterRoles, RoleBindings and ClusterRoleBindings in `store`
// (borrowed, outlives the authorizer), system:masters always allowed. The bindings are
// indexed by subject in a snapshot rebuilt when an RBAC object changes (the authorizer
// watches the store), so a decision is a few map lookups. Constructor does no I/O; the first
// authorize() builds the snapshot.
std::unique_ptr<Authorizer> newRbacAuthorizer(Store& store);

// The request's attributes for `user`/`groups`: resource requests (verb from the method,
// list/watch/deletecollection without a name, watch for ?watch=true and /watch/ paths, name
// from a metadata.name field selector) and non-resource requests (verb = lower-cased method).
AuthorizationAttributes requestAttributes(const kube::HttpRequest& req, const RequestInfo& ri,
                                          const std::string& user,
                                          const std::vector<std::string>& groups);

// Upstream's forbidden message without the Status prefix: User "u" cannot list resource
// "pods" in API group "" in the namespace "ns" / at the cluster scope / cannot get path "/x".
std::string forbiddenMessage(const AuthorizationAttributes& a);

// The whole Status message of a denial (kube::Error Forbidden): `pods is forbidden: ...`,
// `pods "x" is forbidden: ...`, `forbidden: ...` for non-resource paths; `reason` appended.
kube::Error forbiddenError(const AuthorizationAttributes& a, const std::string& reason);

}  // namespace strait::minicluster
