// Provider budget and grant computation (see policy.h).
#include "peering/policy.h"

#include <algorithm>
#include <cmath>

namespace strait::peering {
namespace {

const kube::Quantity& minQ(const kube::Quantity& a, const kube::Quantity& b) {
  return b < a ? b : a;
}

// floor(q * share) with the rounding rule of policy.h.
kube::Quantity scaled(const std::string& name, const kube::Quantity& q, double share) {
  if (q.sign() <= 0) return kube::Quantity();
  if (name == "cpu") {
    long double milli = static_cast<long double>(q.milliValue()) * share;
    return kube::Quantity::fromMilli(static_cast<int64_t>(std::floor(milli)));
  }
  long double units = static_cast<long double>(q.value()) * share;
  int64_t whole = static_cast<int64_t>(std::floor(units));
  if (whole == 0 && q.value() >= 1) whole = 1;
  return kube::Quantity::fromInt(whole, q.format());
}

void addInto(ResourceMap& sum, const std::string& name, const kube::Quantity& q) {
  auto it = sum.find(name);
  if (it == sum.end()) {
    sum[name] = q;
    return;
  }
  kube::Result<kube::Quantity> r = it->second.add(q);
  if (r.ok()) it->second = *r;
}

bool podTerminal(const nlohmann::json& pod) {
  std::string phase = pod.value("/status/phase"_json_pointer, std::string());
  return phase == "Succeeded" || phase == "Failed";
}

ResourceMap onePodRequests(const nlohmann::json& pod) {
  ResourceMap containers;
  const nlohmann::json& spec = pod.contains("spec") ? pod["spec"] : nlohmann::json::object();
  auto requestsOf = [](const nlohmann::json& c) {
    ResourceMap r;
    if (c.contains("resources") && c["resources"].contains("requests")) {
      kube::Result<ResourceMap> parsed = kube::parseResourceList(c["resources"]["requests"]);
      if (parsed.ok()) r = *parsed;
    }
    return r;
  };
  if (spec.contains("containers") && spec["containers"].is_array()) {
    for (const auto& c : spec["containers"]) {
      for (auto& [k, v] : requestsOf(c)) addInto(containers, k, v);
    }
  }
  if (spec.contains("initContainers") && spec["initContainers"].is_array()) {
    for (const auto& c : spec["initContainers"]) {
      for (auto& [k, v] : requestsOf(c)) {
        auto it = containers.find(k);
        if (it == containers.end() || it->second < v) containers[k] = v;
      }
    }
  }
  containers["pods"] = kube::Quantity::fromInt(1);
  return containers;
}

}  // namespace

bool nodeUsable(const nlohmann::json& node) {
  if (node.value("/spec/unschedulable"_json_pointer, false)) return false;
  const nlohmann::json* conds = nullptr;
  if (node.contains("status") && node["status"].contains("conditions")) {
    conds = &node["status"]["conditions"];
  }
  if (!conds || !conds->is_array()) return false;
  for (const auto& c : *conds) {
    if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

kube::Result<ResourceMap> parseResourceArg(const std::string& text) {
  ResourceMap out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos
                                                                     : comma - start);
    if (!item.empty()) {
      size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0) {
        return kube::makeError(kube::Code::Invalid,
                               "resource \"" + item + "\": expected NAME=QUANTITY");
      }
      kube::Result<kube::Quantity> q = kube::Quantity::parse(item.substr(eq + 1));
      if (!q.ok()) {
        return kube::makeError(kube::Code::Invalid, "resource \"" + item.substr(0, eq) +
                                                        "\": " + q.error().message);
      }
      if (q->sign() < 0) {
        return kube::makeError(kube::Code::Invalid,
                               "resource \"" + item.substr(0, eq) + "\": negative quantity");
      }
      out[item.substr(0, eq)] = *q;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string formatResources(const ResourceMap& r) {
  std::string out;
  for (const auto& [k, v] : r) {
    if (!out.empty()) out += ",";
    out += k + "=" + v.toString();
  }
  return out;
}

ResourceMap podRequests(const nlohmann::json& pods) {
  ResourceMap sum;
  if (!pods.is_array()) return sum;
  for (const auto& pod : pods) {
    if (podTerminal(pod)) continue;
    for (auto& [k, v] : onePodRequests(pod)) addInto(sum, k, v);
  }
  return sum;
}

ResourceMap freeAllocatable(const nlohmann::json& nodes, const nlohmann::json& pods) {
  ResourceMap alloc;
  std::map<std::string, bool> usable;
  if (nodes.is_array()) {
    for (const auto& node : nodes) {
      std::string name = node.value("/metadata/name"_json_pointer, std::string());
      if (!nodeUsable(node)) continue;
      usable[name] = true;
      if (!node.contains("status") || !node["status"].contains("allocatable")) continue;
      kube::Result<ResourceMap> a = kube::parseResourceList(node["status"]["allocatable"]);
      if (!a.ok()) continue;
      for (auto& [k, v] : *a) addInto(alloc, k, v);
    }
  }
  nlohmann::json bound = nlohmann::json::array();
  if (pods.is_array()) {
    for (const auto& pod : pods) {
      if (usable.count(pod.value("/spec/nodeName"_json_pointer, std::string()))) {
        bound.push_back(pod);
      }
    }
  }
  for (auto& [k, v] : podRequests(bound)) {
    auto it = alloc.find(k);
    if (it == alloc.end()) continue;
    kube::Result<kube::Quantity> left = it->second.sub(v);
    it->second = left.ok() && left->sign() > 0 ? *left : kube::Quantity();
  }
  return alloc;
}

ResourceMap budgetFor(const ResourceMap& free, const PolicyConfig& config) {
  if (!config.explicitBudget.empty()) return config.explicitBudget;
  double share = std::clamp(config.share, 0.0, 1.0);
  ResourceMap out;
  for (const auto& [k, v] : free) out[k] = scaled(k, v, share);
  return out;
}

ResourceMap grantFor(const ResourceMap& requested, const ResourceMap& budget,
                     const ResourceMap& othersGranted, const PolicyConfig& config,
                     const GrantLimits& limits) {
  ResourceMap out;
  for (const auto& [name, want] : requested) {
    auto b = budget.find(name);
    if (b == budget.end()) {
      out[name] = kube::Quantity();
      continue;
    }
    kube::Quantity left = b->second;
    if (auto o = othersGranted.find(name); o != othersGranted.end()) {
      kube::Result<kube::Quantity> r = left.sub(o->second);
      left = r.ok() ? *r : kube::Quantity();
    }
    if (left.sign() < 0) left = kube::Quantity();
    kube::Quantity g = minQ(want, left);
    if (auto c = config.perConsumerCap.find(name); c != config.perConsumerCap.end()) {
      kube::Quantity cap = c->second;
      if (auto held = limits.consumerGranted.find(name); held != limits.consumerGranted.end()) {
        kube::Result<kube::Quantity> r = cap.sub(held->second);
        cap = r.ok() && r->sign() > 0 ? *r : kube::Quantity();
      }
      g = minQ(g, cap);
    }
    if (limits.nodeShare) {
      auto s = limits.nodeShare->find(name);
      g = minQ(g, s == limits.nodeShare->end() ? kube::Quantity() : s->second);
    }
    if (g.sign() < 0) g = kube::Quantity();
    out[name] = g;
  }
  return out;
}

ResourceMap addResources(const ResourceMap& a, const ResourceMap& b) {
  ResourceMap out = a;
  for (const auto& [k, v] : b) addInto(out, k, v);
  return out;
}

kube::Status checkGrantNotEmpty(const ResourceMap& granted) {
  for (const char* name : {"cpu", "memory", "pods"}) {
    auto it = granted.find(name);
    if (it != granted.end() && it->second.sign() > 0) return kube::Status::OK();
  }
  auto show = [&](const char* name) {
    auto it = granted.find(name);
    return std::string(name) + "=" + (it == granted.end() ? "0" : it->second.toString());
  };
  return kube::makeError(kube::Code::Forbidden,
                         "peering refused: the provider has nothing to lend (" + show("cpu") +
                             ", " + show("memory") + ", " + show("pods") +
                             "); its budget is empty or already granted to other consumers");
}

}  // namespace strait::peering
