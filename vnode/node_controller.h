#pragma once
// The virtual node's controller (virtual-kubelet's node.go + lease_controller_v1.go): keeps
// the Node strait-<provider> registered in the consumer cluster with the labels, taint,
// capacity and conditions of node_builder.h, and its Lease renewed.
//
//  - every `pollInterval` (500 ms by default) it rebuilds the Node from the current grant,
//    provider summary and stream health, and writes it when anything but heartbeat times
//    changed (so capacity follows the provider within pollInterval + one write), and at
//    least every `statusInterval` (1 min, as kubelets do when a Lease carries liveness);
//  - labels and the taint it owns are (re)applied to the Node's spec/metadata without
//    touching the labels and taints others added (the node lifecycle controller's
//    unreachable / not-ready taints stay);
//  - the Lease is renewed every `leaseInterval` (10 s) by LeaseRenewer;
//  - Conflict answers re-read the Node on the next round; other errors are logged and
//    retried on the next round.
// Constructor does no I/O; start() starts one thread. Thread-safe: start/stop/snapshots from
// any thread; the sources are called on the controller's thread.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "vnode/capacity.h"
#include "vnode/lease.h"
#include "vnode/node_builder.h"
#include "vnode/stream_health.h"

namespace strait::vnode {

struct NodeControllerOptions {
  VirtualNodeConfig node;
  std::chrono::milliseconds pollInterval{500};
  std::chrono::milliseconds statusInterval{60000};
  std::chrono::milliseconds leaseInterval{kLeaseRenewInterval};
  // Current grant from the provider (peering heartbeat). Called on the controller thread.
  std::function<ResourceMap()> grant;
  // Current provider summary (from the provider's nodes and pods). Called likewise.
  std::function<ProviderSummary()> provider;
  // Health of the reflection stream; borrowed, must outlive the controller.
  const StreamHealth* health = nullptr;
  // The peering's tunnel condition (peering::LivePeering::tunnel). Optional: not configured.
  // When its status flips, an Event (TunnelUp / TunnelDown) is recorded on the Node.
  std::function<peering::TunnelCondition()> tunnel;
};

class NodeController {
 public:
  // `client` is borrowed and must outlive the controller.
  NodeController(kube::Client& client, NodeControllerOptions opts);
  ~NodeController();  // stop()
  NodeController(const NodeController&) = delete;
  NodeController& operator=(const NodeController&) = delete;

  // Validates the options (Invalid naming the field) and starts the thread. Idempotent.
  kube::Status start();
  // Stops the thread; the Node stays (deleting it is the unpeer's job). Idempotent.
  void stop();

  // One round: create or update the Node as needed. Called by the thread; public for tests
  // that drive it without the thread (do not mix both).
  kube::Status syncNode();
  // One Lease renewal; returns the delay until the next one.
  std::chrono::milliseconds renewLease();

  // The Node as last written or read (null before the first success).
  nlohmann::json lastNode() const;
  // Node writes done (creates + updates), for tests and metrics.
  uint64_t writes() const;

 private:
  class ClientLeaseStore;
  void run(std::stop_token stop);
  kube::Status validate() const;
  void tunnelEvent(const nlohmann::json& node, const peering::TunnelCondition& tunnel);

  kube::Client& client_;
  const NodeControllerOptions opts_;
  const std::string name_;
  std::unique_ptr<ClientLeaseStore> leaseStore_;
  std::unique_ptr<LeaseRenewer> lease_;

  mutable base::Mutex mu_;
  std::condition_variable_any cv_;
  nlohmann::json node_ GUARDED_BY(mu_);  // last stored Node
  std::chrono::steady_clock::time_point lastStatusWrite_ GUARDED_BY(mu_){};
  uint64_t writes_ GUARDED_BY(mu_) = 0;
  std::jthread thread_ GUARDED_BY(mu_);
};

}  // namespace strait::vnode
