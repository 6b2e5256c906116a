#pragma once
// The consumer side of reflection for one peering, in one place: everything that carries the
// Pods bound to one virtual node to the provider and their state back.
//  - a StreamClient: one bidirectional gRPC stream to the provider agent (stream_client.h);
//  - a local Pod informer (fieldSelector spec.nodeName=<virtual node>, compact cache), and
//    one more per pool node of the peering (spec.nodeName=strait-<provider>-<pool>), added
//    and removed as the pools come and go; all of them travel on the one stream, and the
//    Pods of a pool node are pinned to the pool (pod_forge.h);
//  - the generic Reflector with one registered KindReflector per reflected kind: the
//    PodReflector (which also carries each Pod's ConfigMaps, Secrets and ServiceAccount), and
//    the ServiceReflector and EndpointSliceReflector (service_reflector.h) over informers of
//    the local Services and EndpointSlices;
//  - the gate: Pod keys are held back while the stream cannot answer truthfully (down, or
//    the provider's initial list not in yet, or the offloaded namespaces not listed), so an
//    empty remote cache never reads as "the remote Pod is gone";
//  - the resync: after every (re)connection, once the provider's list and the local informer
//    are in, every local Pod is enqueued and RESYNC_DONE carries their uids and those of
//    the objects that travelled with them (only then may the provider delete remote objects
//    whose origin is gone);
//  - continuity: while the provider is unreachable past the grace, the offloaded Pods are
//    marked not Ready (reason ProviderUnreachable) so that the consumer's Services stop
//    routing to them; the resync after the heal writes their status from the provider again;
//  - provider Events about a remote Pod recorded as Events on the local Pod (once each: the
//    provider re-sends recent ones after a reconnection);
//  - the provider Services exported to this consumer imported here (service_import.h),
//    their endpoints not ready while the provider is unreachable;
//  - remote namespaces released when a namespace stops being offloaded here (a DELETE on the
//    stream; the provider deletes it only if it created it for this consumer).
// Adding a reflected kind: a forge (pure), a reconcile decision, and one registerKind() call
// in start().
//
// Constructor does no I/O and starts no thread; start() does. Thread-safe: start/stop from
// one thread; releaseNamespace() and the getters from any thread. Callbacks (options) run on
// the stream's threads and must not block.

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "peering/pools.h"
#include "peering/transport.h"
#include "reflection/namespace_mapping.h"
#include "reflection/pod_overrides.h"
#include "reflection/sent_events.h"
#include "reflection/service_import.h"
#include "reflection/service_reflector.h"
#include "reflection/stream_messages.h"

namespace strait::kube {
class Informer;
}

