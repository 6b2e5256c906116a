#include "vnode/capacity.h"

#include <algorithm>
#include <set>

#include "kube/object.h"

namespace strait::vnode {

using nlohmann::json;

namespace {

std::string nodeNameOfPod(const json& pod) {
  if (!pod.is_object() || !pod.contains("spec") || !pod["spec"].is_object()) return {};
  auto it = pod["spec"].find("nodeName");
  return it != pod["spec"].end() && it->is_string() ? it->get<std::string>() : std::string();
}

kube::Quantity get(const ResourceMap& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? kube::Quantity() : it->second;
}

}  // namespace

ProviderSummary summarizeProvider(const json& nodes, const json& pods) {
  ProviderSummary s;
  if (!nodes.is_array()) return s;
  std::map<std::string, json> podsByNode;
  if (pods.is_array()) {
    for (const json& p : pods) {
      std::string n = nodeNameOfPod(p);
      if (n.empty()) continue;
      auto [it, inserted] = podsByNode.try_emplace(n, json::array());
      it->second.push_back(p);
    }
  }
  std::map<std::string, std::set<std::string>> topology;
  for (const json& node : nodes) {
    if (!node.is_object()) continue;
    const std::string name = kube::getName(node);
    auto podsIt = podsByNode.find(name);
    ResourceMap free = peering::freeAllocatable(
        json::array({node}), podsIt == podsByNode.end() ? json::array() : podsIt->second);
    if (free.empty()) continue;  // not Ready or unschedulable
    s.pooledFree = peering::addResources(s.pooledFree, free);
    auto labels = kube::getLabels(node);
    for (const char* key : {"topology.kubernetes.io/region", "topology.kubernetes.io/zone"}) {
      auto it = labels.find(key);
      topology[key].insert(it == labels.end() ? std::string() : it->second);
    }
    s.nodes.push_back({name, std::move(free)});
  }
  for (const auto& [key, values] : topology) {
    if (values.size() == 1 && !values.begin()->empty()) s.topologyLabels[key] = *values.begin();
  }
  std::stable_sort(s.nodes.begin(), s.nodes.end(),
                   [](const ProviderNodeFree& a, const ProviderNodeFree& b) {
                     return get(b.free, "cpu") < get(a.free, "cpu");
                   });
  return s;
}

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
