#pragma once
// The provider side of an agent: answers Join, RenewCertificate, Heartbeat, Unpeer and opens
// the reflection stream of the consumers that peer with this cluster.
//
// Authorization lives here, because the provider agent is the only thing a consumer's
// certificate can talk to (the consumer never gets credentials for the provider's API
// server): a call is served only for a consumer with an active peering; what a stream may
// write is bounded by the reflection (reflection/provider_applier.h).
//
// Thread-safe: gRPC calls arrive concurrently; tick() runs on the agent's loop thread.
// State below is protected by mu_; Kubernetes calls are made without holding it except where
// noted (grants are computed and recorded under the lock so that concurrent joins cannot
// both take the same budget).

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "kube/pod_security.h"
#include "peering/identity.h"
#include "peering/network.h"
#include "peering/policy.h"
#include "peering/pools.h"
#include "peering/provider_capacity.h"
#include "peering/summary.h"
#include "peering/transport.h"

namespace strait::peering {

struct ProviderConfig {
  PolicyConfig policy;
  std::chrono::seconds certTtl{3600};               // client certificates' validity
  std::chrono::milliseconds consumerLostAfter{5000};  // no heartbeat this long: Connected=False
  // The provider summary sent in heartbeats is recomputed (from the Node and Pod watches of
  // provider_capacity.h) at most this often; the virtual node's capacity follows the
  // provider within this + one heartbeat.
  std::chrono::milliseconds summaryMaxAge{500};
  // The Pod Security Standards level of the consumers' Pods here: the tenant namespace is
  // labelled pod-security.kubernetes.io/enforce=<level> (the reflection stream enforces it).
  kube::PodSecurityLevel podSecurity = kube::PodSecurityLevel::Baseline;
};

class ProviderService final : public PeeringHandler {
 public:
  // `identity` and `client` are borrowed and must outlive the service. No I/O here.
  ProviderService(const ClusterIdentity& identity, kube::Client& client, ProviderConfig config);

  // Loads the active peerings (ForeignClusters with role Consumer) and starts watching Nodes
  // and Pods for the capacity summary and grants. Call once, before serving.
  kube::Status load();
  // Periodic work: finishes clean-ups asked for by revocation records (left by
  // `strait unpeer --force` while this agent was down), marks silent consumers
  // disconnected, deletes expired unused token records. Never throws; logs failures.
  void tick(std::chrono::system_clock::time_point now);

  // Deletes everything this cluster holds for `consumerId` (labelled objects: namespaces,
  // ForeignCluster, token records, revocation record) and forgets the peering. Returns the
  // number of objects deleted.
  kube::Result<int> cleanupConsumer(const std::string& consumerId);

  kube::Status join(const Caller& caller, const v1::JoinRequest& req,
                    v1::JoinResponse* resp) override;
  kube::Status renewCertificate(const Caller& caller, const v1::RenewRequest& req,
                                v1::RenewResponse* resp) override;
  kube::Status heartbeat(const Caller& caller, const v1::HeartbeatRequest& req,
                         v1::HeartbeatResponse* resp) override;
  kube::Status unpeer(const Caller& caller, const v1::UnpeerRequest& req,
                      v1::UnpeerResponse* resp) override;
  // The tunnel negotiation of an active consumer (network.h); MethodNotAllowed without a
  // NetworkController.
  kube::Status network(const Caller& caller, const v1::NetworkRequest& req,
                       v1::NetworkResponse* resp) override;
  // Sets the tunnel's control plane (borrowed; must outlive the service): Network calls,
  // the heartbeat's network digest, TunnelUp in status writes, forget on clean-up. Call
  // before serving.
  void setNetwork(NetworkController* network);
  // A Pod IP of `consumerId` (real, in the consumer's pod CIDR) as this cluster's Pods reach
  // it through the tunnel: NetworkState::toLocalView (network_state.h); `ip` unchanged when
  // there is no tunnel or no remap. For the reflection stream (e.g. endpoints of consumer
  // Pods reflected here). Thread-safe; does not block.
  std::string consumerPodIpView(const std::string& consumerId, const std::string& ip);
  // OK when `caller` has an active peering; Forbidden otherwise. Thread-safe. For services
  // beside this one (the RemoteKubelet handler) that serve the same consumers.
  kube::Status authorizeConsumer(const Caller& caller);

  // Checks that the caller's peering is active, then runs the stream handler (set by the
  // composition root; reflection/stream_server.h). Without one: MethodNotAllowed.
  kube::Status stream(const Caller& caller, EventStream& s) override;

  using StreamHandler = std::function<kube::Status(const Caller&, EventStream&)>;
  // Sets the reflection stream handler. Thread-safe; streams already running keep theirs.
  void setStreamHandler(StreamHandler handler);
  // What `consumerId`'s Pods in this cluster request, as the reflection stream counts them
  // (reflection/pod_usage.h); nullopt while no stream of that consumer has its count.
  using UsageSource =
      std::function<std::optional<ResourceMap>(const std::string& consumerId)>;
  // Sets the source the heartbeat answers `used` from (without one, or when it has no
  // count, the consumer's Pods are listed). Thread-safe.
  void setUsageSource(UsageSource source);
  // True while `consumerId` has an active peering. Thread-safe.
  bool isActive(const std::string& consumerId);
  // Forbidden (saying which resource and by how much) if creating `pod` would take the
  // consumer's Pods past its grant, or when the Pod claims a pool (pools.h kLabelPool) the
  // consumer was not granted, is not pinned to that pool's nodes or exceeds the pool's
  // grant; Forbidden when the peering is not active. Thread-safe.
  kube::Status admitPod(const std::string& consumerId, const nlohmann::json& pod) {
    return checkGrant(consumerId, pod);
  }
  // As admitPod, with what the consumer's Pods already request summed by the caller (the
  // reflection stream keeps it from its informer: reflection/pod_usage.h), so that no Pod
  // is listed. Thread-safe.
  kube::Status admitPodWithUsage(const std::string& consumerId, const nlohmann::json& pod,
                                 const ResourceMap& used);

