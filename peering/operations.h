#pragma once
// What the peering commands do, with the Kubernetes clients they are given: `strait token`,
// `strait peer`, `strait unpeer`, `strait status`. cmd/ only parses flags and prints.
// Each function blocks until done or its timeout; call from one thread.

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kube/client.h"
#include "peering/encoding.h"
#include "peering/policy.h"
#include "peering/pools.h"
#include "peering/pull.h"

namespace strait::peering {

// Issues a one-time token on the provider (whose agent must have started there): records
// the token (hash of its secret, expiry) in Secret strait-system/strait-token-<id> and
// returns the token text. Error NotFound when no agent has published its endpoint.
// With `pull` (pull mode), also records the pull target (pull.h) so that the provider agent
// starts dialing the consumer agent's link port.
kube::Result<SecretString> issueToken(kube::Client& provider, std::chrono::seconds ttl,
                                      const PullTarget* pull = nullptr);

// The pull target of this cluster's agent as a consumer (its link endpoint and CA
// fingerprint, from ConfigMap strait-system/strait-agent). NotFound if no agent started.
kube::Result<PullTarget> consumerPullTarget(kube::Client& consumer);

struct PeerRequest {
  std::string token;            // from `strait token` (or issued in-band)
  ResourceMap requested;        // cpu, memory, pods, extended resources
  std::chrono::milliseconds timeout{60000};
  bool pull = false;            // pull mode: the provider agent dials the consumer agent
  // Extra labels of the provider's virtual node (spec.virtualNodeLabels of the
  // ForeignCluster), e.g. for namespaces offloaded by a selector. Validated by the caller.
  std::map<std::string, std::string> virtualNodeLabels;
  // The peering's pools (spec.pools, pools.h): one virtual node each instead of one for the
  // whole peering. Validated by the caller.
  std::vector<PoolSpec> pools;
};

struct PeerResult {
  std::string name;             // ForeignCluster name (the provider's cluster name)
  std::string providerId;
  nlohmann::json granted;
};

// Asks the consumer agent to peer: stores the token in a Secret (replacing what a failed
// attempt for the same provider left), creates (or re-arms) the ForeignCluster, and waits
// until its Authenticated condition, written for this attempt's token, is True (success) or
// False with reason JoinRefused (the provider's refusal, Unauthorized) or
// EndpointUnreachable (nothing answers at the token's endpoint: connection refused, no
// route; Unavailable, within seconds). On any failure, including `timeout` expiring, the
// ForeignCluster and token Secret this attempt created are removed (a join that completed
// meanwhile is undone by the agent), so that the failure reported stays true.
kube::Result<PeerResult> requestPeering(kube::Client& consumer, const PeerRequest& req);

struct UnpeerRequest {
  std::string remoteName;        // ForeignCluster name, or
  std::string remoteClusterId;   // the provider's cluster ID (from --remote-kubeconfig)
  kube::Client* provider = nullptr;  // optional: the provider's API (for --force records)
  bool drain = false;
  bool force = false;
  std::chrono::milliseconds timeout{300000};
};

// Ends a peering from the consumer (one that never joined has nothing on the provider and is
// simply removed): refuses (listing them, leaving the virtual node as it
// was) if offloaded pods exist unless drain; cordons the virtual node; with drain evicts the
// offloaded pods and waits until they are gone on both sides; asks the provider agent to
// delete its side and revoke the credential, then deletes the consumer side. With force,
// an unreachable provider agent is tolerated: if `provider` is given a revocation record is
// left there for the provider agent to act on when it returns. Returns lines to print.
kube::Result<std::vector<std::string>> unpeer(kube::Client& consumer, const UnpeerRequest& req);

// The ForeignClusters as status rows (JSON objects with name, remote, clusterID, role, mode,
// connected, latencyMs, tunnel, granted, used, virtualNodeReady, authenticated, message, and
// the tunnel's tunnelReason, tunnelMessage, localCIDR, localCIDRSeenThere, remoteCIDR,
// remoteCIDRSeenHere, remapped, remoteEndpoint, remotePublicKey, latestHandshakeTime, rxBytes,
// txBytes, tunnelLatencyMs: null when unknown; pools: status.pools, each pool's name,
// nodeName, granted, used and refusal).
kube::Result<nlohmann::json> peeringStatus(kube::Client& cluster);
// The rows as an aligned text table.
std::string statusTable(const nlohmann::json& rows);

// The cluster ID the agent of this cluster published (NotFound if no agent started).
kube::Result<std::string> agentClusterId(kube::Client& cluster);

}  // namespace strait::peering
