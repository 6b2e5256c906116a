// Subresources of the API handler with their own representation: scale and binding.
#include "minicluster/api_handler.h"

#include <spdlog/spdlog.h>

#include "kube/json_parse.h"
#include "kube/object.h"
#include "kube/patch.h"
#include "minicluster/api_request.h"
#include "minicluster/binding.h"

namespace strait::minicluster {

using kube::HttpRequest;
using kube::Responder;

using kube::Code;
using kube::makeError;
using namespace api;

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
}  // namespace strait::minicluster
