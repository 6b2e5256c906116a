#pragma once
// Non-throwing access to parts of a JSON object that may be missing or mistyped: Kubernetes
// objects from the network, a file or an informer's cache. nlohmann's value() and at() throw
// on a type mismatch; these never throw and never assert. Pure; thread-safe.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace strait::kube {

// obj[key] of any type, or null when obj is not an object or has no such member.
inline const nlohmann::json& member(const nlohmann::json& obj, const char* key) {
  static const nlohmann::json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it != obj.end() ? *it : kNull;
}

// obj[key] when obj is an object holding an object there; else an empty object.
inline const nlohmann::json& child(const nlohmann::json& obj, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json& m = member(obj, key);
  return m.is_object() ? m : kEmpty;
}

// obj[key] when it is an array; else an empty array.
inline const nlohmann::json& childArray(const nlohmann::json& obj, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const nlohmann::json& m = member(obj, key);
  return m.is_array() ? m : kEmpty;
}

// True when obj[key] exists and is an object / an array.
inline bool hasObject(const nlohmann::json& obj, const char* key) {
  return member(obj, key).is_object();
}
inline bool hasArray(const nlohmann::json& obj, const char* key) {
  return member(obj, key).is_array();
}

// obj[key] when it is a string / an integer / a boolean; else `def`.
inline std::string stringOf(const nlohmann::json& obj, const char* key,
                            const std::string& def = "") {
  const nlohmann::json& m = member(obj, key);
  return m.is_string() ? m.get<std::string>() : def;
}
inline int64_t intOf(const nlohmann::json& obj, const char* key, int64_t def = 0) {
  const nlohmann::json& m = member(obj, key);
  return m.is_number_integer() ? m.get<int64_t>() : def;
}
inline bool boolOf(const nlohmann::json& obj, const char* key, bool def = false) {
  const nlohmann::json& m = member(obj, key);
  return m.is_boolean() ? m.get<bool>() : def;
}

}  // namespace strait::kube
