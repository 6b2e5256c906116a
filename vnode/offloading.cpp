// Namespace offloading marks (see offloading.h).
#include "vnode/offloading.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "kube/object.h"
#include "kube/selector.h"
#include "peering/foreign_cluster.h"
#include "peering/names.h"
#include "vnode/node_builder.h"

namespace strait::vnode {

using nlohmann::json;
namespace res = kube::resources;

namespace {

std::string annotation(const json& obj, std::string_view key) {
  const json* meta = obj.is_object() && obj.contains("metadata") ? &obj["metadata"] : nullptr;
  if (!meta || !meta->is_object() || !meta->contains("annotations")) return {};
  const json& a = (*meta)["annotations"];
  if (!a.is_object()) return {};
  auto it = a.find(std::string(key));
  return it != a.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Names of the ForeignClusters with role Provider.
kube::Result<std::set<std::string>> providerNames(kube::Client& c) {
  kube::Result<json> list = c.list(peering::kForeignClusters, "");
  if (!list.ok()) return list.error();
  std::set<std::string> out;
  for (const json& fc : list->value("items", json::array())) {
    if (fc.value("/spec/role"_json_pointer, std::string()) == peering::kRoleProvider) {
      out.insert(kube::getName(fc));
    }
  }
  return out;
}

}  // namespace

Offloading offloadingOf(const json& ns) {
  Offloading o;
  auto labels = kube::getLabels(ns);
  auto it = labels.find(std::string(kLabelOffloaded));
  o.offloaded = it != labels.end() && it->second == "true";
  o.provider = annotation(ns, kAnnotationOffloadProviders);
  kube::Result<reflection::NamingStrategy> n =
      reflection::parseNamingStrategy(annotation(ns, kAnnotationNamespaceNaming));
  if (n.ok()) o.naming = *n;
  kube::Result<reflection::PodOffloadingStrategy> st = reflection::parsePodOffloadingStrategy(
      annotation(ns, reflection::kAnnotationPodOffloadingStrategy));
  if (st.ok()) o.strategy = *st;
  o.selector = annotation(ns, reflection::kAnnotationOffloadSelector);
  return o;
}

namespace {

// Where the Pods of a namespace offloaded as `o` may run, in words.
std::string placementRule(const Offloading& o) {
  using reflection::PodOffloadingStrategy;
  if (o.strategy == PodOffloadingStrategy::Local) {
    return "no pod is offloaded: pods run on this cluster's nodes only";
  }
  std::string where = !o.provider.empty()  ? "the virtual node of provider " + o.provider
                      : !o.selector.empty() ? "virtual nodes matching " + o.selector
                                            : std::string("any virtual node");
  if (o.strategy == PodOffloadingStrategy::Remote) return "pods run only on " + where;
  return "pods may run on this cluster's nodes or on " + where;
}

}  // namespace

kube::Result<std::vector<std::string>> podsOnVirtualNodes(kube::Client& c, const std::string& ns) {
  kube::ListOptions nodeSel;
  nodeSel.labelSelector = std::string(kLabelType) + "=" + std::string(kTypeVirtualKubelet);
  kube::Result<json> nodes = c.list(res::kNodes, "", nodeSel);
  if (!nodes.ok()) return nodes.error();
  std::set<std::string> virtualNodes;
  for (const json& n : nodes->value("items", json::array())) virtualNodes.insert(kube::getName(n));
  kube::Result<json> pods = c.list(res::kPods, ns);
  if (!pods.ok()) return pods.error();
  std::vector<std::string> out;
  for (const json& p : pods->value("items", json::array())) {
    if (virtualNodes.count(p.value("/spec/nodeName"_json_pointer, std::string()))) {
      out.push_back(kube::getNamespace(p) + "/" + kube::getName(p));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

kube::Result<std::vector<std::string>> offloadNamespace(kube::Client& c,
                                                        const OffloadRequest& req) {
  kube::Result<json> ns = c.get(res::kNamespaces, "", req.ns);
  if (!ns.ok()) {
    if (kube::isNotFound(ns.error())) {
      return kube::makeError(kube::Code::NotFound, "namespace \"" + req.ns + "\" not found");
    }
    return ns.error();
  }
  if (!req.provider.empty() && !req.selector.empty()) {
    return kube::makeError(kube::Code::Invalid,
                           "choose the providers either by name (--remote-name) or by their "
                           "labels (--selector), not both");
  }
  if (req.strategy == reflection::PodOffloadingStrategy::Local &&
      (!req.provider.empty() || !req.selector.empty())) {
    return kube::makeError(kube::Code::Invalid,
                           "--pod-offloading-strategy Local offloads no pod: --remote-name and "
                           "--selector have nothing to choose");
  }
  if (!req.selector.empty()) {
    kube::Result<kube::LabelSelector> sel = kube::LabelSelector::parse(req.selector);
    if (!sel.ok()) {
      return kube::makeError(kube::Code::Invalid,
                             "--selector \"" + req.selector + "\": " + sel.error().message);
    }
    if (sel->empty()) {
      return kube::makeError(kube::Code::Invalid,
                             "--selector \"" + req.selector + "\" selects every virtual node; "
                             "omit it to offload to every provider");
    }
  }
  if (!req.provider.empty()) {
    kube::Result<std::set<std::string>> names = providerNames(c);
    if (!names.ok()) return names.error();
    if (!names->count(req.provider)) {
      return kube::makeError(kube::Code::NotFound,
                             "no peering with a provider named \"" + req.provider +
                                 "\" (see `strait status`)");
    }
  }
  Offloading before = offloadingOf(*ns);
  if (before.offloaded && before.naming != req.naming) {
    kube::Result<std::vector<std::string>> running = podsOnVirtualNodes(c, req.ns);
    if (!running.ok()) return running.error();
    if (!running->empty()) {
      return kube::makeError(kube::Code::Conflict,
                             "namespace \"" + req.ns + "\" has " +
                                 std::to_string(running->size()) +
                                 " pod(s) on virtual nodes under naming \"" +
                                 reflection::namingStrategyName(before.naming) +
                                 "\"; unoffload it first");
    }
  }
  Offloading after;
  after.offloaded = true;
  after.provider = req.provider;
  after.naming = req.naming;
  after.strategy = req.strategy;
  after.selector = req.selector;
  // A rule that changes for a namespace already offloaded: count what keeps its place.
  const bool ruleChanged = before.offloaded && (before.strategy != after.strategy ||
                                                before.provider != after.provider ||
                                                before.selector != after.selector);
  std::vector<std::string> lines;
  if (ruleChanged) {
    kube::Result<std::vector<std::string>> remote = podsOnVirtualNodes(c, req.ns);
    if (!remote.ok()) return remote.error();
    kube::Result<json> pods = c.list(res::kPods, req.ns);
    if (!pods.ok()) return pods.error();
    size_t placed = 0;
    for (const json& p : pods->value("items", json::array())) {
      const std::string phase = p.value("/status/phase"_json_pointer, std::string());
      if (!p.value("/spec/nodeName"_json_pointer, std::string()).empty() &&
          phase != "Succeeded" && phase != "Failed") {
        ++placed;
      }
    }
    lines.push_back("rule changed from \"" + placementRule(before) + "\" to \"" +
                    placementRule(after) + "\"");
    lines.push_back("it applies to pods created from now on; running pods are not moved (" +
                    std::to_string(remote->size()) + " on virtual nodes, " +
                    std::to_string(placed - std::min(placed, remote->size())) +
                    " on this cluster's nodes): delete them or restart their workload to "
                    "place them under the new rule");
  }
  const bool defaultStrategy =
      req.strategy == reflection::PodOffloadingStrategy::LocalAndRemote;
  json patch = {
      {"metadata",
       {{"labels", {{std::string(kLabelOffloaded), "true"}}},
        {"annotations",
         {{std::string(kAnnotationOffloadProviders),
           req.provider.empty() ? json(nullptr) : json(req.provider)},
          {std::string(kAnnotationNamespaceNaming), reflection::namingStrategyName(req.naming)},
          {std::string(reflection::kAnnotationPodOffloadingStrategy),
           defaultStrategy ? json(nullptr)
                           : json(reflection::podOffloadingStrategyName(req.strategy))},
          {std::string(reflection::kAnnotationOffloadSelector),
           req.selector.empty() ? json(nullptr) : json(req.selector)}}}}}};
  kube::Result<json> r = c.patch(res::kNamespaces, "", req.ns, kube::PatchType::Merge, patch);
  if (!r.ok()) return r.error();
  spdlog::info(
      "event=namespace_offloaded namespace={} provider={} selector=\"{}\" strategy={} naming={}",
      req.ns, req.provider.empty() ? "*" : req.provider, req.selector,
      reflection::podOffloadingStrategyName(req.strategy),
      reflection::namingStrategyName(req.naming));
  lines.insert(lines.begin(),
               "namespace " + req.ns + " offloaded (strategy " +
                   reflection::podOffloadingStrategyName(req.strategy) + ", naming " +
                   reflection::namingStrategyName(req.naming) + "): " + placementRule(after));
  if (req.strategy == reflection::PodOffloadingStrategy::Local) {
    lines.push_back("new pods in " + req.ns +
                    " stay on this cluster; its services and configuration may still be "
                    "reflected to the providers");
  } else {
    lines.push_back("new pods in " + req.ns +
                    " tolerate the virtual node taint and may be scheduled there");
  }
  return lines;
}

kube::Result<std::vector<std::string>> unoffloadNamespace(kube::Client& c,
                                                          const UnoffloadRequest& req) {
  kube::Result<json> ns = c.get(res::kNamespaces, "", req.ns);
  if (!ns.ok()) {
    if (kube::isNotFound(ns.error())) {
      return kube::makeError(kube::Code::NotFound, "namespace \"" + req.ns + "\" not found");
    }
    return ns.error();
  }
  kube::Result<std::vector<std::string>> running = podsOnVirtualNodes(c, req.ns);
  if (!running.ok()) return running.error();
  std::vector<std::string> lines;
  if (!running->empty() && !req.force) {
    std::string msg = "namespace \"" + req.ns + "\" has " + std::to_string(running->size()) +
                      " pod(s) on virtual nodes; delete them or use --force:";
    for (const std::string& p : *running) msg += "\n  " + p;
    return kube::makeError(kube::Code::Conflict, msg);
  }
  // Remove the marks first, so that the Pods recreated by their controllers are not mutated
  // to tolerate the virtual node again.
  json patch = {{"metadata",
                 {{"labels", {{std::string(kLabelOffloaded), nullptr}}},
                  {"annotations",
                   {{std::string(kAnnotationOffloadProviders), nullptr},
                    {std::string(kAnnotationNamespaceNaming), nullptr},
                    {std::string(reflection::kAnnotationPodOffloadingStrategy), nullptr},
                    {std::string(reflection::kAnnotationOffloadSelector), nullptr}}}}}};
  kube::Result<json> r = c.patch(res::kNamespaces, "", req.ns, kube::PatchType::Merge, patch);
  if (!r.ok()) return r.error();
  for (const std::string& key : *running) {
    std::string name = key.substr(key.find('/') + 1);
    kube::Result<json> d = c.remove(res::kPods, req.ns, name);
    if (!d.ok() && !kube::isNotFound(d.error())) return d.error();
    lines.push_back("deleted pod " + key + " (it was on a virtual node)");
  }
  spdlog::info("event=namespace_unoffloaded namespace={} pods_deleted={}", req.ns, running->size());
  lines.push_back("namespace " + req.ns + " is no longer offloaded");
  return lines;
}

}  // namespace strait::vnode
