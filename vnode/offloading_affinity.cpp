// The node affinity of offloaded Pods (see offloading_affinity.h).
#include "vnode/offloading_affinity.h"

#include "peering/names.h"
#include "vnode/node_builder.h"

namespace strait::vnode {

using nlohmann::json;

json nodeSelectorRequirements(const kube::LabelSelector& selector) {
  json out = json::array();
  for (const kube::LabelRequirement& r : selector.requirements()) {
    json e = {{"key", r.key}};
    switch (r.op) {
      case kube::SelectorOp::Equals:
      case kube::SelectorOp::DoubleEquals:
      case kube::SelectorOp::In:
        e["operator"] = "In";
        e["values"] = r.values;
        break;
      case kube::SelectorOp::NotEquals:
      case kube::SelectorOp::NotIn:
        e["operator"] = "NotIn";
        e["values"] = r.values;
        break;
      case kube::SelectorOp::Exists:
        e["operator"] = "Exists";
        break;
      case kube::SelectorOp::DoesNotExist:
        e["operator"] = "DoesNotExist";
        break;
      case kube::SelectorOp::GreaterThan:
        e["operator"] = "Gt";
        e["values"] = r.values;
        break;
      case kube::SelectorOp::LessThan:
        e["operator"] = "Lt";
        e["values"] = r.values;
        break;
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<json> offloadingAffinity(const json& spec, const Offloading& o) {
  using reflection::PodOffloadingStrategy;
  const bool chosen = !o.provider.empty() || !o.selector.empty();
  if (o.strategy == PodOffloadingStrategy::LocalAndRemote && !chosen) return std::nullopt;

  const json realNode = json::array(
      {{{"key", std::string(peering::kLabelRemoteCluster)}, {"operator", "DoesNotExist"}}});
  std::optional<json> virtualNodes;  // nullopt: no virtual node may be chosen
  if (!o.provider.empty()) {
    virtualNodes = json::array({{{"key", "kubernetes.io/hostname"},
                                 {"operator", "In"},
                                 {"values", json::array({virtualNodeName(o.provider)})}}});
  } else {
    virtualNodes = json::array({{{"key", std::string(kLabelType)},
                                 {"operator", "In"},
                                 {"values", json::array({std::string(kTypeVirtualKubelet)})}}});
    if (!o.selector.empty()) {
      kube::Result<kube::LabelSelector> sel = kube::LabelSelector::parse(o.selector);
      if (sel.ok()) {
        for (json& e : nodeSelectorRequirements(*sel)) virtualNodes->push_back(std::move(e));
      } else {
        virtualNodes.reset();
      }
    }
  }
  std::vector<json> branches;
  if (o.strategy != PodOffloadingStrategy::Remote) branches.push_back(realNode);
  if (o.strategy != PodOffloadingStrategy::Local && virtualNodes) branches.push_back(*virtualNodes);
  if (branches.empty()) {
    // Nothing may be chosen: a term no node satisfies (a key with In and no value is
    // invalid, so an impossible pair of expressions).
    branches.push_back(
        json::array({{{"key", std::string(kLabelType)},
                      {"operator", "In"},
                      {"values", json::array({std::string(kTypeVirtualKubelet)})}},
                     {{"key", std::string(kLabelType)}, {"operator", "DoesNotExist"}}}));
  }

  json affinity = spec.is_object() && spec.contains("affinity") && spec["affinity"].is_object()
                      ? spec["affinity"]
                      : json::object();
  json& na = affinity["nodeAffinity"];
  if (!na.is_object()) na = json::object();
  json& req = na["requiredDuringSchedulingIgnoredDuringExecution"];
  if (!req.is_object()) req = json::object();
  json existing = req.contains("nodeSelectorTerms") && req["nodeSelectorTerms"].is_array() &&
                          !req["nodeSelectorTerms"].empty()
                      ? req["nodeSelectorTerms"]
                      : json::array({json::object()});
  json terms = json::array();
  for (const json& t : existing) {
    for (const json& branch : branches) {
      json term = t.is_object() ? t : json::object();
      if (!term.contains("matchExpressions") || !term["matchExpressions"].is_array()) {
        term["matchExpressions"] = json::array();
      }
      for (const json& e : branch) term["matchExpressions"].push_back(e);
      terms.push_back(std::move(term));
    }
  }
  req["nodeSelectorTerms"] = std::move(terms);
  return affinity;
}

}  // namespace strait::vnode
