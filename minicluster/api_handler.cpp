// The API handler's routing: health, version, OpenAPI and discovery endpoints, and the REST
// verbs on resources and their subresources. Watches are in api_watch.cpp, scale and binding
// in api_subresources.cpp, CustomResourceDefinition writes in api_crd.cpp, request decoding
// and reply encoding in api_request.cpp.
#include "minicluster/api_handler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "kube/object.h"
#include "kube/patch.h"
#include "minicluster/api_request.h"
#include "minicluster/binding.h"
#include "minicluster/metrics_api.h"
#include "minicluster/request_info.h"

namespace strait::minicluster {

using kube::HttpRequest;
using kube::Responder;

using kube::Code;
using kube::makeError;
using namespace api;

std::string statusBody(const kube::Error& e, const std::string& name, const std::string& group,
                       const std::string& kind) {
  json s = {{"kind", "Status"},
            {"apiVersion", "v1"},
            {"metadata", json::object()},
            {"status", "Failure"},
            {"message", e.message},
            {"reason", kube::reasonOf(e.code)},
            {"code", kube::httpCode(e.code)}};
  if (!name.empty() || !kind.empty() || !e.causes.empty()) {
    json d = json::object();
    if (!name.empty()) d["name"] = name;
    if (!group.empty()) d["group"] = group;
    if (!kind.empty()) d["kind"] = kind;
    if (!e.causes.empty()) {
      d["causes"] = json::array();
      for (const auto& c : e.causes) {
        d["causes"].push_back({{"reason", c.reason}, {"message", c.message}, {"field", c.field}});
      }
    }
    s["details"] = d;
  }
  return s.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiHandler::ApiHandler(Store& store, Registry& registry, Rest& rest)
    : store_(store), registry_(registry), rest_(rest) {}

void ApiHandler::handle(const HttpRequest& req, Responder& out) {
  try {
    dispatch(req, out);
  } catch (const std::exception& e) {
    // A bug, not bad input: bad input is answered with a 4xx before anything can throw.
    spdlog::error("event=handler_exception method={} path={} error=\"{}\"", req.method,
                  req.path, e.what());
    reply(out, 500, statusBody(makeError(Code::Internal, "internal error while handling the "
                                                         "request")));
  }
}

void ApiHandler::dispatch(const HttpRequest& authenticated, Responder& out) {
  const std::string& path = authenticated.path;
  const bool health = path == "/healthz" || path == "/livez" || path == "/readyz" ||
                      path.rfind("/healthz/", 0) == 0 || path.rfind("/livez/", 0) == 0 ||
                      path.rfind("/readyz/", 0) == 0;
  const bool version = path == "/version" || path == "/version/";
  // Anonymous requests reach only the health and version endpoints (and only when the
  // authorizer lets system:anonymous read them).
  if (authenticated.user.empty() && !health && !version) {
    reply(out, 401, statusBody(makeError(Code::Unauthorized, "Unauthorized")));
    return;
  }
  Identity id = authenticatedIdentity(authenticated);
  std::optional<HttpRequest> acting;
  if (authorizer_ && !authenticated.user.empty()) {
    auto impersonated = impersonatedIdentity(authenticated, id, *authorizer_);
    if (!impersonated) {
      const kube::Error& e = impersonated.error();
      reply(out, kube::httpCode(e.code), statusBody(e, e.name, "", e.kind));
      return;
    }
    if (*impersonated) {
      id = std::move(**impersonated);
      acting = authenticated;
      acting->user = id.user;
      acting->groups = id.groups;
    }
  }
  const HttpRequest& req = acting ? *acting : authenticated;
  RequestInfo ri = parseRequestPath(path);
  if (!authorizeRequest(req, out, ri, id)) return;
  if (health) {
    reply(out, 200, "ok", "text/plain; charset=utf-8");
    return;
  }
  if (version) {
    json v = {{"major", "1"},
              {"minor", "32"},
              {"gitVersion", "v1.32.0-strait"},
              {"gitCommit", "strait-minicluster"},
              {"gitTreeState", "clean"},
              {"buildDate", "2026-11-30T00:00:00Z"},
              {"goVersion", "go1.23.0"},
              {"compiler", "gc"},
              {"platform", "linux/amd64"}};
    reply(out, 200, v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  if (path == "/openapi/v2") {
    // JSON only: a client asking for the protobuf form alone is told so (406).
    auto accept = req.headers.find("accept");
    if (accept != req.headers.end() && accept->second.find("json") == std::string::npos &&
        accept->second.find("*/*") == std::string::npos && !accept->second.empty()) {
      reply(out, 406, statusBody(makeError(Code::NotAcceptable,
                                           "only application/json is served for /openapi/v2")));
      return;
    }
    reply(out, 200, registry_.openApiV2Document().dump(-1, ' ', false,
                                                       nlohmann::json::error_handler_t::replace));
    return;
  }
  if (path == "/openapi/v3" || path == "/openapi/v3/") {
    reply(out, 200, registry_.openApiIndex().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  if (path.rfind("/openapi/v3/", 0) == 0) {
    auto doc = registry_.openApiDocument(path.substr(std::string("/openapi/v3/").size()));
    if (!doc) {
      reply(out, 404, statusBody(makeError(Code::NotFound, "the server could not find the "
                                                           "requested resource")));
      return;
    }
    reply(out, 200, doc->dump());
    return;
  }
  if (isMetricsApiPath(path)) {
    serveMetricsApi(req, out, rest_, registry_, kubeletClient_);
    return;
  }
  if (isReviewRequest(ri)) {
    handleReview(req, out, ri, id);
    return;
  }
  if (ri.discoveryDepth > 0) {
    handleDiscovery(req, out, ri);
    return;
  }
  if (!ri.isResource) {
    reply(out, 404, statusBody(makeError(Code::NotFound,
                                         "the server could not find the requested resource")));
    return;
  }
  handleResource(req, out, ri);
}

void ApiHandler::handleDiscovery(const HttpRequest& req, Responder& out, const RequestInfo& ri) {
  const bool legacy = req.path.rfind("/api", 0) == 0 && req.path.rfind("/apis", 0) != 0;
  if (ri.discoveryDepth == 1) {
    for (const auto& m : parseAccept(req.header("accept"))) {
      auto as = m.params.find("as");
      if (as != m.params.end() && as->second == "APIGroupDiscoveryList" &&
          m.params.count("g") && m.params.at("g") == "apidiscovery.k8s.io") {
        std::string v = m.params.count("v") ? m.params.at("v") : "";
        if (v != "v2" && v != "v2beta1") continue;
        json doc = registry_.aggregatedDiscovery(legacy, "apidiscovery.k8s.io/" + v);
        if (!legacy) addMetricsAggregatedDiscovery(doc);
        reply(out, 200,
              doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
              "application/json;g=apidiscovery.k8s.io;v=" + v + ";as=APIGroupDiscoveryList");
        return;
      }
      if (!m.params.count("as") && acceptsJson(m)) break;
    }
    json groups = legacy ? registry_.apiVersions() : registry_.apiGroupList();
    if (!legacy) addMetricsGroup(groups);
    reply(out, 200, groups.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  if (ri.discoveryDepth == 2) {  // /apis/G
    json groups = registry_.apiGroupList();
    for (const auto& g : groups["groups"]) {
      if (g["name"] == ri.group) {
        json doc = g;
        doc["kind"] = "APIGroup";
        doc["apiVersion"] = "v1";
        reply(out, 200, doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        return;
      }
    }
  } else {
    auto list = registry_.apiResourceList(ri.group, ri.version);
    if (list) {
      reply(out, 200, list->dump());
      return;
    }
  }
  reply(out, 404, statusBody(makeError(Code::NotFound,
                                       "the server could not find the requested resource")));
}

void ApiHandler::handleResource(const HttpRequest& req, Responder& out, const RequestInfo& ri) {
  ResourceInfoPtr infoPtr = registry_.find(ri.group, ri.version, ri.resource);
  if (!infoPtr) {
    reply(out, 404, statusBody(makeError(Code::NotFound,
                                         "the server could not find the requested resource"),
                               "", ri.group, ri.resource));
    return;
  }
  const ResourceInfo& info = *infoPtr;
  const std::string ns = info.namespaced ? ri.namespace_ : "";
  const std::string& name = ri.name;
  const std::string& sub = ri.subresource;
  const std::string& method = req.method;

  if (!info.namespaced && !ri.namespace_.empty()) {
    reply(out, 404, statusBody(makeError(Code::NotFound,
                                         "the server could not find the requested resource")));
    return;
  }
  if (!sub.empty() &&
      std::find(info.subresources.begin(), info.subresources.end(), sub) ==
          info.subresources.end() &&
      !(info.resource == "namespaces" && sub == "finalize")) {
    reply(out, 404, statusBody(makeError(Code::NotFound,
                                         "the server could not find the requested resource"),
                               name, info.group, info.resource));
    return;
  }

  // Collection requests.
  if (name.empty()) {
    if (method == "GET") {
      auto opts = listOptions(req);
      if (!opts) return replyError(out, opts.error());
      Repr repr = negotiate(req);
      if (repr == Repr::NotAcceptable) {
        return replyError(out, makeError(Code::NotAcceptable,
                                         "only the following media types are accepted: "
                                         "application/json, application/yaml"));
      }
      if (ri.legacyWatch || truthy(req.queryParam("watch"))) {
        handleWatch(req, out, info, ns, *opts, repr == Repr::Table);
        return;
      }
      auto page = rest_.list(info, ns, *opts);
      if (!page) return replyError(out, page.error());
      if (repr == Repr::Table) {
        json meta = {{"resourceVersion", std::to_string(page->rv)}};
        if (!page->continueToken.empty()) meta["continue"] = page->continueToken;
        std::string include = req.queryParam("includeObject");
        reply(out, 200, tableBody(registry_, info, page->items, meta,
                                  include.empty() ? "Metadata" : include),
              "application/json;as=Table;v=v1;g=meta.k8s.io");
        return;
      }
      reply(out, 200, listBody(info, *page));
      return;
    }
    if (method == "POST") {
      if (info.resource == "bindings") {
        auto body = parseBody(req);
        if (!body) return replyError(out, body.error());
        std::string podName = body->is_object() && (*body)["metadata"].is_object()
                                  ? (*body)["metadata"].value("name", "")
                                  : "";
        auto pods = registry_.find("", "v1", "pods");
        handleBinding(req, out, *pods, ns, podName);
        return;
      }
      if (info.group == "apiextensions.k8s.io") {
        handleCrdWrite(req, out, info, "");
        return;
      }
      auto body = parseBody(req);
      if (!body) return replyError(out, body.error());
      auto wo = writeOptions(req, "");
      if (!wo) return replyError(out, wo.error());
      std::vector<std::string> warnings;
      auto r = rest_.create(info, ns, std::move(*body), *wo, &warnings);
      if (!r) return replyError(out, r.error(), "", &info);
      reply(out, 201, (*r)->json, kJson, warnings);
      return;
    }
    if (method == "DELETE") {
      auto opts = listOptions(req);
      if (!opts) return replyError(out, opts.error());
      auto dopts = deleteOptions(req);
      if (!dopts) return replyError(out, dopts.error());
      auto page = rest_.list(info, ns, *opts);
      if (!page) return replyError(out, page.error());
      for (const auto& o : page->items) {
        json obj = json::parse(o->json);
        auto r = rest_.remove(info, obj["metadata"].value("namespace", ""),
                              obj["metadata"].value("name", ""), *dopts);
        if (!r && r.error().code != Code::NotFound) return replyError(out, r.error());
      }
      reply(out, 200, listBody(info, *page));
      return;
    }
    return replyError(out, makeError(Code::MethodNotAllowed,
                                     "the server does not allow this method on the requested "
                                     "resource"));
  }

  // Subresources with their own representation.
  if (sub == "scale") return handleScale(req, out, info, ns, name);
  if (sub == "binding") return handleBinding(req, out, info, ns, name);
  if (sub == "token" && info.resource == "serviceaccounts") {
    return handleTokenRequest(req, out, info, ns, name);
  }
  if (sub == "log" || sub == "exec" || sub == "attach" || sub == "portforward") {
    return servePodStream(req, out, rest_, registry_, info, ns, name, sub, kubeletClient_);
  }
  if (sub == "proxy") {
    auto pod = rest_.get(info, ns, name);
    if (!pod) return replyError(out, pod.error(), name, &info);
    return replyError(out, makeError(Code::Unavailable,
                                     "pods/" + sub + " is not served by this minicluster"));
  }
  if (sub == "eviction") {
    if (method != "POST") {
      return replyError(out, makeError(Code::MethodNotAllowed, "eviction only accepts POST"));
    }
    DeleteOptions d;
    if (!req.body.empty()) {
      auto body = parseBody(req);
      if (!body) return replyError(out, body.error());
      if (body->contains("deleteOptions") && (*body)["deleteOptions"].is_object()) {
        const json& o = (*body)["deleteOptions"];
        if (o.contains("gracePeriodSeconds") && o["gracePeriodSeconds"].is_number_integer()) {
          d.gracePeriodSeconds = o["gracePeriodSeconds"].get<int64_t>();
        }
      }
    }
    auto r = rest_.remove(info, ns, name, d);
    if (!r) return replyError(out, r.error(), name, &info);
    json s = {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()},
              {"status", "Success"}, {"code", 201}};
    reply(out, 201, s.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  if (info.group == "apiextensions.k8s.io" && sub.empty() &&
      (method == "PUT" || method == "PATCH")) {
    handleCrdWrite(req, out, info, name);
    return;
  }

  if (method == "GET") {
    if (ri.legacyWatch || truthy(req.queryParam("watch"))) {
      auto opts = listOptions(req);
      if (!opts) return replyError(out, opts.error());
      auto sel = kube::FieldSelector::parse("metadata.name=" + kube::escapeFieldValue(name));
      opts->fieldSelector = *sel;
      handleWatch(req, out, info, ns, *opts, negotiate(req) == Repr::Table);
      return;
    }
    auto r = rest_.get(info, ns, name);
    if (!r) return replyError(out, r.error(), name, &info);
    if (negotiate(req) == Repr::Table) {
      json meta = {{"resourceVersion", std::to_string((*r)->rv)}};
      std::string include = req.queryParam("includeObject");
      reply(out, 200, tableBody(registry_, info, {*r}, meta, include.empty() ? "Metadata" : include),
            "application/json;as=Table;v=v1;g=meta.k8s.io");
      return;
    }
    reply(out, 200, (*r)->json);
    return;
  }
  if (method == "PUT") {
    auto body = parseBody(req);
    if (!body) return replyError(out, body.error());
    auto wo = writeOptions(req, sub);
    if (!wo) return replyError(out, wo.error());
    std::vector<std::string> warnings;
    bool existed = static_cast<bool>(rest_.get(info, ns, name));
    auto r = rest_.update(info, ns, name, std::move(*body), *wo, &warnings);
    if (!r) return replyError(out, r.error(), name, &info);
    reply(out, existed ? 200 : 201, (*r)->json, kJson, warnings);
    return;
  }
  if (method == "PATCH") {
    auto wo = writeOptions(req, sub);
    if (!wo) return replyError(out, wo.error());
    if (req.body.empty()) return replyError(out, makeError(Code::BadRequest, "the patch is empty"));
    std::vector<std::string> warnings;
    bool existed = static_cast<bool>(rest_.get(info, ns, name));
    auto r = rest_.patch(info, ns, name, req.header("content-type"), req.body, *wo, &warnings);
    if (!r) return replyError(out, r.error(), name, &info);
    reply(out, existed ? 200 : 201, (*r)->json, kJson, warnings);
    return;
  }
  if (method == "DELETE") {
    if (info.group == "apiextensions.k8s.io") return deleteCrd(req, out, info, name);
    auto dopts = deleteOptions(req);
    if (!dopts) return replyError(out, dopts.error());
    auto r = rest_.remove(info, ns, name, *dopts);
    if (!r) return replyError(out, r.error(), name, &info);
    const bool returnsObject = info.group.empty() &&
                               (info.resource == "pods" || info.resource == "namespaces");
    if (r->deleted && !returnsObject) {
      reply(out, 200, successStatus(info, json::parse(r->object->json)));
    } else {
      reply(out, 200, r->object->json);
    }
    return;
  }
  replyError(out, makeError(Code::MethodNotAllowed,
                            "the server does not allow this method on the requested resource"));
}

}  // namespace strait::minicluster
