#pragma once
// User impersonation (upstream k8s.io/apiserver/pkg/endpoints/filters/impersonation.go): the
// headers Impersonate-User, Impersonate-Group (repeatable), Impersonate-Uid and
// Impersonate-Extra-<key> make a request act as another identity when the caller may
// `impersonate` each part: users (or serviceaccounts in their namespace for
// system:serviceaccount:NS:NAME), groups, uids and userextras/<key> (authentication.k8s.io).
//
// Thread-safe: pure apart from the authorizer calls.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kube/http_server.h"
#include "kube/status.h"
#include "minicluster/authorizer.h"

namespace strait::minicluster {

// An authenticated identity (upstream user.Info).
struct Identity {
  std::string user;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
};

// The identity `req` was authenticated as, with system:authenticated added for a named user;
// system:anonymous in system:unauthenticated when there is no user.
Identity authenticatedIdentity(const kube::HttpRequest& req);

// The identity `caller` acts as: nullopt when `req` carries no Impersonate-* header.
// Errors: BadRequest for groups, uid or extras without Impersonate-User; Forbidden with
// upstream's message (`users "bob" is forbidden: User "alice" cannot impersonate resource
// "users" in API group "" at the cluster scope`) for the first part the caller may not
// impersonate.
kube::Result<std::optional<Identity>> impersonatedIdentity(const kube::HttpRequest& req,
                                                           const Identity& caller,
                                                           const Authorizer& authorizer);

}  // namespace strait::minicluster
