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

void subtractFrom(std::map<std::string, ResourceMap>& byNode, const std::string& nodeName,
                  const ResourceMap& requests) {
  auto node = byNode.find(nodeName);
  if (node == byNode.end()) return;
  for (const auto& [name, q] : requests) {
    auto it = node->second.find(name);
    if (it == node->second.end()) continue;
    kube::Result<kube::Quantity> left = it->second.sub(q);
    if (!left.ok() || left->sign() <= 0) {
      node->second.erase(it);
    } else {
      it->second = *left;
    }
  }
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
  // Only the labels that say the Pod runs for a consumer.
  json labels = json::object();
  if (m.contains("labels") && m["labels"].is_object()) {
    const json& all = m["labels"];
    for (std::string_view k : {kLabelOriginClusterId, kLabelRemoteCluster, kLabelManagedBy}) {
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
  subtractFrom(usedByNode_, e.node, e.requests);
  if (!e.forConsumer) subtractFrom(ownUsedByNode_, e.node, e.requests);
}

void ProviderCapacity::setLocked(const std::string& key, PodEntry e) {
  auto it = podsByKey_.find(key);
  if (it != podsByKey_.end()) {
    subtractLocked(it->second);
    podsByKey_.erase(it);
  }
  if (e.node.empty()) return;  // not bound: counts on no node
  if (!e.requests.empty()) {
    addTo(usedByNode_, e.node, e.requests);
    if (!e.forConsumer) addTo(ownUsedByNode_, e.node, e.requests);
  }
  podsByKey_.emplace(key, std::move(e));
}

void ProviderCapacity::observePod(const json& pod) {
  PodEntry e;
  e.node = kube::stringOf(kube::child(pod, "spec"), "nodeName");
  if (!e.node.empty()) e.requests = podRequests(json::array({pod}));  // terminal: none
  e.forConsumer = runsForAConsumer(pod);
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

ProviderSummary ProviderCapacity::poolSummary(const NodeSelector& selector) const {
  std::vector<kube::ObjectPtr> nodes = nodes_->cache().list();
  json items = json::array();
  for (const kube::ObjectPtr& n : nodes) {
    if (selectorMatches(selector, kube::getLabels(*n))) items.push_back(*n);
  }
  base::MutexLock lock(mu_);
  return summarizePool(items, ownUsedByNode_, selector);
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
  for (const auto& [k, v] : used) {
    auto it = alloc.find(k);
    if (it == alloc.end()) continue;
    kube::Result<kube::Quantity> left = it->second.sub(v);
    it->second = left.ok() && left->sign() > 0 ? *left : kube::Quantity();
  }
  return alloc;
}

size_t ProviderCapacity::podCount() const {
  base::MutexLock lock(mu_);
  return podsByKey_.size();
}

}  // namespace strait::peering
