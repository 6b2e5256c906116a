#include "minicluster/impersonation.h"

#include <algorithm>

namespace strait::minicluster {
namespace {

constexpr const char* kSaPrefix = "system:serviceaccount:";

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Repeated headers arrive joined with ", " (kube::HttpRequest).
std::vector<std::string> splitJoined(const std::string& v) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= v.size()) {
    size_t end = v.find(", ", start);
    if (end == std::string::npos) end = v.size();
    std::string part = v.substr(start, end - start);
    if (!part.empty()) out.push_back(part);
    start = end + 2;
  }
  return out;
}

std::string percentDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

Identity authenticatedIdentity(const kube::HttpRequest& req) {
  Identity id;
  if (req.user.empty()) {
    id.user = "system:anonymous";
    id.groups = {"system:unauthenticated"};
    return id;
  }
  id.user = req.user;
  id.groups = req.groups;
  if (!contains(id.groups, "system:authenticated")) id.groups.push_back("system:authenticated");
  return id;
}

kube::Result<std::optional<Identity>> impersonatedIdentity(const kube::HttpRequest& req,
                                                           const Identity& caller,
                                                           const Authorizer& authz) {
  const std::string user = req.header("impersonate-user");
  const std::string groupHeader = req.header("impersonate-group");
  const std::string uid = req.header("impersonate-uid");
  std::map<std::string, std::vector<std::string>> extra;
  for (const auto& [k, v] : req.headers) {
    static const std::string kExtra = "impersonate-extra-";
    if (k.rfind(kExtra, 0) == 0 && k.size() > kExtra.size()) {
      extra[percentDecode(k.substr(kExtra.size()))] = splitJoined(v);
    }
  }
  const bool any = req.headers.count("impersonate-user") || req.headers.count("impersonate-group") ||
                   req.headers.count("impersonate-uid") || !extra.empty();
  if (!any) return std::optional<Identity>();
  if (user.empty()) {
    return kube::makeError(kube::Code::BadRequest,
                           "requested impersonation of groups, uid or extra without "
                           "impersonating a user");
  }
  auto check = [&](const std::string& group, const std::string& resource,
                   const std::string& subresource, const std::string& ns,
                   const std::string& name) -> kube::Status {
    AuthorizationAttributes a;
    a.user = caller.user;
    a.groups = caller.groups;
    a.verb = "impersonate";
    a.resourceRequest = true;
    a.apiGroup = group;
    a.resource = resource;
    a.subresource = subresource;
    a.ns = ns;
    a.name = name;
    auto d = authz.authorize(a);
    if (d.allowed()) return kube::Status::OK();
    return forbiddenError(a, d.reason);
  };
  Identity id;
  id.user = user;
  id.uid = uid;
  id.extra = extra;
  const std::vector<std::string> groups = splitJoined(groupHeader);
  if (user.rfind(kSaPrefix, 0) == 0) {
    std::string rest = user.substr(std::string(kSaPrefix).size());
    auto colon = rest.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
      return kube::makeError(kube::Code::BadRequest,
                             "invalid service account username " + goQuote(user));
    }
    std::string ns = rest.substr(0, colon);
    if (auto s = check("", "serviceaccounts", "", ns, rest.substr(colon + 1)); !s) {
      return s.error();
    }
    if (groups.empty()) {
      id.groups = {"system:serviceaccounts", "system:serviceaccounts:" + ns};
    }
  } else if (auto s = check("", "users", "", "", user); !s) {
    return s.error();
  }
  for (const auto& g : groups) {
    if (auto s = check("", "groups", "", "", g); !s) return s.error();
    id.groups.push_back(g);
  }
  for (const auto& [k, values] : extra) {
    for (const auto& v : values) {
      if (auto s = check("authentication.k8s.io", "userextras", k, "", v); !s) return s.error();
    }
  }
  if (!uid.empty()) {
    if (auto s = check("authentication.k8s.io", "uids", "", "", uid); !s) return s.error();
  }
  if (user == "system:anonymous") {
    if (!contains(id.groups, "system:unauthenticated")) id.groups.push_back("system:unauthenticated");
  } else if (!contains(id.groups, "system:authenticated")) {
    id.groups.push_back("system:authenticated");
  }
  return std::optional<Identity>(std::move(id));
}

}  // namespace strait::minicluster
