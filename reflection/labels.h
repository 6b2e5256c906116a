#pragma once
// Labels and annotations the reflection puts on the objects it creates in a provider. Every
// reflected object carries the consumer's cluster ID and the uid of the local object it
// mirrors, so reflection is idempotent (one remote object per local uid) and "what does this
// consumer own here" is one label query. Pure constants and helpers; thread-safe.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "peering/names.h"

namespace strait::reflection {

// Cluster ID of the consumer that owns the remote object.
inline constexpr std::string_view kLabelOriginClusterId = "strait.io/origin-cluster-id";
// metadata.uid of the local object the remote one mirrors.
inline constexpr std::string_view kLabelOriginUid = "strait.io/origin-uid";
// Shared with peering: strait.io/managed-by=strait.
inline constexpr std::string_view kLabelManagedBy = peering::kLabelManagedBy;
inline constexpr std::string_view kManagedByValue = peering::kManagedByValue;
// Where the object comes from, for humans and for mapping events back.
inline constexpr std::string_view kAnnotationOriginNamespace = "strait.io/origin-namespace";
inline constexpr std::string_view kAnnotationOriginName = "strait.io/origin-name";

// The taint put on virtual nodes and the toleration offloaded Pods carry.
inline constexpr std::string_view kVirtualNodeTaintKey = "virtual-node.strait.io/not-allowed";

// True when `remote` carries the origin labels of consumer `consumerId`.
bool isOwnedBy(const nlohmann::json& remote, std::string_view consumerId);
// The strait.io/origin-uid label of `remote`, "" when absent.
std::string originUid(const nlohmann::json& remote);

}  // namespace strait::reflection
