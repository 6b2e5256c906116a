#pragma once
// The provider side of reflection: applies what one consumer sends on the reflection stream
// (stream_messages.h) to the provider cluster, inside that consumer's bounds:
//  - only namespaces its NamespaceMapping produces (an APPLY into any other namespace is
//    Forbidden), created on demand and labelled strait.io/managed-by=strait and
//    strait.io/origin-cluster-id=<consumer> so that unpeering finds them; an existing
//    namespace without this consumer's labels (a user's own, or another consumer's) is
//    never written into (Forbidden, saying which);
//  - only objects labelled as that consumer's: an existing object of the same name that is
//    not (a user's own Pod) is never overwritten or deleted (Conflict);
//  - deletions carry the grace period sent and a uid precondition, so a Pod re-created in
//    the meantime under the same name is not deleted by a stale request;
//  - after a resync, objects whose origin uid was not listed are deleted (never before):
//    Pods, then the ConfigMaps/Secrets/ServiceAccounts no remaining Pod uses; Services and
//    EndpointSlices likewise;
//  - a Service keeps what the provider allocated (clusterIP(s), nodePorts,
//    healthCheckNodePort) across updates; an EndpointSlice's addresses go through the
//    EndpointAddressTranslator (the consumer's pod CIDR as this provider reaches it).
// A Conflict names the existing object's owner (another consumer, a controller, or a user).
// Pods are created once and then only their mutable fields updated (metadata labels and
// annotations, images, activeDeadlineSeconds, tolerations), as the API server allows.
// Every Pod sent is re-validated, never trusting the consumer's forge: its scheduling fields
// are stripped again (stripSchedulingFields: no nodeName, no selector of a named node) and
// it must pass the Pod Security Standards level the applier enforces (Forbidden with
// upstream's "violates PodSecurity" message naming the rules otherwise). The namespaces it
// creates carry that level as pod-security.kubernetes.io/enforce (+ enforce-version=latest),
// so the provider's own Pod Security Admission agrees.
//
// Thread-safe as far as the client is (kube::Client is): calls for different objects may
// run concurrently.

#include <nlohmann/json.hpp>
#include <functional>
#include <mutex>
#include <set>
#include <string>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "kube/pod_security.h"
#include "reflection/namespace_mapping.h"
#include "reflection/remote_objects.h"
#include "reflection/stream_messages.h"

namespace strait::reflection {

// Translates an endpoint address a consumer sent (in its own view of its pod CIDR) into the
// address this provider reaches it at (through the tunnel, remapped when the CIDRs overlap).
// Must be thread-safe and must not block. Identity when unset.
using EndpointAddressTranslator =
    std::function<std::string(const std::string& consumerId, const std::string& ip)>;

class ProviderApplier : public RemoteObjects {
 public:
  // `provider` is borrowed and must outlive the applier. `podSecurity`: the level every Pod
  // applied must pass (and the enforce label of the namespaces it creates).
  // `namespaceLabels`: more labels for the namespaces it creates (the peering's ownership
  // labels, by which unpeering finds them).
  // `endpointsHeld` (optional; thread-safe, must not block): true while this consumer's
  // endpoints are to be kept not ready (its tunnel is down); an EndpointSlice applied then
  // is stored as holdEndpointSlice makes it, the conditions sent recorded for
  // restoreEndpoints.
  ProviderApplier(kube::Client& provider, NamespaceMapping mapping,
                  kube::PodSecurityLevel podSecurity = kube::PodSecurityLevel::Baseline,
                  nlohmann::json namespaceLabels = nlohmann::json::object(),
                  EndpointAddressTranslator translateAddress = {},
                  std::function<bool()> endpointsHeld = {});

