#include "kube/gvk.h"

namespace strait::kube {

Result<GroupVersion> GroupVersion::parse(std::string_view apiVersion) {
  if (apiVersion.empty()) {
    return makeError(Code::BadRequest, "apiVersion must not be empty");
  }
  size_t slash = apiVersion.find('/');
  if (slash == std::string_view::npos) {
    return GroupVersion{"", std::string(apiVersion)};
  }
  if (apiVersion.find('/', slash + 1) != std::string_view::npos) {
    return makeError(Code::BadRequest,
                     "unexpected GroupVersion string: " + std::string(apiVersion) +
                         " (want \"group/version\" or \"version\")");
  }
  GroupVersion gv{std::string(apiVersion.substr(0, slash)),
                  std::string(apiVersion.substr(slash + 1))};
  if (gv.group.empty() || gv.version.empty()) {
    return makeError(Code::BadRequest,
                     "unexpected GroupVersion string: " + std::string(apiVersion) + " (empty " +
                         (gv.group.empty() ? "group" : "version") + " around '/')");
  }
  return gv;
}

std::string GroupVersion::toString() const {
  return group.empty() ? version : group + "/" + version;
}

Result<GroupVersionKind> GroupVersionKind::fromApiVersionKind(std::string_view apiVersion,
                                                              std::string_view kind) {
  auto gv = GroupVersion::parse(apiVersion);
  if (!gv.ok()) {
    return gv.error();
  }
  if (kind.empty()) {
    return makeError(Code::BadRequest, "kind must not be empty");
  }
  return GroupVersionKind{gv->group, gv->version, std::string(kind)};
}

Result<GroupVersionKind> GroupVersionKind::fromObject(const nlohmann::json& obj) {
  if (!obj.is_object()) {
    return makeError(Code::BadRequest, "object must be a JSON object");
  }
  auto av = obj.find("apiVersion");
  if (av == obj.end() || !av->is_string() || av->get_ref<const std::string&>().empty()) {
    return makeError(Code::BadRequest, "Object 'apiVersion' is missing or not a string",
                     "apiVersion");
  }
  auto kind = obj.find("kind");
  if (kind == obj.end() || !kind->is_string() || kind->get_ref<const std::string&>().empty()) {
    return makeError(Code::BadRequest, "Object 'Kind' is missing or not a string", "kind");
  }
  return fromApiVersionKind(av->get_ref<const std::string&>(), kind->get_ref<const std::string&>());
}

std::string GroupVersionKind::toString() const { return group + "/" + version + ", Kind=" + kind; }

std::string GroupVersionResource::toString() const {
  return group + "/" + version + ", Resource=" + resource;
}

}  // namespace strait::kube
