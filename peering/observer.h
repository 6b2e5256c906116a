#pragma once
// The consumer side's upward hook (ARCHITECTURE "Layers": peering/ must not include vnode/ or
// reflection/). ConsumerController announces each peering to a PeeringObserver when it
// becomes usable (credential loaded and a first heartbeat answered) and when it ends (the
// ForeignCluster is gone, i.e. unpeer, or the provider revoked it). cmd/agent_cmd.cpp sets
// the observer; vnode/ implements it with one virtual kubelet per peering.
//
// A peering that merely stops answering is NOT ended: its virtual node turns NotReady through
// the reflection stream's health instead, and comes back by itself.

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/thread_annotations.h"
#include "peering/network_state.h"
#include "peering/policy.h"
#include "peering/pools.h"
#include "peering/summary.h"
#include "peering/transport.h"

namespace strait::peering {

// One usable peering as seen from the consumer. Thread-safe: ConsumerController updates it
// from the agent's loop thread; observers read it from any thread. Accessors return copies.
class LivePeering {
 public:
  LivePeering(std::string consumerId, std::string providerId, std::string providerName,
              std::string tenantNamespace)
      : consumerId_(std::move(consumerId)),
        providerId_(std::move(providerId)),
        providerName_(std::move(providerName)),
        tenantNamespace_(std::move(tenantNamespace)) {}

  const std::string& consumerId() const { return consumerId_; }  // this cluster
  const std::string& providerId() const { return providerId_; }
  // The provider's ForeignCluster name (a DNS label: the virtual node is strait-<name>).
  const std::string& providerName() const { return providerName_; }
  const std::string& tenantNamespace() const { return tenantNamespace_; }

  // The current mTLS client to the provider agent. It is replaced when the certificate is
  // renewed: take it anew for each connection rather than keeping it.
  std::shared_ptr<RpcClient> rpc() const {
    base::MutexLock l(mu_);
    return rpc_;
  }
  // The grant and provider summary of the last answered heartbeat.
  ResourceMap grant() const {
    base::MutexLock l(mu_);
    return grant_;
  }
  ProviderSummary summary() const {
    base::MutexLock l(mu_);
    return summary_;
  }
  // The pools' grants of the last answered heartbeat (pools.h), in the order the consumer
  // asked for them; empty for a peering without pools (one virtual node).
  std::vector<PoolGrant> pools() const {
    base::MutexLock l(mu_);
    return pools_;
  }
  // One pool's grant; nullopt when the last heartbeat did not carry it.
  std::optional<PoolGrant> pool(const std::string& name) const {
    base::MutexLock l(mu_);
    for (const PoolGrant& g : pools_) {
      if (g.name == name) return g;
    }
    return std::nullopt;
  }

  // The tunnel's condition (TunnelUp) and the provider's pod IP `ip` as this cluster reaches
  // it (network_state.h toLocalView); without a network state: not configured / unchanged.
  TunnelCondition tunnel() const {
    const NetworkState* n = network();
    return n ? n->condition(providerId_) : TunnelCondition();
  }
  std::string localPodIp(const std::string& ip) const {
    const NetworkState* n = network();
    return n ? n->toLocalView(providerId_, ip) : ip;
  }

  // Called by ConsumerController.
  void setNetwork(const NetworkState* network) {
    base::MutexLock l(mu_);
    network_ = network;
  }
  void setRpc(std::shared_ptr<RpcClient> rpc) {
    base::MutexLock l(mu_);
    rpc_ = std::move(rpc);
  }
  void setHeartbeat(ResourceMap grant, ProviderSummary summary,
                    std::vector<PoolGrant> pools = {}) {
    base::MutexLock l(mu_);
    grant_ = std::move(grant);
    summary_ = std::move(summary);
    pools_ = std::move(pools);
  }

 private:
  const std::string consumerId_, providerId_, providerName_, tenantNamespace_;
  mutable base::Mutex mu_;
  const NetworkState* network() const {
    base::MutexLock l(mu_);
    return network_;
  }
  std::shared_ptr<RpcClient> rpc_ GUARDED_BY(mu_);
  const NetworkState* network_ GUARDED_BY(mu_) = nullptr;  // borrowed; outlives the peering
  ResourceMap grant_ GUARDED_BY(mu_);
  ProviderSummary summary_ GUARDED_BY(mu_);
  std::vector<PoolGrant> pools_ GUARDED_BY(mu_);
};

// Implemented above peering/. Both methods are called from the agent's loop thread, in order
// (up, down, up... for one provider), and must return quickly: start or stop work on threads
// of your own. Thread-safety of the implementation: only that thread calls it.
class PeeringObserver {
 public:
  virtual ~PeeringObserver() = default;
  // The peering with peering->providerId() is usable. `peering` stays updated until
  // peeringDown for the same provider.
  virtual void peeringUp(std::shared_ptr<LivePeering> peering) = 0;
  // The peering ended (unpeer or revoked): stop using it.
  virtual void peeringDown(const std::string& providerId) = 0;
};

}  // namespace strait::peering
