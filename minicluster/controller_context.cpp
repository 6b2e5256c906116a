#include "minicluster/controller_context.h"
#include "minicluster/rbac_aggregation.h"

#include <spdlog/spdlog.h>

#include <cassert>
#include <thread>

#include "kube/json_access.h"
#include "kube/object.h"

namespace strait::minicluster {

using kube::child;
using kube::stringOf;

LocalInformer& InformerSet::informer(const std::string& group, const std::string& resource) {
  base::MutexLock l(mu_);
  std::string id = group + "/" + resource;
  auto it = informers_.find(id);
  if (it != informers_.end()) return *it->second;
  ResourceInfoPtr info;
  for (const auto& r : registry_.all()) {
    if (r->group == group && r->resource == resource) info = r;
  }
  assert(info && "informer for an unregistered resource");
  // Pods are the one resource whose count grows with the workload: their informer keeps
  // only the stored JSON and parses on use.
  const bool keepTrees = !(group.empty() && resource == "pods");
  auto inf = std::make_unique<LocalInformer>(store_, Rest::prefix(*info, ""), keepTrees);
  auto& ref = *inf;
  informers_.emplace(id, std::move(inf));
  return ref;
}

void InformerSet::startAll() {
  base::MutexLock l(mu_);
  for (auto& [id, inf] : informers_) inf->start();
}

void InformerSet::stopAll() {
  base::MutexLock l(mu_);
  for (auto& [id, inf] : informers_) inf->stop();
}

bool InformerSet::waitForSync(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  base::MutexLock l(mu_);
  for (auto& [id, inf] : informers_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!inf->waitForSync(std::max(left, std::chrono::milliseconds(0)))) return false;
  }
  return true;
}

kube::WorkerPoolOptions controllerQueue(std::string name, int workers) {
  kube::WorkerPoolOptions o;
  o.name = std::move(name);
  o.workers = workers;
  o.queue.baseDelay = std::chrono::milliseconds(5);
  o.queue.maxDelay = std::chrono::milliseconds(10000);
  o.queue.qps = 0;
  return o;
}

InformerHandlers enqueueHandlers(kube::WorkerPool& queue) {
  InformerHandlers h;
  h.onAdd = [&queue](const CachedPtr& o) { queue.add(objectKey(o->ns, o->name)); };
  h.onUpdate = [&queue](const CachedPtr&, const CachedPtr& o) {
    queue.add(objectKey(o->ns, o->name));
  };
  h.onDelete = [&queue](const CachedPtr& o) { queue.add(objectKey(o->ns, o->name)); };
  return h;
}

bool namespaceActive(const CachedObject& ns) {
  return !kube::isBeingDeleted(ns.obj()) &&
         stringOf(child(ns.obj(), "status"), "phase", "Active") == "Active";
}

bool benignCreateError(kube::Code code) {
  return code == kube::Code::AlreadyExists || code == kube::Code::Forbidden ||
         code == kube::Code::NotFound;
}

const ResourceInfo& ControllerContext::info(const std::string& group,
                                            const std::string& resource) const {
  for (const auto& r : registry.all()) {
    if (r->group == group && r->resource == resource) return *r;
  }
  assert(false && "unregistered built-in resource");
  std::abort();
}

ControllerManager::ControllerManager(Store& store, Registry& registry, Rest& rest,
                                     kube::KeyPair ca)
    : informers_(store, registry), ctx_{store, registry, rest, informers_, std::move(ca)} {}

ControllerManager::~ControllerManager() { stop(); }

void ControllerManager::start() {
  if (started_) return;
  started_ = true;
  controllers_.push_back(newReplicaSetController(ctx_));
  controllers_.push_back(newDaemonSetController(ctx_));
  controllers_.push_back(newDeploymentController(ctx_));
  controllers_.push_back(newEndpointsController(ctx_));
  controllers_.push_back(newEndpointSliceController(ctx_));
  controllers_.push_back(newServiceAccountController(ctx_));
  controllers_.push_back(newClusterRoleAggregationController(ctx_));
  if (!ctx_.ca.certPem.empty()) {
    controllers_.push_back(newRootCaPublisher(ctx_));
    controllers_.push_back(newCsrSigner(ctx_));
  }
  informers_.startAll();
  if (!informers_.waitForSync(std::chrono::seconds(30))) {
    spdlog::warn("event=informers_not_synced timeout_s=30");
  }
  for (auto& c : controllers_) c->start();
  spdlog::info("event=controllers_started count={}", controllers_.size());
}

void ControllerManager::stop() {
  for (auto& c : controllers_) c->stop();
  informers_.stopAll();
}

}  // namespace strait::minicluster
