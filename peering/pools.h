#pragma once
// Pools: several virtual nodes per peering (Liqo's ResourceSlices). A consumer lists its
// pools in its ForeignCluster (spec.pools: name, requested, nodeSelector) and sends them in
// every heartbeat; the provider grants each pool from the nodes its selector matches, out of
// the one budget all consumers share (policy.h grantFor, with GrantLimits), and answers with
// each pool's grant, usage and a summary of the matching nodes only. The consumer runs one
// virtual node strait-<provider>-<pool> per granted pool.
//
// Command-line form of one pool (`strait peer --pool`, `strait pool add`):
//   NAME[:RESOURCES][@SELECTOR]
//   gpu:cpu=4,memory=8Gi,nvidia.com/gpu=1@strait.io/test-gpu=true,zone=a
// RESOURCES as parseResourceArg; SELECTOR is KEY=VALUE,... (node labels, all must match).
//
// Pure functions and value types; safe from any thread.

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kube/status.h"
#include "peering/policy.h"
#include "peering/summary.h"
#include "proto/strait/peering.pb.h"

namespace strait::peering {

using NodeSelector = std::map<std::string, std::string>;

// On a Pod the consumer reflects for one of its pools (bound to the pool's virtual node): the
// pool's name. The provider checks that the consumer has that pool and pins the Pod to the
// pool's nodes itself; it also counts each pool's usage by it.
inline constexpr std::string_view kLabelPool = "strait.io/peering-pool";

struct PoolSpec {
  std::string name;  // DNS label, unique in the peering
  ResourceMap requested;
  NodeSelector nodeSelector;  // empty: every usable provider node

  bool operator==(const PoolSpec&) const = default;
};

// The provider's answer for one pool.
struct PoolGrant {
  std::string name;
  ResourceMap granted;
  ResourceMap used;
  ProviderSummary summary;     // the matching nodes only; topologyLabels = their uniform labels
  std::string refusedReason;   // InvalidPool, NoMatchingNodes, NothingToLend; empty: granted
  std::string refusedMessage;

  bool operator==(const PoolGrant&) const = default;
};

// Invalid naming the pool when `name` is not a DNS-1123 label.
kube::Status validatePoolName(const std::string& name);
// The virtual node of a pool: strait-<provider>-<pool>.
std::string poolNodeName(const std::string& providerName, const std::string& pool);
// Invalid when the pool's node name is no valid node name and hostname label (at most 63
// characters), saying how long the pool name may be for this provider.
kube::Status validatePoolNodeName(const std::string& providerName, const std::string& pool);

// "KEY=VALUE,..." as a node selector. Invalid naming the bad item (not KEY=VALUE, invalid
// label key or value, key given twice).
kube::Result<NodeSelector> parseNodeSelectorArg(const std::string& text);
// NAME[:RESOURCES][@SELECTOR] (see above). Invalid naming the part that is wrong.
kube::Result<PoolSpec> parsePoolArg(const std::string& text);
// Names valid and unique. Invalid naming the first offender.
kube::Status validatePools(const std::vector<PoolSpec>& pools);

// spec.pools entries. fromJson: Invalid naming the entry (index and field) that is wrong.
nlohmann::json poolToJson(const PoolSpec& p);
kube::Result<std::vector<PoolSpec>> poolsFromJson(const nlohmann::json& list);
// spec.pools of a ForeignCluster (empty when absent).
kube::Result<std::vector<PoolSpec>> poolsOfForeignCluster(const nlohmann::json& fc);

// Wire forms. fromProto keeps whatever came (the provider validates; quantities that do not
// parse are dropped as in resourcesFromProto).
void poolToProto(const PoolSpec& p, v1::PoolRequest* out);
PoolSpec poolFromProto(const v1::PoolRequest& in);
void poolGrantToProto(const PoolGrant& g, v1::PoolGrant* out);
PoolGrant poolGrantFromProto(const v1::PoolGrant& in);

// True when `labels` carries every KEY=VALUE of `selector`.
bool selectorMatches(const NodeSelector& selector, const std::map<std::string, std::string>& labels);
// The labels every one of `nodes` carries with the same value, without those a virtual node
// sets itself or that name one node (kubernetes.io/hostname, kubernetes.io/os and /arch,
// beta.kubernetes.io/*, node-role.kubernetes.io/*, type, strait.io/remote-cluster-id).
// Empty for no nodes.
std::map<std::string, std::string> uniformLabels(
    const std::vector<std::map<std::string, std::string>>& nodes);

// The summary of the usable nodes (summary.h rule) matching `selector`, from the Nodes and
// what the Pods bound to each request; topologyLabels are the matching nodes' uniform labels.
ProviderSummary summarizePool(const nlohmann::json& nodes,
                              const std::map<std::string, ResourceMap>& usedByNode,
                              const NodeSelector& selector);

// The summary one consumer receives for one of its pools, by the rule of the peering's
// summary: the usable nodes matching `selector`, each with its allocatable minus every Pod
// bound there (`usedByNode`: the provider's own and every consumer's, whatever their pool)
// except the caller's own Pods of this pool (`callerUsedByNode`, keyed by node), which the
// pool's grant covers. So a consumer sees what the provider and the other consumers leave it,
// and a lone consumer its whole grant however many of its Pods run.
ProviderSummary summarizePoolForCaller(const nlohmann::json& nodes,
                                       const std::map<std::string, ResourceMap>& usedByNode,
                                       const std::map<std::string, ResourceMap>& callerUsedByNode,
                                       const NodeSelector& selector);

// Pins a Pod to a pool (the consumer's forge, and the provider's check below): labels it
// kLabelPool=<pool> and adds the pool's selector to spec.nodeSelector. Invalid when the Pod
// already selects another value for one of the selector's keys (it could never run there).
kube::Status pinPodToPool(nlohmann::json& pod, const PoolSpec& pool);
// The pool a Pod is labelled for ("" when none).
std::string podPool(const nlohmann::json& pod);
// True when the Pod's spec.nodeSelector carries every KEY=VALUE of `selector`.
bool podPinnedTo(const nlohmann::json& pod, const NodeSelector& selector);

// Grants every pool of one consumer, in order, from `budget` after `othersGranted` (the
// other consumers' grants): pool i gets grantFor(requested_i, budget, othersGranted + grants
// of pools 0..i-1, config, {nodeShare of its matching nodes, grants of pools 0..i-1}), so
// the sum over pools and consumers never exceeds the budget and the per-consumer cap holds
// for the pools together. `summaryOf` gives the summary of a pool's matching nodes in the
// budget's terms: without the Pods that run for consumers (ProviderCapacity::poolSummary),
// which their grants, already taken from `budget`, cover; counting them too would shrink a
// pool's share by the consumer's own Pods each time its pools are granted again. A pool
// with an invalid or repeated name, no matching node, or nothing to lend is refused (zero
// grant, reason and message).
std::vector<PoolGrant> grantPools(const std::vector<PoolSpec>& pools, const ResourceMap& budget,
                                  const ResourceMap& othersGranted, const PolicyConfig& config,
                                  const std::function<ProviderSummary(const PoolSpec&)>& summaryOf);
// The sum of the pools' grants.
ResourceMap sumGranted(const std::vector<PoolGrant>& grants);

}  // namespace strait::peering