namespace strait::reflection {

class PodStatusWriter;
class Reflector;
class StreamClient;

struct ConsumerReflectionOptions {
  std::string consumerId;           // required
  std::string nodeName;             // the virtual node whose Pods are reflected; required
  std::string nodeAddress;          // its InternalIP (forged into the remote Pods' env)
  std::set<std::string> nodeLabelKeys;  // the virtual node's own label keys (not forged)
  // The OffloadingOverrides of a local Pod for this provider (PodReflectorOptions.overrides).
  // Optional.
  std::function<kube::Result<PodOverrides>(const nlohmann::json& pod)> podOverrides;
  NamespaceMapping mapping{"", NamingStrategy::Default};
  // True once the offloaded namespaces (their naming) are known. Required.
  std::function<bool()> namespacesSynced;
  // Dials the provider: a fresh stream each call. Required.
  std::function<kube::Result<std::unique_ptr<peering::EventStream>>()> open;
  // nullopt when the Pod fits a provider node, else why not. Optional.
  std::function<std::optional<std::string>(const nlohmann::json& pod)> doesNotFit;
  // The provider's pod IP as this cluster reaches it (the tunnel's remap, fed from the
  // negotiated state: peering::NetworkState::toLocalView); it is what the local Pods' podIP
  // and podIPs show. Called on reflection workers; must be thread-safe. Optional: identity.
  std::function<std::string(const std::string& ip)> mapPodIp;
  int podWorkers = 8;
  // Threads writing the local Pods' status (PodStatusWriter): a Pod's wanted statuses
  // coalesce while its write waits for one of them. Fewer writers coalesce more but make
  // the statuses wait: at 1,000 Pods one writer wrote 1.7-2.0 statuses per Pod, four 2.5,
  // and one doubled the status latency of a 50 Pods/s wave (docs/benchmarks.md).
  int statusWriters = 4;
  std::chrono::milliseconds keepaliveInterval{1000};
  std::chrono::milliseconds callTimeout{10000};
  // Services: whether local namespace `ns` is offloaded to this provider. Optional: without
  // it no Service (nor EndpointSlice) is reflected.
  std::function<bool(const std::string& ns)> offloaded;
  // Label selector of the consumer's virtual nodes: an endpoint on one of them is a Pod
  // already in a provider, never reflected in an EndpointSlice. Empty: only nodeName.
  std::string virtualNodeSelector;
  int serviceWorkers = 2;
  int endpointSliceWorkers = 4;
  // True while the provider has been unreachable past the grace (the virtual node's stream
  // health): the offloaded Pods' Ready condition is then set False with reason
  // ProviderUnreachable, and restored from the provider's status after the heal. Optional.
  std::function<bool()> providerUnreachable;
  // The reflected Services/EndpointSlices/conflicts changed (at most once a second, from the
  // housekeeping thread), e.g. to publish them in the ForeignCluster status. Optional.
  std::function<void(const ServiceReflectionCounts&)> onServiceCounts;
  // The provider's cluster ID: when set, the Services it exports to this consumer are
  // imported here (service_import.h). Optional.
  std::string providerId;
  // The imported Services/EndpointSlices/conflicts changed (from the importer's thread), e.g.
  // to publish them in the ForeignCluster status. Optional.
  std::function<void(const ServiceImportCounts&)> onImportCounts;
  // The peering's pools by their virtual node's name (strait-<provider>-<pool>): the Pods
  // bound to those nodes are reflected too. nullopt while not known yet: the resync (and so
  // the provider's orphan sweep) waits for it. Called from the housekeeping thread about
  // once a second; may do I/O. Optional: no pools.
  std::function<std::optional<std::map<std::string, peering::PoolSpec>>()> pools;
  // Stream health, for the virtual node's Ready condition. Optional.
  std::function<void()> onConnected;
  std::function<void()> onMessage;
  std::function<void(const kube::Status& why)> onDisconnected;
};

class ConsumerReflection {
 public:
  // `local` (the consumer's API) is borrowed and must outlive this.
  ConsumerReflection(kube::Client& local, ConsumerReflectionOptions opts);
  ~ConsumerReflection();  // stop()
  ConsumerReflection(const ConsumerReflection&) = delete;
  ConsumerReflection& operator=(const ConsumerReflection&) = delete;

  // Validates the options (Invalid naming the field), registers the kinds and starts the
  // informer, the workers, the housekeeping thread and the stream. Call once.
  kube::Status start();
  // Stops the stream first (no more callbacks), then the rest. Idempotent.
  void stop();

  // Queues the DELETE of a released remote namespace; sent while the stream is up, retried
  // until the provider answers.
  void releaseNamespace(const std::string& remoteNs);
  // Whether the stream is connected and the provider's list has arrived.
  bool ready() const;
  // Resyncs completed (RESYNC_DONE sent).
  uint64_t resyncs() const;
  StreamCounters counters() const;
  // The pool nodes whose Pods are reflected now, sorted.
  std::vector<std::string> poolNodes() const;
  // Services, EndpointSlices reflected and conflicts now.
  ServiceReflectionCounts serviceCounts() const;
  // Services, EndpointSlices imported from the provider and conflicts now.
  ServiceImportCounts importCounts() const;
  // Local namespace `ns` became offloaded to this provider, or stopped being: its Services
  // are looked at again (reflected, or their remote copies and counts dropped).
  void resyncNamespaceServices(const std::string& ns);

