// Virtual kubelets per peering (see vkubelet_manager.h).
#include "vnode/vkubelet_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace strait::vnode {

VirtualKubeletManager::VirtualKubeletManager(kube::Client& local, VirtualKubeletOptions templ)
    : local_(local), templ_(std::move(templ)) {}

VirtualKubeletManager::~VirtualKubeletManager() { stop(); }

void VirtualKubeletManager::peeringUp(std::shared_ptr<peering::LivePeering> peering) {
  const std::string id = peering->providerId();
  std::unique_ptr<VirtualKubelet> previous;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopped_) return;
    auto it = kubelets_.find(id);
    if (it != kubelets_.end()) {
      previous = std::move(it->second);
      kubelets_.erase(it);
    }
  }
  if (previous) previous->stop();
  VirtualKubeletOptions o = templ_;
  o.peering = std::move(peering);
  auto vk = std::make_unique<VirtualKubelet>(local_, std::move(o));
  if (kube::Status s = vk->start(); !s.ok()) {
    spdlog::error("event=virtual_kubelet_start_failed provider={} error=\"{}\"", id,
                  s.error().message);
    vk->stop();
    return;
  }
  std::lock_guard<std::mutex> l(mu_);
  if (stopped_) return;  // vk stops as it goes out of scope
  kubelets_[id] = std::move(vk);
}

void VirtualKubeletManager::peeringDown(const std::string& providerId) {
  std::unique_ptr<VirtualKubelet> vk;
  {
    std::lock_guard<std::mutex> l(mu_);
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
  {
    std::lock_guard<std::mutex> l(mu_);
    stopped_ = true;
    all.swap(kubelets_);
  }
  for (auto& [id, vk] : all) vk->stop();
}

std::vector<std::string> VirtualKubeletManager::nodeNames() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::string> out;
  for (const auto& [id, vk] : kubelets_) out.push_back(vk->nodeName());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace strait::vnode
