#pragma once
// The provider side of the reflection stream (stream_messages.h): one StreamServer session
// per consumer stream, run by ProviderService's stream handler on the gRPC thread of the
// stream. A session:
//  - applies APPLY / DELETE (and answers GET) through a ProviderApplier (which re-validates
//    every Pod: scheduling fields stripped, Pod Security level checked) on a small worker
//    pool, so the stream reader never waits on the API server, and answers each by seq with
//    a REPLY: the object as stored or the error (a Pod beyond the grant: Forbidden with the
//    grant's message, which the consumer writes on its local Pod); an APPLY of an object
//    whose earlier APPLY still waits for a worker replaces it, and both are answered with
//    the one result (the queue holds at most one APPLY per object);
//  - watches this consumer's Pods in all namespaces (label strait.io/origin-cluster-id) and
//    sends STATUS on add, on update STATUS_PATCH (the difference from the version sent
//    before; a whole STATUS to a consumer that did not accept patches) and GONE on delete;
//    the initial list is followed by SYNCED;
//  - forwards core/v1 Events whose involvedObject is one of those Pods as EVENT (origin_uid
//    = the consumer's Pod uid): after the initial list, the newest kEventBacklog existing
//    ones not yet sent to this consumer (sentEvents, kept across its streams, so Events
//    raised while the stream was down arrive after the reconnection), then every new one;
//  - after RESYNC_DONE (never before) deletes this consumer's Pods whose origin uid the
//    consumer did not list (ProviderApplier::deleteOrphans), then the ConfigMaps, Secrets
//    and ServiceAccounts no remaining Pod uses whose origin is neither listed nor applied
//    on this stream (deleteOrphanDependencies);
//  - after RESYNC_DONE likewise deletes this consumer's EndpointSlices and Services whose
//    origin the consumer did not list (it lists the ones it still reflects);
//  - to a consumer whose RESYNC_BEGIN accepts exports, sends the provider Services whose
//    strait.io/export-to annotation names it and their EndpointSlices (EXPORT, UNEXPORT,
//    EXPORT_SYNCED: service_exporter.h);
//  - DELETE of kind Namespace: deletes that namespace if it was created for this consumer
//    (ProviderApplier::removeNamespace), never another one;
//  - sends KEEPALIVE every keepaliveInterval and ends the stream when nothing arrived from
//    the consumer for deadAfter (a silent partition).
// serve() returns when the stream ends, with informers stopped and every thread joined.
// makeProviderStreamHandler also watches each consumer's streams and tunnel: when no stream
// has been up for unreachableGrace, or the tunnel to the consumer is down
// (consumerTunnelDown), the EndpointSlices it reflected are marked not ready (ready=false,
// serving=false, the conditions sent kept in the slice) so that the provider's Services
// stop sending traffic into a dead link, and a slice it applies meanwhile is stored so too;
// nothing is deleted. Once a stream is up and the tunnel too, the kept conditions are put
// back within a watch round (200 ms), and the consumer's resync re-applies them as they are.
//
// Thread-safe: counters() from any thread while serve() runs.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "kube/client.h"
#include "kube/pod_security.h"
#include "peering/provider.h"
#include "peering/transport.h"
#include "reflection/namespace_mapping.h"
#include "reflection/provider_applier.h"
#include "reflection/sent_events.h"
#include "reflection/stream_messages.h"

namespace strait::reflection {

class PodUsage;

struct StreamServerOptions {
  std::string consumerId;
  // Grant check for a Pod about to be created (ProviderService::admitPod). Optional.
  std::function<kube::Status(const nlohmann::json& pod)> admitPod;
  // The same check given what the consumer's Pods already request (ProviderService::
  // admitPodWithUsage); when set, the session sums that from its informer (pod_usage.h)
  // instead of admitPod listing every Pod per creation. Optional.
  std::function<kube::Status(const nlohmann::json& pod, const peering::ResourceMap& used)>
      admitPodWithUsage;
  // False once the peering ended: the session closes (checked every keepalive). Optional.
  std::function<bool()> stillActive;
  // The Pod Security Standards level every Pod applied must pass (ProviderApplier), also
  // set as the enforce label of the namespaces the session creates.
  kube::PodSecurityLevel podSecurity = kube::PodSecurityLevel::Baseline;
  std::chrono::milliseconds keepaliveInterval{1000};
  std::chrono::milliseconds deadAfter{0};  // 0: 5 x keepaliveInterval, at least 3 s
  int workers = 4;
  // Events already forwarded to this consumer, shared by its successive streams. Optional
  // (null: this session's own, so every existing Event counts as unsent).
  std::shared_ptr<SentEvents> sentEvents;
  // Told (live true) once the session's count of the consumer's Pod requests is complete
  // (after the initial list), and (live false) before it goes. Optional.
  std::function<void(const PodUsage& usage, bool live)> onUsage;
  // The consumer's endpoint addresses as this provider reaches them (ProviderApplier).
  // Optional: identity. The agent wires the tunnel's negotiated remap of the consumer's
  // pod CIDR here.
  EndpointAddressTranslator translateAddress;
  // A consumer with no stream for this long gets the endpoints it reflected marked not
  // ready (makeProviderStreamHandler). 0: deadAfter (5 x keepaliveInterval, at least 3 s).
  std::chrono::milliseconds unreachableGrace{0};
  // True while this provider's tunnel to consumer `consumerId` is down after having been up
  // (peering::NetworkState::tunnelLost): its endpoints are held not ready as for a stream
  // down past the grace. Thread-safe, must not block. Optional: the stream alone counts.
  std::function<bool(const std::string& consumerId)> consumerTunnelDown;
};

class StreamServer {
 public:
  // `provider` is borrowed and must outlive the session.
  StreamServer(kube::Client& provider, StreamServerOptions opts);

  // Serves `stream` until it ends (broken, cancelled, silent for deadAfter, or the peering
  // ended). Returns OK for a stream the consumer closed or that broke, an error when the
  // session refused to go on (peering no longer active). Call once.
  kube::Status serve(peering::EventStream& stream);

  StreamCounters counters() const;

 private:
  kube::Client& provider_;
  const StreamServerOptions opts_;
  LiveStreamCounters counters_;
  friend class StreamSession;
};

// The ProviderService stream handler: a StreamServer per stream, for the calling consumer,
// with admitPod/stillActive wired to `service`. Both references must outlive the handler.
// `base` gives the keepalive and pool settings.
peering::ProviderService::StreamHandler makeProviderStreamHandler(
    kube::Client& provider, peering::ProviderService& service, StreamServerOptions base = {});

}  // namespace strait::reflection
