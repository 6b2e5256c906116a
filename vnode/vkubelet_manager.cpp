// Virtual kubelets per peering (see vkubelet_manager.h).
#include "vnode/vkubelet_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace strait::vnode {

int chooseKubeletPort(int base, const std::set<int>& taken) {
  if (base <= 0) return 0;
  for (int p = base; p <= 65535; ++p) {
    if (!taken.count(p)) return p;
  }
  return 0;
}

VirtualKubeletManager::VirtualKubeletManager(kube::Client& local, VirtualKubeletOptions templ)
    : local_(local), templ_(std::move(templ)) {}

VirtualKubeletManager::~VirtualKubeletManager() { stop(); }

void VirtualKubeletManager::peeringUp(std::shared_ptr<peering::LivePeering> peering) {
  const std::string id = peering->providerId();
  std::unique_ptr<VirtualKubelet> previous;
  int port = 0;
  {
    base::MutexLock l(mu_);
    if (stopped_) return;
    auto it = kubelets_.find(id);
    if (it != kubelets_.end()) {
      previous = std::move(it->second);
      kubelets_.erase(it);
    }
    auto held = ports_.find(id);
    if (held != ports_.end()) {
      port = held->second;  // the same provider again: its Node keeps its port
    } else {
      std::set<int> taken;
      for (const auto& [other, p] : ports_) taken.insert(p);
      port = chooseKubeletPort(templ_.kubeletPort, taken);
      if (port != 0) ports_[id] = port;
    }
  }
  if (previous) previous->stop();
  std::unique_ptr<PoolNodes> previousPools;
  {
    base::MutexLock l(mu_);
    auto it = pools_.find(id);
    if (it != pools_.end()) {
      previousPools = std::move(it->second);
      pools_.erase(it);
    }
  }
  if (previousPools) previousPools->stop();
  VirtualKubeletOptions o = templ_;
  o.kubeletPort = port;
  o.peering = peering;
  auto vk = std::make_unique<VirtualKubelet>(local_, std::move(o));
  if (kube::Status s = vk->start(); !s.ok()) {
    spdlog::error("event=virtual_kubelet_start_failed provider={} error=\"{}\"", id,
                  s.error().message);
    vk->stop();
    return;
  }
  // The pool nodes share the virtual kubelet's stream (their Ready follows its health) and
  // its kubelet API endpoint (logs and exec of their Pods).
  PoolNodesOptions po;
  po.peering = std::move(peering);
  po.nodeAddress = templ_.nodeAddress;
  po.kubeletPort = vk->kubeletPort();
  po.taintEffect = templ_.taintEffect;
  po.pollInterval = templ_.nodePollInterval;
  po.streamGrace = templ_.streamGrace;
  po.health = vk->health();
  auto pools = std::make_unique<PoolNodes>(local_, po);
  base::MutexLock l(mu_);
  if (stopped_) return;  // both stop as they go out of scope (the pool nodes first)
  kubelets_[id] = std::move(vk);
  if (kube::Status s = pools->start(); !s.ok()) {
    spdlog::error("event=pool_nodes_start_failed provider={} error=\"{}\"", id, s.error().message);
  } else {
    pools_[id] = std::move(pools);
  }
}

void VirtualKubeletManager::peeringDown(const std::string& providerId) {
  std::unique_ptr<VirtualKubelet> vk;
  std::unique_ptr<PoolNodes> pools;
  {
    base::MutexLock l(mu_);
    ports_.erase(providerId);
    if (auto p = pools_.find(providerId); p != pools_.end()) {
      pools = std::move(p->second);
      pools_.erase(p);
    }
  }
  if (pools) {
    pools->stop();
    pools->removeNodes();
  }
  {
    base::MutexLock l(mu_);
    auto it = kubelets_.find(providerId);
    if (it == kubelets_.end()) return;
    vk = std::move(it->second);
    kubelets_.erase(it);
  }
  spdlog::info("event=virtual_kubelet_stopping provider={} node={}", providerId, vk->nodeName());
  vk->stop();
  vk->removeNode();
}

void VirtualKubeletManager::stop() {
  std::map<std::string, std::unique_ptr<VirtualKubelet>> all;
  std::map<std::string, std::unique_ptr<PoolNodes>> pools;
  {
    base::MutexLock l(mu_);
    stopped_ = true;
    all.swap(kubelets_);
    pools.swap(pools_);
  }
  for (auto& [id, p] : pools) p->stop();
  for (auto& [id, vk] : all) vk->stop();
}

std::vector<std::string> VirtualKubeletManager::nodeNames() const {
  base::MutexLock l(mu_);
  std::vector<std::string> out;
  for (const auto& [id, vk] : kubelets_) out.push_back(vk->nodeName());
  for (const auto& [id, p] : pools_) {
    for (std::string& n : p->nodeNames()) out.push_back(std::move(n));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace strait::vnode
