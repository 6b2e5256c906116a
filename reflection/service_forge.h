#pragma once
// What the consumer's Services and EndpointSlices become in a provider, and when a remote
// copy needs rewriting. Pure, so every rule is unit-tested without a cluster; the
// reflectors (service_reflector.h) read both sides, call these, and apply what they say.
// Thread-safe (pure).
//
// A remote Service keeps what decides how the provider routes to it: type (ClusterIP,
// NodePort, LoadBalancer, ExternalName), externalName, selector (the provider's own
// EndpointSlice controller then selects the offloaded Pods, which carry the same labels),
// ports (name, protocol, port, targetPort, named ones too, appProtocol), sessionAffinity and
// its config, publishNotReadyAddresses, internal and external traffic policy, ipFamilies
// and ipFamilyPolicy. clusterIP(s), nodePorts and healthCheckNodePort are the provider's to
// allocate and are never sent; a headless Service (clusterIP None) stays headless.
//
// A remote EndpointSlice carries the endpoints of the consumer's own Pods only (an endpoint
// on a virtual node is a Pod that already runs in a provider): addresses, conditions
// (ready, serving, terminating) and hostname, with the slice's addressType and ports. Its
// labels say which Service it belongs to and that Strait manages it, so the provider's
// EndpointSlice controller leaves it alone. nodeName, zone and targetRef are dropped: they
// name objects that exist only in the consumer.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/status.h"
#include "reflection/pod_dependencies.h"

namespace strait::reflection {

inline constexpr const char* kLabelServiceName = "kubernetes.io/service-name";
inline constexpr const char* kLabelEndpointSliceManagedBy = "endpointslice.kubernetes.io/managed-by";

// True when the Service opts out of reflection (annotation strait.io/reflection: disabled).
bool serviceReflectionDisabled(const nlohmann::json& service);

// The remote Service for local Service `local`. Invalid when `local` is not an object with
// metadata.name and uid, or has no spec.
kube::Result<nlohmann::json> forgeRemoteService(const nlohmann::json& local,
                                                const ObjectForgeContext& ctx);

// True when `remote` (as stored in the provider) differs from `forged` in anything the
// forge sets (metadata labels and annotations, the reflected spec fields); what the
// provider allocated (clusterIPs, nodePorts, healthCheckNodePort) and status are ignored.
bool serviceNeedsUpdate(const nlohmann::json& forged, const nlohmann::json& remote);

// The service a local EndpointSlice belongs to (its kubernetes.io/service-name), "" if none.
std::string endpointSliceServiceName(const nlohmann::json& slice);

// Whether endpoint node `nodeName` is a virtual node (its Pods run in a provider).
using IsVirtualNode = std::function<bool(const std::string& nodeName)>;

// The remote EndpointSlice for local slice `local` (same name) holding only the endpoints
// not on a virtual node. Invalid when `local` is not an EndpointSlice object with name, uid
// and a service name label. The result may hold no endpoint (then nothing is reflected).
kube::Result<nlohmann::json> forgeRemoteEndpointSlice(const nlohmann::json& local,
                                                      const ObjectForgeContext& ctx,
                                                      const IsVirtualNode& isVirtualNode);

// True when the slice lists at least one endpoint.
bool endpointSliceHasEndpoints(const nlohmann::json& slice);

// True when `remote` differs from `forged` in labels, annotations, addressType, ports or
// endpoints.
bool endpointSliceNeedsUpdate(const nlohmann::json& forged, const nlohmann::json& remote);

// `slice` with every endpoint's ready and serving conditions set to false (terminating
// kept): what the provider keeps while the consumer is unreachable. Returns true in
// `changed` when any condition flipped.
nlohmann::json endpointSliceNotReady(const nlohmann::json& slice, bool* changed = nullptr);

// The annotation of a provider's copy of a consumer's EndpointSlice that holds, while the
// provider keeps its endpoints not ready, the conditions the consumer sent: a JSON object
// from each endpoint's first address to its conditions object ({"10.240.1.5":{"ready":true,
// "serving":true,"terminating":false}}).
inline constexpr const char* kAnnotationHeldEndpointConditions =
    "strait.io/held-endpoint-conditions";

// endpointSliceNotReady(slice) with the conditions it had recorded in
// kAnnotationHeldEndpointConditions; a slice already carrying the record keeps it (its
// conditions are already the held ones). `changed` is true when anything differs from
// `slice`. Pure.
nlohmann::json holdEndpointSlice(const nlohmann::json& slice, bool* changed = nullptr);

// `slice` with the conditions recorded by holdEndpointSlice put back and the record
// removed; an endpoint the record does not name keeps its conditions. A slice without the
// record is returned as it is (`changed` false). A record that is not a JSON object (edited
// by hand) is removed and the conditions kept. Pure.
nlohmann::json releaseEndpointSlice(const nlohmann::json& slice, bool* changed = nullptr);

// What the reflector of one Service or EndpointSlice does now. Pure.
enum class MirrorAction {
  None,      // in sync (or nothing to reflect and nothing reflected)
  Apply,     // create or update the remote object with the forged one
  Delete,    // the remote object is ours and must go
  Conflict,  // a remote object of that name is not ours: leave it, report it
};

const char* mirrorActionName(MirrorAction a);

struct MirrorInput {
  bool wanted = false;          // the local object should be reflected (forged is set)
  bool remoteExists = false;    // a remote object of that name exists
  bool remoteOurs = false;      // ... carrying this consumer's origin labels
  bool remoteSameOrigin = false;  // ... mirroring the same local uid
  bool differs = false;         // ... and differing from the forged one
};

MirrorAction decideMirror(const MirrorInput& in);

}  // namespace strait::reflection
