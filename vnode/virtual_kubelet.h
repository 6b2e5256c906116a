#pragma once
// One virtual kubelet: everything the consumer runs for one peering (virtual-kubelet's
// node + pod controllers, wired to Strait's reflection stream):
//  - a NodeController for Node strait-<provider-name>: grant and provider summary from the
//    LivePeering (heartbeats), Ready from the reflection stream's health with a grace;
//  - a local Pod informer (fieldSelector spec.nodeName=<node>);
//  - the PodReflector, writing through a StreamClient (one bidirectional gRPC stream to the
//    provider agent, dialled on the peering's current mTLS client);
//  - "does not fit any single provider node" from the provider summary;
//  - provider Events about a remote Pod recorded as Events on the local Pod (once each: the
//    provider re-sends recent ones after a reconnection);
//  - the kubelet API (kubectl logs / exec on offloaded Pods), relayed to the provider;
//  - the offloaded namespaces (NamespaceOffloads): each namespace's naming (default or
//    same) for the mapping, and, when one stops being offloaded here, a DELETE of its
//    remote namespace on the stream (the provider deletes it only if it created it for
//    this consumer);
//  - after every (re)connection, once the provider's initial list and the local informer
//    are in: every local Pod is enqueued and RESYNC_DONE carries their uids (only then may
//    the provider delete remote Pods whose origin is gone).
// Pod handling waits while the stream is down or the provider's list has not arrived, so
// a partition never makes a running Pod look lost.
//
// Constructor does no I/O and starts no thread; start() does. Thread-safe: start/stop from
// one thread (the manager's); callbacks from the stream's and informer's threads.

#include <array>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "kube/client.h"
#include "peering/observer.h"
#include "reflection/namespace_mapping.h"
#include "reflection/sent_events.h"

namespace strait::kube {
class Informer;
}
namespace strait::reflection {
class Reflector;
class StreamClient;
}  // namespace strait::reflection

namespace strait::vnode {

class KubeletServer;
class NamespaceOffloads;
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

 private:
  void onStreamConnected();
  void onProviderEvent(const nlohmann::json& event, const std::string& originUid);
  void housekeeping(std::stop_token stop);
  bool resyncNow();
  // Sends the DELETE of one released remote namespace; false to try again later.
  bool releaseNamespace(const std::string& remoteNs);
  // Serving certificate by CSR, then the kubelet API server on nodeAddress:kubeletPort.
  kube::Status startKubeletServer();
  void recordEvent(const nlohmann::json& remoteEvent, const std::string& originUid);
  // Logs event=stream_counters when APPLY/DELETE/error totals changed (housekeeping thread,
  // at most once a second), so what a reconnection re-sent can be read from the log.
  void logCountersIfChanged();

  kube::Client& local_;
  const VirtualKubeletOptions opts_;
  const std::string nodeName_;
  std::unique_ptr<StreamHealth> health_;
  std::unique_ptr<reflection::StreamClient> stream_;
  std::unique_ptr<kube::Informer> pods_;
  std::unique_ptr<reflection::Reflector> reflector_;
  std::unique_ptr<NodeController> node_;
  std::unique_ptr<KubeletServer> kubelet_;
  std::unique_ptr<NamespaceOffloads> namespaces_;

  mutable std::mutex mu_;  // guards the fields below
  std::condition_variable_any cv_;
  bool resyncPending_ = false;
  uint64_t resyncs_ = 0;
  std::deque<std::pair<nlohmann::json, std::string>> events_;  // (event, origin uid)
  std::deque<std::string> releases_;  // remote namespaces to delete (unoffloaded)
  reflection::SentEvents seenEvents_;  // provider Events recorded (a reconnect may repeat some)
  bool started_ = false;
  std::array<uint64_t, 3> loggedCounters_{};  // housekeeping thread only
  std::jthread thread_;  // housekeeping: resync and event recording
};

}  // namespace strait::vnode
