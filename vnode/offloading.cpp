// Namespace offloading marks (see offloading.h).
#include "vnode/offloading.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "kube/object.h"
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
  return o;
}

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
  json patch = {{"metadata",
                 {{"labels", {{std::string(kLabelOffloaded), "true"}}},
                  {"annotations",
                   {{std::string(kAnnotationOffloadProviders),
                     req.provider.empty() ? json(nullptr) : json(req.provider)},
                    {std::string(kAnnotationNamespaceNaming),
                     reflection::namingStrategyName(req.naming)}}}}}};
  kube::Result<json> r = c.patch(res::kNamespaces, "", req.ns, kube::PatchType::Merge, patch);
  if (!r.ok()) return r.error();
  spdlog::info("event=namespace_offloaded namespace={} provider={} naming={}", req.ns,
               req.provider.empty() ? "*" : req.provider,
               reflection::namingStrategyName(req.naming));
  return std::vector<std::string>{
      "namespace " + req.ns + " offloaded to " +
      (req.provider.empty() ? std::string("every peered provider")
                            : "provider " + req.provider) +
      " (naming " + reflection::namingStrategyName(req.naming) + ")",
      "new pods in " + req.ns + " tolerate the virtual node taint and may be scheduled there"};
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
                    {std::string(kAnnotationNamespaceNaming), nullptr}}}}}};
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
