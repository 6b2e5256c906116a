// CustomResourceDefinition writes and deletes: the registry serves a definition once it is
// stored and established, and stops serving it after its custom resources are deleted.
#include "minicluster/api_handler.h"

#include <spdlog/spdlog.h>

#include "kube/object.h"
#include "minicluster/api_request.h"

namespace strait::minicluster {

using kube::HttpRequest;
using kube::Responder;

using kube::Code;
using kube::makeError;
using namespace api;

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