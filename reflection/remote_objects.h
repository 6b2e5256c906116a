#pragma once
// What a consumer-side reflector writes through: the provider's objects as one consumer may
// see and change them. StreamClient implements it over the reflection stream; the provider's
// ProviderApplier implements it directly against the provider API (in-process tests).

#include <nlohmann/json.hpp>
#include <string>

#include "kube/client.h"
#include "kube/status.h"
#include "reflection/stream_messages.h"

namespace strait::reflection {

// The API resource of a kind the reflection carries; BadRequest for another kind.
inline kube::Result<kube::ResourceRef> resourceOfKind(const std::string& kind) {
  namespace res = kube::resources;
  if (kind == "Pod") return res::kPods;
  if (kind == "ConfigMap") return res::kConfigMaps;
  if (kind == "Secret") return res::kSecrets;
  if (kind == "ServiceAccount") return res::kServiceAccounts;
  if (kind == "Event") return res::kEvents;
  if (kind == "Service") return res::kServices;
  if (kind == "EndpointSlice") return res::kEndpointSlices;
  return kube::makeError(kube::Code::BadRequest, "kind " + kind + " is not reflected", "kind");
}

class RemoteObjects {
 public:
  virtual ~RemoteObjects() = default;
  // The remote object; NotFound when absent, Conflict when present but not ours.
  virtual kube::Result<nlohmann::json> get(const std::string& kind, const std::string& ns,
                                           const std::string& name) = 0;
  virtual kube::Result<nlohmann::json> apply(const StreamMessage& m) = 0;
  virtual kube::Result<nlohmann::json> remove(const StreamMessage& m) = 0;
};

}  // namespace strait::reflection
