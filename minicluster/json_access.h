#pragma once
// Read-only access to parts of a const JSON object that may be missing or mistyped, for
// controllers reading cached (immutable) objects: never throws, never asserts.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace strait::minicluster {

// obj[key] when obj is an object holding an object there; else an empty object.
inline const nlohmann::json& child(const nlohmann::json& obj, const char* key) {
  static const nlohmann::json empty = nlohmann::json::object();
  if (!obj.is_object()) return empty;
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : empty;
}

// obj[key] when it is an array; else an empty array.
inline const nlohmann::json& childArray(const nlohmann::json& obj, const char* key) {
  static const nlohmann::json empty = nlohmann::json::array();
  if (!obj.is_object()) return empty;
  auto it = obj.find(key);
  return it != obj.end() && it->is_array() ? *it : empty;
}

inline std::string stringOf(const nlohmann::json& obj, const char* key,
                            const std::string& def = "") {
  if (!obj.is_object()) return def;
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : def;
}

inline int64_t intOf(const nlohmann::json& obj, const char* key, int64_t def = 0) {
  if (!obj.is_object()) return def;
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int64_t>() : def;
}

inline bool boolOf(const nlohmann::json& obj, const char* key, bool def = false) {
  if (!obj.is_object()) return def;
  auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() ? it->get<bool>() : def;
}

}  // namespace strait::minicluster
