#include "vnode/capacity.h"

#include <algorithm>
#include <set>

#include "kube/object.h"

namespace strait::vnode {

using nlohmann::json;

namespace {

kube::Quantity get(const ResourceMap& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? kube::Quantity() : it->second;
}

}  // namespace

ResourceMap virtualAllocatable(const ResourceMap& grant, const ResourceMap& pooledFree) {
  if (grant.empty()) return pooledFree;
  ResourceMap out;
  for (const auto& [name, granted] : grant) {
    kube::Quantity free = get(pooledFree, name);
    kube::Quantity v = free < granted ? free : granted;
    if (v.sign() < 0) v = kube::Quantity();
    out[name] = v;
  }
  if (!grant.count("pods") && pooledFree.count("pods")) out["pods"] = pooledFree.at("pods");
  return out;
}

ResourceMap podRequests(const json& pod) { return peering::podRequests(json::array({pod})); }

std::optional<std::string> doesNotFitReason(const ResourceMap& requests,
                                            const ProviderSummary& provider) {
  auto missingOn = [&](const ResourceMap& free) -> std::optional<std::string> {
    for (const auto& [name, q] : requests) {
      if (name == "pods" || q.sign() <= 0) continue;
      if (get(free, name) < q) return name;
    }
    return std::nullopt;
  };
  for (const ProviderNodeFree& n : provider.nodes) {
    if (!missingOn(n.free)) return std::nullopt;
  }
  ResourceMap shown = requests;
  shown.erase("pods");
  std::string reason = "pod requests " + peering::formatResources(shown);
  if (provider.nodes.empty()) return reason + ", but the provider has no Ready schedulable node";
  const ProviderNodeFree& largest = provider.nodes.front();
  std::string short_ = *missingOn(largest.free);
  return reason + ", more than any single provider node offers (" + short_ +
         " does not fit; largest free: " + largest.name + " with " +
         peering::formatResources(largest.free) + ")";
}

}  // namespace strait::vnode
