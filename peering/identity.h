#pragma once
// A cluster's peering identity: a random cluster ID, the cluster's name, a CA key pair
// (EC P-256, OpenSSL) that signs the client certificates of the clusters that peer with it
// and its own agent's server certificate, and a 32-byte key that protects its tokens.
// Stored as the Secret strait-system/strait-identity. Value type; not shared across threads.

#include <nlohmann/json.hpp>
#include <string>

#include "kube/pki.h"
#include "kube/status.h"
#include "peering/encoding.h"

namespace strait::peering {

struct ClusterIdentity {
  std::string clusterId;    // RFC 4122 version 4 UUID, lowercase
  std::string clusterName;  // as given by --cluster-name
  kube::KeyPair ca;         // keyPem is secret
  SecretString tokenKey;    // HMAC key for tokens (raw bytes)

  // A new identity with a fresh ID, CA and token key. Error only if OpenSSL fails.
  static kube::Result<ClusterIdentity> generate(const std::string& clusterName);
  // Reads the identity Secret (data base64-encoded as Kubernetes stores it). Error (Invalid)
  // naming the missing or broken key.
  static kube::Result<ClusterIdentity> fromSecret(const nlohmann::json& secret);
  // The Secret object (namespace strait-system, name strait-identity).
  nlohmann::json toSecret() const;
  // SHA-256 fingerprint of the CA certificate (what tokens pin).
  std::string caFingerprint() const;
};

// A version 4 UUID from the CSPRNG.
std::string newUuid();
// True if `id` looks like what newUuid() returns (the only cluster IDs accepted from peers,
// since they end up in namespace and object names).
bool validClusterId(const std::string& id);

}  // namespace strait::peering
