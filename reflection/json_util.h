#pragma once
// Non-throwing accessors for untrusted Kubernetes JSON (private to reflection/).
// nlohmann's value() throws on a type mismatch; these never do.

#include <nlohmann/json.hpp>
#include <string>

namespace strait::reflection::detail {

// j[key] when j is an object and j[key] a string, else "".
inline std::string str(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return {};
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
inline bool isObj(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return false;
  auto it = j.find(key);
  return it != j.end() && it->is_object();
}
inline bool isArr(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return false;
  auto it = j.find(key);
  return it != j.end() && it->is_array();
}
// j[key] when it is an object or array of the same type as `fallback`, else fallback.
inline const nlohmann::json& member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it != j.end() ? *it : kNull;
}

}  // namespace strait::reflection::detail
