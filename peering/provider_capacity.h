#pragma once
// The provider's free capacity, kept current from watches of its Nodes and Pods instead of
// listing every Node and Pod for each heartbeat's summary (a LIST of 11,000 Pods, parsed and
// copied, took the provider agent past 1.6 GB).
//
// Two informers with slim caches: a Node keeps only its name, labels (pools select nodes by
// them), unschedulable flag, allocatable and Ready condition; a Pod only its key, node, container
// requests, phase and the labels naming the consumer and pool it runs for (tens of bytes as
// CBOR). Per Pod the tracker keeps the node it is bound to and what it requests (nothing for a
// terminal Pod); per node the sum of those requests, and per consumer and pool the sum over
// that consumer's Pods of the pool (in all and per node), updated on each add/update/delete.
// summary() and freeAllocatable() then cost a walk over the Nodes, and give what
// summarizeProvider() and peering::freeAllocatable() give for a LIST of the same Nodes and
// Pods; usedByPool() what a LIST of the consumer's pool Pods gives.
//
// Thread-safe. Constructor does no I/O; start() starts the watches (not restartable after
// stop()).

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "peering/policy.h"
#include "peering/pools.h"
#include "peering/summary.h"

namespace strait::peering {

// The Pod runs here for a consumer: created by the reflection stream (origin-cluster label)
// or by a peering (managed-by Strait and remote-cluster labels).
bool runsForAConsumer(const nlohmann::json& pod);

class ProviderCapacity {
 public:
  // `client` is borrowed and must outlive this object.
  explicit ProviderCapacity(kube::Client& client);
  ~ProviderCapacity();  // stop()
  ProviderCapacity(const ProviderCapacity&) = delete;
  ProviderCapacity& operator=(const ProviderCapacity&) = delete;

  // Starts watching Nodes and Pods. Call once.
  void start();
  // Stops both watches and joins their threads. Idempotent.
  void stop();
  // Both watches have listed once; until then summary() and freeAllocatable() are empty.
  bool hasSynced() const;
  bool waitForSync(std::chrono::milliseconds timeout) const;

  // summarizeProvider(Nodes, Pods) of the watched cluster.
  ProviderSummary summary() const;
  // summarizePool(Nodes, Pods, selector) of the watched cluster (pools.h), without the Pods
  // that run for consumers (as freeAllocatable()): the budget's view of a pool's nodes, what
  // grantPools takes a pool's node share from.
  ProviderSummary poolSummary(const NodeSelector& selector) const;
  // The summary consumer `consumerId` receives for its pool `pool`, whose nodes `selector`
  // matches: summarizePoolForCaller (pools.h) with every Pod bound to those nodes counted
  // (the provider's own and every consumer's) but that consumer's own Pods of that pool.
  ProviderSummary poolSummaryFor(const NodeSelector& selector, const std::string& consumerId,
                                 const std::string& pool) const;
  // What the non-terminal Pods reflected for `consumerId` (origin-cluster label) and labelled
  // for one of its pools (kLabelPool) request, bound to a node or not, by pool name: what a
  // LIST of them by those labels sums to. Empty when it has none.
  std::map<std::string, ResourceMap> usedByPool(const std::string& consumerId) const;
  // peering::freeAllocatable(Nodes, non-terminal Pods) of the watched cluster, leaving out
  // the Pods that run here for consumers (reflected, or created by a peering): their
  // resources are already covered by the consumers' grants, and counting them too would
  // shrink a consumer's grant as its own Pods arrive (with share S of free allocatable C, a
  // lone consumer would converge on C*S/(1+S) instead of C*S).
  ResourceMap freeAllocatable() const;
  // Pods tracked (bound to a node, or not yet bound and of a consumer's pool), for tests and
  // diagnostics.
  size_t podCount() const;

  // The informers' transforms: the fields the capacity is computed from, nothing else.
  static void slimNode(nlohmann::json& node);
  static void slimPod(nlohmann::json& pod);

 private:
  // The watched nodes whose labels `selector` matches (Node objects).
  nlohmann::json nodesMatching(const NodeSelector& selector) const;
  struct PodEntry {
    std::string node;
    ResourceMap requests;  // empty for a terminal Pod
    bool forConsumer = false;  // runs here for a consumer (reflected or peering-created)
    std::string consumer;      // a reflected Pod's origin cluster ID
    std::string pool;          // its kLabelPool; empty unless `consumer` is set
  };
  // What one consumer's Pods of one pool request.
  struct PoolUse {
    ResourceMap total;                          // bound to a node or not
    std::map<std::string, ResourceMap> byNode;  // the bound ones, by node
  };
  void observePod(const nlohmann::json& pod);
  void forgetPod(const std::string& key);
  void setLocked(const std::string& key, PodEntry e) REQUIRES(mu_);
  void subtractLocked(const PodEntry& e) REQUIRES(mu_);

  std::unique_ptr<kube::Informer> nodes_;
  std::unique_ptr<kube::Informer> pods_;

  mutable base::Mutex mu_;
  std::unordered_map<std::string, PodEntry> podsByKey_ GUARDED_BY(mu_);  // "ns/name"
  std::map<std::string, ResourceMap> usedByNode_ GUARDED_BY(mu_);
  // The same without the Pods that run for consumers (what the budget is taken from).
  std::map<std::string, ResourceMap> ownUsedByNode_ GUARDED_BY(mu_);
  // Consumer ID -> pool -> what its Pods of that pool request.
  std::map<std::string, std::map<std::string, PoolUse>> poolUse_ GUARDED_BY(mu_);
};

}  // namespace strait::peering
