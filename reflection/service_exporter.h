#pragma once
// The provider side of Service export for one consumer stream: watches the provider's
// Services (all namespaces) and EndpointSlices, and sends the consumer, over the reflection
// stream it dialled, what it imports (stream_messages.h):
//  - EXPORT of every Service whose strait.io/export-to annotation names this consumer
//    (forgeExportedService), then EXPORT of each EndpointSlice of such a Service
//    (forgeExportedEndpointSlice), on add and on every change;
//  - UNEXPORT of the Service and its slices when it is deleted or no longer names this
//    consumer, and of a slice deleted or moved to another Service;
//  - EXPORT_SYNCED with the origin uids of everything exported, once both informers'
//    initial lists were sent: only then may the consumer delete imports whose origin is
//    not listed.
// Services that Strait itself wrote here (label strait.io/managed-by=strait: the copies a
// consumer reflects into this cluster) are never exported back. A Service that cannot be
// exported (ExternalName) is logged and treated as not exported.
//
// Constructor does no I/O and starts no thread; start() does. Thread-safe: the informers'
// handlers run on their own threads and are serialized here; `send` is called with the
// exporter's lock held, so messages go out in the order the changes were seen.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "reflection/stream_messages.h"

namespace strait::kube {
class Informer;
}

namespace strait::reflection {

struct ServiceExporterOptions {
  std::string consumerId;  // the cluster ID the export-to annotation must name; required
  // Writes one message to the consumer's stream; false when the stream broke. Required.
  std::function<bool(const StreamMessage&)> send;
};

class ServiceExporter {
 public:
  // `provider` is borrowed and must outlive this.
  ServiceExporter(kube::Client& provider, ServiceExporterOptions opts);
  ~ServiceExporter();  // stop()
  ServiceExporter(const ServiceExporter&) = delete;
  ServiceExporter& operator=(const ServiceExporter&) = delete;

  // Starts the informers and the thread that sends EXPORT_SYNCED after their initial lists.
  // Call once.
  void start();
  // Stops and joins everything; no message is sent after it returns. Idempotent.
  void stop();

  // Services exported to this consumer now.
  size_t exportedServices() const;

 private:
  void onService(const nlohmann::json& svc);
  void onServiceGone(const nlohmann::json& svc);
  void onSlice(const nlohmann::json& slice);
  void onSliceGone(const nlohmann::json& slice);
  bool wanted(const nlohmann::json& svc) const;
  void sendSliceLocked(const nlohmann::json& slice) REQUIRES(mu_);
  void unexportServiceLocked(const std::string& key) REQUIRES(mu_);
  void unexportSliceLocked(const std::string& key) REQUIRES(mu_);
  void sendSynced(std::stop_token st);

  kube::Client& provider_;
  const ServiceExporterOptions opts_;
  std::unique_ptr<kube::Informer> services_;
  std::unique_ptr<kube::Informer> slices_;

  mutable base::Mutex mu_;
  bool stopped_ GUARDED_BY(mu_) = false;
  // "ns/name" of each exported Service -> its uid.
  std::map<std::string, std::string> servicesSent_ GUARDED_BY(mu_);
  // "ns/name" of each exported slice -> (its uid, "ns/service").
  std::map<std::string, std::pair<std::string, std::string>> slicesSent_ GUARDED_BY(mu_);
  std::jthread synced_;
};

}  // namespace strait::reflection
