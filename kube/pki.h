#pragma once
// Certificate authority helpers (minicluster CA, peering identities) (OpenSSL 3): a self-signed CA, a server
// certificate for the API server, and client certificates (CN = user, O = groups).

#include <chrono>
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

// signCsr with a validity in seconds (short-lived peering client certificates).
kube::Result<std::string> signCsrFor(const KeyPair& ca, const std::string& csrPem, bool server,
                                     std::chrono::seconds validity);

// What a PEM certificate request asks for (for signers that check it before signing).
struct CsrInfo {
  std::string commonName;
  std::vector<std::string> organizations;
  std::vector<std::string> dnsNames;
  std::vector<std::string> ips;
  bool otherSans = false;  // email, URI or other subjectAltName kinds present
};
// Parses a PEM CSR and verifies its self-signature. Error (Invalid) naming what is wrong.
kube::Result<CsrInfo> parseCsr(const std::string& csrPem);

// A new EC P-256 key and a PEM PKCS#10 request for it (subject O=organizations, CN=commonName).
struct KeyAndCsr {
  std::string keyPem;
  std::string csrPem;
};
// With `dnsNames`/`ips`, the request carries them as a subjectAltName extension (a serving
// certificate's names); Invalid for a string that is not an IP address.
kube::Result<KeyAndCsr> makeKeyAndCsr(const std::string& commonName,
                                      const std::vector<std::string>& organizations,
                                      const std::vector<std::string>& dnsNames = {},
                                      const std::vector<std::string>& ips = {});

// What peering needs to know about a PEM certificate. Error (Invalid) if it does not parse.
struct CertificateInfo {
  std::string commonName;
  std::string issuerCommonName;
  std::chrono::system_clock::time_point notBefore;
  std::chrono::system_clock::time_point notAfter;
  std::string sha256Fingerprint;  // lowercase hex of SHA-256 over the DER encoding
};
kube::Result<CertificateInfo> certificateInfo(const std::string& certPem);

// OK if `certPem`'s signature verifies with `caPem`'s public key; Unauthorized if not;
// Invalid if either does not parse. Checks the signature only, not validity dates.
kube::Status verifyIssuedBy(const std::string& caPem, const std::string& certPem);

// Drains the calling thread's OpenSSL error queue into one "; "-separated string.
std::string opensslErrors();

// Writes a kubeconfig (YAML, certificate data inlined) for `user` to `path`, mode 0600.
kube::Status writeKubeconfig(const std::string& path, const std::string& clusterName,
                             const std::string& serverUrl, const std::string& caPem,
                             const std::string& userName, const KeyPair& client);

}  // namespace strait::kube
