#include "minicluster/request_info.h"

#include <vector>

namespace strait::minicluster {
namespace {

std::vector<std::string> splitPath(std::string_view path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) parts.emplace_back(path.substr(i, j - i));
    i = j;
  }
  return parts;
}

}  // namespace

RequestInfo parseRequestPath(std::string_view path) {
  RequestInfo info;
  auto parts = splitPath(path);
  size_t i = 0;
  if (parts.empty()) return info;
  if (parts[0] == "api") {
    if (parts.size() == 1) {
      info.discoveryDepth = 1;
      return info;
    }
    info.version = parts[1];
    i = 2;
  } else if (parts[0] == "apis") {
    if (parts.size() == 1) {
      info.discoveryDepth = 1;
      return info;
    }
    info.group = parts[1];
    if (parts.size() == 2) {
      info.discoveryDepth = 2;
      return info;
    }
    info.version = parts[2];
    i = 3;
  } else {
    return info;
  }
  if (i == parts.size()) {
    info.discoveryDepth = 3;
    return info;
  }
  info.isResource = true;
  if (parts[i] == "watch") {
    info.legacyWatch = true;
    ++i;
  }
  if (i < parts.size() && parts[i] == "namespaces" && i + 2 < parts.size()) {
    // /namespaces/NS/RES...; but /namespaces/NS/status|finalize addresses the namespace.
    if (i + 3 == parts.size() && (parts[i + 2] == "status" || parts[i + 2] == "finalize")) {
      info.resource = "namespaces";
      info.name = parts[i + 1];
      info.subresource = parts[i + 2];
      return info;
    }
    info.namespace_ = parts[i + 1];
    i += 2;
  }
  if (i >= parts.size()) {
    info.isResource = false;
    return info;
  }
  info.resource = parts[i++];
  if (i < parts.size()) info.name = parts[i++];
  if (i < parts.size()) info.subresource = parts[i++];
  if (i < parts.size()) {
    // Deeper paths (e.g. proxy/...) are not served.
    info.subresource += "/" + parts[i];
  }
  return info;
}

}  // namespace strait::minicluster
