#pragma once
// Private to the registry: the pieces registry.cpp, registry_builtin.cpp and openapi.cpp
// share.

#include <map>
#include <string>
#include <vector>

#include "minicluster/registry.h"

namespace strait::minicluster::detail {

// The kind and verbs a subresource answers with (pods/eviction: policy/v1 Eviction).
struct SubresourceShape {
  std::string group;
  std::string version;
  std::string kind;
  std::vector<std::string> verbs;
};

// registry_builtin.cpp
std::vector<ResourceInfo> builtinResources();
SubresourceShape subresourceShape(const ResourceInfo& info, const std::string& subresource);
std::vector<std::string> builtinSelectableFields(const ResourceInfo& info);
std::map<std::string, std::string> builtinFieldValues(const ResourceInfo& info, const json& obj);
std::string selectableValue(const json& obj, const std::string& dottedPath);

// openapi.cpp
json openApiDocumentFor(const std::string& group, const std::string& version,
                        const std::vector<ResourceInfoPtr>& resources,
                        const std::map<std::string, json>& crdSchemas);
std::string openApiHash(const json& doc);
// The Swagger 2.0 document (/openapi/v2) holding every path and schema of the OpenAPI 3
// documents given (one per group-version).
json openApiV2From(const std::vector<json>& v3Documents);

}  // namespace strait::minicluster::detail
