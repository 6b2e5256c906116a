// Merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch, see patch.h.
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

#include "kube/patch.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace strait::kube {

using nlohmann::json;

const PatchSchema* PatchSchema::field(const std::string& name) const {
  auto it = fields.find(name);
  return it == fields.end() ? nullptr : it->second.get();
}

namespace {

// ---------------------------------------------------------------------------------------------
// Shared helpers

Error badRequest(std::string msg) { return makeError(Code::BadRequest, std::move(msg)); }
Error invalid(std::string msg) { return makeError(Code::Invalid, std::move(msg)); }

// True when `doc` nests objects/arrays more than `limit` levels deep. Iterative, so that
// checking a hostile document cannot itself overflow the stack.
bool deeperThan(const json& doc, int limit) {
  std::vector<std::pair<const json*, int>> stack{{&doc, 1}};
  while (!stack.empty()) {
    auto [value, depth] = stack.back();
    stack.pop_back();
    if (!value->is_structured()) {
      continue;
    }
    if (depth > limit) {
      return true;
    }
    for (const auto& child : *value) {
      stack.emplace_back(&child, depth + 1);
    }
  }
  return false;
}

Status checkDepths(const json& first, const char* firstName, const json& second,
                   const char* secondName) {
  for (auto [doc, name] : {std::pair{&first, firstName}, std::pair{&second, secondName}}) {
    if (deeperThan(*doc, kMaxPatchNestingDepth)) {
      return badRequest(std::string(name) + " nests deeper than " +
                        std::to_string(kMaxPatchNestingDepth) + " levels");
    }
  }
  return Status::OK();
}

// A short rendering of a value for error messages.
std::string brief(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 80) {
    s = s.substr(0, 77) + "...";
  }
  return s;
}

bool startsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// ---------------------------------------------------------------------------------------------
// RFC 7386

void mergeInto(json& target, const json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) {
    target = json::object();
  }
  for (const auto& [name, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(name);
    } else {
      mergeInto(target[name], value);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// RFC 6901 pointers and RFC 6902 operations

using Pointer = std::vector<std::string>;

Result<Pointer> parsePointer(const std::string& text, const std::string& where) {
  Pointer tokens;
  if (text.empty()) {
    return tokens;
  }
  if (text[0] != '/') {
    return invalid(where + ": JSON pointer \"" + text + "\" must be empty or start with '/'");
  }
  std::string token;
  for (size_t i = 1; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '/') {
      tokens.push_back(std::move(token));
      token.clear();
    } else if (text[i] == '~') {
      char next = i + 1 < text.size() ? text[i + 1] : '\0';
      if (next != '0' && next != '1') {
        return invalid(where + ": JSON pointer \"" + text +
                       "\" has '~' not followed by '0' or '1'");
      }
      token += next == '0' ? '~' : '/';
      ++i;
    } else {
      token += text[i];
    }
  }
  return tokens;
}

std::string renderPointer(const Pointer& p, size_t count) {
  std::string out;
  for (size_t i = 0; i < count && i < p.size(); ++i) {
    out += '/';
    for (char c : p[i]) {
      if (c == '~') {
        out += "~0";
      } else if (c == '/') {
        out += "~1";
      } else {
        out += c;
      }
    }
  }
  return out;
}

// An RFC 6901 array index: "0" or digits without a leading zero.
std::optional<size_t> arrayIndex(const std::string& token) {
  if (token.empty() || token.size() > 18 || (token.size() > 1 && token[0] == '0')) {
    return std::nullopt;
  }
  size_t value = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc() || end != token.data() + token.size()) {
    return std::nullopt;
  }
  return value;
}

// The value at the first `count` tokens of `p`, or nullptr when there is none.
json* resolve(json& doc, const Pointer& p, size_t count) {
  json* cur = &doc;
  for (size_t i = 0; i < count; ++i) {
    const std::string& token = p[i];
    if (cur->is_object()) {
      auto it = cur->find(token);
      if (it == cur->end()) {
        return nullptr;
      }
      cur = &*it;
    } else if (cur->is_array()) {
      auto idx = arrayIndex(token);
      if (!idx || *idx >= cur->size()) {
        return nullptr;
      }
      cur = &(*cur)[*idx];
    } else {
      return nullptr;
    }
  }
  return cur;
}

Status addAt(json& doc, const Pointer& p, json value, const std::string& where) {
  if (p.empty()) {
    doc = std::move(value);
    return Status::OK();
  }
  json* parent = resolve(doc, p, p.size() - 1);
  if (parent == nullptr) {
    return invalid(where + ": parent \"" + renderPointer(p, p.size() - 1) +
                   "\" of path does not exist");
  }
  const std::string& last = p.back();
  if (parent->is_object()) {
    (*parent)[last] = std::move(value);
    return Status::OK();
  }
  if (!parent->is_array()) {
    return invalid(where + ": parent \"" + renderPointer(p, p.size() - 1) +
                   "\" is neither an object nor an array");
  }
  if (last == "-") {
    parent->push_back(std::move(value));
    return Status::OK();
  }
  auto idx = arrayIndex(last);
  if (!idx) {
    return invalid(where + ": \"" + last + "\" is not a valid array index");
  }
  if (*idx > parent->size()) {
    return invalid(where + ": index " + last + " is out of bounds for an array of " +
                   std::to_string(parent->size()));
  }
  parent->insert(parent->begin() + static_cast<std::ptrdiff_t>(*idx), std::move(value));
  return Status::OK();
}

