#include "minicluster/api_handler.h"
#include "minicluster/binding.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <thread>

#include "kube/object.h"
#include "kube/patch.h"
#include "kube/yaml_json.h"
#include "kube/json_parse.h"
#include "minicluster/protobuf_codec.h"
#include "minicluster/request_info.h"

namespace strait::minicluster {
namespace {

using kube::Code;
using kube::makeError;
using Clock = std::chrono::steady_clock;

constexpr const char* kJson = "application/json";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool truthy(const std::string& v) { return lower(v) == "true" || v == "1"; }

// One media range of an Accept header, e.g. application/json;as=Table;v=v1;g=meta.k8s.io.
struct MediaType {
  std::string type;
  std::map<std::string, std::string> params;
};

std::vector<MediaType> parseAccept(const std::string& accept) {
  std::vector<MediaType> out;
  size_t i = 0;
  while (i <= accept.size()) {
    size_t j = accept.find(',', i);
    if (j == std::string::npos) j = accept.size();
    std::string part = accept.substr(i, j - i);
    MediaType mt;
    size_t k = 0;
    bool first = true;
    while (k <= part.size()) {
      size_t e = part.find(';', k);
      if (e == std::string::npos) e = part.size();
      std::string tok = part.substr(k, e - k);
      tok.erase(0, tok.find_first_not_of(' '));
      while (!tok.empty() && tok.back() == ' ') tok.pop_back();
      if (first) {
        mt.type = lower(tok);
        first = false;
      } else if (auto eq = tok.find('='); eq != std::string::npos) {
        mt.params[tok.substr(0, eq)] = tok.substr(eq + 1);
      }
      k = e + 1;
    }
    if (!mt.type.empty()) out.push_back(std::move(mt));
    i = j + 1;
  }
  return out;
}

bool acceptsJson(const MediaType& m) {
  return m.type == "application/json" || m.type == "*/*" || m.type == "application/*" ||
         m.type == "application/yaml";
}

// What representation a GET/LIST asked for.
enum class Repr { Object, Table, NotAcceptable };

Repr negotiate(const HttpRequest& req) {
  std::string accept = req.header("accept");
  if (accept.empty()) return Repr::Object;
  for (const auto& m : parseAccept(accept)) {
    auto as = m.params.find("as");
    if (as != m.params.end()) {
      if (as->second == "Table" && acceptsJson(m)) return Repr::Table;
      continue;  // PartialObjectMetadata etc.: fall through to the next choice
    }
    if (acceptsJson(m)) return Repr::Object;
  }
  return Repr::NotAcceptable;
}

void reply(Responder& out, int code, std::string body,
           const std::string& contentType = kJson,
           const std::vector<std::string>& warnings = {}) {
  HttpResponse r;
  r.status = code;
  r.headers["Content-Type"] = contentType;
  r.headers["Cache-Control"] = "no-cache, private";
  if (!warnings.empty()) {
    std::string w;
    for (const auto& s : warnings) {
      if (!w.empty()) w += ", ";
      json quoted = s;
      w += "299 - " + quoted.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    r.headers["Warning"] = w;
  }
  r.body = std::move(body);
  out.respond(std::move(r));
}

void replyError(Responder& out, const kube::Error& e, const std::string& name = {},
                const ResourceInfo* info = nullptr) {
  reply(out, kube::httpCode(e.code),
        statusBody(e, e.name.empty() ? name : e.name, info ? info->group : "",
                   !e.kind.empty() ? e.kind : info ? info->resource : ""));
}

std::string successStatus(const ResourceInfo& info, const json& obj) {
  json s = {{"kind", "Status"},
            {"apiVersion", "v1"},
            {"metadata", json::object()},
            {"status", "Success"},
            {"details",
             {{"name", obj["metadata"].value("name", "")},
              {"group", info.group},
              {"kind", info.resource},
              {"uid", obj["metadata"].value("uid", "")}}}};
  return s.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string listBody(const ResourceInfo& info, const ListPage& page) {
  json meta = {{"resourceVersion", std::to_string(page.rv)}};
  if (!page.continueToken.empty()) meta["continue"] = page.continueToken;
  if (page.remainingItemCount >= 0) meta["remainingItemCount"] = page.remainingItemCount;
  std::string body = "{\"kind\":\"" + info.listKind + "\",\"apiVersion\":\"" +
                     info.apiVersion() + "\",\"metadata\":" + meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ",\"items\":[";
  bool first = true;
  for (const auto& o : page.items) {
    if (!first) body += ',';
    first = false;
    body += o->json;
  }
  body += "]}";
  return body;
}

std::string tableBody(const Registry& registry, const ResourceInfo& info,
                      const std::vector<ObjectPtr>& items, const json& listMeta,
                      const std::string& includeObject) {
  std::vector<json> objs;
  objs.reserve(items.size());
  for (const auto& o : items) objs.push_back(json::parse(o->json));
  return registry.toTable(info, objs, listMeta, includeObject).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<ListOptions> listOptions(const HttpRequest& req) {
  ListOptions o;
  if (req.hasQuery("labelSelector")) {
    auto s = kube::LabelSelector::parse(req.queryParam("labelSelector"));
    if (!s) return makeError(Code::BadRequest, "unable to parse labelSelector: " + s.error().message);
    o.labelSelector = std::move(*s);
  }
  if (req.hasQuery("fieldSelector")) {
    auto s = kube::FieldSelector::parse(req.queryParam("fieldSelector"));
    if (!s) return makeError(Code::BadRequest, "unable to parse fieldSelector: " + s.error().message);
    o.fieldSelector = std::move(*s);
  }
  if (req.hasQuery("limit")) {
    try {
      o.limit = std::stoll(req.queryParam("limit"));
    } catch (...) {
      return makeError(Code::BadRequest, "limit: invalid value \"" + req.queryParam("limit") +
                                             "\": must be an integer");
    }
    if (o.limit < 0) o.limit = 0;
  }
  o.continueToken = req.queryParam("continue");
  o.resourceVersion = req.queryParam("resourceVersion");
  o.resourceVersionMatch = req.queryParam("resourceVersionMatch");
  return o;
}

Result<WriteOptions> writeOptions(const HttpRequest& req, const std::string& subresource) {
  WriteOptions w;
  w.subresource = subresource;
  for (const auto& d : req.queryAll("dryRun")) {
    if (d == "All") {
      w.dryRun = true;
    } else if (!d.empty()) {
      return makeError(Code::BadRequest,
                       "dryRun: Unsupported value: \"" + d + "\": supported values: \"All\"");
    }
  }
  std::string fv = req.queryParam("fieldValidation");
  if (fv.empty() || fv == "Warn") {
    w.fieldValidation = FieldValidation::Warn;
  } else if (fv == "Strict") {
    w.fieldValidation = FieldValidation::Strict;
  } else if (fv == "Ignore") {
    w.fieldValidation = FieldValidation::Ignore;
  } else {
    return makeError(Code::BadRequest, "fieldValidation: Unsupported value: \"" + fv +
                                           "\": supported values: \"Ignore\", \"Warn\", "
                                           "\"Strict\"");
  }
  w.fieldManager = req.queryParam("fieldManager");
  w.user = UserInfo{req.user, req.groups};
  return w;
}

Result<json> parseBody(const HttpRequest& req) {
  std::string ct = lower(req.header("content-type"));
  std::string mediaType = ct.substr(0, ct.find(';'));
  while (!mediaType.empty() && mediaType.back() == ' ') mediaType.pop_back();
  if (req.body.empty()) return makeError(Code::BadRequest, "the request body is empty");
  if (mediaType == "application/yaml") {
    if (kube::bracketDepth(req.body) > kube::kMaxJsonDepth) {
      return makeError(Code::BadRequest, "error decoding YAML: nested too deeply");
    }
    auto r = kube::yamlToJson(req.body);
    if (!r) return makeError(Code::BadRequest, "error decoding YAML: " + r.error().message);
    return r;
  }
  if (mediaType == "application/vnd.kubernetes.protobuf") {
    return decodeKubernetesProtobuf(req.body);
  }
  if (!mediaType.empty() && mediaType != "application/json") {
    return makeError(Code::UnsupportedMediaType,
                     "the body of the request was in an unknown format - accepted media types "
                     "include: application/json, application/yaml, "
                     "application/vnd.kubernetes.protobuf");
  }
  auto r = kube::parseJson(req.body);
  if (!r) return makeError(Code::BadRequest, "error decoding request body as JSON: " + r.error().message);
  return r;
}

Result<DeleteOptions> deleteOptions(const HttpRequest& req) {
  DeleteOptions d;
  d.user = UserInfo{req.user, req.groups};
  json body = json::object();
  if (!req.body.empty()) {
    auto b = parseBody(req);
    if (!b) return b.error();
    body = std::move(*b);
    if (!body.is_object()) return makeError(Code::BadRequest, "DeleteOptions must be an object");
  }
  try {
    if (body.contains("gracePeriodSeconds") && !body["gracePeriodSeconds"].is_null()) {
      d.gracePeriodSeconds = body["gracePeriodSeconds"].get<int64_t>();
    }
    if (req.hasQuery("gracePeriodSeconds")) {
      d.gracePeriodSeconds = std::stoll(req.queryParam("gracePeriodSeconds"));
    }
    d.propagationPolicy = body.value("propagationPolicy", "");
    if (req.hasQuery("propagationPolicy")) d.propagationPolicy = req.queryParam("propagationPolicy");
    if (body.contains("orphanDependents") && body["orphanDependents"].is_boolean() &&
        d.propagationPolicy.empty()) {
      d.propagationPolicy = body["orphanDependents"].get<bool>() ? "Orphan" : "Background";
    }
    if (req.hasQuery("orphanDependents") && d.propagationPolicy.empty()) {
      d.propagationPolicy = truthy(req.queryParam("orphanDependents")) ? "Orphan" : "Background";
    }
    if (body.contains("preconditions") && body["preconditions"].is_object()) {
      const json& p = body["preconditions"];
      if (p.contains("uid") && p["uid"].is_string()) d.preconditionUid = p["uid"];
      if (p.contains("resourceVersion") && p["resourceVersion"].is_string()) {
        d.preconditionResourceVersion = p["resourceVersion"];
      }
    }
    if (body.contains("dryRun") && body["dryRun"].is_array()) {
      for (const auto& v : body["dryRun"]) d.dryRun = d.dryRun || v == "All";
    }
    for (const auto& v : req.queryAll("dryRun")) d.dryRun = d.dryRun || v == "All";
  } catch (const std::exception& e) {
    return makeError(Code::BadRequest, std::string("invalid DeleteOptions: ") + e.what());
  }
  const auto& p = d.propagationPolicy;
  if (!p.empty() && p != "Background" && p != "Foreground" && p != "Orphan") {
    return makeError(Code::BadRequest, "propagationPolicy: Unsupported value: \"" + p +
                                           "\": supported values: \"Foreground\", "
                                           "\"Background\", \"Orphan\"");
  }
  return d;
}

std::string eventLine(const char* type, const std::string& objectJson) {
  std::string s;
  s.reserve(objectJson.size() + 32);
  s += "{\"type\":\"";
  s += type;
  s += "\",\"object\":";
  s += objectJson;
  s += "}\n";
  return s;
}

}  // namespace

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

void ApiHandler::dispatch(const HttpRequest& req, Responder& out) {
  const std::string& path = req.path;
  if (path == "/healthz" || path == "/livez" || path == "/readyz" ||
      path.rfind("/healthz/", 0) == 0 || path.rfind("/livez/", 0) == 0 ||
      path.rfind("/readyz/", 0) == 0) {
    reply(out, 200, "ok", "text/plain; charset=utf-8");
    return;
  }
  if (path == "/version" || path == "/version/") {
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
  if (req.user.empty()) {
    reply(out, 401, statusBody(makeError(Code::Unauthorized, "Unauthorized")));
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
  RequestInfo ri = parseRequestPath(path);
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
        reply(out, 200,
              registry_.aggregatedDiscovery(legacy, "apidiscovery.k8s.io/" + v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
              "application/json;g=apidiscovery.k8s.io;v=" + v + ";as=APIGroupDiscoveryList");
        return;
      }
      if (!m.params.count("as") && acceptsJson(m)) break;
    }
    reply(out, 200, legacy ? registry_.apiVersions().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) : registry_.apiGroupList().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
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
  if (sub == "log" || sub == "exec" || sub == "attach") {
    return servePodStream(req, out, rest_, registry_, info, ns, name, sub, kubeletClient_);
  }
  if (sub == "portforward" || sub == "proxy") {
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

void ApiHandler::handleWatch(const HttpRequest& req, Responder& out, const ResourceInfo& info,
                             const std::string& ns, const ListOptions& opts, bool table) {
  if (opts.fieldSelector) {
    for (const auto& r : opts.fieldSelector->requirements()) {
      if (!registry_.isSelectableField(info, r.field)) {
        return replyError(out, makeError(Code::BadRequest, "field label not supported: " + r.field));
      }
    }
  }
  const bool bookmarks = truthy(req.queryParam("allowWatchBookmarks"));
  const bool sendInitial = truthy(req.queryParam("sendInitialEvents"));
  if (req.hasQuery("sendInitialEvents") && opts.resourceVersionMatch != "NotOlderThan") {
    return replyError(out, makeError(Code::Invalid,
                                     "resourceVersionMatch: Forbidden: sendInitialEvents "
                                     "requires setting resourceVersionMatch to NotOlderThan"));
  }
  int64_t timeout = 1800;
  if (req.hasQuery("timeoutSeconds")) {
    try {
      timeout = std::stoll(req.queryParam("timeoutSeconds"));
    } catch (...) {
      return replyError(out, makeError(Code::BadRequest, "timeoutSeconds must be an integer"));
    }
  }
  uint64_t fromRv = 0;
  const std::string& rvText = opts.resourceVersion;
  if (!rvText.empty()) {
    try {
      fromRv = std::stoull(rvText);
    } catch (...) {
      return replyError(out, makeError(Code::BadRequest,
                                       "invalid resource version \"" + rvText + "\""));
    }
  }
  const std::string prefix = Rest::prefix(info, ns);
  const bool initial = rvText.empty() || rvText == "0" || sendInitial;

  std::vector<ObjectPtr> initialItems;
  uint64_t startRv = fromRv;
  if (initial) {
    auto listed = store_.list(prefix, [&](const Object& o) { return rest_.matches(o, opts); });
    initialItems = std::move(listed.items);
    startRv = listed.rv;
  }
  auto watch = store_.watch(prefix, startRv);

  std::string ct = table ? "application/json;as=Table;v=v1;g=meta.k8s.io" : kJson;
  if (!out.startStream(200, {{"Content-Type", ct}, {"Cache-Control", "no-cache, private"}})) {
    return;
  }
  if (!watch) {
    // Too old: one ERROR event carrying a 410 Status, then the stream ends.
    out.writeChunk(eventLine("ERROR", statusBody(watch.error())));
    return;
  }
  // Events are appended straight into the outgoing batch: the stored JSON is copied once
  // per watcher, never re-serialized.
  std::string batch;
  auto append = [&](const char* type, const ObjectPtr& o) {
    batch += "{\"type\":\"";
    batch += type;
    batch += "\",\"object\":";
    if (table) {
      batch += tableBody(registry_, info, {o}, json::object(), "Metadata");
    } else {
      batch += o->json;
    }
    batch += "}\n";
  };
  constexpr size_t kFlushBytes = 256 * 1024;
  for (const auto& o : initialItems) {
    append("ADDED", o);
    if (batch.size() > kFlushBytes) {
      if (!out.writeChunk(batch)) return;
      batch.clear();
    }
  }
  uint64_t lastRv = startRv;
  auto bookmark = [&](uint64_t rv, bool initialEnd) {
    json b = {{"kind", info.kind},
              {"apiVersion", info.apiVersion()},
              {"metadata", {{"resourceVersion", std::to_string(rv)}}}};
    if (initialEnd) b["metadata"]["annotations"] = {{"k8s.io/initial-events-end", "true"}};
    return eventLine("BOOKMARK", b.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  };
  if (sendInitial) batch += bookmark(startRv, true);
  if (!batch.empty() && !out.writeChunk(batch)) return;

  const auto deadline = Clock::now() + std::chrono::seconds(timeout);
  auto nextBookmark = Clock::now() + std::chrono::seconds(5);
  bool firstWait = true;
  while (!stopping_) {
    auto now = Clock::now();
    if (timeout > 0 && now >= deadline) break;
    // The first wait does not block, so a client that is already gone is noticed at once.
    auto wait = firstWait ? Clock::duration::zero()
                          : std::min<Clock::duration>(
                                std::chrono::milliseconds(500),
                                timeout > 0 ? deadline - now : std::chrono::hours(1));
    firstWait = false;
    auto ev = (*watch)->next(std::chrono::duration_cast<std::chrono::milliseconds>(wait));
    if (!ev) {
      // Idle: the only time to poll the connection; a failed write says the same when busy.
      if ((*watch)->ended() || out.clientGone()) break;
      if (bookmarks && Clock::now() >= nextBookmark) {
        if (!out.writeChunk(bookmark(lastRv, false))) break;
        nextBookmark = Clock::now() + std::chrono::seconds(5);
      }
      continue;
    }
    // Let a burst gather so that one write carries many events.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    batch.clear();
    for (std::optional<EventPtr> e = ev; e; e = (*watch)->next(std::chrono::milliseconds(0))) {
      const Event& event = **e;
      lastRv = event.rv;
      const bool before = event.prev && rest_.matches(*event.prev, opts);
      if (event.type == EventType::Deleted) {
        if (before) append("DELETED", event.object);
      } else {
        const bool now = rest_.matches(*event.object, opts);
        if (now && before) {
          append("MODIFIED", event.object);
        } else if (now) {
          append("ADDED", event.object);
        } else if (before) {
          append("DELETED", event.object);
        }
      }
      if (batch.size() > kFlushBytes) break;
    }
    if (!batch.empty() && !out.writeChunk(batch)) break;
  }
}

void ApiHandler::handleScale(const HttpRequest& req, Responder& out, const ResourceInfo& info,
                             const std::string& ns, const std::string& name) {
  auto toScale = [&](const ObjectPtr& o) {
    json obj = json::parse(o->json);
    std::string selector;
    if (obj["spec"].contains("selector")) {
      auto sel = kube::LabelSelector::fromJson(obj["spec"]["selector"]);
      if (sel) selector = sel->toString();
    }
    json meta = {{"name", name},
                 {"namespace", ns},
                 {"uid", obj["metadata"].value("uid", "")},
                 {"resourceVersion", obj["metadata"].value("resourceVersion", "")},
                 {"creationTimestamp", obj["metadata"].value("creationTimestamp", "")}};
    return json{{"kind", "Scale"},
                {"apiVersion", "autoscaling/v1"},
                {"metadata", meta},
                {"spec", {{"replicas", obj["spec"].value("replicas", 0)}}},
                {"status",
                 {{"replicas", obj.contains("status") ? obj["status"].value("replicas", 0) : 0},
                  {"selector", selector}}}};
  };
  auto cur = rest_.get(info, ns, name);
  if (!cur) return replyError(out, cur.error(), name, &info);
  if (req.method == "GET") {
    reply(out, 200, toScale(*cur).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  json scale = toScale(*cur);
  json desired;
  if (req.method == "PUT") {
    auto body = parseBody(req);
    if (!body) return replyError(out, body.error());
    desired = std::move(*body);
  } else if (req.method == "PATCH") {
    std::string ct = req.header("content-type");
    auto parsed = kube::parseJson(req.body);
    if (!parsed) {
      return replyError(out, makeError(Code::BadRequest, "the patch is not valid JSON: " +
                                                             parsed.error().message));
    }
    json patch = std::move(*parsed);
    auto r = ct.find("json-patch") != std::string::npos ? kube::applyJsonPatch(scale, patch)
                                                         : kube::applyMergePatch(scale, patch);
    if (!r) return replyError(out, r.error());
    desired = std::move(*r);
  } else {
    return replyError(out, makeError(Code::MethodNotAllowed, "scale accepts GET, PUT, PATCH"));
  }
  if (!desired.is_object() || !desired.contains("spec") || !desired["spec"].is_object() ||
      !desired["spec"].contains("replicas") || !desired["spec"]["replicas"].is_number_integer() ||
      desired["spec"]["replicas"].get<int64_t>() < 0) {
    return replyError(out, makeError(Code::Invalid, "Scale \"" + name +
                                                        "\" is invalid: spec.replicas: Invalid "
                                                        "value: must be a non-negative integer"));
  }
  int64_t replicas = desired["spec"]["replicas"].get<int64_t>();
  auto r = rest_.mutate(info, ns, name, "", [&](json& obj) {
    obj["spec"]["replicas"] = replicas;
    return kube::Status::OK();
  });
  if (!r) return replyError(out, r.error(), name, &info);
  reply(out, 200, toScale(*r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void ApiHandler::handleBinding(const HttpRequest& req, Responder& out, const ResourceInfo& pods,
                               const std::string& ns, const std::string& name) {
  if (req.method != "POST") {
    return replyError(out, makeError(Code::MethodNotAllowed, "binding only accepts POST"));
  }
  auto body = parseBody(req);
  if (!body) return replyError(out, body.error());
  std::string node;
  if (body->is_object() && body->contains("target") && (*body)["target"].is_object()) {
    node = (*body)["target"].value("name", "");
  }
  if (node.empty() || name.empty()) {
    return replyError(out, makeError(Code::Invalid, "Binding \"" + name +
                                                        "\" is invalid: target.name: Required "
                                                        "value"));
  }
  auto r = bindPod(rest_, pods, ns, name, node);
  if (!r) return replyError(out, r.error(), name, &pods);
  json s = {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()},
            {"status", "Success"}, {"code", 201}};
  reply(out, 201, s.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void ApiHandler::handleCrdWrite(const HttpRequest& req, Responder& out, const ResourceInfo& info,
                                const std::string& name) {
  auto wo = writeOptions(req, "");
  if (!wo) return replyError(out, wo.error());
  std::vector<std::string> warnings;
  Result<ObjectPtr> r = makeError(Code::Internal, "unreachable");
  // Validate the definition before storing it: the registry must accept it.
  auto validate = [&](const json& crd) -> kube::Status {
    Registry scratch;
    return scratch.addCustom(crd);
  };
  if (req.method == "POST") {
    auto body = parseBody(req);
    if (!body) return replyError(out, body.error());
    if (auto s = validate(*body); !s) return replyError(out, s.error());
    r = rest_.create(info, "", std::move(*body), *wo, &warnings);
  } else if (req.method == "PUT") {
    auto body = parseBody(req);
    if (!body) return replyError(out, body.error());
    if (auto s = validate(*body); !s) return replyError(out, s.error());
    r = rest_.update(info, "", name, std::move(*body), *wo, &warnings);
  } else {
    r = rest_.patch(info, "", name, req.header("content-type"), req.body, *wo, &warnings);
  }
  if (!r) return replyError(out, r.error(), name, &info);
  if (wo->dryRun) {
    reply(out, req.method == "POST" ? 201 : 200, (*r)->json, kJson, warnings);
    return;
  }
  json crd = json::parse((*r)->json);
  if (auto s = registry_.addCustom(crd); !s) {
    // A patch produced an invalid definition: keep serving the previous one and say so.
    return replyError(out, s.error());
  }
  std::string crdName = crd["metadata"].value("name", "");
  auto established = rest_.mutate(info, "", crdName, "status", [&](json& obj) {
    obj["status"]["acceptedNames"] = obj["spec"]["names"];
    std::string now = kube::rfc3339Now();
    obj["status"]["conditions"] = json::array(
        {{{"type", "NamesAccepted"}, {"status", "True"}, {"reason", "NoConflicts"},
          {"message", "no conflicts found"}, {"lastTransitionTime", now}},
         {{"type", "Established"}, {"status", "True"}, {"reason", "InitialNamesAccepted"},
          {"message", "the initial names have been accepted"}, {"lastTransitionTime", now}}});
    obj["status"]["storedVersions"] = json::array();
    for (const auto& v : obj["spec"].value("versions", json::array())) {
      if (v.value("storage", false)) obj["status"]["storedVersions"].push_back(v.value("name", ""));
    }
    return kube::Status::OK();
  });
  const ObjectPtr& result = established ? *established : *r;
  reply(out, req.method == "POST" ? 201 : 200, result->json, kJson, warnings);
}

void ApiHandler::deleteCrd(const HttpRequest& req, Responder& out, const ResourceInfo& info,
                           const std::string& name) {
  auto cur = rest_.get(info, "", name);
  if (!cur) return replyError(out, cur.error(), name, &info);
  auto dopts = deleteOptions(req);
  if (!dopts) return replyError(out, dopts.error());
  if (dopts->dryRun) {
    reply(out, 200, (*cur)->json);
    return;
  }
  json crd = json::parse((*cur)->json);
  std::string group = crd["spec"].value("group", "");
  std::string plural = crd["spec"]["names"].value("plural", "");
  // Delete every custom resource of the definition first (upstream's
  // customresourcecleanup finalizer), then stop serving it.
  auto all = store_.list("/" + group + "/" + plural + "/");
  for (const auto& o : all.items) {
    auto removed = store_.remove(o->key, [&](const ObjectPtr& c, uint64_t rv) -> Result<NewObject> {
      json obj = json::parse(c->json);
      obj["metadata"]["resourceVersion"] = std::to_string(rv);
      obj["metadata"]["deletionTimestamp"] = kube::rfc3339Now();
      return NewObject{obj.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), c->labels, c->fields};
    });
    if (!removed && removed.error().code != Code::NotFound) {
      return replyError(out, removed.error(), name, &info);
    }
  }
  registry_.removeCustom(name);
  auto r = rest_.remove(info, "", name, *dopts);
  if (!r) return replyError(out, r.error(), name, &info);
  reply(out, 200, r->object->json);
}

}  // namespace strait::minicluster
