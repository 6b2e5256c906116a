#include "kube/object.h"

#include <openssl/rand.h>

#include <algorithm>
#include <cstdio>
#include <random>

namespace strait::kube {

namespace {

using nlohmann::json;

const json* metadataOf(const json& obj) {
  if (!obj.is_object()) {
    return nullptr;
  }
  auto it = obj.find("metadata");
  if (it == obj.end() || !it->is_object()) {
    return nullptr;
  }
  return &*it;
}

json& mutableMetadata(json& obj) {
  if (!obj.is_object()) {
    obj = json::object();
  }
  json& md = obj["metadata"];
  if (!md.is_object()) {
    md = json::object();
  }
  return md;
}

std::string getString(const json& obj, const char* field) {
  const json* md = metadataOf(obj);
  if (md == nullptr) {
    return "";
  }
  auto it = md->find(field);
  if (it == md->end() || !it->is_string()) {
    return "";
  }
  return it->get<std::string>();
}

std::optional<std::string> getOptionalString(const json& obj, const char* field) {
  const json* md = metadataOf(obj);
  if (md == nullptr) {
    return std::nullopt;
  }
  auto it = md->find(field);
  if (it == md->end() || !it->is_string()) {
    return std::nullopt;
  }
  return it->get<std::string>();
}

void setString(json& obj, const char* field, std::string_view value) {
  mutableMetadata(obj)[field] = std::string(value);
}

std::map<std::string, std::string> getStringMap(const json& obj, const char* field) {
  std::map<std::string, std::string> out;
  const json* md = metadataOf(obj);
  if (md == nullptr) {
    return out;
  }
  auto it = md->find(field);
  if (it == md->end() || !it->is_object()) {
    return out;
  }
  for (const auto& [k, v] : it->items()) {
    if (v.is_string()) {
      out.emplace(k, v.get<std::string>());
    }
  }
  return out;
}

void setStringMap(json& obj, const char* field, const std::map<std::string, std::string>& m) {
  json& md = mutableMetadata(obj);
  if (m.empty()) {
    md.erase(field);
    return;
  }
  md[field] = m;
}

void setMapEntry(json& obj, const char* field, std::string_view key, std::string_view value) {
  json& md = mutableMetadata(obj);
  json& m = md[field];
  if (!m.is_object()) {
    m = json::object();
  }
  m[std::string(key)] = std::string(value);
}

}  // namespace

std::string getName(const json& obj) { return getString(obj, "name"); }
void setName(json& obj, std::string_view name) { setString(obj, "name", name); }
std::string getNamespace(const json& obj) { return getString(obj, "namespace"); }
void setNamespace(json& obj, std::string_view ns) { setString(obj, "namespace", ns); }
std::string getUid(const json& obj) { return getString(obj, "uid"); }
void setUid(json& obj, std::string_view uid) { setString(obj, "uid", uid); }
std::string getResourceVersion(const json& obj) { return getString(obj, "resourceVersion"); }
void setResourceVersion(json& obj, std::string_view rv) { setString(obj, "resourceVersion", rv); }
std::string getGenerateName(const json& obj) { return getString(obj, "generateName"); }

int64_t getGeneration(const json& obj) {
  const json* md = metadataOf(obj);
  if (md == nullptr) {
    return 0;
  }
  auto it = md->find("generation");
  if (it == md->end()) {
    return 0;
  }
  if (it->is_number_integer()) {
    return it->get<int64_t>();
  }
  if (it->is_number_unsigned()) {
    uint64_t v = it->get<uint64_t>();
    return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
  }
  return 0;
}

void setGeneration(json& obj, int64_t generation) {
  mutableMetadata(obj)["generation"] = generation;
}

std::map<std::string, std::string> getLabels(const json& obj) {
  return getStringMap(obj, "labels");
}
void setLabels(json& obj, const std::map<std::string, std::string>& labels) {
  setStringMap(obj, "labels", labels);
}
void setLabel(json& obj, std::string_view key, std::string_view value) {
  setMapEntry(obj, "labels", key, value);
}
std::map<std::string, std::string> getAnnotations(const json& obj) {
  return getStringMap(obj, "annotations");
}
void setAnnotations(json& obj, const std::map<std::string, std::string>& annotations) {
  setStringMap(obj, "annotations", annotations);
}
void setAnnotation(json& obj, std::string_view key, std::string_view value) {
  setMapEntry(obj, "annotations", key, value);
}

std::vector<std::string> getFinalizers(const json& obj) {
  std::vector<std::string> out;
  const json* md = metadataOf(obj);
  if (md == nullptr) {
    return out;
  }
  auto it = md->find("finalizers");
  if (it == md->end() || !it->is_array()) {
    return out;
  }
  for (const auto& f : *it) {
    if (f.is_string()) {
      out.push_back(f.get<std::string>());
    }
  }
  return out;
}

void setFinalizers(json& obj, const std::vector<std::string>& finalizers) {
  json& md = mutableMetadata(obj);
  if (finalizers.empty()) {
    md.erase("finalizers");
    return;
  }
  md["finalizers"] = finalizers;
}

bool hasFinalizer(const json& obj, std::string_view finalizer) {
  auto f = getFinalizers(obj);
  return std::find(f.begin(), f.end(), finalizer) != f.end();
}

bool addFinalizer(json& obj, std::string_view finalizer) {
  auto f = getFinalizers(obj);
  if (std::find(f.begin(), f.end(), finalizer) != f.end()) {
    return false;
  }
  f.emplace_back(finalizer);
  setFinalizers(obj, f);
  return true;
}

bool removeFinalizer(json& obj, std::string_view finalizer) {
  auto f = getFinalizers(obj);
  auto end = std::remove(f.begin(), f.end(), finalizer);
  if (end == f.end()) {
    return false;
  }
  f.erase(end, f.end());
  setFinalizers(obj, f);
  return true;
}

std::vector<json> getOwnerReferences(const json& obj) {
  std::vector<json> out;
  const json* md = metadataOf(obj);
  if (md == nullptr) {
    return out;
  }
  auto it = md->find("ownerReferences");
  if (it == md->end() || !it->is_array()) {
    return out;
  }
  for (const auto& r : *it) {
    if (r.is_object()) {
      out.push_back(r);
    }
  }
  return out;
}

void setOwnerReferences(json& obj, const std::vector<json>& refs) {
  json& md = mutableMetadata(obj);
  if (refs.empty()) {
    md.erase("ownerReferences");
    return;
  }
  md["ownerReferences"] = refs;
}

std::optional<json> getControllerOf(const json& obj) {
  for (auto& r : getOwnerReferences(obj)) {
    auto c = r.find("controller");
    if (c != r.end() && c->is_boolean() && c->get<bool>()) {
      return r;
    }
  }
  return std::nullopt;
}

bool isControlledBy(const json& obj, std::string_view ownerUid) {
  auto c = getControllerOf(obj);
  if (!c) {
    return false;
  }
  auto uid = c->find("uid");
  return uid != c->end() && uid->is_string() && uid->get_ref<const std::string&>() == ownerUid;
}

std::optional<std::string> getCreationTimestamp(const json& obj) {
  return getOptionalString(obj, "creationTimestamp");
}
void setCreationTimestamp(json& obj, std::string_view ts) {
  setString(obj, "creationTimestamp", ts);
}
std::optional<std::string> getDeletionTimestamp(const json& obj) {
  return getOptionalString(obj, "deletionTimestamp");
}
void setDeletionTimestamp(json& obj, std::string_view ts) {
  setString(obj, "deletionTimestamp", ts);
}
bool isBeingDeleted(const json& obj) { return getDeletionTimestamp(obj).has_value(); }

std::string newUid() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof(b)) != 1) {
    std::random_device rd;
    for (auto& c : b) {
      c = static_cast<unsigned char>(rd());
    }
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      out.push_back('-');
    }
    out.push_back(kHex[b[i] >> 4]);
    out.push_back(kHex[b[i] & 0x0f]);
  }
  return out;
}

}  // namespace strait::kube
