// Provider summary (see summary.h).
#include "peering/summary.h"

#include <algorithm>
#include <set>

#include "kube/json_access.h"
#include "kube/object.h"

namespace strait::peering {

using nlohmann::json;

namespace {

std::string nodeNameOfPod(const json& pod) {
  return kube::stringOf(kube::child(pod, "spec"), "nodeName");
}

kube::Quantity cpuOf(const ResourceMap& m) {
  auto it = m.find("cpu");
  return it == m.end() ? kube::Quantity() : it->second;
}

}  // namespace

ProviderSummary summarizeProvider(const json& nodes, const json& pods) {
  std::map<std::string, ResourceMap> usedByNode;
  if (pods.is_array()) {
    for (const json& p : pods) {
      std::string n = nodeNameOfPod(p);
      if (n.empty()) continue;
      ResourceMap r = podRequests(json::array({p}));  // terminal Pods request nothing
      if (!r.empty()) usedByNode[n] = addResources(usedByNode[n], r);
    }
  }
  return summarizeProviderUsage(nodes, usedByNode);
}

ProviderSummary summarizeProviderUsage(const json& nodes,
                                       const std::map<std::string, ResourceMap>& usedByNode) {
  ProviderSummary s;
  if (!nodes.is_array()) return s;
  std::map<std::string, std::set<std::string>> topology;
  for (const json& node : nodes) {
    if (!node.is_object()) continue;
    const std::string name = kube::getName(node);
    ResourceMap free = freeAllocatable(json::array({node}), json::array());
    if (free.empty()) continue;  // not Ready or unschedulable
    if (auto used = usedByNode.find(name); used != usedByNode.end()) {
      free = subtractResources(free, used->second);
    }
    s.pooledFree = addResources(s.pooledFree, free);
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
                     return cpuOf(b.free) < cpuOf(a.free);
                   });
  return s;
}

ResourceMap subtractResources(const ResourceMap& a, const ResourceMap& b) {
  ResourceMap out = a;
  for (const auto& [k, v] : b) {
    auto it = out.find(k);
    if (it == out.end()) continue;
    kube::Result<kube::Quantity> left = it->second.sub(v);
    it->second = left.ok() && left->sign() > 0 ? *left : kube::Quantity();
  }
  return out;
}

void resourcesToProto(const ResourceMap& r, v1::ResourceList* out) {
  for (const auto& [k, v] : r) (*out->mutable_items())[k] = v.toString();
}

ResourceMap resourcesFromProto(const v1::ResourceList& l) {
  ResourceMap out;
  for (const auto& [k, v] : l.items()) {
    kube::Result<kube::Quantity> q = kube::Quantity::parse(v);
    if (q.ok() && q->sign() >= 0) out[k] = *q;
  }
  return out;
}

void summaryToProto(const ProviderSummary& s, v1::ProviderSummary* out) {
  resourcesToProto(s.pooledFree, out->mutable_pooled_free());
  for (const ProviderNodeFree& n : s.nodes) {
    v1::NodeFree* nf = out->add_nodes();
    nf->set_name(n.name);
    resourcesToProto(n.free, nf->mutable_free());
  }
  for (const auto& [k, v] : s.topologyLabels) (*out->mutable_topology_labels())[k] = v;
}

ProviderSummary summaryFromProto(const v1::ProviderSummary& in) {
  ProviderSummary s;
  s.pooledFree = resourcesFromProto(in.pooled_free());
  for (const v1::NodeFree& n : in.nodes()) {
    s.nodes.push_back({n.name(), resourcesFromProto(n.free())});
  }
  for (const auto& [k, v] : in.topology_labels()) s.topologyLabels[k] = v;
  return s;
}

}  // namespace strait::peering
