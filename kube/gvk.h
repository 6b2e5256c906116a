#pragma once
// API group/version/kind/resource names. Value types with ordering, usable as map keys.

#include <compare>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kube/status.h"

namespace strait::kube {

struct GroupVersion {
  std::string group;  // "" for the core group
  std::string version;

  // "apps/v1" -> {apps, v1}; "v1" -> {"", v1}. Error (Code::BadRequest) for "", for more than
  // one '/', and for an empty group or version around the '/'.
  static Result<GroupVersion> parse(std::string_view apiVersion);
  // The apiVersion string: "apps/v1", or "v1" for the core group.
  std::string toString() const;
  bool empty() const { return group.empty() && version.empty(); }
  auto operator<=>(const GroupVersion&) const = default;
};

struct GroupVersionKind {
  std::string group;
  std::string version;
  std::string kind;

  // From an apiVersion string and a kind; errors as GroupVersion::parse, or for an empty kind.
  static Result<GroupVersionKind> fromApiVersionKind(std::string_view apiVersion,
                                                     std::string_view kind);
  // From an object's "apiVersion" and "kind" fields.
  static Result<GroupVersionKind> fromObject(const nlohmann::json& obj);
  GroupVersion groupVersion() const { return {group, version}; }
  std::string apiVersion() const { return groupVersion().toString(); }
  // Upstream form: "apps/v1, Kind=Deployment" ("/v1, Kind=Pod" for the core group).
  std::string toString() const;
  auto operator<=>(const GroupVersionKind&) const = default;
};

struct GroupVersionResource {
  std::string group;
  std::string version;
  std::string resource;  // lower-case plural, e.g. "deployments"

  GroupVersion groupVersion() const { return {group, version}; }
  // Upstream form: "apps/v1, Resource=deployments".
  std::string toString() const;
  auto operator<=>(const GroupVersionResource&) const = default;
};

}  // namespace strait::kube
