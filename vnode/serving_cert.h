#pragma once
// The virtual kubelet's serving certificate, obtained like a kubelet's (server TLS
// bootstrap): a CertificateSigningRequest in the consumer cluster for signer
// kubernetes.io/kubelet-serving, subject CN=system:node:<node> O=system:nodes, the
// address it serves on as IP subjectAltName (names as DNS subjectAltNames), usages digital
// signature, key encipherment, server auth. Clusters do not approve kubelet-serving requests
// by themselves (kube-controller-manager approves only client certificates), so with
// `approve` the request is approved through the approval subresource as a cluster admin
// would, then the certificate the signer writes in status.certificate is awaited.

#include <chrono>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/pki.h"

namespace strait::vnode {

struct ServingCertRequest {
  std::string nodeName;
  std::vector<std::string> ips;       // IP subjectAltNames (at least one IP or DNS name)
  std::vector<std::string> dnsNames;  // DNS subjectAltNames
  bool approve = true;                // approve it ourselves (needs the right to)
  std::chrono::seconds expiration{365L * 24 * 3600};
  std::chrono::milliseconds timeout{30000};  // for the signer to issue it
  std::chrono::milliseconds pollInterval{100};
};

// Creates the CSR (generateName csr-), approves it if asked, waits for the certificate.
// Returns the key and the certificate (PEM). Errors: Invalid for a bad request (no SANs, bad
// IP), Forbidden when the signer denied or failed it (with its reason and message),
// ServerTimeout when no certificate came within the timeout, and the API server's errors.
// Blocks; thread-safe.
kube::Result<kube::KeyPair> requestServingCertificate(kube::Client& consumer,
                                                      const ServingCertRequest& req);

}  // namespace strait::vnode