  // APPLY: create or update; returns the object as stored. Errors: Forbidden (namespace not
  // this consumer's, or a Pod violating the Pod Security level), Conflict (object not this
  // consumer's), BadRequest (not an APPLY), and
  // the provider API server's errors (e.g. Forbidden for an exhausted quota).
  kube::Result<nlohmann::json> apply(const StreamMessage& m) override { return apply(m, false); }
  // As apply(m); `likelyNew` (the caller has no such object in its cache) tries the create
  // first and reads the stored object only if it already exists: one request per new Pod
  // instead of a GET and a POST.
  kube::Result<nlohmann::json> apply(const StreamMessage& m, bool likelyNew);
  // DELETE: deletes the object if it is this consumer's and mirrors m.originUid; OK when
  // already gone. Returns the object still terminating (with deletionTimestamp) or null.
  kube::Result<nlohmann::json> remove(const StreamMessage& m) override;
  // Deletes this consumer's objects of `kind` (Pod, ConfigMap, Secret, ServiceAccount) in
  // its namespaces whose origin uid is not in `liveOrigins`. Returns how many it deleted.
  kube::Result<int> deleteOrphans(const std::string& kind, const std::set<std::string>& liveOrigins);
  // The same, asking `isLive(originUid)` for each candidate just before deleting it (so an
  // origin that became live while the list was read is still honoured).
  kube::Result<int> deleteOrphans(const std::string& kind,
                                  const std::function<bool(const std::string&)>& isLive);
  // The ConfigMaps, Secrets and ServiceAccounts that travelled with Pods: deletes this
  // consumer's ones in its namespaces that no Pod of this consumer in the provider uses any
  // more (podDependencies; a used ServiceAccount's secrets count as used; a Pod being deleted
  // whose origin is not live uses nothing) and whose origin uid is not in `liveOrigins`.
  // Call after deleteOrphans("Pod", ...). Returns how many it deleted.
  kube::Result<int> deleteOrphanDependencies(const std::set<std::string>& liveOrigins);

  // Marks every endpoint of this consumer's EndpointSlices in its namespaces ready=false and
  // serving=false (terminating kept), the conditions they had recorded in the slice
  // (holdEndpointSlice): the consumer is unreachable, so the provider's Services must stop
  // sending traffic to it. Nothing is deleted; restoreEndpoints, or the consumer's next
  // APPLY of each slice, restores its conditions. A slice changed meanwhile (Conflict) is
  // read again and marked. Returns how many slices it rewrote; blocks on the API server.
  kube::Result<int> markEndpointsNotReady();
  // Puts back the conditions markEndpointsNotReady (or an APPLY while endpointsHeld) recorded
  // on this consumer's EndpointSlices (releaseEndpointSlice); slices without a record are
  // left alone. A slice changed meanwhile is read again. Returns how many slices it rewrote;
  // blocks on the API server.
  kube::Result<int> restoreEndpoints();

  // Deletes namespace `ns` when it carries this consumer's origin labels (Forbidden, naming
  // why, when it does not: Strait never deletes a namespace it did not create). OK (null)
  // when absent or already terminating.
  kube::Result<nlohmann::json> removeNamespace(const std::string& ns);

  // The stored object (NotFound when absent; Conflict when present but not ours).
  kube::Result<nlohmann::json> get(const std::string& kind, const std::string& ns,
                                   const std::string& name) override;

 private:
  // The one place a mapped namespace is checked or created: an existing one must be this
  // consumer's (and is relabelled when the Pod Security level changed); a new one gets the
  // origin, ownership and Pod Security labels.
  kube::Status ensureNamespace(const std::string& ns);
  // OK when Namespace object `nsObj` is this consumer's; Forbidden saying whose it is if not.
  kube::Status namespaceRefusal(const nlohmann::json& nsObj) const;
  // Rewrites each of this consumer's EndpointSlices with `rewrite` (which says whether it
  // changed anything), reading a slice again after a Conflict. Returns how many it wrote.
  kube::Result<int> rewriteEndpointSlices(
      const std::function<nlohmann::json(const nlohmann::json&, bool*)>& rewrite);

  kube::Client& provider_;
  const NamespaceMapping mapping_;
  const kube::PodSecurityLevel podSecurity_;
  const EndpointAddressTranslator translateAddress_;
  const std::function<bool()> endpointsHeld_;
  const nlohmann::json namespaceLabels_;
  base::Mutex mu_;
  // Checked or created; dropped when a create says NotFound.
  std::set<std::string> namespaces_ GUARDED_BY(mu_);
};

// The Pod the provider writes for `pod` sent by a consumer: scheduling fields stripped
// (stripSchedulingFields with virtualNodeOwnLabelKeys()), then checked against `level`.
// Forbidden with upstream's message (`pods "x" is forbidden: violates PodSecurity
// "baseline:latest": ...`) when it violates it. Pure; thread-safe.
kube::Result<nlohmann::json> sanitizeProviderPod(const nlohmann::json& pod,
                                                 kube::PodSecurityLevel level);

// True for the provider's own namespaces, which no consumer may write into or create whatever
// its naming: default, strait-system, kube-* and strait-tenant-* (the consumers' tenant
// namespaces belong to the peering, not to the reflection).
bool isProviderReservedNamespace(std::string_view ns);

// The Pod Security Admission labels of a namespace the provider creates for a consumer:
// enforce=<level>, enforce-version=latest.
nlohmann::json podSecurityNamespaceLabels(kube::PodSecurityLevel level);

}  // namespace strait::reflection
