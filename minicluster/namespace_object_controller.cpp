#include "minicluster/namespace_object_controller.h"

#include <spdlog/spdlog.h>

#include "kube/object.h"

namespace strait::minicluster {
namespace {

using json = nlohmann::json;

class NamespaceObjectController : public Controller {
 public:
  NamespaceObjectController(ControllerContext& ctx, NamespaceObjectSpec spec)
      : ctx_(ctx),
        spec_(std::move(spec)),
        info_(ctx.info("", spec_.resource)),
        namespaces_(ctx.informers.informer("", "namespaces")),
        objects_(ctx.informers.informer("", spec_.resource)),
        queue_(controllerQueue(spec_.queueName, 1),
               [this](const std::string& ns) { return sync(ns); }) {
    namespaces_.addHandlers(enqueueHandlers(queue_));
    InformerHandlers h;
    if (spec_.upToDate) {
      h.onUpdate = [this](const CachedPtr&, const CachedPtr& o) {
        if (o->name == spec_.name) queue_.add(o->ns);
      };
    }
    h.onDelete = [this](const CachedPtr& o) {
      if (o->name == spec_.name) queue_.add(o->ns);
    };
    objects_.addHandlers(h);
  }

  void start() override { queue_.start(); }
  void stop() override { queue_.stop(); }

 private:
  kube::Status sync(const std::string& nsName) {
    auto ns = namespaces_.get("", nsName);
    if (!ns || !namespaceActive(*ns)) return kube::Status::OK();
    auto cur = objects_.get(nsName, spec_.name);
    if (cur && (!spec_.upToDate || spec_.upToDate(cur->obj()))) return kube::Status::OK();
    kube::Result<ObjectPtr> r = kube::makeError(kube::Code::NotFound, "");
    if (cur) {
      r = ctx_.rest.mutate(info_, nsName, spec_.name, "", [&](json& obj) {
        spec_.repair(obj);
        return kube::Status::OK();
      });
    }
    if (!cur || (!r && r.error().code == kube::Code::NotFound)) {
      r = ctx_.rest.create(info_, nsName, spec_.build(nsName), WriteOptions{}, nullptr);
      if (r) spdlog::info("event={} namespace={} name={}", spec_.event, nsName, spec_.name);
    }
    if (r) return kube::Status::OK();
    if (r.error().code == kube::Code::AlreadyExists) {
      queue_.addAfter(nsName, std::chrono::milliseconds(100));  // informer lag: check again
    }
    return benignCreateError(r.error().code) ? kube::Status::OK() : kube::Status(r.error());
  }

  ControllerContext& ctx_;
  const NamespaceObjectSpec spec_;
  const ResourceInfo& info_;
  LocalInformer& namespaces_;
  LocalInformer& objects_;
  kube::WorkerPool queue_;
};

}  // namespace

std::unique_ptr<Controller> newNamespaceObjectController(ControllerContext& ctx,
                                                         NamespaceObjectSpec spec) {
  return std::make_unique<NamespaceObjectController>(ctx, std::move(spec));
}

}  // namespace strait::minicluster
