// TokenRequest (POST serviceaccounts/<name>/token, authentication.k8s.io/v1), as upstream's
// ServiceAccount token REST storage: the ServiceAccount must exist, expirationSeconds
// defaults to 3600 and may not be under 600, a boundObjectRef names an existing Pod (its uid
// must match when given); the answer is the request with its defaults and status.token,
// status.expirationTimestamp, 201 Created. The token itself comes from the issuer the API
// server sets (serviceaccount_token_auth.h accepts it).
#include <chrono>

#include "kube/object.h"
#include "kube/time.h"
#include "minicluster/api_handler.h"
#include "minicluster/api_request.h"

namespace strait::minicluster {

using kube::Code;
using kube::HttpRequest;
using kube::makeError;
using kube::Responder;
using nlohmann::json;
using namespace api;

void ApiHandler::handleTokenRequest(const HttpRequest& req, Responder& out,
                                    const ResourceInfo& serviceAccounts, const std::string& ns,
                                    const std::string& name) {
  if (req.method != "POST") {
    return replyError(out, makeError(Code::MethodNotAllowed, "token only accepts POST"));
  }
  if (!tokenIssuer_) {
    return replyError(out, makeError(Code::Unavailable, "this API server issues no tokens"));
  }
  json body = json::object();
  if (!req.body.empty()) {
    auto parsed = parseBody(req);
    if (!parsed) return replyError(out, parsed.error());
    body = std::move(*parsed);
  }
  if (!body.is_object()) return replyError(out, makeError(Code::Invalid, "a TokenRequest must be an object"));
  auto sa = rest_.get(serviceAccounts, ns, name);
  if (!sa) return replyError(out, sa.error(), name, &serviceAccounts);
  json account = json::parse((*sa)->json, nullptr, false);
  json spec = body.value("spec", json::object());
  if (!spec.is_object()) spec = json::object();
  if (!spec.contains("expirationSeconds") || !spec["expirationSeconds"].is_number_integer()) {
    spec["expirationSeconds"] = 3600;
  }
  if (spec["expirationSeconds"].get<int64_t>() < 600) {
    return replyError(out, makeError(Code::Invalid,
                                     "TokenRequest.authentication.k8s.io \"" + name +
                                         "\" is invalid: spec.expirationSeconds: Invalid value: " +
                                         std::to_string(spec["expirationSeconds"].get<int64_t>()) +
                                         ": may not specify a duration less than 10 minutes"));
  }
  if (!spec.contains("audiences") || !spec["audiences"].is_array() || spec["audiences"].empty()) {
    spec["audiences"] = json::array({"https://kubernetes.default.svc.cluster.local"});
  }
  std::optional<json> pod;
  if (spec.contains("boundObjectRef") && spec["boundObjectRef"].is_object()) {
    const json& ref = spec["boundObjectRef"];
    if (ref.value("kind", "") != "Pod") {
      return replyError(out, makeError(Code::Invalid, "spec.boundObjectRef.kind: Unsupported value: \"" +
                                                          ref.value("kind", "") + "\": supported values: \"Pod\""));
    }
    auto podsInfo = registry_.find("", "v1", "pods");
    if (!podsInfo) return replyError(out, makeError(Code::Internal, "pods are not served"));
    auto p = rest_.get(*podsInfo, ns, ref.value("name", ""));
    if (!p) return replyError(out, p.error(), ref.value("name", ""), podsInfo.get());
    pod = json::parse((*p)->json, nullptr, false);
    std::string uid = ref.value("uid", "");
    if (!uid.empty() && uid != kube::getUid(*pod)) {
      return replyError(out, makeError(Code::Conflict, "the UID in the bound object reference (" + uid +
                                                           ") does not match the UID in record"));
    }
  }
  auto token = tokenIssuer_(account, spec, pod ? &*pod : nullptr);
  if (!token) return replyError(out, token.error());
  auto expires = std::chrono::system_clock::now() +
                 std::chrono::seconds(spec["expirationSeconds"].get<int64_t>());
  json tr = {{"kind", "TokenRequest"},
             {"apiVersion", "authentication.k8s.io/v1"},
             {"metadata", {{"name", name}, {"namespace", ns}, {"creationTimestamp", kube::rfc3339Now()}}},
             {"spec", spec},
             {"status", {{"token", *token}, {"expirationTimestamp", kube::rfc3339(expires)}}}};
  reply(out, 201, tr.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace strait::minicluster