Result<json> removeAt(json& doc, const Pointer& p, const std::string& where) {
  if (p.empty()) {
    return invalid(where + ": cannot remove the whole document");
  }
  json* parent = resolve(doc, p, p.size() - 1);
  const std::string& last = p.back();
  if (parent != nullptr && parent->is_object()) {
    auto it = parent->find(last);
    if (it != parent->end()) {
      json removed = std::move(*it);
      parent->erase(it);
      return removed;
    }
  } else if (parent != nullptr && parent->is_array()) {
    auto idx = arrayIndex(last);
    if (idx && *idx < parent->size()) {
      json removed = std::move((*parent)[*idx]);
      parent->erase(parent->begin() + static_cast<std::ptrdiff_t>(*idx));
      return removed;
    }
  }
  return invalid(where + ": path does not exist");
}

struct Operation {
  std::string op;
  Pointer path;
  Pointer from;
  const json* value = nullptr;
};

Result<Operation> parseOperation(const json& raw, const std::string& where) {
  Operation out;
  auto opIt = raw.find("op");
  if (opIt == raw.end() || !opIt->is_string()) {
    return invalid(where + ": member \"op\" is missing or not a string");
  }
  out.op = opIt->get<std::string>();
  static const std::set<std::string> kOps = {"add", "remove", "replace", "move", "copy", "test"};
  if (kOps.count(out.op) == 0) {
    return invalid(where + ": unknown op \"" + out.op + "\"");
  }
  auto pathIt = raw.find("path");
  if (pathIt == raw.end() || !pathIt->is_string()) {
    return invalid(where + ": member \"path\" is missing or not a string");
  }
  auto path = parsePointer(pathIt->get<std::string>(), where);
  if (!path) {
    return path.error();
  }
  out.path = std::move(*path);
  if (out.op == "move" || out.op == "copy") {
    auto fromIt = raw.find("from");
    if (fromIt == raw.end() || !fromIt->is_string()) {
      return invalid(where + ": member \"from\" is missing or not a string");
    }
    auto from = parsePointer(fromIt->get<std::string>(), where);
    if (!from) {
      return from.error();
    }
    out.from = std::move(*from);
  }
  if (out.op == "add" || out.op == "replace" || out.op == "test") {
    auto valueIt = raw.find("value");
    if (valueIt == raw.end()) {
      return invalid(where + ": member \"value\" is missing");
    }
    out.value = &*valueIt;
  }
  return out;
}

Status applyOperation(json& doc, const Operation& op, const std::string& where) {
  if (op.op == "add") {
    return addAt(doc, op.path, *op.value, where);
  }
  if (op.op == "remove") {
    auto removed = removeAt(doc, op.path, where);
    return removed ? Status::OK() : Status(removed.error());
  }
  if (op.op == "replace") {
    json* target = resolve(doc, op.path, op.path.size());
    if (target == nullptr) {
      return invalid(where + ": path does not exist");
    }
    *target = *op.value;
    return Status::OK();
  }
  if (op.op == "test") {
    json* target = resolve(doc, op.path, op.path.size());
    if (target == nullptr) {
      return invalid(where + ": path does not exist");
    }
    if (*target != *op.value) {
      return invalid(where + ": test failed: value is " + brief(*target) + ", expected " +
                     brief(*op.value));
    }
    return Status::OK();
  }
  json* source = resolve(doc, op.from, op.from.size());
  if (source == nullptr) {
    return invalid(where + ": from \"" + renderPointer(op.from, op.from.size()) +
                   "\" does not exist");
  }
  if (op.op == "copy") {
    return addAt(doc, op.path, *source, where);
  }
  // move
  if (op.path == op.from) {
    return Status::OK();
  }
  if (op.path.size() > op.from.size() &&
      std::equal(op.from.begin(), op.from.end(), op.path.begin())) {
    return invalid(where + ": cannot move a value into one of its own children");
  }
  auto moved = removeAt(doc, op.from, where);
  if (!moved) {
    return moved.error();
  }
  return addAt(doc, op.path, std::move(*moved), where);
}

// ---------------------------------------------------------------------------------------------
// Strategic merge patch

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

Result<json> applyMergePatch(const json& target, const json& patch) {
  if (auto s = checkDepths(target, "merge patch target", patch, "merge patch"); !s) {
    return s.error();
  }
  try {
    json result = target;
    mergeInto(result, patch);
    return result;
  } catch (const std::exception& e) {
    return makeError(Code::Internal, std::string("merge patch failed: ") + e.what());
  }
}

Result<json> applyJsonPatch(const json& target, const json& ops) {
  if (!ops.is_array()) {
    return badRequest("JSON patch must be an array of operations, got " + brief(ops));
  }
  if (ops.size() > kMaxJsonPatchOperations) {
    return makeError(Code::RequestEntityTooLarge,
                     "the allowed maximum operations in a JSON patch is " +
                         std::to_string(kMaxJsonPatchOperations) + ", got " +
                         std::to_string(ops.size()));
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].is_object()) {
      return badRequest("JSON patch operation " + std::to_string(i) +
                        " is not an object: " + brief(ops[i]));
    }
  }
  if (auto s = checkDepths(target, "JSON patch target", ops, "JSON patch"); !s) {
    return s.error();
  }
  try {
    json doc = target;
    for (size_t i = 0; i < ops.size(); ++i) {
      std::string where = "JSON patch operation " + std::to_string(i);
      auto op = parseOperation(ops[i], where);
      if (!op) {
        return op.error();
      }
      where += " (" + op->op + " \"" + ops[i]["path"].get<std::string>() + "\")";
      if (auto s = applyOperation(doc, *op, where); !s) {
        return s.error();
      }
    }
    return doc;
  } catch (const std::exception& e) {
    return makeError(Code::Internal, std::string("JSON patch failed: ") + e.what());
  }
}

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
