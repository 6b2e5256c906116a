// ClusterRole aggregation, after upstream pkg/controller/clusterroleaggregation.
#include "minicluster/rbac_aggregation.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "kube/selector.h"
#include "minicluster/rbac_validation.h"

namespace strait::minicluster {
namespace {

using nlohmann::json;

kube::LabelSet labelsOf(const json& obj) {
  kube::LabelSet out;
  const json meta = obj.value("metadata", json::object());
  const json labels = meta.is_object() ? meta.value("labels", json::object()) : json::object();
  if (!labels.is_object()) return out;
  for (const auto& [k, v] : labels.items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

std::string nameOf(const json& obj) {
  const json meta = obj.value("metadata", json::object());
  return meta.is_object() ? meta.value("name", "") : "";
}

const json* selectorsOf(const json& role) {
  if (!role.is_object() || !role.contains("aggregationRule")) return nullptr;
  const json& rule = role["aggregationRule"];
  if (!rule.is_object() || !rule.contains("clusterRoleSelectors")) return nullptr;
  return rule["clusterRoleSelectors"].is_array() ? &rule["clusterRoleSelectors"] : nullptr;
}

class AggregationController : public Controller {
 public:
  explicit AggregationController(ControllerContext& ctx)
      : ctx_(ctx),
        info_(ctx.info(kRbacGroup, "clusterroles")),
        roles_(ctx.informers.informer(kRbacGroup, "clusterroles")),
        queue_(controllerQueue("clusterrole-aggregation", 1),
               [this](const std::string& name) { return sync(name); }) {
    // Any ClusterRole change may change what an aggregating role should hold.
    auto requeueAll = [this] {
      for (const auto& r : roles_.list()) {
        if (selectorsOf(r->obj()) != nullptr) queue_.add(r->name);
      }
    };
    InformerHandlers h;
    h.onAdd = [requeueAll](const CachedPtr&) { requeueAll(); };
    h.onUpdate = [requeueAll](const CachedPtr&, const CachedPtr&) { requeueAll(); };
    h.onDelete = [requeueAll](const CachedPtr&) { requeueAll(); };
    roles_.addHandlers(h);
  }

  void start() override { queue_.start(); }
  void stop() override { queue_.stop(); }

 private:
  kube::Status sync(const std::string& name) {
    auto role = roles_.get("", name);
    if (!role || selectorsOf(role->obj()) == nullptr) return kube::Status::OK();
    std::vector<json> all;
    for (const auto& r : roles_.list()) all.push_back(r->obj());
    json want = aggregatedRules(role->obj(), all);
    if (role->obj().contains("rules") && role->obj()["rules"] == want) return kube::Status::OK();
    auto r = ctx_.rest.mutate(info_, "", name, "", [&](json& obj) -> kube::Status {
      if (selectorsOf(obj) == nullptr) return kube::Status::OK();
      obj["rules"] = want;
      return kube::Status::OK();
    });
    if (!r) {
      if (r.error().code == kube::Code::NotFound) return kube::Status::OK();
      return r.error();
    }
    spdlog::info("event=clusterrole_aggregated name={} rules={}", name, want.size());
    return kube::Status::OK();
  }

  ControllerContext& ctx_;
  const ResourceInfo& info_;
  LocalInformer& roles_;
  kube::WorkerPool queue_;
};

}  // namespace

json aggregatedRules(const json& aggregating, const std::vector<json>& all) {
  json rules = json::array();
  const json* selectors = selectorsOf(aggregating);
  if (selectors == nullptr) return rules;
  std::vector<kube::LabelSelector> parsed;
  for (const auto& s : *selectors) {
    auto sel = kube::LabelSelector::fromJson(s);
    if (sel) parsed.push_back(*sel);
  }
  const std::string self = nameOf(aggregating);
  std::vector<const json*> matched;
  for (const auto& r : all) {
    if (nameOf(r) == self) continue;
    const auto labels = labelsOf(r);
    if (std::any_of(parsed.begin(), parsed.end(),
                    [&](const kube::LabelSelector& s) { return s.matches(labels); })) {
      matched.push_back(&r);
    }
  }
  std::sort(matched.begin(), matched.end(),
            [](const json* a, const json* b) { return nameOf(*a) < nameOf(*b); });
  for (const json* r : matched) {
    if (!r->contains("rules") || !(*r)["rules"].is_array()) continue;
    for (const auto& rule : (*r)["rules"]) {
      if (std::find(rules.begin(), rules.end(), rule) == rules.end()) rules.push_back(rule);
    }
  }
  return rules;
}

std::unique_ptr<Controller> newClusterRoleAggregationController(ControllerContext& ctx) {
  return std::make_unique<AggregationController>(ctx);
}

}  // namespace strait::minicluster
