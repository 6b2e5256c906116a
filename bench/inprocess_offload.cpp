#include "bench/inprocess_offload.h"

#include "kube/client.h"
#include "kube/informer.h"
#include "kube/kubeconfig.h"
#include "kube/object.h"
#include "reflection/labels.h"
#include "reflection/pod_reflector.h"
#include "reflection/provider_applier.h"
#include "reflection/reflector.h"

namespace strait::bench {
namespace {

using namespace std::chrono_literals;
namespace res = kube::resources;

std::unique_ptr<kube::Client> clientFor(const std::string& kubeconfig, std::string* error) {
  auto cfg = kube::loadKubeconfig({{kubeconfig}, ""});
  if (!cfg.ok()) {
    *error = cfg.error().message;
    return nullptr;
  }
  cfg->qps = 5000;
  cfg->burst = 5000;
  auto c = kube::newClient(*cfg);
  if (!c.ok()) {
    *error = c.error().message;
    return nullptr;
  }
  return std::move(*c);
}

class Impl : public InProcessOffload {
 public:
  ~Impl() override {
    if (localPods_) localPods_->stop();
    if (remotePods_) remotePods_->stop();
    reflector_.stop();
  }

  std::string start(const std::string& consumerKubeconfig, const std::string& providerKubeconfig,
                    const std::string& consumerId, const std::string& virtualNode,
                    int workers) {
    std::string err;
    home_ = clientFor(consumerKubeconfig, &err);
    if (!home_) return err;
    provider_ = clientFor(providerKubeconfig, &err);
    if (!provider_) return err;
    reflection::NamespaceMapping mapping(consumerId, reflection::NamingStrategy::Default);
    applier_ = std::make_unique<reflection::ProviderApplier>(*provider_, mapping);
    localPods_ = std::make_unique<kube::Informer>(
        *home_, kube::InformerOptions{res::kPods, "", "", "spec.nodeName=" + virtualNode});
    remotePods_ = std::make_unique<kube::Informer>(
        *provider_,
        kube::InformerOptions{
            res::kPods, "", std::string(reflection::kLabelOriginClusterId) + "=" + consumerId, ""});
    reflection::PodReflectorOptions o;
    o.mapping = mapping;
    o.forge.consumerId = consumerId;
    o.forge.virtualNodeName = virtualNode;
    o.forge.virtualNodeAddress = "127.0.0.42";
    o.status.virtualNodeAddress = "127.0.0.42";
    o.resyncDone = [this] { return localPods_->hasSynced(); };
    reflection::KindOptions ko;
    ko.workers = workers;
    ko.queue.baseDelay = 20ms;
    ko.queue.maxDelay = 2s;
    auto registered = reflector_.registerKind(
        std::make_unique<reflection::PodReflector>(*home_, localPods_->cache(), *applier_, o), ko);
    if (!registered.ok()) return registered.error().message;
    auto enqueueLocal = [this](const kube::ObjectPtr& p) {
      (void)reflector_.enqueue("Pod", kube::objectKey(*p));
    };
    localPods_->addHandlers(
        {enqueueLocal,
         [enqueueLocal](const kube::ObjectPtr&, const kube::ObjectPtr& n) { enqueueLocal(n); },
         enqueueLocal});
    auto enqueueRemote = [this, mapping](const kube::ObjectPtr& p) {
      if (auto ns = mapping.localNamespace(kube::getNamespace(*p))) {
        (void)reflector_.enqueue("Pod", *ns + "/" + kube::getName(*p));
      }
    };
    remotePods_->addHandlers(
        {enqueueRemote,
         [enqueueRemote](const kube::ObjectPtr&, const kube::ObjectPtr& n) { enqueueRemote(n); },
         enqueueRemote});
    reflector_.start();
    localPods_->start();
    remotePods_->start();
    if (!localPods_->waitForSync(60s) || !remotePods_->waitForSync(60s)) {
      return "informers did not sync within 60 s";
    }
    return {};
  }

 private:
  std::unique_ptr<kube::Client> home_;
  std::unique_ptr<kube::Client> provider_;
  std::unique_ptr<reflection::ProviderApplier> applier_;
  std::unique_ptr<kube::Informer> localPods_;
  std::unique_ptr<kube::Informer> remotePods_;
  reflection::Reflector reflector_;
};

}  // namespace

std::unique_ptr<InProcessOffload> InProcessOffload::start(const std::string& consumerKubeconfig,
                                                          const std::string& providerKubeconfig,
                                                          const std::string& consumerId,
                                                          const std::string& virtualNode,
                                                          int workers, std::string* error) {
  auto impl = std::make_unique<Impl>();
  *error = impl->start(consumerKubeconfig, providerKubeconfig, consumerId, virtualNode, workers);
  if (!error->empty()) return nullptr;
  return impl;
}

}  // namespace strait::bench
