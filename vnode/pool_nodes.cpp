// Virtual nodes of a peering's pools (see pool_nodes.h).
#include "vnode/pool_nodes.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "kube/validation.h"
#include "peering/foreign_cluster.h"
#include "peering/pools.h"

namespace strait::vnode {

using nlohmann::json;

PoolNodes::PoolNodes(kube::Client& local, PoolNodesOptions opts)
    : local_(local), opts_(std::move(opts)), ownHealth_(opts_.streamGrace) {}

PoolNodes::~PoolNodes() { stop(); }

kube::Status PoolNodes::start() {
  if (!opts_.peering) return kube::makeError(kube::Code::Invalid, "pool nodes: peering is required");
  base::MutexLock l(mu_);
  if (thread_.joinable()) return kube::makeError(kube::Code::Invalid, "pool nodes already started");
  thread_ = std::jthread([this](std::stop_token st) { run(st); });
  return kube::Status::OK();
}

void PoolNodes::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    reconcile();
    base::UniqueLock l(mu_);
    cv_.wait_for(l, stop, opts_.pollInterval, [] { return false; });
  }
}

void PoolNodes::stop() {
  std::jthread t;
  {
    base::MutexLock l(mu_);
    stopped_ = true;
    t = std::move(thread_);
  }
  if (t.joinable()) {
    t.request_stop();
    {
      base::MutexLock l(mu_);
      cv_.notify_all();
    }
    t.join();
  }
  base::MutexLock l(mu_);
  for (auto& [pool, nc] : nodes_) nc->stop();
}

void PoolNodes::removeNodes() {
  std::vector<std::string> names = nodeNames();
  for (const std::string& n : names) {
    kube::Result<json> r = local_.remove(kube::resources::kNodes, "", n);
    if (r.ok()) {
      spdlog::info("event=pool_node_deleted node={}", n);
    } else if (!kube::isNotFound(r.error())) {
      spdlog::warn("event=pool_node_delete_failed node={} error=\"{}\"", n, r.error().message);
    }
  }
}

std::map<std::string, std::string> PoolNodes::peeringLabels() {
  std::map<std::string, std::string> out;
  kube::Result<json> fc =
      local_.get(peering::kForeignClusters, "", opts_.peering->providerName());
  if (!fc.ok()) return out;
  const json labels = fc->value("/spec/virtualNodeLabels"_json_pointer, json::object());
  if (!labels.is_object()) return out;
  for (const auto& [k, v] : labels.items()) {
    if (v.is_string() && kube::validateLabelKey(k).empty() &&
        kube::validateLabelValue(v.get<std::string>()).empty()) {
      out[k] = v.get<std::string>();
    }
  }
  return out;
}

void PoolNodes::reconcile() {
  const std::shared_ptr<peering::LivePeering> peering = opts_.peering;
  std::set<std::string> wanted;
  std::vector<std::string> toStart;
  for (const peering::PoolGrant& g : peering->pools()) {
    wanted.insert(g.name);
    if (g.refusedReason.empty()) toStart.push_back(g.name);
  }
  std::vector<std::pair<std::string, std::unique_ptr<NodeController>>> gone;
  {
    base::MutexLock l(mu_);
    if (stopped_) return;
    for (auto it = nodes_.begin(); it != nodes_.end();) {
      if (wanted.count(it->first)) {
        ++it;
        continue;
      }
      gone.emplace_back(it->first, std::move(it->second));
      it = nodes_.erase(it);
    }
    std::vector<std::string> notRunning;
    for (std::string& p : toStart) {
      if (nodes_.count(p) == 0) notRunning.push_back(std::move(p));
    }
    toStart = std::move(notRunning);
  }
  for (auto& [pool, nc] : gone) {
    nc->stop();
    const std::string name = peering::poolNodeName(peering->providerName(), pool);
    kube::Result<json> r = local_.remove(kube::resources::kNodes, "", name);
    spdlog::info("event=pool_node_removed node={} deleted={}", name, r.ok());
  }
  if (toStart.empty()) return;
  const std::map<std::string, std::string> labels = peeringLabels();
  for (const std::string& pool : toStart) {
    NodeControllerOptions no;
    no.node.providerName = peering->providerName() + "-" + pool;  // strait-<provider>-<pool>
    no.node.providerClusterId = peering->providerId();
    no.node.address = opts_.nodeAddress;
    no.node.kubeletPort = opts_.kubeletPort == 0 ? 10250 : opts_.kubeletPort;
    no.node.taintEffect = opts_.taintEffect;
    no.node.extraLabels = labels;
    no.node.extraLabels[std::string(peering::kLabelPool)] = pool;
    no.pollInterval = opts_.pollInterval;
    no.grant = [peering, pool] {
      std::optional<peering::PoolGrant> g = peering->pool(pool);
      // Not in the last answer: nothing (an empty grant would advertise all free capacity).
      if (!g) return ResourceMap{{"cpu", {}}, {"memory", {}}, {"pods", {}}};
      ResourceMap granted = g->granted;
      for (const char* r : {"cpu", "memory", "pods"}) granted.try_emplace(r);
      return granted;
    };
    no.provider = [peering, pool] {
      std::optional<peering::PoolGrant> g = peering->pool(pool);
      return g ? g->summary : ProviderSummary{};
    };
    no.tunnel = [peering] { return peering->tunnel(); };
    no.health = opts_.health ? opts_.health : &ownHealth_;
    auto nc = std::make_unique<NodeController>(local_, no);
    if (kube::Status s = nc->start(); !s.ok()) {
      spdlog::error("event=pool_node_start_failed pool={} error=\"{}\"", pool, s.error().message);
      continue;
    }
    spdlog::info("event=pool_node_started node={} provider={}",
                 peering::poolNodeName(peering->providerName(), pool), peering->providerId());
    base::MutexLock l(mu_);
    if (stopped_) {
      nc->stop();
      return;
    }
    nodes_[pool] = std::move(nc);
  }
}

std::vector<std::string> PoolNodes::nodeNames() const {
  base::MutexLock l(mu_);
  std::vector<std::string> out;
  for (const auto& [pool, nc] : nodes_) {
    out.push_back(peering::poolNodeName(opts_.peering->providerName(), pool));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace strait::vnode
