#pragma once
// Certificate authority helpers (minicluster CA, peering identities) (OpenSSL 3): a self-signed CA, a server
// certificate for the API server, and client certificates (CN = user, O = groups).

#include <string>
#include <vector>

#include "kube/status.h"

namespace strait::kube {

struct KeyPair {
  std::string certPem;
  std::string keyPem;
};

// A self-signed CA (EC P-256) named `commonName`, valid for `days`.
kube::Result<KeyPair> makeCa(const std::string& commonName, int days = 3650);
// A certificate signed by `ca`. `dnsNames`/`ips` become subjectAltNames (server use);
// `organizations` become O= entries (client groups). `server` selects serverAuth vs
// clientAuth extended key usage.
kube::Result<KeyPair> issueCert(const KeyPair& ca, const std::string& commonName,
                                const std::vector<std::string>& organizations,
                                const std::vector<std::string>& dnsNames,
                                const std::vector<std::string>& ips, bool server,
                                int days = 365);
// Signs a PEM CSR with `ca` (CSR signing for certificates.k8s.io); the subject is kept.
kube::Result<std::string> signCsr(const KeyPair& ca, const std::string& csrPem, bool server,
                                  int days = 365);

// Drains the calling thread's OpenSSL error queue into one "; "-separated string.
std::string opensslErrors();

// Writes a kubeconfig (YAML, certificate data inlined) for `user` to `path`, mode 0600.
kube::Status writeKubeconfig(const std::string& path, const std::string& clusterName,
                             const std::string& serverUrl, const std::string& caPem,
                             const std::string& userName, const KeyPair& client);

}  // namespace strait::kube
