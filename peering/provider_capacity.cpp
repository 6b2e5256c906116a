// Provider capacity from watches (see provider_capacity.h).
#include "peering/provider_capacity.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "kube/cache.h"
#include "kube/json_access.h"
#include "kube/object.h"
#include "peering/names.h"

namespace strait::peering {

using nlohmann::json;

namespace {

// Copies `from[key]` into `to[key]` when present.
void keep(const json& from, json& to, const char* key) {
  if (from.is_object()) {
    auto it = from.find(key);
    if (it != from.end()) to[key] = *it;
  }
}

json slimContainers(const json& list) {
  json out = json::array();
  if (!list.is_array()) return out;
  for (const json& c : list) {
    json slim = json::object();
    if (c.is_object() && c.contains("resources") && c["resources"].is_object()) {
      json r = json::object();
      keep(c["resources"], r, "requests");
      slim["resources"] = std::move(r);
    }
    out.push_back(std::move(slim));
  }
  return out;
}

void addTo(std::map<std::string, ResourceMap>& byNode, const std::string& node,
           const ResourceMap& requests) {
  ResourceMap& used = byNode[node];
  used = addResources(used, requests);
}

// `used` minus `requests`, dropping each resource that reaches zero (so that a sum whose Pods
// are all gone is empty).
void takeAway(ResourceMap& used, const ResourceMap& requests) {
  for (const auto& [name, q] : requests) {
    auto it = used.find(name);
    if (it == used.end()) continue;
    kube::Result<kube::Quantity> left = it->second.sub(q);
    if (!left.ok() || left->sign() <= 0) {
      used.erase(it);
    } else {
      it->second = *left;
    }
  }
}

void subtractFrom(std::map<std::string, ResourceMap>& byNode, const std::string& nodeName,
                  const ResourceMap& requests) {
  auto node = byNode.find(nodeName);
  if (node == byNode.end()) return;
  takeAway(node->second, requests);
  if (node->second.empty()) byNode.erase(node);
}

}  // namespace

bool runsForAConsumer(const json& pod) {
  const json& labels = kube::child(kube::child(pod, "metadata"), "labels");
  if (!labels.is_object()) return false;
  if (labels.contains(std::string(kLabelOriginClusterId))) return true;
  auto managed = labels.find(std::string(kLabelManagedBy));
  return labels.contains(std::string(kLabelRemoteCluster)) && managed != labels.end() &&
         managed->is_string() && managed->get<std::string>() == kManagedByValue;
}

void ProviderCapacity::slimNode(json& node) {
  json slim = json::object();
  json meta = json::object();
  const json& m = kube::child(node, "metadata");
  for (const char* k : {"name", "uid", "resourceVersion"}) keep(m, meta, k);
  json labels = json::object();
  if (m.contains("labels") && m["labels"].is_object()) labels = m["labels"];
  meta["labels"] = std::move(labels);
  slim["metadata"] = std::move(meta);
  json spec = json::object();
  keep(kube::child(node, "spec"), spec, "unschedulable");
  slim["spec"] = std::move(spec);
  json status = json::object();
  const json& st = kube::child(node, "status");
  keep(st, status, "allocatable");
  json conditions = json::array();
  if (st.contains("conditions") && st["conditions"].is_array()) {
    for (const json& c : st["conditions"]) {
      if (c.is_object() && c.value("type", "") == "Ready") {
        json ready = json::object();
        keep(c, ready, "type");
        keep(c, ready, "status");
        conditions.push_back(std::move(ready));
      }
    }
  }
  status["conditions"] = std::move(conditions);
  slim["status"] = std::move(status);
  node = std::move(slim);
}

void ProviderCapacity::slimPod(json& pod) {
  json slim = json::object();
  json meta = json::object();
  const json& m = kube::child(pod, "metadata");
  for (const char* k : {"name", "namespace", "uid", "resourceVersion"}) keep(m, meta, k);
  // Only the labels that say the Pod runs for a consumer, and for which of its pools.
  json labels = json::object();
  if (m.contains("labels") && m["labels"].is_object()) {
    const json& all = m["labels"];
    for (std::string_view k :
         {kLabelOriginClusterId, kLabelRemoteCluster, kLabelManagedBy, kLabelPool}) {
      auto it = all.find(std::string(k));
      if (it != all.end()) labels[std::string(k)] = *it;
    }
  }
  if (!labels.empty()) meta["labels"] = std::move(labels);
  slim["metadata"] = std::move(meta);
  json spec = json::object();
  const json& s = kube::child(pod, "spec");
  keep(s, spec, "nodeName");
  if (s.contains("containers")) spec["containers"] = slimContainers(s["containers"]);
  if (s.contains("initContainers")) spec["initContainers"] = slimContainers(s["initContainers"]);
  slim["spec"] = std::move(spec);
  json status = json::object();
  keep(kube::child(pod, "status"), status, "phase");
  slim["status"] = std::move(status);
  pod = std::move(slim);
}

ProviderCapacity::ProviderCapacity(kube::Client& client) {
  kube::InformerOptions no;
  no.resource = kube::resources::kNodes;
  no.transform = slimNode;
  nodes_ = std::make_unique<kube::Informer>(client, no);
  kube::InformerOptions po;
  po.resource = kube::resources::kPods;
  po.transform = slimPod;
  po.compactCache = true;
  pods_ = std::make_unique<kube::Informer>(client, po);
  pods_->addHandlers(
      {[this](const kube::ObjectPtr& p) { observePod(*p); },
       [this](const kube::ObjectPtr&, const kube::ObjectPtr& p) { observePod(*p); },
       [this](const kube::ObjectPtr& p) { forgetPod(kube::objectKey(*p)); }});
}

ProviderCapacity::~ProviderCapacity() { stop(); }

void ProviderCapacity::start() {
  nodes_->start();
  pods_->start();
}

void ProviderCapacity::stop() {
  nodes_->stop();
  pods_->stop();
}

bool ProviderCapacity::hasSynced() const { return nodes_->hasSynced() && pods_->hasSynced(); }

bool ProviderCapacity::waitForSync(std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  if (!nodes_->waitForSync(timeout)) return false;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return pods_->waitForSync(std::max(left, std::chrono::milliseconds(0)));
}

void ProviderCapacity::subtractLocked(const PodEntry& e) {
  if (!e.node.empty()) {
    subtractFrom(usedByNode_, e.node, e.requests);
    if (!e.forConsumer) subtractFrom(ownUsedByNode_, e.node, e.requests);
  }
  if (e.pool.empty()) return;
  auto consumer = poolUse_.find(e.consumer);
  if (consumer == poolUse_.end()) return;
  auto pool = consumer->second.find(e.pool);
  if (pool == consumer->second.end()) return;
  takeAway(pool->second.total, e.requests);
  if (!e.node.empty()) subtractFrom(pool->second.byNode, e.node, e.requests);
  if (pool->second.total.empty() && pool->second.byNode.empty()) consumer->second.erase(pool);
  if (consumer->second.empty()) poolUse_.erase(consumer);
}

void ProviderCapacity::setLocked(const std::string& key, PodEntry e) {
  auto it = podsByKey_.find(key);
  if (it != podsByKey_.end()) {
    subtractLocked(it->second);
    podsByKey_.erase(it);
  }
  // Not bound and of no pool (or terminal): counts nowhere.
  if (e.node.empty() && (e.pool.empty() || e.requests.empty())) return;
  if (!e.requests.empty()) {
    if (!e.node.empty()) {
      addTo(usedByNode_, e.node, e.requests);
      if (!e.forConsumer) addTo(ownUsedByNode_, e.node, e.requests);
    }
    if (!e.pool.empty()) {
      PoolUse& use = poolUse_[e.consumer][e.pool];
      use.total = addResources(use.total, e.requests);
      if (!e.node.empty()) addTo(use.byNode, e.node, e.requests);
    }
  }
  podsByKey_.emplace(key, std::move(e));
}

void ProviderCapacity::observePod(const json& pod) {
  PodEntry e;
  e.node = kube::stringOf(kube::child(pod, "spec"), "nodeName");
  e.forConsumer = runsForAConsumer(pod);
  const json& labels = kube::child(kube::child(pod, "metadata"), "labels");
  e.consumer = kube::stringOf(labels, std::string(kLabelOriginClusterId).c_str());
  if (!e.consumer.empty()) e.pool = kube::stringOf(labels, std::string(kLabelPool).c_str());
  if (!e.node.empty() || !e.pool.empty()) {
    e.requests = podRequests(json::array({pod}));  // terminal: none
  }
  base::MutexLock lock(mu_);
  setLocked(kube::objectKey(pod), std::move(e));
}

void ProviderCapacity::forgetPod(const std::string& key) {
  base::MutexLock lock(mu_);
  auto it = podsByKey_.find(key);
  if (it == podsByKey_.end()) return;
  subtractLocked(it->second);
  podsByKey_.erase(it);
}

ProviderSummary ProviderCapacity::summary() const {
  std::vector<kube::ObjectPtr> nodes = nodes_->cache().list();
  json items = json::array();
  for (const kube::ObjectPtr& n : nodes) items.push_back(*n);
  base::MutexLock lock(mu_);
  return summarizeProviderUsage(items, usedByNode_);
}

json ProviderCapacity::nodesMatching(const NodeSelector& selector) const {
  json items = json::array();
  for (const kube::ObjectPtr& n : nodes_->cache().list()) {
    if (selectorMatches(selector, kube::getLabels(*n))) items.push_back(*n);
  }
  return items;
}

ProviderSummary ProviderCapacity::poolSummary(const NodeSelector& selector) const {
  json items = nodesMatching(selector);
  base::MutexLock lock(mu_);
  return summarizePool(items, ownUsedByNode_, selector);
}

ProviderSummary ProviderCapacity::poolSummaryFor(const NodeSelector& selector,
                                                 const std::string& consumerId,
                                                 const std::string& pool) const {
  json items = nodesMatching(selector);
  static const std::map<std::string, ResourceMap> kNone;
  base::MutexLock lock(mu_);
  const std::map<std::string, ResourceMap>* mine = &kNone;
  if (auto c = poolUse_.find(consumerId); c != poolUse_.end()) {
    if (auto p = c->second.find(pool); p != c->second.end()) mine = &p->second.byNode;
  }
  return summarizePoolForCaller(items, usedByNode_, *mine, selector);
}

std::map<std::string, ResourceMap> ProviderCapacity::usedByPool(
    const std::string& consumerId) const {
  std::map<std::string, ResourceMap> out;
  base::MutexLock lock(mu_);
  auto c = poolUse_.find(consumerId);
  if (c == poolUse_.end()) return out;
  for (const auto& [pool, use] : c->second) out[pool] = use.total;
  return out;
}

ResourceMap ProviderCapacity::freeAllocatable() const {
  std::vector<kube::ObjectPtr> nodes = nodes_->cache().list();
  ResourceMap alloc, used;
  base::MutexLock lock(mu_);
  for (const kube::ObjectPtr& n : nodes) {
    if (!nodeUsable(*n)) continue;
    alloc = addResources(alloc, peering::freeAllocatable(json::array({*n}), json::array()));
    auto u = ownUsedByNode_.find(kube::getName(*n));
    if (u != ownUsedByNode_.end()) used = addResources(used, u->second);
  }
  return subtractResources(alloc, used);
}

size_t ProviderCapacity::podCount() const {
  base::MutexLock lock(mu_);
  return podsByKey_.size();
}

}  // namespace strait::peering
