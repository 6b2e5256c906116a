#pragma once
// What a virtual node advertises: capacity and allocatable = the smaller of the grant and the
// pooled free allocatable of the provider's Ready, schedulable nodes (peering/policy.h
// computes "free"), per resource, exactly (kube::Quantity; extended resources such as
// nvidia.com/gpu carried as they are). The provider's nodes are also kept one by one, so a
// Pod larger than every single provider node is refused with a clear reason instead of
// "fitting" the pooled sum (the bin-packing loss of pooling several nodes into one).
// Pure functions and value types; thread-safe.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "peering/policy.h"
#include "peering/summary.h"

namespace strait::vnode {

using peering::ResourceMap;

// The provider summary is computed by the provider agent and carried in heartbeats
// (peering/summary.h); one implementation, named here for the vnode's code.
using peering::ProviderNodeFree;
using peering::ProviderSummary;
using peering::summarizeProvider;

// Allocatable of the virtual node: for each granted resource min(grant, pooled free) (0 when
// the provider has none free). When the grant is empty everything free is advertised. "pods"
// absent from a non-empty grant is taken from the pooled free count (a node without a pods
// capacity accepts no Pod at all).
ResourceMap virtualAllocatable(const ResourceMap& grant, const ResourceMap& pooledFree);

// The requests of one Pod as the scheduler counts them (containers summed, init containers
// max'ed, "pods" = 1).
ResourceMap podRequests(const nlohmann::json& pod);

// nullopt when `requests` fits at least one provider node; otherwise a one-line reason
// naming the largest node and the resource that does not fit, e.g. "pod requests cpu=12,
// more than any provider node offers (largest free: node-3 with cpu=8)". Resources the
// provider's nodes do not have at all are reported as 0 free.
std::optional<std::string> doesNotFitReason(const ResourceMap& requests,
                                            const ProviderSummary& provider);

}  // namespace strait::vnode
