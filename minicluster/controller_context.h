#pragma once
// What the minicluster's workload controllers share (kube-controller-manager's
// ControllerContext): the store, registry and REST layer, one shared informer per resource,
// and the cluster CA. Also the factories of the controllers themselves; each lives in its
// own file (replicaset_controller.cpp, deployment_controller.cpp, ...).
//
// Informers: a controller asks informer(group, resource) in its constructor and adds its
// handlers there; ControllerManager starts the informers after every controller has been
// built, then starts the controllers. Thread-safe after start.

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/thread_annotations.h"
#include "kube/pki.h"
#include "kube/worker_pool.h"
#include "minicluster/local_informer.h"
#include "minicluster/registry.h"
#include "minicluster/rest.h"
#include "minicluster/store.h"

namespace strait::minicluster {

// One informer per resource, created on first request. Thread-safe.
class InformerSet {
 public:
  explicit InformerSet(Store& store, Registry& registry) : store_(store), registry_(registry) {}
  // The informer of a built-in resource ("" for core, "pods"); created (not started) on the
  // first call. Asserts that the resource is registered (a programming error otherwise).
  LocalInformer& informer(const std::string& group, const std::string& resource);
  void startAll();
  void stopAll();
  // Waits until every informer has synced; false on timeout.
  bool waitForSync(std::chrono::milliseconds timeout);

 private:
  Store& store_;
  Registry& registry_;
  base::Mutex mu_;
  std::map<std::string, std::unique_ptr<LocalInformer>> informers_ GUARDED_BY(mu_);
};

struct ControllerContext {
  Store& store;
  Registry& registry;
  Rest& rest;
  InformerSet& informers;
  kube::KeyPair ca;  // cluster CA (root-CA publisher, CSR signing); empty in some tests

  // The ResourceInfo of a built-in resource; asserts that it exists.
  const ResourceInfo& info(const std::string& group, const std::string& resource) const;
};

// The work queue of a controller: `workers` threads, failed keys retried after 5 ms doubling
// up to 10 s, no overall rate limit.
kube::WorkerPoolOptions controllerQueue(std::string name, int workers);
// Handlers that queue objectKey(ns, name) of every added, updated and deleted object.
InformerHandlers enqueueHandlers(kube::WorkerPool& queue);
// Whether a Namespace object is Active and not being deleted.
bool namespaceActive(const CachedObject& ns);
// Create errors a controller treats as "nothing to do": AlreadyExists (its informer has not
// seen the object yet), Forbidden (namespace terminating), NotFound (namespace gone).
bool benignCreateError(kube::Code code);

// A control loop. start() launches its workers (informers are started by the manager);
// stop() joins them. Both idempotent.
class Controller {
 public:
  virtual ~Controller() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
};

std::unique_ptr<Controller> newReplicaSetController(ControllerContext& ctx);
std::unique_ptr<Controller> newDaemonSetController(ControllerContext& ctx);
std::unique_ptr<Controller> newDeploymentController(ControllerContext& ctx);
std::unique_ptr<Controller> newEndpointsController(ControllerContext& ctx);
std::unique_ptr<Controller> newEndpointSliceController(ControllerContext& ctx);
std::unique_ptr<Controller> newServiceAccountController(ControllerContext& ctx);
std::unique_ptr<Controller> newRootCaPublisher(ControllerContext& ctx);
std::unique_ptr<Controller> newCsrSigner(ControllerContext& ctx);

// Runs every workload controller above over one InformerSet. Thread-safe; constructor does
// no work, start() builds informers and controllers and starts them, stop() joins all.
class ControllerManager {
 public:
  ControllerManager(Store& store, Registry& registry, Rest& rest, kube::KeyPair ca);
  ~ControllerManager();
  void start();
  void stop();

 private:
  InformerSet informers_;
  ControllerContext ctx_;
  std::vector<std::unique_ptr<Controller>> controllers_;
  bool started_ = false;
};

}  // namespace strait::minicluster
