#pragma once
// Files a kubelet writes for each Pod of the process runtime (private to minicluster/): the
// resolv.conf of its dnsPolicy and dnsConfig, the /etc/hosts with its hostAliases, and the
// ServiceAccount token of a projected serviceAccountToken volume. Pure functions.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/status.h"

namespace strait::minicluster {

// The resolv.conf of `pod` as the kubelet builds it: ClusterFirst (the cluster DNS server,
// the namespace's search domains, ndots:5, then the host's search domains),
// ClusterFirstWithHostNet (the same for hostNetwork Pods), Default (`hostResolvConf`, the
// node's), None (only dnsConfig); dnsConfig's nameservers and searches are appended without
// duplicates and its options merged by name (the Pod's value wins). nullopt when the Pod
// uses the node's file unchanged (a hostNetwork Pod with ClusterFirst or Default and no
// dnsConfig).
std::optional<std::string> podResolvConfFor(const nlohmann::json& pod, const std::string& hostResolvConf);

// The kubelet's managed /etc/hosts: localhost entries, the Pod's IP with its hostname (and
// FQDN when it has a subdomain), then the hostAliases.
std::string podHostsFile(const nlohmann::json& pod, const std::string& podIP);

// What a ServiceAccount token says: who, for whom, for how long, bound to which Pod.
struct ServiceAccountTokenClaims {
  std::string ns, serviceAccount;
  std::string podName, podUid, nodeName;  // "" when not bound to a Pod
  std::vector<std::string> audiences;      // empty = the API server's issuer
  int64_t expirationSeconds = 3600;        // at least 600
};

// A JWT signed RS256 with `keyPem` holding `claims` as the API server's bound tokens do (iss
// https://kubernetes.default.svc.cluster.local, sub system:serviceaccount:<ns>:<name>, aud,
// iat, nbf, exp, kubernetes.io). Error when the key cannot be read or the signature fails.
kube::Result<std::string> signToken(const ServiceAccountTokenClaims& claims, const std::string& keyPem);

// A ServiceAccount token (a JWT signed RS256 with `keyPem`) for the Pod's service account,
// bound to the Pod (the claims of the API server's bound tokens: iss, sub, aud, iat, nbf,
// exp, kubernetes.io {namespace, pod, serviceaccount, node}). Error when the key cannot be
// read or the signature fails.
kube::Result<std::string> signServiceAccountToken(const nlohmann::json& pod, const std::string& nodeName,
                                                  const std::string& audience, int64_t expirationSeconds,
                                                  const std::string& keyPem);

// `s` with its $(VAR) references replaced from `vars` (an unknown one kept as written) and
// $$ read as one $, as the kubelet expands env values, command and args.
std::string expandEnvReferences(const std::string& s, const std::map<std::string, std::string>& vars);

}  // namespace strait::minicluster
