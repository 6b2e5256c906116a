#pragma once
// Helpers over Kubernetes objects held as nlohmann::json. Getters tolerate missing or
// mistyped metadata (they return an empty value); setters create metadata as needed, replacing
// a non-object object/metadata with an empty object. Nothing here throws. Not synchronized:
// callers own the json they pass.

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/status.h"
#include "kube/time.h"  // the timestamps are written with these

namespace strait::kube {

// metadata.name / namespace / uid / resourceVersion / generateName.
std::string getName(const nlohmann::json& obj);
void setName(nlohmann::json& obj, std::string_view name);
std::string getNamespace(const nlohmann::json& obj);
void setNamespace(nlohmann::json& obj, std::string_view ns);
std::string getUid(const nlohmann::json& obj);
void setUid(nlohmann::json& obj, std::string_view uid);
std::string getResourceVersion(const nlohmann::json& obj);
void setResourceVersion(nlohmann::json& obj, std::string_view rv);
std::string getGenerateName(const nlohmann::json& obj);

// metadata.generation; 0 when absent.
int64_t getGeneration(const nlohmann::json& obj);
void setGeneration(nlohmann::json& obj, int64_t generation);

// metadata.labels / annotations; entries whose value is not a string are skipped.
std::map<std::string, std::string> getLabels(const nlohmann::json& obj);
void setLabels(nlohmann::json& obj, const std::map<std::string, std::string>& labels);
void setLabel(nlohmann::json& obj, std::string_view key, std::string_view value);
std::map<std::string, std::string> getAnnotations(const nlohmann::json& obj);
void setAnnotations(nlohmann::json& obj, const std::map<std::string, std::string>& annotations);
void setAnnotation(nlohmann::json& obj, std::string_view key, std::string_view value);

// metadata.finalizers.
std::vector<std::string> getFinalizers(const nlohmann::json& obj);
void setFinalizers(nlohmann::json& obj, const std::vector<std::string>& finalizers);
bool hasFinalizer(const nlohmann::json& obj, std::string_view finalizer);
// Adds if missing; returns true when obj changed.
bool addFinalizer(nlohmann::json& obj, std::string_view finalizer);
// Removes every occurrence; returns true when obj changed.
bool removeFinalizer(nlohmann::json& obj, std::string_view finalizer);

// metadata.ownerReferences (each an object with apiVersion, kind, name, uid, controller...).
std::vector<nlohmann::json> getOwnerReferences(const nlohmann::json& obj);
void setOwnerReferences(nlohmann::json& obj, const std::vector<nlohmann::json>& refs);
// The owner reference with controller: true, if any.
std::optional<nlohmann::json> getControllerOf(const nlohmann::json& obj);
// True when obj has an owner reference with controller: true and the given uid.
bool isControlledBy(const nlohmann::json& obj, std::string_view ownerUid);

// metadata.creationTimestamp / deletionTimestamp as RFC 3339 strings.
std::optional<std::string> getCreationTimestamp(const nlohmann::json& obj);
void setCreationTimestamp(nlohmann::json& obj, std::string_view rfc3339);
std::optional<std::string> getDeletionTimestamp(const nlohmann::json& obj);
void setDeletionTimestamp(nlohmann::json& obj, std::string_view rfc3339);
bool isBeingDeleted(const nlohmann::json& obj);

// A random (version 4) UUID such as "3f2b8c1e-7d4a-4e55-9b1c-0a2d3e4f5a6b", from OpenSSL
// RAND_bytes (std::random_device if that fails). Thread-safe.
std::string newUid();

}  // namespace strait::kube
