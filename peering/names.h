#pragma once
// Names and labels Strait puts on the Kubernetes objects it owns. Every object created for a
// peering carries kLabelManagedBy=kManagedByValue and kLabelRemoteCluster=<the other side's
// cluster ID>, so "nothing left behind" is one label query.

#include <cctype>
#include <string>
#include <string_view>

namespace strait::peering {

inline constexpr std::string_view kSystemNamespace = "strait-system";
inline constexpr std::string_view kIdentitySecret = "strait-identity";
// ConfigMap the agent writes with its advertised endpoint (read by `strait token`).
inline constexpr std::string_view kAgentConfigMap = "strait-agent";

inline constexpr std::string_view kLabelManagedBy = "strait.io/managed-by";
inline constexpr std::string_view kManagedByValue = "strait";
inline constexpr std::string_view kLabelRemoteCluster = "strait.io/remote-cluster-id";
inline constexpr std::string_view kLabelComponent = "strait.io/component";
// On a used token's Secret: the consumer that used it, and when.
inline constexpr std::string_view kAnnotationUsedBy = "strait.io/used-by";
inline constexpr std::string_view kAnnotationUsedAt = "strait.io/used-at";
// On a token Secret the consumer stores: when it was issued.
inline constexpr std::string_view kAnnotationIssuedAt = "strait.io/issued-at";

// On every object reflected into a provider: the consumer that owns it and the uid of the
// local object it mirrors (one remote object per local uid), and where it comes from.
inline constexpr std::string_view kLabelOriginClusterId = "strait.io/origin-cluster-id";
inline constexpr std::string_view kLabelOriginUid = "strait.io/origin-uid";
inline constexpr std::string_view kAnnotationOriginNamespace = "strait.io/origin-namespace";
inline constexpr std::string_view kAnnotationOriginName = "strait.io/origin-name";
// On a consumer Service: "disabled" keeps it (and its EndpointSlices) out of the providers.
inline constexpr std::string_view kAnnotationReflection = "strait.io/reflection";
inline constexpr std::string_view kReflectionDisabled = "disabled";
// endpointslice.kubernetes.io/managed-by of the EndpointSlices Strait reflects (the
// provider's EndpointSlice controller leaves slices managed by another value alone).
inline constexpr std::string_view kEndpointSliceManagedByValue = "endpointslice.strait.io";

// On a provider Service: the consumers (comma-separated cluster IDs) it is exported to
// (`strait expose service`). On the copy a consumer makes of it, kLabelImportedFrom names the
// provider; its kLabelOriginUid is the provider Service's (or EndpointSlice's) uid.
inline constexpr std::string_view kAnnotationExportTo = "strait.io/export-to";
inline constexpr std::string_view kLabelImportedFrom = "strait.io/imported-from";

// The taint put on virtual nodes and the toleration offloaded Pods carry.
inline constexpr std::string_view kVirtualNodeTaintKey = "virtual-node.strait.io/not-allowed";
// On the CSR of a virtual node's kubelet serving certificate: which virtual node asks.
inline constexpr std::string_view kLabelVirtualNode = "strait.io/virtual-node";

// On a consumer Namespace: offloaded ("true"), to which providers (comma-separated names;
// absent = any), with which naming of its remote namespace (default or same).
inline constexpr std::string_view kLabelOffloaded = "strait.io/offloaded";
inline constexpr std::string_view kAnnotationOffloadProviders = "strait.io/offload-providers";
inline constexpr std::string_view kAnnotationNamespaceNaming = "strait.io/namespace-naming";

// ForeignCluster custom resource (cluster-scoped).
inline constexpr std::string_view kFcGroup = "strait.io";
inline constexpr std::string_view kFcVersion = "v1alpha1";
inline constexpr std::string_view kFcApiVersion = "strait.io/v1alpha1";
inline constexpr std::string_view kFcPlural = "foreignclusters";
inline constexpr std::string_view kFcKind = "ForeignCluster";

// Roles a ForeignCluster records: what the *remote* cluster is to us.
inline constexpr std::string_view kRoleProvider = "Provider";
inline constexpr std::string_view kRoleConsumer = "Consumer";

// Organization put in peering client certificates.
inline constexpr std::string_view kConsumerOrganization = "strait:consumers";

inline std::string tenantNamespace(const std::string& consumerId) {
  return "strait-tenant-" + consumerId;
}
// Name of the agent's TLS server identity (a DNS SAN); clients override the target name to
// it, so certificates never depend on the address a cluster is reached at.
inline std::string agentServerName(const std::string& clusterId) {
  return "agent." + clusterId + ".strait";
}
inline std::string tokenSecretName(const std::string& tokenId) { return "strait-token-" + tokenId; }
inline std::string credentialSecretName(const std::string& providerId) {
  return "strait-credential-" + providerId;
}
inline std::string revocationName(const std::string& consumerId) {
  return "strait-revoked-" + consumerId;
}

// A DNS-1123 label (ForeignCluster name) from a cluster name: lower case, other characters
// as '-', at most 40 characters, "cluster" if nothing is left.
inline std::string dnsLabel(const std::string& name) {
  std::string out;
  for (char c : name) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += (std::isalnum(static_cast<unsigned char>(l)) || l == '-') ? l : '-';
  }
  while (!out.empty() && out.front() == '-') out.erase(out.begin());
  if (out.size() > 40) out.resize(40);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "cluster" : out;
}

}  // namespace strait::peering
