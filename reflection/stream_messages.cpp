#include "reflection/stream_messages.h"

#include <array>
#include <string_view>
#include <utility>

#include "kube/json_parse.h"
#include "kube/object.h"
#include "kube/validation.h"

namespace strait::reflection {

using nlohmann::json;

namespace {

constexpr std::array<std::pair<StreamMessageType, const char*>, 8> kTypeNames = {{
    {StreamMessageType::Apply, "APPLY"},
    {StreamMessageType::Delete, "DELETE"},
    {StreamMessageType::Status, "STATUS"},
    {StreamMessageType::Gone, "GONE"},
    {StreamMessageType::Event, "EVENT"},
    {StreamMessageType::ResyncBegin, "RESYNC_BEGIN"},
    {StreamMessageType::ResyncDone, "RESYNC_DONE"},
    {StreamMessageType::Keepalive, "KEEPALIVE"},
}};

constexpr std::array<const char*, 5> kKinds = {"Pod", "ConfigMap", "Secret", "ServiceAccount",
                                               "Event"};

bool carriesObject(StreamMessageType t) {
  return t == StreamMessageType::Apply || t == StreamMessageType::Delete ||
         t == StreamMessageType::Status || t == StreamMessageType::Gone ||
         t == StreamMessageType::Event;
}

kube::Error bad(const std::string& field, const std::string& msg) {
  return kube::makeError(kube::Code::BadRequest, "reflection stream message: " + field + ": " + msg,
                         field);
}

}  // namespace

const char* streamMessageTypeName(StreamMessageType t) {
  for (const auto& [type, name] : kTypeNames) {
    if (type == t) return name;
  }
  return "UNKNOWN";
}

StreamMessage StreamMessage::apply(const json& remoteObject, std::string originUid) {
  StreamMessage m;
  m.type = StreamMessageType::Apply;
  m.apiVersion = "v1";
  m.kind = remoteObject.is_object() && remoteObject.contains("kind") &&
                   remoteObject["kind"].is_string()
               ? remoteObject["kind"].get<std::string>()
               : std::string();
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
  m.apiVersion = "v1";
  m.kind = std::move(kind);
  m.ns = std::move(ns);
  m.name = std::move(name);
  m.originUid = std::move(originUid);
  m.object = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (gracePeriodSeconds) m.object["gracePeriodSeconds"] = *gracePeriodSeconds;
  return m;
}

StreamMessage StreamMessage::resyncDone(const std::vector<std::string>& originUids) {
  StreamMessage m;
  m.type = StreamMessageType::ResyncDone;
  m.object = {{"originUids", originUids}};
  return m;
}

std::optional<int64_t> StreamMessage::gracePeriodSeconds() const {
  if (type != StreamMessageType::Delete || !object.is_object()) return std::nullopt;
  auto it = object.find("gracePeriodSeconds");
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::vector<std::string> StreamMessage::resyncOriginUids() const {
  std::vector<std::string> out;
  if (type != StreamMessageType::ResyncDone || !object.is_object()) return out;
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
  if (m.originUid.size() > 128) return bad("origin_uid", "longer than 128 bytes");
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
  if (!carriesObject(m.type)) {
    if (m.type == StreamMessageType::ResyncDone) {
      if (!m.object.is_object() || !m.object.contains("originUids") ||
          !m.object["originUids"].is_array()) {
        return bad("object.json", "RESYNC_DONE needs {\"originUids\": [...]}");
      }
      for (const json& u : m.object["originUids"]) {
        if (!u.is_string()) return bad("object.json", "originUids holds a non-string");
      }
    }
    return m;
  }
  if (m.originUid.empty()) {
    return bad("origin_uid", std::string("required on ") + streamMessageTypeName(m.type));
  }
  m.apiVersion = o.api_version();
  m.kind = o.kind();
  m.ns = o.namespace_();
  m.name = o.name();
  if (m.apiVersion != "v1") return bad("object.api_version", "\"" + m.apiVersion.substr(0, 64) + "\" is not v1");
  bool kindOk = false;
  for (const char* k : kKinds) kindOk = kindOk || m.kind == k;
  if (!kindOk) return bad("object.kind", "\"" + m.kind.substr(0, 64) + "\" is not reflected");
  if (auto p = kube::validateDns1123Label(m.ns); !p.empty()) {
    return bad("object.namespace", "\"" + m.ns.substr(0, 64) + "\": " + p.front());
  }
  if (auto p = kube::validateDns1123Subdomain(m.name); !p.empty()) {
    return bad("object.name", "\"" + m.name.substr(0, 64) + "\": " + p.front());
  }
  const bool needsObject = m.type == StreamMessageType::Apply ||
                           m.type == StreamMessageType::Status ||
                           m.type == StreamMessageType::Event;
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
