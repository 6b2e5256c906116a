// ServiceAccount controller (upstream pkg/controller/serviceaccount): every active
// namespace has a ServiceAccount named "default"; deleting it brings it back.
#include <spdlog/spdlog.h>

#include "kube/object.h"
#include "minicluster/controller_context.h"
#include "minicluster/json_access.h"
#include "minicluster/work_queue.h"

namespace strait::minicluster {
namespace {

using json = nlohmann::json;
constexpr const char* kDefaultAccount = "default";

class ServiceAccountController : public Controller {
 public:
  explicit ServiceAccountController(ControllerContext& ctx)
      : ctx_(ctx),
        saInfo_(ctx.info("", "serviceaccounts")),
        namespaces_(ctx.informers.informer("", "namespaces")),
        accounts_(ctx.informers.informer("", "serviceaccounts")),
        queue_(WorkQueueOptions{"serviceaccount", 1},
               [this](const std::string& ns) { return sync(ns); }) {
    namespaces_.addHandlers(enqueueHandlers(queue_));
    InformerHandlers sa;
    sa.onDelete = [this](const CachedPtr& o) {
      if (o->name == kDefaultAccount) queue_.add(o->ns);
    };
    accounts_.addHandlers(sa);
  }

  void start() override { queue_.start(); }
  void stop() override { queue_.stop(); }

 private:
  kube::Status sync(const std::string& nsName) {
    auto ns = namespaces_.get("", nsName);
    if (!ns || !namespaceActive(*ns)) return kube::Status::OK();
    if (accounts_.get(nsName, kDefaultAccount)) return kube::Status::OK();
    json sa = {{"apiVersion", "v1"},
               {"kind", "ServiceAccount"},
               {"metadata", {{"name", kDefaultAccount}, {"namespace", nsName}}}};
    auto r = ctx_.rest.create(saInfo_, nsName, sa, WriteOptions{}, nullptr);
    if (r) {
      spdlog::info("event=serviceaccount_created namespace={} name={}", nsName, kDefaultAccount);
      return kube::Status::OK();
    }
    return benignCreateError(r.error().code) ? kube::Status::OK() : kube::Status(r.error());
  }

  ControllerContext& ctx_;
  const ResourceInfo& saInfo_;
  LocalInformer& namespaces_;
  LocalInformer& accounts_;
  WorkQueue queue_;
};

}  // namespace

std::unique_ptr<Controller> newServiceAccountController(ControllerContext& ctx) {
  return std::make_unique<ServiceAccountController>(ctx);
}

}  // namespace strait::minicluster
