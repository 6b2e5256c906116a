#pragma once
// The virtual nodes of a peering's pools (peering/pools.h): one Node strait-<provider>-<pool>
// per pool the provider granted, each kept by its own NodeController (node_controller.h) from
// the pool's grant and the summary of the provider nodes its selector matches (capacity =
// min(grant, their free), labels = their uniform labels + the peering's labels +
// strait.io/peering-pool=<pool>, the peering's taint). A pool granted once keeps its node while the
// consumer still asks for it (a refusal shows as zero capacity); a pool the consumer dropped
// loses its node (deleted) within one poll.
//
// Readiness: each pool node follows `health`, the reflection stream's health of the peering's
// virtual kubelet, whose stream also carries the pool nodes' Pods (the manager passes it);
// without one it stays NotReady (ReflectionStreamNotConnected). `kubeletPort` is the virtual
// kubelet's, which serves logs and exec for the Pods of every node of the peering.
//
// Constructor does no I/O; start() starts one thread. Thread-safe: start/stop/removeNodes
// from the manager's thread, nodeNames from any thread.

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "peering/observer.h"
#include "vnode/node_controller.h"
#include "vnode/stream_health.h"

namespace strait::vnode {

struct PoolNodesOptions {
  std::shared_ptr<peering::LivePeering> peering;  // required
  std::string nodeAddress = "127.0.0.1";
  int kubeletPort = 10250;
  std::string taintEffect = "NoExecute";
  std::chrono::milliseconds pollInterval{500};  // pools looked at; each node polls as often
  std::chrono::milliseconds streamGrace{40000};
  // The peering's reflection stream health; borrowed, must outlive this object. Null: the
  // pool nodes have their own, never connected.
  const StreamHealth* health = nullptr;
};

class PoolNodes {
 public:
  // `local` is borrowed and must outlive this object.
  PoolNodes(kube::Client& local, PoolNodesOptions opts);
  ~PoolNodes();  // stop()
  PoolNodes(const PoolNodes&) = delete;
  PoolNodes& operator=(const PoolNodes&) = delete;

  // Invalid without a peering; otherwise starts the thread. Call once.
  kube::Status start();
  // Stops the thread and the node controllers (the Nodes stay). Idempotent.
  void stop();
  // After stop(), when the peering ended: deletes every pool node this object ran.
  void removeNodes();
  // One round: a node controller for each granted pool, none for the pools gone (their
  // Nodes deleted). Called by the thread; public for tests that drive it (do not mix both).
  void reconcile();
  // Names of the pool nodes running, sorted.
  std::vector<std::string> nodeNames() const;

 private:
  void run(std::stop_token stop);
  // spec.virtualNodeLabels of the peering's ForeignCluster (empty when unreadable).
  std::map<std::string, std::string> peeringLabels();

  kube::Client& local_;
  const PoolNodesOptions opts_;
  StreamHealth ownHealth_;  // used when opts_.health is null: never connected

  mutable base::Mutex mu_;
  std::condition_variable_any cv_;
  std::map<std::string, std::unique_ptr<NodeController>> nodes_ GUARDED_BY(mu_);  // by pool
  bool stopped_ GUARDED_BY(mu_) = false;
  std::jthread thread_ GUARDED_BY(mu_);
};

}  // namespace strait::vnode
