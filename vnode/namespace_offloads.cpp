// The offloaded namespaces of one provider's virtual kubelet (see namespace_offloads.h).
#include "vnode/namespace_offloads.h"

#include <spdlog/spdlog.h>

#include "kube/informer.h"
#include "kube/object.h"
#include "vnode/offloading.h"

namespace strait::vnode {

using nlohmann::json;

NamespaceOffloads::NamespaceOffloads(kube::Client& local, std::string providerName,
                                     reflection::NamingStrategy fallback)
    : local_(local), providerName_(std::move(providerName)), fallback_(fallback) {}

NamespaceOffloads::~NamespaceOffloads() { stop(); }

void NamespaceOffloads::start(ReleasedFn onReleased) {
  onReleased_ = std::move(onReleased);
  informer_ = std::make_unique<kube::Informer>(
      local_, kube::InformerOptions{kube::resources::kNamespaces, "", "", ""});
  informer_->addHandlers(
      {[this](const kube::ObjectPtr& n) { observe(*n, false); },
       [this](const kube::ObjectPtr&, const kube::ObjectPtr& n) { observe(*n, false); },
       [this](const kube::ObjectPtr& n) { observe(*n, true); }});
  informer_->start();
}

void NamespaceOffloads::stop() {
  if (informer_) informer_->stop();
}

bool NamespaceOffloads::hasSynced() const { return informer_ && informer_->hasSynced(); }

reflection::NamingStrategy NamespaceOffloads::naming(std::string_view localNs) const {
  base::MutexLock l(mu_);
  auto it = naming_.find(localNs);
  return it == naming_.end() ? fallback_ : it->second;
}

reflection::PodOffloadingStrategy NamespaceOffloads::strategy(std::string_view localNs) const {
  base::MutexLock l(mu_);
  auto it = strategy_.find(localNs);
  return it == strategy_.end() ? reflection::PodOffloadingStrategy::LocalAndRemote : it->second;
}

bool NamespaceOffloads::offloaded(const std::string& localNs) const {
  base::MutexLock l(mu_);
  return offloaded_.count(localNs) > 0;
}

void NamespaceOffloads::observe(const json& nsObj, bool deleted) {
  const std::string name = kube::getName(nsObj);
  if (name.empty()) return;
  Offloading o = offloadingOf(nsObj);
  const bool here = !deleted && o.offloaded && (o.provider.empty() || o.provider == providerName_);
  reflection::NamingStrategy released{};
  {
    base::MutexLock l(mu_);
    if (here) {
      naming_[name] = o.naming;
      strategy_[name] = o.strategy;
      if (!offloaded_.insert(name).second || !onOffloaded_) return;
    } else {
      strategy_.erase(name);
      if (!offloaded_.erase(name)) return;
    }
  }
  if (here) {
    onOffloaded_(name);
    return;
  }
  {
    base::MutexLock l(mu_);
    auto it = naming_.find(name);
    released = it == naming_.end() ? fallback_ : it->second;
  }
  spdlog::info("event=namespace_offload_released namespace={} provider={} naming={}", name,
               providerName_, reflection::namingStrategyName(released));
  if (onReleased_) onReleased_(name, released);
}

}  // namespace strait::vnode
