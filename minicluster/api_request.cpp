// Request decoding and reply encoding of the API handler, see api_request.h.
#include "minicluster/api_request.h"

#include <algorithm>

#include "kube/json_parse.h"
#include "kube/yaml_json.h"
#include "minicluster/api_handler.h"
#include "minicluster/protobuf_codec.h"

namespace strait::minicluster::api {

using kube::Code;
using kube::HttpRequest;
using kube::HttpResponse;
using kube::makeError;
using kube::Responder;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

bool truthy(const std::string& v) { return lower(v) == "true" || v == "1"; }

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

void reply(Responder& out, int code, std::string body, const std::string& contentType,
           const std::vector<std::string>& warnings) {
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

void replyError(Responder& out, const kube::Error& e, const std::string& name,
                const ResourceInfo* info) {
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

}  // namespace strait::minicluster::api
