#pragma once
// The HTTP front end of the minicluster API server: maps requests to discovery, OpenAPI,
// health and version endpoints, and to the REST verbs of Rest, with content negotiation
// (JSON, Table, aggregated discovery), watches, and Status errors.
//
// Thread-safe: handle() runs concurrently on connection threads.

#include <atomic>
#include <functional>
#include <string>

#include "kube/http_server.h"
#include "minicluster/authorizer.h"
#include "minicluster/impersonation.h"
#include "minicluster/pod_proxy.h"
#include "minicluster/registry.h"
#include "minicluster/rest.h"
#include "minicluster/store.h"

namespace strait::minicluster {

class ApiHandler : public kube::Handler {
 public:
  ApiHandler(Store& store, Registry& registry, Rest& rest);
  void handle(const kube::HttpRequest& req, kube::Responder& out) override;
  // Ends running watches (on shutdown).
  void shutdown() { stopping_ = true; }
  // Credentials for pods/log, exec and attach towards kubelets. Call before serving.
  void setKubeletClient(KubeletClientConfig c) { kubeletClient_ = std::move(c); }
  // Signs the token of a TokenRequest (serviceaccounts/token) for ServiceAccount `sa` (its
  // object) with the request's spec (audiences, expirationSeconds, boundObjectRef resolved to
  // `boundPod`, null when unbound). Without one, TokenRequests are refused. Call before
  // serving.
  using TokenIssuer = std::function<kube::Result<std::string>(
      const nlohmann::json& sa, const nlohmann::json& spec, const nlohmann::json* boundPod)>;
  void setTokenIssuer(TokenIssuer issuer) { tokenIssuer_ = std::move(issuer); }
  // Checks every request after authentication (impersonation headers included) and answers
  // the authorization.k8s.io reviews with it. Null (the default): every request is allowed
  // and impersonation headers are ignored. Borrowed, must outlive the handler; call before
  // serving.
  void setAuthorizer(const Authorizer* authorizer) { authorizer_ = authorizer; }

 private:
  void dispatch(const kube::HttpRequest& req, kube::Responder& out);
  // Authorization of `req` as `id` (api_authorization.cpp): true when allowed; otherwise a
  // 403 with upstream's message has been sent.
  bool authorizeRequest(const kube::HttpRequest& req, kube::Responder& out,
                        const struct RequestInfo& ri, const Identity& id);
  static bool isReviewRequest(const struct RequestInfo& ri);
  // POST of an authorization.k8s.io review or an authentication.k8s.io SelfSubjectReview.
  void handleReview(const kube::HttpRequest& req, kube::Responder& out,
                    const struct RequestInfo& ri, const Identity& id);
  void handleResource(const kube::HttpRequest& req, kube::Responder& out,
                      const struct RequestInfo& ri);
  void handleDiscovery(const kube::HttpRequest& req, kube::Responder& out,
                       const struct RequestInfo& ri);
  void handleWatch(const kube::HttpRequest& req, kube::Responder& out, const ResourceInfo& info,
                   const std::string& ns, const ListOptions& opts, bool table);
  void handleScale(const kube::HttpRequest& req, kube::Responder& out, const ResourceInfo& info,
                   const std::string& ns, const std::string& name);
  void handleBinding(const kube::HttpRequest& req, kube::Responder& out, const ResourceInfo& pods,
                     const std::string& ns, const std::string& name);
  // POST serviceaccounts/<name>/token (api_token_request.cpp).
  void handleTokenRequest(const kube::HttpRequest& req, kube::Responder& out,
                          const ResourceInfo& serviceAccounts, const std::string& ns,
                          const std::string& name);
  void handleCrdWrite(const kube::HttpRequest& req, kube::Responder& out, const ResourceInfo& info,
                      const std::string& name);
  void deleteCrd(const kube::HttpRequest& req, kube::Responder& out, const ResourceInfo& info,
                 const std::string& name);

  Store& store_;
  Registry& registry_;
  Rest& rest_;
  std::atomic<bool> stopping_{false};
  KubeletClientConfig kubeletClient_;
  TokenIssuer tokenIssuer_;
  const Authorizer* authorizer_ = nullptr;
};

// Status JSON body for an error (kind Status, reason, code, details.name/group/kind).
std::string statusBody(const kube::Error& e, const std::string& name = {},
                       const std::string& group = {}, const std::string& kind = {});

}  // namespace strait::minicluster
