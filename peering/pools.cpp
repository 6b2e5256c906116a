// Pools of a peering (see pools.h).
#include "peering/pools.h"

#include <set>

#include "kube/object.h"
#include "kube/validation.h"

namespace strait::peering {

using nlohmann::json;
using kube::Code;
using kube::makeError;

namespace {

// Node names double as the kubernetes.io/hostname label value: at most 63 characters.
constexpr size_t kMaxNodeName = 63;

bool nodeOwnLabel(const std::string& key) {
  static const std::set<std::string> exact = {"kubernetes.io/hostname", "kubernetes.io/os",
                                              "kubernetes.io/arch", "type",
                                              "strait.io/remote-cluster-id"};
  if (exact.count(key)) return true;
  for (const char* prefix : {"beta.kubernetes.io/", "node-role.kubernetes.io/"}) {
    if (key.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::string joinProblems(const std::vector<std::string>& p) {
  std::string out;
  for (const std::string& s : p) out += (out.empty() ? "" : "; ") + s;
  return out;
}

}  // namespace

kube::Status validatePoolName(const std::string& name) {
  if (name.empty()) return makeError(Code::Invalid, "pool name is empty");
  if (auto p = kube::validateDns1123Label(name); !p.empty()) {
    return makeError(Code::Invalid, "pool \"" + name + "\": not a DNS label (" + joinProblems(p) +
                                        ")");
  }
  return kube::Status::OK();
}

std::string poolNodeName(const std::string& providerName, const std::string& pool) {
  return "strait-" + providerName + "-" + pool;
}

kube::Status validatePoolNodeName(const std::string& providerName, const std::string& pool) {
  if (kube::Status s = validatePoolName(pool); !s.ok()) return s;
  const std::string node = poolNodeName(providerName, pool);
  if (node.size() > kMaxNodeName) {
    const size_t room = kMaxNodeName - poolNodeName(providerName, "").size();
    return makeError(Code::Invalid, "pool \"" + pool + "\": its virtual node name " + node +
                                        " is longer than 63 characters (pool names of peering " +
                                        providerName + " may have at most " +
                                        std::to_string(room) + ")");
  }
  return kube::Status::OK();
}

kube::Result<NodeSelector> parseNodeSelectorArg(const std::string& text) {
  NodeSelector out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos
                                                                     : comma - start);
    auto refuse = [&](const std::string& why) {
      return makeError(Code::Invalid, "node selector \"" + item + "\": " + why);
    };
    if (item.empty()) {
      if (!text.empty()) return refuse("empty item (expected KEY=VALUE)");
    } else {
      size_t eq = item.find('=');
      if (eq == std::string::npos) return refuse("expected KEY=VALUE");
      std::string key = item.substr(0, eq), value = item.substr(eq + 1);
      if (auto p = kube::validateLabelKey(key); !p.empty()) return refuse("key: " + p.front());
      if (auto p = kube::validateLabelValue(value); !p.empty()) {
        return refuse("value: " + p.front());
      }
      if (!out.emplace(key, value).second) return refuse("key given twice");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

kube::Result<PoolSpec> parsePoolArg(const std::string& text) {
  auto refuse = [&](const std::string& why) {
    return makeError(Code::Invalid, "pool \"" + text + "\": " + why);
  };
  PoolSpec p;
  std::string rest = text;
  if (size_t at = rest.find('@'); at != std::string::npos) {
    std::string sel = rest.substr(at + 1);
    rest = rest.substr(0, at);
    if (sel.empty()) return refuse("empty node selector after '@' (expected KEY=VALUE,...)");
    kube::Result<NodeSelector> s = parseNodeSelectorArg(sel);
    if (!s.ok()) return refuse(s.error().message);
    p.nodeSelector = std::move(*s);
  }
  if (size_t colon = rest.find(':'); colon != std::string::npos) {
    std::string resources = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    if (resources.empty()) return refuse("empty resources after ':' (expected NAME=QUANTITY,...)");
    kube::Result<ResourceMap> r = parseResourceArg(resources);
    if (!r.ok()) return refuse(r.error().message);
    p.requested = std::move(*r);
  }
  p.name = rest;
  if (p.name.empty()) return refuse("pool name is empty (expected NAME[:RESOURCES][@SELECTOR])");
  if (kube::Status s = validatePoolName(p.name); !s.ok()) return s.error();
  return p;
}

kube::Status validatePools(const std::vector<PoolSpec>& pools) {
  std::set<std::string> seen;
  for (const PoolSpec& p : pools) {
    if (kube::Status s = validatePoolName(p.name); !s.ok()) return s;
    if (!seen.insert(p.name).second) {
      return makeError(Code::Invalid, "pool \"" + p.name + "\" is given twice");
    }
  }
  return kube::Status::OK();
}

json poolToJson(const PoolSpec& p) {
  json out = {{"name", p.name}, {"requested", kube::formatResourceList(p.requested)}};
  out["nodeSelector"] = json::object();
  for (const auto& [k, v] : p.nodeSelector) out["nodeSelector"][k] = v;
  return out;
}

kube::Result<std::vector<PoolSpec>> poolsFromJson(const json& list) {
  std::vector<PoolSpec> out;
  if (list.is_null()) return out;
  if (!list.is_array()) return makeError(Code::Invalid, "spec.pools: expected a list");
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    const std::string where = "spec.pools[" + std::to_string(i) + "]";
    if (!e.is_object()) return makeError(Code::Invalid, where + ": expected an object");
    PoolSpec p;
    if (!e.contains("name") || !e["name"].is_string()) {
      return makeError(Code::Invalid, where + ".name: expected a string");
    }
    p.name = e["name"].get<std::string>();
    if (kube::Status s = validatePoolName(p.name); !s.ok()) {
      return makeError(Code::Invalid, where + ".name: " + s.error().message);
    }
    if (e.contains("requested") && !e["requested"].is_null()) {
      kube::Result<ResourceMap> r = kube::parseResourceList(e["requested"]);
      if (!r.ok()) return makeError(Code::Invalid, where + ".requested: " + r.error().message);
      p.requested = std::move(*r);
    }
    if (e.contains("nodeSelector") && !e["nodeSelector"].is_null()) {
      if (!e["nodeSelector"].is_object()) {
        return makeError(Code::Invalid, where + ".nodeSelector: expected an object");
      }
      for (const auto& [k, v] : e["nodeSelector"].items()) {
        if (!v.is_string() || !kube::validateLabelKey(k).empty() ||
            !kube::validateLabelValue(v.get<std::string>()).empty()) {
          return makeError(Code::Invalid, where + ".nodeSelector: invalid label " + k);
        }
        p.nodeSelector[k] = v.get<std::string>();
      }
    }
    out.push_back(std::move(p));
  }
  if (kube::Status s = validatePools(out); !s.ok()) {
    return makeError(Code::Invalid, "spec.pools: " + s.error().message);
  }
  return out;
}

kube::Result<std::vector<PoolSpec>> poolsOfForeignCluster(const json& fc) {
  if (!fc.is_object() || !fc.contains("spec") || !fc["spec"].is_object() ||
      !fc["spec"].contains("pools")) {
    return std::vector<PoolSpec>{};
  }
  return poolsFromJson(fc["spec"]["pools"]);
}

void poolToProto(const PoolSpec& p, v1::PoolRequest* out) {
  out->set_name(p.name);
  resourcesToProto(p.requested, out->mutable_requested());
  for (const auto& [k, v] : p.nodeSelector) (*out->mutable_node_selector())[k] = v;
}

PoolSpec poolFromProto(const v1::PoolRequest& in) {
  PoolSpec p;
  p.name = in.name();
  p.requested = resourcesFromProto(in.requested());
  for (const auto& [k, v] : in.node_selector()) p.nodeSelector[k] = v;
  return p;
}

void poolGrantToProto(const PoolGrant& g, v1::PoolGrant* out) {
  out->set_name(g.name);
  resourcesToProto(g.granted, out->mutable_granted());
  resourcesToProto(g.used, out->mutable_used());
  summaryToProto(g.summary, out->mutable_summary());
  out->set_refused_reason(g.refusedReason);
  out->set_refused_message(g.refusedMessage);
}

PoolGrant poolGrantFromProto(const v1::PoolGrant& in) {
  PoolGrant g;
  g.name = in.name();
  g.granted = resourcesFromProto(in.granted());
  g.used = resourcesFromProto(in.used());
  g.summary = summaryFromProto(in.summary());
  g.refusedReason = in.refused_reason();
  g.refusedMessage = in.refused_message();
  return g;
}

bool selectorMatches(const NodeSelector& selector,
                     const std::map<std::string, std::string>& labels) {
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

std::map<std::string, std::string> uniformLabels(
    const std::vector<std::map<std::string, std::string>>& nodes) {
  if (nodes.empty()) return {};
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : nodes.front()) {
    if (!nodeOwnLabel(k)) out[k] = v;
  }
  for (size_t i = 1; i < nodes.size() && !out.empty(); ++i) {
    for (auto it = out.begin(); it != out.end();) {
      auto other = nodes[i].find(it->first);
      it = other == nodes[i].end() || other->second != it->second ? out.erase(it) : std::next(it);
    }
  }
  return out;
}

ProviderSummary summarizePool(const json& nodes,
                              const std::map<std::string, ResourceMap>& usedByNode,
                              const NodeSelector& selector) {
  json matching = json::array();
  std::map<std::string, std::map<std::string, std::string>> labelsByName;
  if (nodes.is_array()) {
    for (const json& n : nodes) {
      if (!n.is_object()) continue;
      auto labels = kube::getLabels(n);
      if (!selectorMatches(selector, labels)) continue;
      labelsByName[kube::getName(n)] = std::move(labels);
      matching.push_back(n);
    }
  }
  ProviderSummary s = summarizeProviderUsage(matching, usedByNode);
  std::vector<std::map<std::string, std::string>> usable;
  for (const ProviderNodeFree& n : s.nodes) usable.push_back(labelsByName[n.name]);
  s.topologyLabels = uniformLabels(usable);
  return s;
}

ProviderSummary summarizePoolForCaller(const json& nodes,
                                       const std::map<std::string, ResourceMap>& usedByNode,
                                       const std::map<std::string, ResourceMap>& callerUsedByNode,
                                       const NodeSelector& selector) {
  std::map<std::string, ResourceMap> others = usedByNode;
  for (const auto& [node, mine] : callerUsedByNode) {
    auto it = others.find(node);
    if (it != others.end()) it->second = subtractResources(it->second, mine);
  }
  return summarizePool(nodes, others, selector);
}

kube::Status pinPodToPool(json& pod, const PoolSpec& pool) {
  if (!pod.is_object()) return makeError(Code::Invalid, "pod: expected an object");
  json& spec = pod["spec"];
  if (!spec.is_object()) spec = json::object();
  json& sel = spec["nodeSelector"];
  if (!sel.is_object()) sel = json::object();
  for (const auto& [k, v] : pool.nodeSelector) {
    if (sel.contains(k) && sel[k] != v) {
      return makeError(Code::Invalid, "pod selects " + k + "=" +
                                          (sel[k].is_string() ? sel[k].get<std::string>()
                                                              : sel[k].dump()) +
                                          ", but pool " + pool.name + " has " + k + "=" + v);
    }
    sel[k] = v;
  }
  json& labels = pod["metadata"]["labels"];
  if (!labels.is_object()) labels = json::object();
  labels[std::string(kLabelPool)] = pool.name;
  return kube::Status::OK();
}

std::string podPool(const json& pod) {
  const json labels = pod.is_object()
                          ? pod.value("/metadata/labels"_json_pointer, json::object())
                          : json::object();
  auto it = labels.is_object() ? labels.find(std::string(kLabelPool)) : labels.end();
  return labels.is_object() && it != labels.end() && it->is_string() ? it->get<std::string>()
                                                                      : std::string();
}

bool podPinnedTo(const json& pod, const NodeSelector& selector) {
  const json sel =
      pod.is_object() ? pod.value("/spec/nodeSelector"_json_pointer, json::object()) : json();
  for (const auto& [k, v] : selector) {
    if (!sel.is_object() || !sel.contains(k) || sel[k] != v) return false;
  }
  return true;
}

std::vector<PoolGrant> grantPools(const std::vector<PoolSpec>& pools, const ResourceMap& budget,
                                  const ResourceMap& othersGranted, const PolicyConfig& config,
                                  const std::function<ProviderSummary(const PoolSpec&)>& summaryOf) {
  std::vector<PoolGrant> out;
  ResourceMap mine;  // this consumer's earlier pools
  std::set<std::string> seen;
  for (const PoolSpec& p : pools) {
    PoolGrant g;
    g.name = p.name;
    for (const auto& [k, v] : p.requested) g.granted[k] = kube::Quantity();
    if (kube::Status s = validatePoolName(p.name); !s.ok()) {
      g.refusedReason = "InvalidPool";
      g.refusedMessage = s.error().message;
    } else if (!seen.insert(p.name).second) {
      g.refusedReason = "InvalidPool";
      g.refusedMessage = "pool \"" + p.name + "\" is given twice";
    }
    if (!g.refusedReason.empty()) {
      out.push_back(std::move(g));
      continue;
    }
    g.summary = summaryOf(p);
    if (g.summary.nodes.empty()) {
      g.refusedReason = "NoMatchingNodes";
      g.refusedMessage = "no Ready, schedulable provider node matches the pool's node selector";
      out.push_back(std::move(g));
      continue;
    }
    GrantLimits limits;
    // The matching nodes' share; with an explicit budget, what they have free.
    limits.nodeShare = config.explicitBudget.empty() ? budgetFor(g.summary.pooledFree, config)
                                                     : g.summary.pooledFree;
    limits.consumerGranted = mine;
    g.granted = grantFor(p.requested, budget, addResources(othersGranted, mine), config, limits);
    if (kube::Status s = checkGrantNotEmpty(g.granted); !s.ok()) {
      g.refusedReason = "NothingToLend";
      g.refusedMessage = "pool \"" + p.name + "\" refused: the matching nodes' share is empty or "
                         "already granted (" + formatResources(g.granted) + ")";
    }
    mine = addResources(mine, g.granted);
    out.push_back(std::move(g));
  }
  return out;
}

ResourceMap sumGranted(const std::vector<PoolGrant>& grants) {
  ResourceMap sum;
  for (const PoolGrant& g : grants) sum = addResources(sum, g.granted);
  return sum;
}

}  // namespace strait::peering
