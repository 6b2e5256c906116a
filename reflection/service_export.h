#pragma once
// Exporting a provider Service to a consumer (`strait expose service`): what the provider's
// Service and EndpointSlices become in the consumer, and when the consumer's copy must be
// written, deleted or left alone. Pure, so every rule is unit-tested without a cluster; the
// provider's stream session sends the forged objects, the consumer's stream client applies
// them. Thread-safe (pure).
//
// The exported Service keeps its namespace and name. It has no selector (the consumer's
// EndpointSlice controller leaves it alone), type ClusterIP (headless stays headless), the
// provider's ports (name, protocol, port, appProtocol; targetPort is the slices' business)
// and session affinity. Its labels are the provider's (minus strait.io/ ones) plus
// strait.io/managed-by=strait, strait.io/imported-from=<provider cluster ID> and
// strait.io/origin-uid=<the provider Service's uid>.
//
// An exported EndpointSlice keeps the provider slice's name, addressType and ports, and its
// endpoints with their ready, serving and terminating conditions (an absent ready or serving
// condition reads as true, as Kubernetes reads it), addresses and hostname (nodeName, zone
// and targetRef name objects that exist only in the provider). Its addresses are the provider's: the consumer maps each
// into its own view (mapExportedSliceAddresses) before it writes the slice.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "kube/status.h"
#include "reflection/service_forge.h"

namespace strait::reflection {

// The consumers a provider Service is exported to (its strait.io/export-to annotation:
// comma-separated cluster IDs, blanks ignored), sorted, without duplicates.
std::vector<std::string> exportConsumers(const nlohmann::json& service);

// The annotation value listing `ids` (sorted, without duplicates or blanks).
std::string exportToValue(std::vector<std::string> ids);

// "NAMESPACE/NAME" split and validated (a DNS-1123 label, a DNS-1035 label as a Service
// name must be). Invalid naming what is wrong.
kube::Result<std::pair<std::string, std::string>> parseServiceRef(const std::string& text);

// The consumer's copy of provider Service `service` exported by provider `providerId`.
// Invalid when `service` is not a Service with name, namespace, uid and spec, or is of
// type ExternalName (a name, not endpoints: nothing to route through the tunnel).
kube::Result<nlohmann::json> forgeExportedService(const nlohmann::json& service,
                                                  const std::string& providerId);

// The consumer's copy of provider EndpointSlice `slice` (addresses still the provider's).
// Invalid when `slice` is not an EndpointSlice with name, namespace, uid and a
// kubernetes.io/service-name label.
kube::Result<nlohmann::json> forgeExportedEndpointSlice(const nlohmann::json& slice,
                                                        const std::string& providerId);

// `slice` with each address passed through `mapIp` (provider address -> consumer view);
// an endpoint none of whose addresses maps (mapIp returns "") is dropped. A null mapIp
// keeps the addresses.
nlohmann::json mapExportedSliceAddresses(
    const nlohmann::json& slice, const std::function<std::string(const std::string&)>& mapIp);

// True when `obj` (as stored in the consumer) is a copy Strait made of an object exported
// by provider `providerId`.
bool importedFrom(const nlohmann::json& obj, const std::string& providerId);

// What the consumer does with its copy: `forged` is the object to hold (null: the export
// ended), `existing` the consumer's object of that name (null: none). An existing object
// not imported from `providerId` (the consumer's own, or another provider's) is a
// Conflict while wanted, never overwritten nor deleted.
MirrorAction decideImport(const nlohmann::json& forged, const nlohmann::json& existing,
                          const std::string& providerId);

}  // namespace strait::reflection
