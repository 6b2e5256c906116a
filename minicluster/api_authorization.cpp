// The authorization step of the API handler and the review APIs it answers:
// authorization.k8s.io/v1 SubjectAccessReview, LocalSubjectAccessReview,
// SelfSubjectAccessReview and SelfSubjectRulesReview, and authentication.k8s.io/v1
// SelfSubjectReview (kubectl auth can-i / whoami). Reviews are create-only and not stored:
// the answer is the request with its status, 201 Created, as upstream's registry does.
#include <algorithm>

#include "minicluster/api_handler.h"
#include "minicluster/api_request.h"
#include "minicluster/authorizer.h"
#include "minicluster/impersonation.h"
#include "minicluster/request_info.h"

namespace strait::minicluster {

using kube::Code;
using kube::HttpRequest;
using kube::makeError;
using kube::Responder;
using nlohmann::json;
using namespace api;

namespace {

constexpr const char* kAuthorizationGroup = "authorization.k8s.io";
constexpr const char* kAuthenticationGroup = "authentication.k8s.io";

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

kube::Error invalid(const std::string& kind, const std::string& field, const json& value,
                    const std::string& detail) {
  std::string shown = value.is_null() ? "null" : value.dump();
  kube::Error e = makeError(Code::Invalid, kind + "." + kAuthorizationGroup + " \"\" is invalid: " +
                                               field + ": Invalid value: " + shown + ": " + detail);
  e.kind = kind;
  e.causes.push_back({"FieldValueInvalid", field, "Invalid value: " + shown + ": " + detail});
  return e;
}

// Attributes of spec.resourceAttributes / spec.nonResourceAttributes for `user`.
AuthorizationAttributes specAttributes(const json& spec, const std::string& user,
                                       const std::vector<std::string>& groups) {
  AuthorizationAttributes a;
  a.user = user;
  a.groups = groups;
  if (spec.contains("resourceAttributes") && spec["resourceAttributes"].is_object()) {
    const json& r = spec["resourceAttributes"];
    a.resourceRequest = true;
    a.verb = str(r, "verb");
    a.apiGroup = str(r, "group");
    a.resource = str(r, "resource");
    a.subresource = str(r, "subresource");
    a.ns = str(r, "namespace");
    a.name = str(r, "name");
  } else if (spec.contains("nonResourceAttributes") && spec["nonResourceAttributes"].is_object()) {
    const json& n = spec["nonResourceAttributes"];
    a.resourceRequest = false;
    a.verb = str(n, "verb");
    a.path = str(n, "path");
  }
  return a;
}

json reviewStatus(const AuthorizationResult& d) {
  json s = {{"allowed", d.allowed()}};
  if (d.decision == Decision::Deny) s["denied"] = true;
  if (!d.reason.empty()) s["reason"] = d.reason;
  return s;
}

}  // namespace

bool ApiHandler::authorizeRequest(const HttpRequest& req, Responder& out, const RequestInfo& ri,
                                  const Identity& id) {
  if (!authorizer_) return true;
  AuthorizationAttributes a = requestAttributes(req, ri, id.user, id.groups);
  AuthorizationResult d = authorizer_->authorize(a);
  if (d.allowed()) return true;
  kube::Error e = forbiddenError(a, d.reason);
  reply(out, 403, statusBody(e, e.name, a.resourceRequest ? a.apiGroup : "", e.kind));
  return false;
}

bool ApiHandler::isReviewRequest(const RequestInfo& ri) {
  if (!ri.isResource || !ri.name.empty()) return false;
  if (ri.group == kAuthorizationGroup) return true;
  return ri.group == kAuthenticationGroup && ri.resource == "selfsubjectreviews";
}

void ApiHandler::handleReview(const HttpRequest& req, Responder& out, const RequestInfo& ri,
                              const Identity& id) {
  ResourceInfoPtr info = registry_.find(ri.group, ri.version, ri.resource);
  if (!info) {
    return replyError(out, makeError(Code::NotFound,
                                     "the server could not find the requested resource"),
                      "", nullptr);
  }
  if (req.method != "POST") {
    return replyError(out, makeError(Code::MethodNotAllowed,
                                     "the server does not allow this method on the requested "
                                     "resource"));
  }
  auto parsed = parseBody(req);
  if (!parsed) return replyError(out, parsed.error());
  json body = std::move(*parsed);
  if (!body.is_object()) {
    return replyError(out, makeError(Code::BadRequest, "the body of a " + info->kind +
                                                           " must be a JSON object"));
  }
  json result = {{"kind", info->kind},
                 {"apiVersion", info->apiVersion()},
                 {"metadata", body.value("metadata", json::object())}};
  if (!result["metadata"].is_object()) result["metadata"] = json::object();
  result["metadata"]["creationTimestamp"] = nullptr;
  if (info->namespaced) result["metadata"]["namespace"] = ri.namespace_;

  if (info->resource == "selfsubjectreviews") {
    json user = {{"username", id.user}, {"groups", id.groups}};
    if (!id.uid.empty()) user["uid"] = id.uid;
    if (!id.extra.empty()) user["extra"] = id.extra;
    result["status"] = {{"userInfo", user}};
    return reply(out, 201, result.dump(-1, ' ', false, json::error_handler_t::replace));
  }

  json spec = body.value("spec", json::object());
  if (!spec.is_object()) spec = json::object();
  static const auto kAllowAll = newAlwaysAllowAuthorizer();
  const Authorizer& authz = authorizer_ ? *authorizer_ : *kAllowAll;

  if (info->resource == "selfsubjectrulesreviews") {
    std::string ns = str(spec, "namespace");
    std::vector<std::string> errors;
    bool incomplete = false;
    std::vector<PolicyRule> rules;
    if (std::find(id.groups.begin(), id.groups.end(), "system:masters") != id.groups.end()) {
      rules = {PolicyRule{{"*"}, {"*"}, {"*"}, {}, {}}, PolicyRule{{"*"}, {}, {}, {}, {"*"}}};
    }
    auto more = authz.rulesFor(id.user, id.groups, ns, &errors, &incomplete);
    rules.insert(rules.end(), more.begin(), more.end());
    json resourceRules = json::array();
    json nonResourceRules = json::array();
    for (const auto& r : rules) {
      if (!r.resources.empty()) {
        json j = {{"verbs", r.verbs}, {"apiGroups", r.apiGroups}, {"resources", r.resources}};
        if (!r.resourceNames.empty()) j["resourceNames"] = r.resourceNames;
        resourceRules.push_back(std::move(j));
      }
      if (!r.nonResourceURLs.empty()) {
        nonResourceRules.push_back({{"verbs", r.verbs}, {"nonResourceURLs", r.nonResourceURLs}});
      }
    }
    result["spec"] = spec;
    result["status"] = {{"resourceRules", resourceRules},
                        {"nonResourceRules", nonResourceRules},
                        {"incomplete", incomplete || !errors.empty()}};
    if (!errors.empty()) {
      std::string msg;
      for (size_t i = 0; i < errors.size(); ++i) msg += (i ? ", " : "") + errors[i];
      result["status"]["evaluationError"] = msg;
    }
    return reply(out, 201, result.dump(-1, ' ', false, json::error_handler_t::replace));
  }

  const bool hasResource = spec.contains("resourceAttributes") && !spec["resourceAttributes"].is_null();
  const bool hasNonResource =
      spec.contains("nonResourceAttributes") && !spec["nonResourceAttributes"].is_null();
  if (hasResource && hasNonResource) {
    return replyError(out, invalid(info->kind, "spec.nonResourceAttributes",
                                   spec["nonResourceAttributes"],
                                   "cannot be specified in combination with resourceAttributes"));
  }
  if (!hasResource && !hasNonResource) {
    return replyError(out, invalid(info->kind, "spec.resourceAttributes", json(),
                                   "exactly one of nonResourceAttributes or resourceAttributes "
                                   "must be specified"));
  }
  std::string user = id.user;
  std::vector<std::string> groups = id.groups;
  if (info->resource == "subjectaccessreviews" || info->resource == "localsubjectaccessreviews") {
    user = str(spec, "user");
    groups = strings(spec, "groups");
    if (user.empty() && groups.empty()) {
      return replyError(out, invalid(info->kind, "spec.user", "",
                                     "at least one of user or group must be specified"));
    }
  }
  if (info->resource == "localsubjectaccessreviews") {
    if (hasNonResource) {
      return replyError(out, invalid(info->kind, "spec.nonResourceAttributes",
                                     spec["nonResourceAttributes"],
                                     "disallowed on this kind of request"));
    }
    json& ra = spec["resourceAttributes"];
    if (!ra.is_object()) ra = json::object();
    std::string ns = str(ra, "namespace");
    if (ns.empty()) {
      ra["namespace"] = ri.namespace_;
    } else if (ns != ri.namespace_) {
      return replyError(out, makeError(Code::BadRequest,
                                       "spec.resourceAttributes.namespace must match namespace: " +
                                           ri.namespace_));
    }
  } else if (info->resource == "selfsubjectaccessreviews") {
    spec.erase("user");
    spec.erase("groups");
  }
  AuthorizationResult d = authz.authorize(specAttributes(spec, user, groups));
  result["spec"] = spec;
  result["status"] = reviewStatus(d);
  reply(out, 201, result.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace strait::minicluster
