#pragma once
// Request decoding and reply encoding of the minicluster's API handler (private to
// minicluster/): content negotiation, list/write/delete options from the query and body,
// request bodies (JSON, YAML, Kubernetes protobuf), and the JSON bodies of lists, tables,
// watch events and Status replies. Pure apart from writing to the Responder; thread-safe.

#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "kube/http_server.h"
#include "minicluster/registry.h"
#include "minicluster/rest.h"
#include "minicluster/store.h"

namespace strait::minicluster::api {

inline constexpr const char* kJson = "application/json";

// "true" (any case) or "1".
bool truthy(const std::string& v);

// One media range of an Accept header, e.g. application/json;as=Table;v=v1;g=meta.k8s.io.
struct MediaType {
  std::string type;
  std::map<std::string, std::string> params;
};

std::vector<MediaType> parseAccept(const std::string& accept);
// JSON or YAML (which the handler answers with JSON), or a wildcard.
bool acceptsJson(const MediaType& m);

// What representation a GET/LIST asked for.
enum class Repr { Object, Table, NotAcceptable };

Repr negotiate(const kube::HttpRequest& req);

// Sends `body` with `code`; `warnings` become one Warning header ("299 - ...").
void reply(kube::Responder& out, int code, std::string body, const std::string& contentType = kJson,
           const std::vector<std::string>& warnings = {});
// Sends the Status of `e`; details name the object (e.name or `name`) and, from `info`, its
// group and resource.
void replyError(kube::Responder& out, const kube::Error& e, const std::string& name = {},
                const ResourceInfo* info = nullptr);

// The Status (Success) answered to a DELETE that removed `obj` at once.
std::string successStatus(const ResourceInfo& info, const nlohmann::json& obj);
std::string listBody(const ResourceInfo& info, const ListPage& page);
std::string tableBody(const Registry& registry, const ResourceInfo& info,
                      const std::vector<ObjectPtr>& items, const nlohmann::json& listMeta,
                      const std::string& includeObject);

// Options from the query; BadRequest naming the parameter that is malformed.
kube::Result<ListOptions> listOptions(const kube::HttpRequest& req);
kube::Result<WriteOptions> writeOptions(const kube::HttpRequest& req,
                                        const std::string& subresource);
// The body as JSON, by Content-Type; BadRequest or UnsupportedMediaType saying why not.
kube::Result<nlohmann::json> parseBody(const kube::HttpRequest& req);
// DeleteOptions from the body and the query (the query wins).
kube::Result<DeleteOptions> deleteOptions(const kube::HttpRequest& req);

// One line of a watch stream: {"type":<type>,"object":<objectJson>} and a newline.
std::string eventLine(const char* type, const std::string& objectJson);

}  // namespace strait::minicluster::api
