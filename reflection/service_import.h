#pragma once
// The consumer side of Service export for one peering: applies in this cluster what the
// provider exports to it over the reflection stream (EXPORT, UNEXPORT, EXPORT_SYNCED:
// stream_messages.h, service_export.h).
//  - an exported Service becomes a Service WITHOUT selector of the same namespace and name
//    (the namespace is created when absent, labelled strait.io/managed-by=strait and
//    strait.io/imported-from=<provider>), type ClusterIP with its own ClusterIP here, the
//    provider's ports; labelled strait.io/managed-by=strait, strait.io/imported-from=<the
//    provider's cluster ID> and strait.io/origin-uid=<the provider object's uid>;
//  - its EndpointSlices are written with kubernetes.io/service-name and
//    endpointslice.kubernetes.io/managed-by=endpointslice.strait.io, their addresses mapped
//    into this cluster's view of the provider's Pods (mapPodIp: the tunnel's remap), ready,
//    serving and terminating as the provider has them;
//  - a Service or slice of that name that Strait did not import from this provider is never
//    written nor deleted: the Service gets one Warning Event ReflectionConflict, counted in
//    counts().conflicts until it goes (then the import proceeds);
//  - UNEXPORT deletes the copy; after EXPORT_SYNCED (never before) every copy imported from
//    this provider whose origin is not listed is deleted (what was unexported while the
//    stream was down, or before this agent started);
//  - while providerUnreachable() the imported slices' endpoints are written ready=false,
//    serving=false (nothing deleted) and written as exported again after the heal.
// Writes happen on the importer's own thread; failures are retried every `retry`.
//
// Constructor does no I/O and starts no thread; start() does. Thread-safe: handle() from the
// stream's reader thread (never blocks on the API), counts() from any thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "reflection/stream_messages.h"

namespace strait::reflection {

// What one peering imports now, for `strait status`.
struct ServiceImportCounts {
  uint64_t services = 0;        // Services imported and in sync
  uint64_t endpointSlices = 0;  // their EndpointSlices in sync
  uint64_t conflicts = 0;       // Services and slices held back by an object not ours
  bool operator==(const ServiceImportCounts&) const = default;
};

struct ServiceImporterOptions {
  std::string providerId;  // the provider's cluster ID (strait.io/imported-from); required
  // The provider's Pod IP as this cluster reaches it (peering::NetworkState::toLocalView).
  // Optional: identity. Called on the importer's thread.
  std::function<std::string(const std::string& ip)> mapPodIp;
  // True while the provider is unreachable past the grace. Optional.
  std::function<bool()> providerUnreachable;
  // The counts changed (called from the importer's thread). Optional.
  std::function<void(const ServiceImportCounts&)> onCounts;
  std::chrono::milliseconds retry{500};
  // How often a conflicting object is looked at again (imported once it has gone).
  std::chrono::milliseconds conflictRecheck{1000};
};

class ServiceImporter {
 public:
  // `local` (the consumer's API) is borrowed and must outlive this.
  ServiceImporter(kube::Client& local, ServiceImporterOptions opts);
  ~ServiceImporter();  // stop()
  ServiceImporter(const ServiceImporter&) = delete;
  ServiceImporter& operator=(const ServiceImporter&) = delete;

  // Invalid when providerId is empty. Starts the writer thread. Call once.
  kube::Status start();
  // Joins the writer thread; imported objects stay. Idempotent.
  void stop();

  // Takes one EXPORT, UNEXPORT or EXPORT_SYNCED (other types are ignored). Never blocks on
  // the API server.
  void handle(const StreamMessage& m);

  ServiceImportCounts counts() const;

 private:
  struct Wanted {
    nlohmann::json object;
    std::string originUid;
  };
  void run(std::stop_token st);
  // Brings "Kind/ns/name" in line with what is wanted. False: retry later.
  bool reconcile(const std::string& kindKey, bool unreachable);
  bool ensureNamespace(const std::string& ns);
  void recordConflict(const nlohmann::json& existing, const std::string& message);
  void sweep(const std::set<std::string>& live);
  void markDirty(const std::string& kindKey, std::chrono::steady_clock::time_point at)
      REQUIRES(mu_);

  kube::Client& local_;
  const ServiceImporterOptions opts_;

  mutable base::Mutex mu_;
  std::condition_variable_any cv_;
  std::map<std::string, Wanted> wanted_ GUARDED_BY(mu_);  // "Kind/ns/name"
  // "Kind/ns/name" -> when to reconcile it next.
  std::map<std::string, std::chrono::steady_clock::time_point> dirty_ GUARDED_BY(mu_);
  std::optional<std::set<std::string>> pendingSweep_ GUARDED_BY(mu_);
  std::set<std::string> imported_ GUARDED_BY(mu_);   // in sync now
  std::set<std::string> conflicts_ GUARDED_BY(mu_);  // held back by an object not ours
  bool started_ GUARDED_BY(mu_) = false;

  bool unreachable_ = false;                      // writer thread only
  std::optional<ServiceImportCounts> published_;  // writer thread only
  std::jthread thread_;
};

}  // namespace strait::reflection
