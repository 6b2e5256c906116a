#pragma once
// One virtual kubelet: everything the consumer runs for one peering (virtual-kubelet's
// node + pod controllers, wired to Strait's reflection):
//  - a NodeController for Node strait-<provider-name>: grant and provider summary from the
//    LivePeering (heartbeats), Ready from the reflection stream's health with a grace;
//  - the ConsumerReflection (reflection/consumer_reflection.h): the stream to the provider,
//    the Pod informer and reflector, the resync and the provider's Events;
//  - "does not fit any single provider node" from the provider summary;
//  - the kubelet API (kubectl logs / exec on offloaded Pods), relayed to the provider; the
//    peering's pool nodes (pool_nodes.h) advertise the same endpoint;
//  - the Pods bound to the peering's pool nodes (strait-<provider>-<pool>, from the
//    ForeignCluster's spec.pools) reflected on the same stream, pinned to their pool;
//  - the OffloadingOverrides of the consumer's namespaces (offloading_overrides.h), applied
//    to the remote Pods of this provider;
//  - the offloaded namespaces (NamespaceOffloads): each namespace's naming (default or
//    same) for the mapping, and, when one stops being offloaded here, the release of its
//    remote namespace.
//
// Constructor does no I/O and starts no thread; start() does. Thread-safe: start/stop from
// one thread (the manager's); callbacks from the stream's and informer's threads.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "peering/observer.h"
#include "peering/pools.h"
#include "reflection/namespace_mapping.h"

namespace strait::reflection {
class ConsumerReflection;
}

namespace strait::vnode {

class KubeletServer;
class NamespaceOffloads;
class OffloadingOverrides;
class NodeController;
class StreamHealth;

struct VirtualKubeletOptions {
  std::shared_ptr<peering::LivePeering> peering;  // required
  std::string nodeAddress = "127.0.0.1";          // the Node's InternalIP (kubelet API host)
  // The kubelet API (vnode/kubelet_server.h: logs, exec, /pods, /stats/summary relayed to
  // the provider) listens on nodeAddress:kubeletPort (0 = any free port) with a serving
  // certificate from the consumer's kubelet-serving signer; the Node advertises the port.
  int kubeletPort = 10250;
  std::string taintEffect = "NoExecute";          // "" = no taint
  std::chrono::milliseconds streamGrace{40000};   // stream down this long: NotReady
  reflection::NamingStrategy naming = reflection::NamingStrategy::Default;
  int podWorkers = 8;
  std::chrono::milliseconds nodePollInterval{500};
  std::chrono::milliseconds keepaliveInterval{1000};
  std::chrono::milliseconds callTimeout{10000};
};

class VirtualKubelet {
 public:
  // `local` (the consumer's API) is borrowed and must outlive the kubelet.
  VirtualKubelet(kube::Client& local, VirtualKubeletOptions opts);
  ~VirtualKubelet();  // stop()
  VirtualKubelet(const VirtualKubelet&) = delete;
  VirtualKubelet& operator=(const VirtualKubelet&) = delete;

  // Validates the options (Invalid naming the field) and starts the node controller, the
  // informer, the reflector and the stream. Call once.
  kube::Status start();
  // Stops everything (the Node object stays: an agent restart keeps its node). Idempotent.
  void stop();
  // After stop(), when the peering has ended: deletes the Node (a NotFound is fine), so a
  // node controller round that raced with `strait unpeer` leaves nothing behind.
  void removeNode();

  const std::string& nodeName() const { return nodeName_; }
  // Whether the stream is connected and the provider's list has arrived.
  bool streamReady() const;
  // Resyncs completed (RESYNC_DONE sent), for tests and logs.
  uint64_t resyncs() const;
  // The reflection stream's health (the pool nodes' Ready follows it too); null before
  // start(). Owned by this object.
  const StreamHealth* health() const { return health_.get(); }
  // The port the kubelet API listens on (the configured one when it did not start).
  int kubeletPort() const;

 private:
  // spec.virtualNodeLabels of the provider's ForeignCluster (`strait peer --label`); empty
  // when it cannot be read (logged).
  std::map<std::string, std::string> virtualNodeLabels(const std::string& providerName);
  // Serving certificate by CSR, then the kubelet API server on nodeAddress:kubeletPort.
  kube::Status startKubeletServer();
  // The peering's pools by node name from spec.pools of its ForeignCluster, read again when
  // the pools in the last heartbeat differ from those read (at most every 2 s) and every
  // 30 s; nullopt until the first read (a missing ForeignCluster reads as no pools).
  // Reflection housekeeping thread only.
  std::optional<std::map<std::string, peering::PoolSpec>> poolsByNode();

  kube::Client& local_;
  const VirtualKubeletOptions opts_;
  const std::string nodeName_;
  std::unique_ptr<StreamHealth> health_;
  std::unique_ptr<NamespaceOffloads> namespaces_;
  std::unique_ptr<OffloadingOverrides> overrides_;
  std::unique_ptr<reflection::ConsumerReflection> reflection_;
  std::unique_ptr<NodeController> node_;
  std::unique_ptr<KubeletServer> kubelet_;

  base::Mutex mu_;
  bool started_ GUARDED_BY(mu_) = false;
  // poolsByNode's last read.
  std::optional<std::vector<peering::PoolSpec>> specPools_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point specPoolsRead_ GUARDED_BY(mu_);
};

}  // namespace strait::vnode
