#pragma once
// ServiceAccount token authentication (private to minicluster/; upstream's service account
// token authenticator for bound tokens): a request without a client certificate carrying
// `Authorization: Bearer <JWT>` signed RS256 by the key of `signerCertPem` (the tokens the
// process runtime's kubelets project, runtime_process_podfiles.h), with issuer
// https://kubernetes.default.svc.cluster.local and that audience, not expired, whose bound Pod
// (if any) still exists with the same uid, is handled as system:serviceaccount:<ns>:<name> in the groups
// system:serviceaccounts, system:serviceaccounts:<ns> and system:authenticated. Any other
// request is passed on unchanged (the next handler refuses what it cannot authenticate).
//
// Thread-safe after construction (the key is read-only; the store is read per request).

#include <memory>
#include <string>

#include "kube/http_server.h"
#include "kube/status.h"
#include "minicluster/store.h"

namespace strait::minicluster {

// The claims of a valid token, or an error saying why it is not (Unauthorized).
struct ServiceAccountIdentity {
  std::string ns, serviceAccount, podName, podUid;
};
kube::Result<ServiceAccountIdentity> verifyServiceAccountToken(const std::string& token,
                                                               const std::string& signerCertPem);

// `inner` and `store` must outlive the result. Error when `signerCertPem` holds no public key.
kube::Result<std::unique_ptr<kube::Handler>> newServiceAccountTokenAuth(const std::string& signerCertPem,
                                                                       Store& store, kube::Handler& inner);

}  // namespace strait::minicluster