 private:
  struct Consumer {
    std::string fcName;
    std::string name;
    ResourceMap requested;
    ResourceMap granted;
    std::chrono::system_clock::time_point lastHeartbeat;
    std::chrono::system_clock::time_point lastStatusWrite;
    bool connected = true;
    std::string mode;            // push or pull (the ForeignCluster's spec.mode)
    TunnelCondition lastTunnel;  // as last written to the status
    // The pools of the last heartbeat and their grants (granted above is then their sum).
    std::vector<PoolSpec> pools;
    std::vector<PoolGrant> poolGrants;
  };
  // TunnelUp of `consumerId` now (not configured without a NetworkController).
  TunnelCondition tunnelCondition(const std::string& consumerId);

  void scanRevocations();
  void markSilentConsumers(std::chrono::system_clock::time_point now);
  void sweepExpiredTokens(std::chrono::system_clock::time_point now);
  kube::Status checkToken(const std::string& tokenText, const std::string& consumerId);
  kube::Status requireActive(const Caller& caller, Consumer* out);
  // From the capacity watches (Nodes and Pods listed until they have synced); called with
  // mu_ held, which serializes grant decisions.
  kube::Result<ResourceMap> computeGrant(const std::string& consumerId,
                                         const ResourceMap& requested) REQUIRES(mu_);
  // The shared budget now and the sum of the grants of every consumer but `consumerId`.
  kube::Result<ResourceMap> currentBudget() REQUIRES(mu_);
  ResourceMap grantedToOthers(const std::string& consumerId) REQUIRES(mu_);
  // Grants for `pools` (pools.h grantPools), each with the summary of its matching nodes.
  kube::Result<std::vector<PoolGrant>> computePoolGrants(const std::string& consumerId,
                                                         const std::vector<PoolSpec>& pools)
      REQUIRES(mu_);
  // Waits (at most 2 s) for the capacity watches' first list.
  void waitForCapacitySync();
  // The summary of the nodes `selector` matches (from the capacity watches) without the
  // Pods that run for consumers: what a pool's grant is taken from.
  ProviderSummary poolSummary(const NodeSelector& selector);
  // The summary `consumerId` receives for its pool `pool` (nodes `selector` matches): every
  // Pod on those nodes counted but the consumer's own of that pool
  // (ProviderCapacity::poolSummaryFor).
  ProviderSummary poolSummaryFor(const std::string& consumerId, const std::string& pool,
                                 const NodeSelector& selector);
  // What the consumer's Pods of each pool request (by the kLabelPool label), from the
  // capacity watches once they have synced, else listed.
  std::map<std::string, ResourceMap> usedByPool(const std::string& consumerId);
  // The same from a LIST of the consumer's Pods.
  std::map<std::string, ResourceMap> listUsedByPool(const std::string& consumerId);
  kube::Result<std::string> upsertForeignCluster(const std::string& consumerId,
                                                 const std::string& consumerName,
                                                 const ResourceMap& requested,
                                                 const ResourceMap& granted,
                                                 const std::string& endpoint,
                                                 const std::string& mode);
  void patchStatus(const std::string& fcName, const nlohmann::json& status);
  // Forbidden (saying which resource and by how much) if creating `pod` would take the
  // consumer's pods past its grant.
  kube::Status checkGrant(const std::string& consumerId, const nlohmann::json& pod);
  kube::Status checkGrantUsage(const std::string& consumerId, const nlohmann::json& pod,
                               const ResourceMap& granted, ResourceMap used);
  // For a Pod labelled for a pool (kLabelPool): Forbidden unless the consumer has that pool
  // granted, the Pod is pinned to the pool's selector (podPinnedTo) and fits what is left of
  // the pool's grant. OK for a Pod of no pool.
  kube::Status checkPool(const std::string& consumerId, const nlohmann::json& pod);
  // The provider summary, recomputed when older than config_.summaryMaxAge. Thread-safe.
  ProviderSummary currentSummary(std::chrono::system_clock::time_point now);

  const ClusterIdentity& identity_;
  kube::Client& client_;
  const ProviderConfig config_;

  // Used by tick() only (the agent's loop thread).
  std::chrono::system_clock::time_point lastRevocationScan_;
  std::chrono::system_clock::time_point lastTokenSweep_;

  base::Mutex mu_;  // also serializes grant decisions
  StreamHandler streamHandler_ GUARDED_BY(mu_);
  UsageSource usageSource_ GUARDED_BY(mu_);
  NetworkController* network_ GUARDED_BY(mu_) = nullptr;
  std::map<std::string, Consumer> consumers_ GUARDED_BY(mu_);  // by consumer cluster ID

  // Node and Pod watches; the summary and grants are computed from them once synced.
  ProviderCapacity capacity_;

  base::Mutex summaryMu_;  // held while computing
  ProviderSummary summary_ GUARDED_BY(summaryMu_);
  std::chrono::system_clock::time_point summaryAt_ GUARDED_BY(summaryMu_);
};

}  // namespace strait::peering
