#pragma once
// Server-side apply bookkeeping, simplified: for each applying field manager the set of
// fields its last applied configuration named is kept in metadata.managedFields (FieldsV1
// format: "f:<field>" for map keys, "k:{...}" for list elements merged by key, other lists
// owned whole). Re-applying removes the fields the manager named before and no longer names.
// Not modelled: ownership shared with other managers and conflicts (no 409 on apply).

#include <string>

#include <nlohmann/json.hpp>

#include "kube/patch.h"

namespace strait::minicluster {

// The FieldsV1 set of everything `applied` sets (apiVersion, kind, metadata.name and
// metadata.namespace excluded). `schema` (may be null) names the merge keys of lists.
nlohmann::json appliedFieldSet(const nlohmann::json& applied, const kube::PatchSchema* schema);

// Fields in `before` that are not in `after` (both FieldsV1 sets); an empty object if none.
nlohmann::json removedFields(const nlohmann::json& before, const nlohmann::json& after);

// Deletes from `obj` every field of the FieldsV1 set `fields`.
void removeFieldSet(nlohmann::json& obj, const nlohmann::json& fields);

// The FieldsV1 set recorded for `manager`'s Apply in obj's managedFields, or an empty object.
nlohmann::json managedApplySet(const nlohmann::json& obj, const std::string& manager);

// Records `fields` as `manager`'s Apply entry in obj's managedFields (replacing an older one).
void recordApply(nlohmann::json& obj, const std::string& manager, const std::string& apiVersion,
                 const nlohmann::json& fields, const std::string& time);

}  // namespace strait::minicluster
