// RFC 6902 JSON patch (application/json-patch+json) with RFC 6901 pointers, see patch.h.
#include <algorithm>
#include <charconv>
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

}  // namespace

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

}  // namespace strait::kube
