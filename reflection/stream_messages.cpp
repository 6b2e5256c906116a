#include "reflection/stream_messages.h"

#include <array>
#include <string_view>
#include <utility>

#include "kube/json_parse.h"
#include "kube/object.h"
#include "kube/patch.h"
#include "kube/validation.h"

namespace strait::reflection {

using nlohmann::json;

namespace {

constexpr std::array<std::pair<StreamMessageType, const char*>, 15> kTypeNames = {{
    {StreamMessageType::Apply, "APPLY"},
    {StreamMessageType::Delete, "DELETE"},
    {StreamMessageType::Status, "STATUS"},
    {StreamMessageType::Gone, "GONE"},
    {StreamMessageType::Event, "EVENT"},
    {StreamMessageType::ResyncBegin, "RESYNC_BEGIN"},
    {StreamMessageType::ResyncDone, "RESYNC_DONE"},
    {StreamMessageType::Keepalive, "KEEPALIVE"},
    {StreamMessageType::Get, "GET"},
    {StreamMessageType::Reply, "REPLY"},
    {StreamMessageType::Synced, "SYNCED"},
    {StreamMessageType::StatusPatch, "STATUS_PATCH"},
    {StreamMessageType::Export, "EXPORT"},
    {StreamMessageType::Unexport, "UNEXPORT"},
    {StreamMessageType::ExportSynced, "EXPORT_SYNCED"},
}};

constexpr const char* kAcceptsStatusPatch = "STATUS_PATCH";
constexpr const char* kAcceptsExports = "EXPORT";
constexpr size_t kMaxResourceVersionBytes = 64;

constexpr size_t kMaxErrorMessageBytes = 64 * 1024;

constexpr std::array<const char*, 7> kKinds = {"Pod",   "ConfigMap", "Secret",       "ServiceAccount",
                                               "Event", "Service",   "EndpointSlice"};

bool carriesObject(StreamMessageType t) {
  return t == StreamMessageType::Apply || t == StreamMessageType::Delete ||
         t == StreamMessageType::Status || t == StreamMessageType::StatusPatch ||
         t == StreamMessageType::Gone ||
         t == StreamMessageType::Event || t == StreamMessageType::Get ||
         t == StreamMessageType::Export || t == StreamMessageType::Unexport;
}

bool isExportType(StreamMessageType t) {
  return t == StreamMessageType::Export || t == StreamMessageType::Unexport;
}

bool needsOriginUid(StreamMessageType t) {
  return carriesObject(t) && t != StreamMessageType::Get;
}

kube::Error bad(const std::string& field, const std::string& msg) {
  return kube::makeError(kube::Code::BadRequest, "reflection stream message: " + field + ": " + msg,
                         field);
}

// A null a merge patch would read as "delete this member": one reached through objects
// only. Inside an array it is kept (RFC 7386 replaces an array whole, nulls and all), as in
// every Pod condition's lastProbeTime.
bool containsMemberNull(const json& j) {
  if (j.is_null()) return true;
  if (j.is_object()) {
    for (const json& v : j) {
      if (containsMemberNull(v)) return true;
    }
  }
  return false;
}

}  // namespace

json createMergePatch(const json& from, const json& to) {
  if (!from.is_object() || !to.is_object()) return to;
  json patch = json::object();
  for (auto it = from.begin(); it != from.end(); ++it) {
    if (!to.contains(it.key())) patch[it.key()] = nullptr;
  }
  for (auto it = to.begin(); it != to.end(); ++it) {
    auto old = from.find(it.key());
    if (old == from.end()) {
      patch[it.key()] = *it;
    } else if (*old != *it) {
      patch[it.key()] = old->is_object() && it->is_object() ? createMergePatch(*old, *it) : *it;
    }
  }
  return patch;
}

const char* streamMessageTypeName(StreamMessageType t) {
  for (const auto& [type, name] : kTypeNames) {
    if (type == t) return name;
  }
  return "UNKNOWN";
}

const char* streamApiVersionOf(const std::string& kind) {
  return kind == "EndpointSlice" ? "discovery.k8s.io/v1" : "v1";
}

StreamMessage StreamMessage::apply(const json& remoteObject, std::string originUid) {
  StreamMessage m;
  m.type = StreamMessageType::Apply;
  m.kind = remoteObject.is_object() && remoteObject.contains("kind") &&
                   remoteObject["kind"].is_string()
               ? remoteObject["kind"].get<std::string>()
               : std::string();
  m.apiVersion = streamApiVersionOf(m.kind);
  m.ns = kube::getNamespace(remoteObject);
  m.name = kube::getName(remoteObject);
  m.object = remoteObject;
  m.originUid = std::move(originUid);
  return m;
}

StreamMessage StreamMessage::status(const json& remoteObject, std::string originUid) {
  StreamMessage m = apply(remoteObject, std::move(originUid));
  m.type = StreamMessageType::Status;
  return m;
}

StreamMessage StreamMessage::remove(std::string kind, std::string ns, std::string name,
                                    std::string originUid,
                                    std::optional<int64_t> gracePeriodSeconds) {
  StreamMessage m;
  m.type = StreamMessageType::Delete;
  m.apiVersion = streamApiVersionOf(kind);
  m.kind = std::move(kind);
  m.ns = std::move(ns);
  m.name = std::move(name);
  m.originUid = std::move(originUid);
  m.object = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (gracePeriodSeconds) m.object["gracePeriodSeconds"] = *gracePeriodSeconds;
  return m;
}

StreamMessage StreamMessage::removeNamespace(const std::string& remoteNs) {
  return remove("Namespace", remoteNs, remoteNs, "namespace", std::nullopt);
}

StreamMessage StreamMessage::resyncDone(const std::vector<std::string>& originUids) {
  StreamMessage m;
  m.type = StreamMessageType::ResyncDone;
  m.object = {{"originUids", originUids}};
  return m;
}

StreamMessage StreamMessage::get(std::string kind, std::string ns, std::string name,
                                 uint64_t seq) {
  StreamMessage m;
  m.type = StreamMessageType::Get;
  m.apiVersion = streamApiVersionOf(kind);
  m.kind = std::move(kind);
  m.ns = std::move(ns);
  m.name = std::move(name);
  m.seq = seq;
  return m;
}

StreamMessage StreamMessage::reply(uint64_t seq, const kube::Result<json>& result) {
  StreamMessage m;
  if (result.ok() && result->is_object()) m = apply(*result, "");
  m.type = StreamMessageType::Reply;
  m.seq = seq;
  if (!result.ok()) m.error = result.error();
  return m;
}

StreamMessage StreamMessage::ofType(StreamMessageType t) {
  StreamMessage m;
  m.type = t;
  return m;
}

StreamMessage StreamMessage::resyncBegin(bool acceptsExports) {
  StreamMessage m = ofType(StreamMessageType::ResyncBegin);
  json accepts = json::array({kAcceptsStatusPatch});
  if (acceptsExports) accepts.push_back(kAcceptsExports);
  m.object = {{"accepts", std::move(accepts)}};
  return m;
}

StreamMessage StreamMessage::exported(const json& object, std::string originUid) {
  StreamMessage m = apply(object, std::move(originUid));
  m.type = StreamMessageType::Export;
  return m;
}

StreamMessage StreamMessage::unexport(std::string kind, std::string ns, std::string name,
                                      std::string originUid) {
  StreamMessage m = remove(std::move(kind), std::move(ns), std::move(name), std::move(originUid),
                           std::nullopt);
  m.type = StreamMessageType::Unexport;
  m.object = nullptr;
  return m;
}

StreamMessage StreamMessage::exportSynced(const std::vector<std::string>& originUids) {
  StreamMessage m = resyncDone(originUids);
  m.type = StreamMessageType::ExportSynced;
  return m;
}

std::optional<StreamMessage> StreamMessage::statusPatch(const json& before, const json& after,
                                                        std::string originUid) {
  const std::string base = kube::getResourceVersion(before);
  if (base.empty() || kube::getResourceVersion(after).empty() || !before.is_object() ||
      kube::getUid(before) != kube::getUid(after)) {
    return std::nullopt;
  }
  // A null member in `after` would read as "delete this member" when the patch is applied.
  if (containsMemberNull(after)) return std::nullopt;
  StreamMessage m;
  m.type = StreamMessageType::StatusPatch;
  m.apiVersion = "v1";
  m.kind = "Pod";
  m.ns = kube::getNamespace(after);
  m.name = kube::getName(after);
  m.originUid = std::move(originUid);
  m.object = createMergePatch(before, after);
  m.baseResourceVersion = base;
  return m;
}

namespace {

bool resyncBeginAccepts(const StreamMessage& m, const char* what) {
  if (m.type != StreamMessageType::ResyncBegin || !m.object.is_object()) return false;
  auto it = m.object.find("accepts");
  if (it == m.object.end() || !it->is_array()) return false;
  for (const json& a : *it) {
    if (a.is_string() && a.get<std::string>() == what) return true;
  }
  return false;
}

}  // namespace

bool StreamMessage::acceptsStatusPatch() const {
  return resyncBeginAccepts(*this, kAcceptsStatusPatch);
}

bool StreamMessage::acceptsExports() const { return resyncBeginAccepts(*this, kAcceptsExports); }

kube::Result<json> StreamMessage::applyStatusPatch(const json& cached) const {
  kube::Result<json> patched = kube::applyMergePatch(cached, object);
  if (!patched.ok()) return bad("object.json", patched.error().message);
  if (kube::getName(*patched) != kube::getName(cached) ||
      kube::getNamespace(*patched) != kube::getNamespace(cached) ||
      kube::getUid(*patched) != kube::getUid(cached) ||
      patched->value("kind", json()) != cached.value("kind", json())) {
    return bad("object.json", "a STATUS_PATCH may not change the kind, namespace, name or uid");
  }
  return patched;
}

kube::Result<json> StreamMessage::replyResult() const {
  if (error) return *error;
  return object;
}

std::optional<int64_t> StreamMessage::gracePeriodSeconds() const {
  if (type != StreamMessageType::Delete || !object.is_object()) return std::nullopt;
  auto it = object.find("gracePeriodSeconds");
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::vector<std::string> StreamMessage::resyncOriginUids() const {
  std::vector<std::string> out;
  if ((type != StreamMessageType::ResyncDone && type != StreamMessageType::ExportSynced) ||
      !object.is_object()) {
    return out;
  }
  auto it = object.find("originUids");
  if (it == object.end() || !it->is_array()) return out;
  for (const json& u : *it) {
    if (u.is_string()) out.push_back(u.get<std::string>());
  }
  return out;
}

strait::v1::ReflectionEvent encodeStreamMessage(const StreamMessage& m) {
  strait::v1::ReflectionEvent e;
  e.set_type(streamMessageTypeName(m.type));
  e.set_origin_uid(m.originUid);
  e.set_seq(m.seq);
  e.set_base_resource_version(m.baseResourceVersion);
  if (m.error) {
    e.set_error_reason(kube::reasonOf(m.error->code));
    e.set_error_message(m.error->message.substr(0, kMaxErrorMessageBytes));
  }
  if (carriesObject(m.type) || !m.object.is_null()) {
    strait::v1::ObjectRequest* o = e.mutable_object();
    o->set_api_version(m.apiVersion);
    o->set_kind(m.kind);
    o->set_namespace_(m.ns);
    o->set_name(m.name);
    if (!m.object.is_null()) {
      o->set_json(m.object.dump(-1, ' ', false, json::error_handler_t::replace));
    }
  }
  return e;
}

kube::Result<StreamMessage> decodeStreamMessage(const strait::v1::ReflectionEvent& e) {
  StreamMessage m;
  bool known = false;
  for (const auto& [type, name] : kTypeNames) {
    if (e.type() == name) {
      m.type = type;
      known = true;
    }
  }
  if (!known) {
    std::string shown = e.type().substr(0, 64);
    return bad("type", "unknown message type \"" + shown + "\"");
  }
  m.originUid = e.origin_uid();
  m.seq = e.seq();
  m.baseResourceVersion = e.base_resource_version();
  if (m.originUid.size() > 128) return bad("origin_uid", "longer than 128 bytes");
  if (m.type == StreamMessageType::StatusPatch) {
    if (m.baseResourceVersion.empty()) return bad("base_resource_version", "required on STATUS_PATCH");
    if (m.baseResourceVersion.size() > kMaxResourceVersionBytes) {
      return bad("base_resource_version",
                 "longer than " + std::to_string(kMaxResourceVersionBytes) + " bytes");
    }
  } else if (!m.baseResourceVersion.empty()) {
    return bad("base_resource_version", "only a STATUS_PATCH carries one");
  }
  if ((m.type == StreamMessageType::Get || m.type == StreamMessageType::Reply) && m.seq == 0) {
    return bad("seq", std::string("required on ") + streamMessageTypeName(m.type));
  }
  if (!e.error_reason().empty() || !e.error_message().empty()) {
    if (m.type != StreamMessageType::Reply) return bad("error_reason", "only a REPLY carries an error");
    if (e.error_message().size() > kMaxErrorMessageBytes) {
      return bad("error_message", "longer than " + std::to_string(kMaxErrorMessageBytes) + " bytes");
    }
    kube::Code code = kube::codeFromReason(e.error_reason(), 0);
    if (code == kube::Code::Ok || kube::reasonOf(code) != e.error_reason()) {
      return bad("error_reason", "\"" + e.error_reason().substr(0, 64) + "\" is not a known reason");
    }
    m.error = kube::makeError(code, e.error_message());
  }
  const strait::v1::ObjectRequest& o = e.object();
  if (o.json().size() > kMaxStreamObjectBytes) {
    return bad("object.json", std::to_string(o.json().size()) + " bytes exceed the limit of " +
                                  std::to_string(kMaxStreamObjectBytes));
  }
  if (!o.json().empty()) {
    kube::Result<json> parsed = kube::parseJson(o.json(), 64);
    if (!parsed.ok()) return bad("object.json", parsed.error().message);
    if (!parsed->is_object()) return bad("object.json", "not a JSON object");
    m.object = std::move(*parsed);
  }
  if (m.type == StreamMessageType::Reply && o.json().empty()) return m;
  if (!carriesObject(m.type) && m.type != StreamMessageType::Reply) {
    if (m.type == StreamMessageType::ResyncDone || m.type == StreamMessageType::ExportSynced) {
      if (!m.object.is_object() || !m.object.contains("originUids") ||
          !m.object["originUids"].is_array()) {
        return bad("object.json", std::string(streamMessageTypeName(m.type)) +
                                      " needs {\"originUids\": [...]}");
      }
      for (const json& u : m.object["originUids"]) {
        if (!u.is_string()) return bad("object.json", "originUids holds a non-string");
      }
    }
    return m;
  }
  if (m.originUid.empty() && needsOriginUid(m.type)) {
    return bad("origin_uid", std::string("required on ") + streamMessageTypeName(m.type));
  }
  m.apiVersion = o.api_version();
  m.kind = o.kind();
  m.ns = o.namespace_();
  m.name = o.name();
  bool kindOk = false;
  for (const char* k : kKinds) kindOk = kindOk || m.kind == k;
  if (kindOk && m.apiVersion != streamApiVersionOf(m.kind)) {
    return bad("object.api_version", "\"" + m.apiVersion.substr(0, 64) + "\" is not " +
                                         streamApiVersionOf(m.kind) + " (the version of " +
                                         m.kind + ")");
  }
  if (!kindOk && m.kind == "Namespace" && m.apiVersion != "v1") {
    return bad("object.api_version", "\"" + m.apiVersion.substr(0, 64) + "\" is not v1");
  }
  if (m.kind == "Namespace") {
    if (m.type != StreamMessageType::Delete) {
      return bad("object.kind", "a Namespace is only ever deleted on the stream");
    }
    if (m.ns != m.name) return bad("object.name", "a Namespace's name must equal its namespace field");
    kindOk = true;
  }
  if (!kindOk) return bad("object.kind", "\"" + m.kind.substr(0, 64) + "\" is not reflected");
  if (m.type == StreamMessageType::StatusPatch && m.kind != "Pod") {
    return bad("object.kind", "only a Pod's status is patched");
  }
  if (isExportType(m.type) && m.kind != "Service" && m.kind != "EndpointSlice") {
    return bad("object.kind", "\"" + m.kind.substr(0, 64) + "\" is not exported (only a "
                              "Service or an EndpointSlice is)");
  }
  if (auto p = kube::validateDns1123Label(m.ns); !p.empty()) {
    return bad("object.namespace", "\"" + m.ns.substr(0, 64) + "\": " + p.front());
  }
  if (auto p = kube::validateDns1123Subdomain(m.name); !p.empty()) {
    return bad("object.name", "\"" + m.name.substr(0, 64) + "\": " + p.front());
  }
  if ((m.type == StreamMessageType::Get || m.type == StreamMessageType::Unexport) &&
      !m.object.is_null()) {
    return bad("object.json", std::string("a ") + streamMessageTypeName(m.type) +
                                  " carries no object");
  }
  if (m.type == StreamMessageType::StatusPatch && m.object.is_null()) {
    return bad("object.json", "required on STATUS_PATCH");
  }
  const bool needsObject = m.type == StreamMessageType::Apply ||
                           m.type == StreamMessageType::Status ||
                           m.type == StreamMessageType::Event ||
                           m.type == StreamMessageType::Reply ||
                           m.type == StreamMessageType::Export;
  if (needsObject && m.object.is_null()) {
    return bad("object.json", std::string("required on ") + streamMessageTypeName(m.type));
  }
  if (needsObject && m.type != StreamMessageType::Event) {
    std::string kind = m.object.contains("kind") && m.object["kind"].is_string()
                           ? m.object["kind"].get<std::string>()
                           : std::string();
    if (kind != m.kind || kube::getName(m.object) != m.name ||
        kube::getNamespace(m.object) != m.ns) {
      return bad("object.json", "the object is " + kind.substr(0, 64) + " " +
                                    kube::getNamespace(m.object).substr(0, 64) + "/" +
                                    kube::getName(m.object).substr(0, 64) +
                                    ", not the one the envelope names");
    }
  }
  return m;
}

}  // namespace strait::reflection
