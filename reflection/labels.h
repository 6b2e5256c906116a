#pragma once
// Ownership of the objects the reflection creates in a provider. Every
// reflected object carries the consumer's cluster ID and the uid of the local object it
// mirrors, so reflection is idempotent (one remote object per local uid) and "what does this
// consumer own here" is one label query. Pure constants and helpers; thread-safe.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "peering/names.h"

namespace strait::reflection {

// The keys are peering/names.h's (every strait.io key is defined there once).
using peering::kAnnotationOriginName;
using peering::kAnnotationOriginNamespace;
using peering::kLabelManagedBy;
using peering::kLabelOriginClusterId;
using peering::kLabelOriginUid;
using peering::kManagedByValue;
using peering::kVirtualNodeTaintKey;

// True when `remote` carries the origin labels of consumer `consumerId`.
bool isOwnedBy(const nlohmann::json& remote, std::string_view consumerId);
// The strait.io/origin-uid label of `remote`, "" when absent.
std::string originUid(const nlohmann::json& remote);

}  // namespace strait::reflection
