// Kubernetes strategic merge patch (application/strategic-merge-patch+json), see patch.h.
//
// Strategic merge patch follows the apply half of k8s.io/apimachinery's strategicpatch
// package as kube-apiserver runs it (MergeParallelList and IgnoreUnmatchedNulls on):
//   1. an object carrying "$patch" is replaced ("replace") or emptied ("delete");
//   2. "$retainKeys" drops every original member it does not name;
//   3. each "$setElementOrder/<list>" merges <list> and then orders the result: items named
//      by the directive in its order, the other (server-only) items interleaved where they
//      stood in the original;
//   4. the remaining members merge one by one; "$deleteFromPrimitiveList/<list>" removes
//      values from a primitive list.
// Merging lists order their result the same way, with the patch list playing the directive.
// Values the original lacks are built by merging the patch into nothing, so directives never
// leak into the result (upstream leaves them for the typed decoder to drop).

#include <algorithm>
#include <exception>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kube/patch.h"
#include "kube/patch_util.h"

namespace strait::kube {

using nlohmann::json;
using namespace patch_detail;

namespace {

bool startsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

constexpr const char* kPatchDirective = "$patch";
constexpr const char* kRetainKeysDirective = "$retainKeys";
const std::string kDeleteFromPrimitiveListPrefix = "$deleteFromPrimitiveList";
const std::string kSetElementOrderPrefix = "$setElementOrder";

enum class Kind { Null, Bool, Number, String, Object, Array };

Kind kindOf(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
    case json::value_t::discarded:
      return Kind::Null;
    case json::value_t::boolean:
      return Kind::Bool;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return Kind::Number;
    case json::value_t::string:
    case json::value_t::binary:
      return Kind::String;
    case json::value_t::object:
      return Kind::Object;
    case json::value_t::array:
      return Kind::Array;
  }
  return Kind::Null;
}

const PatchSchema* childOf(const PatchSchema* schema, const std::string& name) {
  return schema == nullptr ? nullptr : schema->field(name);
}

// "$setElementOrder/containers" -> "containers". Upstream requires exactly one prefix and a
// slash; anything else merely starting with the prefix is a malformed directive.
Result<std::string> directiveTarget(const std::string& key, const std::string& prefix,
                                    const std::string& path) {
  size_t slash = key.find('/');
  if (slash == std::string::npos || key.compare(0, slash, prefix) != 0) {
    return badRequest("invalid patch format of " + prefix.substr(1) + " directive \"" + key +
                      "\" at " + path + ": want \"" + prefix + "/<field>\"");
  }
  return key.substr(slash + 1);
}

bool hasPatchDirective(const json& v) { return v.is_object() && v.contains(kPatchDirective); }

bool isDeleteElement(const json& v) {
  if (!v.is_object()) {
    return false;
  }
  auto it = v.find(kPatchDirective);
  return it != v.end() && *it == "delete";
}

// Identity of a list item for ordering and matching: its merge key's value for lists of
// objects, the item itself otherwise. A missing key reads as null.
json itemKey(const json& item, const std::string& mergeKey) {
  if (mergeKey.empty()) {
    return item;
  }
  if (!item.is_object()) {
    return nullptr;
  }
  auto it = item.find(mergeKey);
  return it == item.end() ? json(nullptr) : *it;
}

// Position of each key's first occurrence in `list`.
std::map<json, size_t> firstPositions(const json& list, const std::string& mergeKey) {
  std::map<json, size_t> positions;
  for (size_t i = 0; i < list.size(); ++i) {
    positions.emplace(itemKey(list[i], mergeKey), i);
  }
  return positions;
}

// Orders a merged list: `patchItems` follow `patchOrder`, `serverOnly` follow `serverOrder`,
// and the two sequences are interleaved so that a server-only item precedes a patch item
// only when both occur in `serverOrder` and the server-only one came first there. This is
// upstream's "best effort" ordering (mergeSortedSlice).
json orderMerged(std::vector<json> patchItems, std::vector<json> serverOnly, const json& patchOrder,
                 const json& serverOrder, const std::string& mergeKey) {
  constexpr size_t kAbsent = static_cast<size_t>(-1);
  auto patchPos = firstPositions(patchOrder, mergeKey);
  auto serverPos = firstPositions(serverOrder, mergeKey);
  auto rank = [&](const std::map<json, size_t>& positions, const json& item) {
    auto it = positions.find(itemKey(item, mergeKey));
    return it == positions.end() ? kAbsent : it->second;
  };
  auto sortBy = [&](std::vector<json>& items, const std::map<json, size_t>& positions) {
    std::vector<std::pair<size_t, json>> ranked;
    ranked.reserve(items.size());
    for (auto& item : items) {
      ranked.emplace_back(rank(positions, item), std::move(item));
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    items.clear();
    for (auto& [r, item] : ranked) {
      items.push_back(std::move(item));
    }
  };
  sortBy(patchItems, patchPos);
  sortBy(serverOnly, serverPos);

  json out = json::array();
  size_t i = 0;
  size_t j = 0;
  while (i < serverOnly.size() || j < patchItems.size()) {
    bool takeServer;
    if (j >= patchItems.size()) {
      takeServer = true;
    } else if (i >= serverOnly.size()) {
      takeServer = false;
    } else {
      size_t left = rank(serverPos, serverOnly[i]);
      size_t right = rank(serverPos, patchItems[j]);
      takeServer = left != kAbsent && right != kAbsent && left < right;
    }
    out.push_back(takeServer ? std::move(serverOnly[i++]) : std::move(patchItems[j++]));
  }
  return out;
}

// Splits `merged` into the items whose key occurs in `by` and the rest.
void partitionByPresence(const json& merged, const json& by, const std::string& mergeKey,
                         std::vector<json>& present, std::vector<json>& absent) {
  auto positions = firstPositions(by, mergeKey);
  for (const auto& item : merged) {
    if (positions.count(itemKey(item, mergeKey)) != 0) {
      present.push_back(item);
    } else {
      absent.push_back(item);
    }
  }
}

class StrategicMerger {
 public:
  Status mergeObject(json& original, const json& patch, const PatchSchema* schema,
                     const std::string& path);

 private:
  Result<std::optional<json>> freshValue(const json& patch, const PatchSchema* schema,
                                         const std::string& path);
  Status mergeList(json& original, const json& patch, const PatchSchema* schema, bool deleteList,
                   const std::string& path);
  Status applyRetainKeys(json& original, const json& patch, const std::string& path);
  Status applySetElementOrder(json& original, const json& patch, const std::string& field,
                              const json& order, const PatchSchema* schema,
                              const std::string& path);
  Result<Kind> elementKind(const json& a, const json& b, const std::string& path);
};

// The value a patch value produces where the original has nothing to merge with, or
// nullopt when the member should not exist at all ($patch: delete).
Result<std::optional<json>> StrategicMerger::freshValue(const json& patch,
                                                        const PatchSchema* schema,
                                                        const std::string& path) {
  if (patch.is_object()) {
    json out = json::object();
    auto s = mergeObject(out, patch, schema, path);
    if (!s) {
      return s.error();
    }
    if (isDeleteElement(patch)) {
      return std::optional<json>();
    }
    return std::optional<json>(std::move(out));
  }
  if (patch.is_array()) {
    json out = json::array();
    for (size_t i = 0; i < patch.size(); ++i) {
      // List-level directives ($patch elements) have nothing to act on in a new list.
      if (hasPatchDirective(patch[i])) {
        continue;
      }
      auto v = freshValue(patch[i], schema, path + "[" + std::to_string(i) + "]");
      if (!v) {
        return v.error();
      }
      if (v->has_value()) {
        out.push_back(std::move(**v));
      }
    }
    return std::optional<json>(std::move(out));
  }
  return std::optional<json>(patch);
}

Status StrategicMerger::applyRetainKeys(json& original, const json& patch,
                                        const std::string& path) {
  const json& keys = patch.at(kRetainKeysDirective);
  if (!keys.is_array()) {
    return badRequest("invalid patch format of retainKeys at " + path + ": must be a list");
  }
  std::set<std::string> retained;
  for (const auto& k : keys) {
    if (k.is_string()) {
      retained.insert(k.get<std::string>());
    }
  }
  for (const auto& [name, value] : patch.items()) {
    if (name == kRetainKeysDirective || value.is_null() ||
        startsWith(name, kDeleteFromPrimitiveListPrefix) ||
        startsWith(name, kSetElementOrderPrefix)) {
      continue;
    }
    if (retained.count(name) == 0) {
      return badRequest("invalid patch format of retainKeys at " + path + ": field \"" + name +
                        "\" is patched but not listed in $retainKeys");
    }
  }
  for (auto it = original.begin(); it != original.end();) {
    if (retained.count(it.key()) == 0) {
      it = original.erase(it);
    } else {
      ++it;
    }
  }
  return Status::OK();
}

Result<Kind> StrategicMerger::elementKind(const json& a, const json& b, const std::string& path) {
  std::optional<Kind> kind;
  for (const json* list : {&a, &b}) {
    for (const auto& item : *list) {
      Kind k = kindOf(item);
      if (!kind) {
        if (k == Kind::Array) {
          return invalid("lists of lists are not supported (at " + path + ")");
        }
        kind = k;
      } else if (*kind != k) {
        return badRequest("list element types are not identical at " + path);
      }
    }
  }
  return kind.value_or(Kind::Null);
}

Status StrategicMerger::mergeList(json& original, const json& patch, const PatchSchema* schema,
                                  bool deleteList, const std::string& path) {
  if (original.empty() && patch.empty()) {
    return Status::OK();
  }
  auto kind = elementKind(original, patch, path);
  if (!kind) {
    return kind.error();
  }

  if (*kind != Kind::Object) {
    if (deleteList) {
      json kept = json::array();
      for (const auto& item : original) {
        if (std::find(patch.begin(), patch.end(), item) == patch.end()) {
          kept.push_back(item);
        }
      }
      original = std::move(kept);
      return Status::OK();
    }
    // Set union, then order.
    std::vector<json> merged;
    for (const json* list : {static_cast<const json*>(&original), &patch}) {
      for (const auto& item : *list) {
        if (std::find(merged.begin(), merged.end(), item) == merged.end()) {
          merged.push_back(item);
        }
      }
    }
    std::vector<json> patchItems;
    std::vector<json> serverOnly;
    partitionByPresence(json(merged), patch, "", patchItems, serverOnly);
    original = orderMerged(std::move(patchItems), std::move(serverOnly), patch, original, "");
    return Status::OK();
  }

  if (deleteList) {
    return badRequest(kDeleteFromPrimitiveListPrefix + " at " + path +
                      " applies only to lists of primitives");
  }
  const std::string mergeKey = schema == nullptr ? std::string() : schema->mergeKey;
  if (mergeKey.empty()) {
    return badRequest("cannot merge lists without merge key at " + path);
  }

  // Special elements first: {$patch: delete, key: v} removes, {$patch: replace} replaces.
  json plain = json::array();
  bool replace = false;
  for (const auto& item : patch) {
    auto directive = item.find(kPatchDirective);
    if (directive == item.end()) {
      plain.push_back(item);
      continue;
    }
    if (*directive == "delete") {
      auto keyIt = item.find(mergeKey);
      if (keyIt == item.end()) {
        return badRequest("$patch: delete element " + brief(item) + " at " + path +
                          " does not contain merge key \"" + mergeKey + "\"");
      }
      json kept = json::array();
      for (auto& existing : original) {
        if (itemKey(existing, mergeKey) != *keyIt) {
          kept.push_back(std::move(existing));
        }
      }
      original = std::move(kept);
    } else if (*directive == "replace") {
      replace = true;
    } else if (*directive == "merge") {
      return badRequest("merging lists cannot yet be specified in the patch (at " + path + ")");
    } else {
      return badRequest("unknown $patch directive " + brief(*directive) + " at " + path);
    }
  }
  if (replace) {
    auto fresh = freshValue(plain, schema, path);
    if (!fresh) {
      return fresh.error();
    }
    original = std::move(**fresh);
    return Status::OK();
  }

  const json before = original;
  for (size_t i = 0; i < plain.size(); ++i) {
    const json& item = plain[i];
    auto keyIt = item.find(mergeKey);
    if (keyIt == item.end()) {
      return badRequest("element " + brief(item) + " of " + path +
                        " does not contain merge key \"" + mergeKey + "\"");
    }
    std::string where = path + "[" + mergeKey + "=" + brief(*keyIt) + "]";
    auto match = std::find_if(original.begin(), original.end(), [&](const json& existing) {
      return existing.is_object() && itemKey(existing, mergeKey) == *keyIt;
    });
    if (match != original.end()) {
      auto s = mergeObject(*match, item, schema, where);
      if (!s) {
        return s;
      }
    } else {
      auto fresh = freshValue(item, schema, where);
      if (!fresh) {
        return fresh.error();
      }
      if (fresh->has_value()) {
        original.push_back(std::move(**fresh));
      }
    }
  }
  std::vector<json> patchItems;
  std::vector<json> serverOnly;
  partitionByPresence(original, plain, mergeKey, patchItems, serverOnly);
  original = orderMerged(std::move(patchItems), std::move(serverOnly), plain, before, mergeKey);
  return Status::OK();
}

Status StrategicMerger::applySetElementOrder(json& original, const json& patch,
                                             const std::string& field, const json& order,
                                             const PatchSchema* schema, const std::string& path) {
  const std::string where = path + "." + field;
  if (!order.is_array()) {
    return badRequest("invalid patch format of setElementOrder list at " + where +
                      ": must be a list");
  }
  const PatchSchema* fieldSchema = childOf(schema, field);
  const std::string mergeKey = fieldSchema == nullptr ? std::string() : fieldSchema->mergeKey;
  auto originalIt = original.find(field);
  auto patchIt = patch.find(field);
  bool inOriginal = originalIt != original.end();
  bool inPatch = patchIt != patch.end();
  if (inOriginal && !originalIt->is_array()) {
    return badRequest("$setElementOrder/" + field + " at " + path + " names a field that is " +
                      "not a list in the original object");
  }
  if (inPatch && !patchIt->is_array()) {
    return badRequest("$setElementOrder/" + field + " at " + path + " names a field that is " +
                      "not a list in the patch");
  }

  // Every non-deleted patch item must appear in the order list, in the same relative order.
  if (inPatch && !order.empty() && !patchIt->empty()) {
    size_t o = 0;
    for (const auto& item : *patchIt) {
      if (!mergeKey.empty() && !item.is_object()) {
        return badRequest("element " + brief(item) + " of " + where + " is not an object");
      }
      if (hasPatchDirective(item)) {
        continue;
      }
      if (!mergeKey.empty()) {
        if (!item.contains(mergeKey)) {
          return badRequest("element " + brief(item) + " of " + where +
                            " does not contain merge key \"" + mergeKey + "\"");
        }
      }
      json key = itemKey(item, mergeKey);
      bool found = false;
      while (o < order.size() && !found) {
        const json& named = order[o++];
        if (!mergeKey.empty() && (!named.is_object() || !named.contains(mergeKey))) {
          return badRequest("$setElementOrder/" + field + " at " + path + " entry " + brief(named) +
                            " does not contain merge key \"" + mergeKey + "\"");
        }
        found = itemKey(named, mergeKey) == key;
      }
      if (!found) {
        return badRequest("the items of patch list " + where +
                          " are missing from, or out of the order of, its $setElementOrder list");
      }
    }
  }

  json before = inOriginal ? *originalIt : json::array();
  json merged;
  if (inOriginal && !inPatch) {
    merged = before;
  } else if (!inOriginal && inPatch) {
    auto fresh = freshValue(*patchIt, fieldSchema, where);
    if (!fresh) {
      return fresh.error();
    }
    merged = std::move(**fresh);
  } else if (inOriginal && inPatch) {
    if (fieldSchema != nullptr && fieldSchema->mergeList) {
      merged = before;
      auto s = mergeList(merged, *patchIt, fieldSchema, false, where);
      if (!s) {
        return s;
      }
    } else {
      auto fresh = freshValue(*patchIt, fieldSchema, where);
      if (!fresh) {
        return fresh.error();
      }
      merged = std::move(**fresh);
    }
  } else {
    return Status::OK();
  }

  std::string orderKey = mergeKey;
  if (!merged.empty() && !merged[0].is_object()) {
    orderKey.clear();
  }
  std::vector<json> named;
  std::vector<json> serverOnly;
  partitionByPresence(merged, order, orderKey, named, serverOnly);
  original[field] = orderMerged(std::move(named), std::move(serverOnly), order, before, orderKey);
  return Status::OK();
}

Status StrategicMerger::mergeObject(json& original, const json& patch, const PatchSchema* schema,
                                    const std::string& path) {
  if (auto directive = patch.find(kPatchDirective); directive != patch.end()) {
    if (*directive == "replace") {
      json content = patch;
      content.erase(kPatchDirective);
      json replaced = json::object();
      auto s = mergeObject(replaced, content, schema, path);
      if (!s) {
        return s;
      }
      original = std::move(replaced);
      return Status::OK();
    }
    if (*directive == "delete") {
      original = json::object();
      return Status::OK();
    }
    return badRequest("unknown $patch directive " + brief(*directive) + " in object at " + path);
  }

  if (patch.contains(kRetainKeysDirective)) {
    auto s = applyRetainKeys(original, patch, path);
    if (!s) {
      return s;
    }
  }

  std::set<std::string> done;
  for (const auto& [name, value] : patch.items()) {
    if (!startsWith(name, kSetElementOrderPrefix)) {
      continue;
    }
    auto field = directiveTarget(name, kSetElementOrderPrefix, path);
    if (!field) {
      return field.error();
    }
    auto s = applySetElementOrder(original, patch, *field, value, schema, path);
    if (!s) {
      return s;
    }
    done.insert(*field);
  }

  for (const auto& [name, value] : patch.items()) {
    if (name == kRetainKeysDirective || startsWith(name, kSetElementOrderPrefix) ||
        done.count(name) != 0) {
      continue;
    }
    std::string field = name;
    bool deleteList = false;
    if (startsWith(name, kDeleteFromPrimitiveListPrefix)) {
      auto target = directiveTarget(name, kDeleteFromPrimitiveListPrefix, path);
      if (!target) {
        return target.error();
      }
      field = *target;
      deleteList = true;
    }
    const std::string where = path + "." + field;
    const PatchSchema* fieldSchema = childOf(schema, field);

    if (value.is_null()) {
      original.erase(field);
      continue;
    }
    auto it = original.find(field);
    if (it == original.end() || kindOf(*it) != kindOf(value)) {
      if (deleteList) {
        continue;
      }
      auto fresh = freshValue(value, fieldSchema, where);
      if (!fresh) {
        return fresh.error();
      }
      if (fresh->has_value()) {
        original[field] = std::move(**fresh);
      } else {
        original.erase(field);
      }
      continue;
    }

    Status s;
    if (value.is_object()) {
      if (fieldSchema != nullptr && fieldSchema->replaceObject) {
        auto fresh = freshValue(value, fieldSchema, where);
        if (!fresh) {
          return fresh.error();
        }
        *it = fresh->value_or(json::object());
      } else {
        s = mergeObject(*it, value, fieldSchema, where);
      }
    } else if (value.is_array()) {
      if (deleteList || (fieldSchema != nullptr && fieldSchema->mergeList)) {
        s = mergeList(*it, value, fieldSchema, deleteList, where);
      } else {
        auto fresh = freshValue(value, fieldSchema, where);
        if (!fresh) {
          return fresh.error();
        }
        *it = std::move(**fresh);
      }
    } else {
      *it = value;
    }
    if (!s) {
      return s;
    }
  }
  return Status::OK();
}

}  // namespace

Result<json> applyStrategicMergePatch(const json& original, const json& patch,
                                      const PatchSchema& schema) {
  if (!original.is_object()) {
    return badRequest("strategic merge patch target must be a JSON object, got " + brief(original));
  }
  if (!patch.is_object()) {
    return badRequest("strategic merge patch must be a JSON object, got " + brief(patch));
  }
  if (auto s =
          checkDepths(original, "strategic merge patch target", patch, "strategic merge patch");
      !s) {
    return s.error();
  }
  try {
    json result = original;
    StrategicMerger merger;
    if (auto s = merger.mergeObject(result, patch, &schema, "<root>"); !s) {
      return s.error();
    }
    return result;
  } catch (const std::exception& e) {
    return makeError(Code::Internal, std::string("strategic merge patch failed: ") + e.what());
  }
}

}  // namespace strait::kube
