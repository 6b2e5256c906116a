#pragma once
// Provider policy: how much of the provider's capacity consumers may have.
//
// One budget is shared by all consumers: by default `share` of the provider's free
// allocatable (allocatable of Ready, schedulable nodes minus requests of the pods bound to
// them), or an explicit budget. Each consumer may in addition be capped. A grant is
// min(requested, cap, budget - grants of the other consumers), never negative, so the sum
// of grants never exceeds the budget. Resources are in kube::Quantity (exact arithmetic).
//
// Rounding: cpu keeps millicores; every other resource (memory, pods, nvidia.com/gpu, ...)
// is rounded down to whole units, except that a share of a whole unit that would round to
// 0 keeps 1 unit (so 90% of 1 GPU lends the GPU instead of nothing, cf. liqo#1035).
// Pure functions; safe from any thread.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kube/quantity.h"
#include "kube/status.h"

namespace strait::peering {

using ResourceMap = std::map<std::string, kube::Quantity>;

struct PolicyConfig {
  double share = 0.5;          // of free allocatable, in (0, 1]
  ResourceMap explicitBudget;  // when non-empty, the budget (share ignored)
  ResourceMap perConsumerCap;  // resources absent here are not capped
};

// Parses "cpu=8,memory=16Gi,nvidia.com/gpu=2". Error (Invalid) naming the bad item.
kube::Result<ResourceMap> parseResourceArg(const std::string& text);
std::string formatResources(const ResourceMap& r);

// Free allocatable from a NodeList and a PodList (JSON items). Nodes that are not Ready or
// are unschedulable are skipped; pods in phase Succeeded/Failed are not counted.
ResourceMap freeAllocatable(const nlohmann::json& nodes, const nlohmann::json& pods);
// The node counts in freeAllocatable: Ready and not unschedulable.
bool nodeUsable(const nlohmann::json& node);
// Sum of container requests (max with init containers, as the scheduler counts) of the
// non-terminal pods in the list; "pods" counts the pods.
ResourceMap podRequests(const nlohmann::json& pods);

// The budget for `free` under `config`.
ResourceMap budgetFor(const ResourceMap& free, const PolicyConfig& config);
// Further bounds on one grant, for a consumer's pools (pools.h).
struct GrantLimits {
  // When set: at most this much of each resource (0 of a resource absent here), the share
  // of the provider nodes a pool's selector matches.
  std::optional<ResourceMap> nodeShare;
  // What the same consumer already holds (its earlier pools): counted against its cap.
  ResourceMap consumerGranted;
};

// The grant for one consumer or one of its pools: `othersGranted` is the sum of every other
// grant taken from the same budget (other consumers, and the consumer's earlier pools).
// min(requested, budget - othersGranted, cap - limits.consumerGranted, limits.nodeShare),
// never negative.
ResourceMap grantFor(const ResourceMap& requested, const ResourceMap& budget,
                     const ResourceMap& othersGranted, const PolicyConfig& config,
                     const GrantLimits& limits = {});

// a + b per resource (union of keys).
ResourceMap addResources(const ResourceMap& a, const ResourceMap& b);

// OK when `granted` lends some CPU, memory or Pods; Forbidden naming the three otherwise (a
// peering that lends nothing would make a virtual node that can never run a Pod).
kube::Status checkGrantNotEmpty(const ResourceMap& granted);

}  // namespace strait::peering
