#pragma once
// The provider as a consumer's virtual node needs to see it: pooled free allocatable of the
// provider's Ready, schedulable nodes, each such node's free share, and its region/zone.
// Computed by the provider agent (from its NodeList and PodList) and carried to the consumer
// in every HeartbeatResponse; vnode/capacity.h turns it into the virtual node's capacity and
// the "does not fit any single node" reason. Pure functions and value types; thread-safe.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "peering/policy.h"
#include "proto/strait/peering.pb.h"

namespace strait::peering {

struct ProviderNodeFree {
  std::string name;
  ResourceMap free;  // allocatable minus requests of its non-terminal pods

  bool operator==(const ProviderNodeFree&) const = default;
};

struct ProviderSummary {
  // Sum over usable nodes. In a heartbeat answer, the caller's own usage is added back: its
  // grant covers its Pods.
  ResourceMap pooledFree;
  std::vector<ProviderNodeFree> nodes;  // usable nodes, largest free cpu first
  // topology.kubernetes.io/region and /zone when all usable nodes agree on one value
  // (a virtual node spanning several zones carries no zone label).
  std::map<std::string, std::string> topologyLabels;

  bool operator==(const ProviderSummary&) const = default;
};

// Summarizes a provider from its NodeList and PodList items (JSON arrays). Nodes that are
// not Ready or are unschedulable are left out (freeAllocatable's rule). Malformed items are
// skipped, never fatal.
ProviderSummary summarizeProvider(const nlohmann::json& nodes, const nlohmann::json& pods);
// The same from the Nodes and what the Pods bound to each node request (podRequests of that
// node's Pods, keyed by node name): the form a watch keeps current (provider_capacity.h).
ProviderSummary summarizeProviderUsage(const nlohmann::json& nodes,
                                       const std::map<std::string, ResourceMap>& usedByNode);

// a - b per resource of `a`, never below zero (a resource only in `b` is ignored).
ResourceMap subtractResources(const ResourceMap& a, const ResourceMap& b);

// Wire form (HeartbeatResponse.summary). fromProto drops quantities that do not parse or
// are negative (input from the network).
void summaryToProto(const ProviderSummary& s, v1::ProviderSummary* out);
ProviderSummary summaryFromProto(const v1::ProviderSummary& in);

// ResourceList <-> ResourceMap (canonical quantity strings; bad or negative ones dropped).
void resourcesToProto(const ResourceMap& r, v1::ResourceList* out);
ResourceMap resourcesFromProto(const v1::ResourceList& l);

}  // namespace strait::peering
