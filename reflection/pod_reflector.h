#pragma once
// The consumer side of pod offloading: the KindReflector for Pods bound to one virtual node.
// handle("ns/name") reads the local Pod (from the informer cache of Pods with
// spec.nodeName=<virtual node>) and the remote Pod (RemoteObjects), asks decidePod() what to
// do (pod_reconcile.h) and does it:
//   CreateRemote      -> refuse with a reason if no single provider node can hold the Pod,
//                        else reflect its ConfigMaps/Secrets/ServiceAccount, then the Pod;
//   UpdateRemote      -> re-apply the forged Pod;
//   UpdateLocalStatus -> want mapRemoteStatus() on the local Pod's status (PodStatusWriter:
//                        the latest wanted status wins, a merge patch with the uid as
//                        precondition);
//   DeleteRemote      -> delete with the local grace period, check again in 1 s;
//   DeleteLocal       -> finish the local deletion (grace 0, uid precondition);
//   MarkLocalLost     -> want lostRemoteStatus() (Failed, ProviderPodLost);
//   Conflict          -> a Warning event on the local Pod, nothing else.
// An override that cannot be applied refuses the Pod with OffloadingOverrideFailed; the
// forged Pod compared with the remote one is the overridden one (no update loop).
// The local status compared and decided on is the one the status writer expects (what it
// queued, or wrote while the informer cache lags), so a handle() that runs before the cache
// sees its own write does not write the same status again.
// Refusals (a Pod too large, a DaemonSet Pod, an unmappable namespace) are written to the
// local Pod as status.reason/message with an Event, so users see why it stays Pending.
// Thread-safe across keys (the Reflector never runs one key twice at once).

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "kube/cache.h"
#include "kube/client.h"
#include "reflection/namespace_mapping.h"
#include "reflection/pod_forge.h"
#include "reflection/pod_status.h"
#include "reflection/pod_status_writer.h"
#include "reflection/remote_objects.h"
#include "reflection/reflector.h"

namespace strait::reflection {

struct PodReflectorOptions {
  NamespaceMapping mapping{"", NamingStrategy::Default};
  PodForgeContext forge;  // consumerId, virtual node name/address, its label keys
  PodStatusContext status;
  // nullopt when the Pod fits a provider node, else the reason (vnode/capacity.h
  // doesNotFitReason over the current provider summary). Optional.
  std::function<std::optional<std::string>(const nlohmann::json& pod)> doesNotFit;
  // True once the local Pods have been listed since the stream (re)connected.
  std::function<bool()> resyncDone;
  // The OffloadingOverrides for a local Pod and this provider (pod_overrides.h), in the order
  // to apply. Unavailable: not known yet (retried); another error: an invalid override in
  // the Pod's namespace (the Pod is refused with OffloadingOverrideInvalid). Optional.
  std::function<kube::Result<PodOverrides>(const nlohmann::json& pod)> overrides;
  // Writes the local Pods' status (borrowed; must outlive the reflector; its owner starts
  // and stops it). Optional: without it the reflector writes on its worker threads
  // (PodStatusWriter with no workers).
  PodStatusWriter* statusWriter = nullptr;
};

class PodReflector : public KindReflector {
 public:
  // All borrowed; they must outlive the reflector. `localPods` is the informer cache of the
  // Pods bound to the virtual node.
  PodReflector(kube::Client& local, const kube::Cache& localPods, RemoteObjects& remote,
               PodReflectorOptions opts);
  // The same over several caches: `localPod(key)` is the local Pod of that key in any of
  // them (the virtual node's and its pool nodes'), null when none holds it. Must be
  // thread-safe.
  PodReflector(kube::Client& local, std::function<kube::ObjectPtr(const std::string& key)> localPod,
               RemoteObjects& remote, PodReflectorOptions opts);

  std::string kind() const override { return "Pod"; }
  HandleResult handle(const std::string& key) override;

 private:
  HandleResult refuse(const nlohmann::json& local, const std::string& reason,
                      const std::string& message);
  kube::Status reflectDependencies(const nlohmann::json& local, const std::string& remoteNs);
  void event(const nlohmann::json& local, const std::string& type, const std::string& reason,
             const std::string& message);

  kube::Client& local_;
  const std::function<kube::ObjectPtr(const std::string& key)> localPod_;
  RemoteObjects& remote_;
  const PodReflectorOptions opts_;
  std::unique_ptr<PodStatusWriter> ownWriter_;  // set when opts_.statusWriter is not
  PodStatusWriter& statusWriter_;
};

}  // namespace strait::reflection
