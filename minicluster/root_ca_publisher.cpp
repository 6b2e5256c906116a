// Root-CA publisher (upstream pkg/controller/certificates/rootcacertpublisher): a ConfigMap
// "kube-root-ca.crt" holding the cluster CA as data["ca.crt"] in every active namespace;
// edits are reverted and a deleted one comes back.
#include <spdlog/spdlog.h>

#include "kube/object.h"
#include "minicluster/controller_context.h"
#include "minicluster/json_access.h"
#include "minicluster/work_queue.h"

namespace strait::minicluster {
namespace {

using json = nlohmann::json;
constexpr const char* kConfigMapName = "kube-root-ca.crt";
constexpr const char* kDescription =
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters.";

class RootCaPublisher : public Controller {
 public:
  explicit RootCaPublisher(ControllerContext& ctx)
      : ctx_(ctx),
        cmInfo_(ctx.info("", "configmaps")),
        namespaces_(ctx.informers.informer("", "namespaces")),
        configMaps_(ctx.informers.informer("", "configmaps")),
        queue_(WorkQueueOptions{"root-ca-cert-publisher", 1},
               [this](const std::string& ns) { return sync(ns); }) {
    namespaces_.addHandlers(enqueueHandlers(queue_));
    InformerHandlers cm;
    cm.onUpdate = [this](const CachedPtr&, const CachedPtr& o) {
      if (o->name == kConfigMapName) queue_.add(o->ns);
    };
    cm.onDelete = [this](const CachedPtr& o) {
      if (o->name == kConfigMapName) queue_.add(o->ns);
    };
    configMaps_.addHandlers(cm);
  }

  void start() override { queue_.start(); }
  void stop() override { queue_.stop(); }

 private:
  kube::Status sync(const std::string& nsName) {
    auto ns = namespaces_.get("", nsName);
    if (!ns || !namespaceActive(*ns)) return kube::Status::OK();
    const json want = {{"ca.crt", ctx_.ca.certPem}};
    auto cur = configMaps_.get(nsName, kConfigMapName);
    if (cur && cur->obj.contains("data") && cur->obj["data"] == want) return kube::Status::OK();
    kube::Result<ObjectPtr> r = kube::makeError(kube::Code::NotFound, "");
    if (cur) {
      r = ctx_.rest.mutate(cmInfo_, nsName, kConfigMapName, "", [&](json& obj) {
        obj["data"] = want;
        obj.erase("binaryData");
        return kube::Status::OK();
      });
    }
    if (!cur || (!r && r.error().code == kube::Code::NotFound)) {
      json cm = {{"apiVersion", "v1"},
                 {"kind", "ConfigMap"},
                 {"metadata",
                  {{"name", kConfigMapName},
                   {"namespace", nsName},
                   {"annotations", {{"kubernetes.io/description", kDescription}}}}},
                 {"data", want}};
      r = ctx_.rest.create(cmInfo_, nsName, cm, WriteOptions{}, nullptr);
      if (r) spdlog::info("event=root_ca_published namespace={}", nsName);
    }
    if (r) return kube::Status::OK();
    if (r.error().code == kube::Code::AlreadyExists) {
      queue_.addAfter(nsName, std::chrono::milliseconds(100));  // informer lag: check again
    }
    return benignCreateError(r.error().code) ? kube::Status::OK() : kube::Status(r.error());
  }

  ControllerContext& ctx_;
  const ResourceInfo& cmInfo_;
  LocalInformer& namespaces_;
  LocalInformer& configMaps_;
  WorkQueue queue_;
};

}  // namespace

std::unique_ptr<Controller> newRootCaPublisher(ControllerContext& ctx) {
  return std::make_unique<RootCaPublisher>(ctx);
}

}  // namespace strait::minicluster