 private:
  bool gateOpen() const;
  void onStreamConnected();
  void onProviderEvent(const nlohmann::json& event, const std::string& originUid);
  void housekeeping(std::stop_token stop);
  bool resyncNow();
  bool sendRelease(const std::string& remoteNs);
  void recordEvent(const nlohmann::json& remoteEvent, const std::string& originUid);
  // Logs event=stream_counters when APPLY/DELETE/error totals changed (at most once a second).
  void logCountersIfChanged();
  // The offloaded Pods' Ready condition False (reason ProviderUnreachable), once per outage.
  // True when every Pod was written.
  bool markPodsUnreachable();
  bool isVirtualNode(const std::string& nodeName) const;
  // The Pod informers of the pool nodes: one per pool node opts_.pools() names, started or
  // stopped to match (housekeeping thread). A removed node's Pods are enqueued (gone here).
  void syncPoolInformers();
  std::vector<std::shared_ptr<kube::Informer>> poolInformers() const;
  // Over the virtual node's Pods and its pool nodes'.
  kube::ObjectPtr localPod(const std::string& key) const;
  std::vector<kube::ObjectPtr> localPods() const;
  // Every Pod informer has synced and the pools are known.
  bool podsSynced() const;
  std::optional<peering::PoolSpec> poolOfNode(const std::string& nodeName) const;
  // The Service and EndpointSlice informers and kinds (start(), when opts_.offloaded is set).
  kube::Status registerServiceKinds();
  void enqueueServiceSlices(const std::string& serviceKey);
  // The Pod informers' onUpdate: queues the Pod unless the update only echoes a status the
  // status writer wrote.
  std::function<void(const kube::ObjectPtr&, const kube::ObjectPtr&)> podUpdateHandler();

  kube::Client& local_;
  const ConsumerReflectionOptions opts_;
  std::unique_ptr<StreamClient> stream_;
  std::unique_ptr<ServiceImporter> importer_;  // set when opts_.providerId is
  std::unique_ptr<kube::Informer> pods_;
  std::unique_ptr<kube::Informer> services_;   // set when opts_.offloaded is
  std::unique_ptr<kube::Informer> slices_;
  std::unique_ptr<kube::Informer> virtualNodes_;  // set when virtualNodeSelector is
  ServiceReflectionState serviceState_;  // own lock

  // The pool nodes' Pod informers (syncPoolInformers) and the pools.
  mutable base::Mutex poolMu_;
  std::map<std::string, std::shared_ptr<kube::Informer>> poolPods_ GUARDED_BY(poolMu_);
  std::map<std::string, peering::PoolSpec> poolSpecs_ GUARDED_BY(poolMu_);  // by node
  bool poolsKnown_ GUARDED_BY(poolMu_) = false;
  std::unique_ptr<PodStatusWriter> statusWriter_;  // outlives reflector_'s workers
  std::unique_ptr<Reflector> reflector_;

  mutable base::Mutex mu_;
  std::condition_variable_any cv_;
  bool started_ GUARDED_BY(mu_) = false;
  bool resyncPending_ GUARDED_BY(mu_) = false;
  uint64_t resyncs_ GUARDED_BY(mu_) = 0;
  // (event, origin uid)
  std::deque<std::pair<nlohmann::json, std::string>> events_ GUARDED_BY(mu_);
  std::deque<std::string> releases_ GUARDED_BY(mu_);  // remote namespaces to delete
  SentEvents seenEvents_;  // provider Events recorded (a reconnect may repeat some); own lock

  std::array<uint64_t, 3> loggedCounters_{};  // housekeeping thread only
  bool podsMarkedUnreachable_ = false;          // housekeeping thread only
  std::optional<ServiceReflectionCounts> publishedCounts_;  // housekeeping thread only
  std::jthread thread_;                       // housekeeping: resync, events, releases
};

}  // namespace strait::reflection
