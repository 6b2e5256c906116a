#pragma once
// The consumer side of Service reflection for one peering: two KindReflectors on the
// generic Reflector (reflector.h) and the state they share.
//  - ServiceReflector, key "ns/name" of a local Service: a Service in a namespace offloaded
//    to this provider, without strait.io/reflection: disabled, is forged
//    (forgeRemoteService) and applied into the mapped namespace; otherwise the remote copy,
//    if ours, is deleted;
//  - EndpointSliceReflector, key "ns/name" of a local EndpointSlice: the endpoints of the
//    consumer's own Pods become a remote slice of the same name (forgeRemoteEndpointSlice),
//    only while its Service is reflected (a slice of an unreflected Service never reaches a
//    same-named provider Service); a slice left with no such endpoint, or whose Service is
//    no longer reflected, is deleted remotely.
// Both decide with decideMirror (service_forge.h). A remote object of the same name that is
// not this consumer's is never overwritten nor deleted: the local Service gets one Warning
// Event ReflectionConflict naming the object and its owner, the conflict is counted
// (ServiceReflectionState::counts), and the key is looked at again every conflictRecheck,
// so reflection resumes by itself once the other object is gone.
//
// Thread-safe across keys (the Reflector never runs one key twice at once); the state is
// shared by both kinds and has its own lock.

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "base/thread_annotations.h"
#include "kube/cache.h"
#include "kube/client.h"
#include "reflection/namespace_mapping.h"
#include "reflection/reflector.h"
#include "reflection/remote_objects.h"
#include "reflection/service_forge.h"

namespace strait::reflection {

// How many objects one peering reflects, for `strait status` and metrics.
struct ServiceReflectionCounts {
  uint64_t services = 0;        // Services reflected (remote copy in sync or being applied)
  uint64_t endpointSlices = 0;  // EndpointSlices reflected
  uint64_t conflicts = 0;       // Services and slices held back by a provider object not ours
  bool operator==(const ServiceReflectionCounts&) const = default;
};

// What both reflectors know about the local Services. Thread-safe.
class ServiceReflectionState {
 public:
  enum class ServiceState { Unknown, Reflected, NotReflected, Conflict };

  ServiceState service(const std::string& key) const;
  // Records the state of Service `key` (Unknown forgets it); returns true when it changed.
  bool setService(const std::string& key, ServiceState s);
  void setSliceReflected(const std::string& key, bool reflected);
  bool sliceReflected(const std::string& key) const;
  // Records a conflict of "Kind/ns/name"; true when it is new (the Event is due).
  bool setConflict(const std::string& kindKey, bool conflict);
  ServiceReflectionCounts counts() const;

 private:
  mutable base::Mutex mu_;
  std::map<std::string, ServiceState> services_ GUARDED_BY(mu_);
  std::set<std::string> slices_ GUARDED_BY(mu_);
  std::set<std::string> conflicts_ GUARDED_BY(mu_);
};

struct ServiceReflectorOptions {
  NamespaceMapping mapping{"", NamingStrategy::Default};
  // Whether local namespace `ns` is offloaded to this provider. Required.
  std::function<bool(const std::string& ns)> offloaded;
  // Whether an endpoint's node is a virtual node. Required by the slice reflector.
  IsVirtualNode isVirtualNode;
  // Queues the local EndpointSlices of Service "ns/name" (when its state changed). Optional.
  std::function<void(const std::string& serviceKey)> enqueueSlices;
  std::chrono::milliseconds conflictRecheck{2000};
  std::string component = "strait-reflection";  // source of the Events
};

class ServiceReflector : public KindReflector {
 public:
  // All borrowed; they must outlive the reflector. `localServices` is an informer cache of
  // the consumer's Services.
  ServiceReflector(kube::Client& local, const kube::Cache& localServices, RemoteObjects& remote,
                   ServiceReflectionState& state, ServiceReflectorOptions opts);
  std::string kind() const override { return "Service"; }
  HandleResult handle(const std::string& key) override;

  // Whether local Service `svc` is to be reflected (namespace offloaded here, not disabled).
  bool wanted(const nlohmann::json& svc) const;

 private:
  kube::Client& local_;
  const kube::Cache& services_;
  RemoteObjects& remote_;
  ServiceReflectionState& state_;
  const ServiceReflectorOptions opts_;
};

class EndpointSliceReflector : public KindReflector {
 public:
  EndpointSliceReflector(kube::Client& local, const kube::Cache& localServices,
                         const kube::Cache& localSlices, RemoteObjects& remote,
                         ServiceReflectionState& state, ServiceReflectorOptions opts);
  std::string kind() const override { return "EndpointSlice"; }
  HandleResult handle(const std::string& key) override;

 private:
  kube::Client& local_;
  const kube::Cache& services_;
  const kube::Cache& slices_;
  RemoteObjects& remote_;
  ServiceReflectionState& state_;
  const ServiceReflectorOptions opts_;
};

// Records Warning Event ReflectionConflict on local Service `service` saying `message`.
// Logs (never fails) when the Event cannot be written.
void recordReflectionConflict(kube::Client& local, const nlohmann::json& service,
                              const std::string& message, const std::string& component);

}  // namespace strait::reflection
