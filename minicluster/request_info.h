#pragma once
// Parses an API request path into what it addresses, as the upstream RequestInfo resolver
// does: /api/v1/namespaces/NS/pods/NAME/status -> {core, v1, NS, pods, NAME, status}.

#include <string>
#include <string_view>

namespace strait::minicluster {

struct RequestInfo {
  bool isResource = false;   // false: discovery, /version, /healthz, ...
  bool legacyWatch = false;  // /api/v1/watch/... form
  std::string group;         // "" for core
  std::string version;
  std::string namespace_;    // "" when not namespaced or all namespaces
  std::string resource;
  std::string name;
  std::string subresource;
  // Set for non-resource discovery paths: "/api", "/apis", "/api/v1", "/apis/G", "/apis/G/V".
  int discoveryDepth = 0;
};

// Returns the parsed info; isResource false for anything that is not a resource path.
RequestInfo parseRequestPath(std::string_view path);

}  // namespace strait::minicluster
