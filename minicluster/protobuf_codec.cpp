// Decoding of Kubernetes protobuf request bodies into the JSON object the API server would have
// received from a JSON client.
//
// Pipeline: check the 4-byte magic, parse the rest as runtime.Unknown, look up the object's
// message type by apiVersion and kind in kKinds, parse Unknown.raw into that message (the
// generated classes of proto/k8s/*.proto), then walk the message with protobuf reflection and
// build JSON with the rules of Kubernetes' Go JSON encoding:
//   - a field is written only if it arrived (proto2 presence; non-empty repeated and maps);
//   - go-to-protobuf writes non-pointer Go fields even when zero, so an arrived zero scalar is
//     dropped (Go's omitempty) unless the field is a Go pointer (strait.k8s.go_pointer: the
//     zero was set on purpose) or has no omitempty (strait.k8s.json_keep_empty);
//   - embedded Go structs (strait.k8s.json_inline) are merged into the parent object;
//   - Time/MicroTime become RFC 3339 strings (null when zero, as in Go), Quantity its string,
//   IntOrString a number or a
//     string, bytes base64, FieldsV1/RawExtension the JSON they carry, ExtraValue an array.
// Stateless and thread-safe: the generated descriptors are immutable after static init.

#include "minicluster/protobuf_codec.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/stubs/logging.h>

#include <array>
#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include "kube/time.h"
#include "proto/k8s/apps.pb.h"
#include "proto/k8s/authentication.pb.h"
#include "proto/k8s/authorization.pb.h"
#include "proto/k8s/batch.pb.h"
#include "proto/k8s/certificates.pb.h"
#include "proto/k8s/core.pb.h"
#include "proto/k8s/meta.pb.h"
#include "proto/k8s/options.pb.h"
#include "proto/k8s/policy.pb.h"
#include "proto/k8s/rbac.pb.h"
#include "proto/k8s/runtime.pb.h"

namespace strait::minicluster {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::MessageFactory;
using google::protobuf::Reflection;
using kube::Code;
using kube::makeError;
using kube::Result;
using nlohmann::json;

// --- Specification constants (k8s.io/apimachinery/pkg/runtime/serializer/protobuf) ---

// protoEncodingPrefix: every Kubernetes protobuf body starts with "k8s\0".
constexpr std::string_view kProtoEncodingPrefix{"k8s\0", 4};
static_assert(kProtoEncodingPrefix.size() == 4);

// --- Implementation constants ---

// Upper bound on a body we try to parse (the HTTP layer limits bodies too; this keeps the
// codec safe on its own).
constexpr size_t kMaxBodyBytes = 64u << 20;

// Kinds whose protobuf encoding this server understands. An empty apiVersion matches any
// (DeleteOptions is registered in every group version).
struct KindEntry {
  std::string_view apiVersion;
  std::string_view kind;
  const Descriptor* (*descriptor)();
};

const std::array kKinds = {
    KindEntry{"v1", "Namespace", &k8s::core::Namespace::descriptor},
    KindEntry{"v1", "ConfigMap", &k8s::core::ConfigMap::descriptor},
    KindEntry{"v1", "Secret", &k8s::core::Secret::descriptor},
    KindEntry{"v1", "ServiceAccount", &k8s::core::ServiceAccount::descriptor},
    KindEntry{"v1", "Service", &k8s::core::Service::descriptor},
    KindEntry{"v1", "Pod", &k8s::core::Pod::descriptor},
    KindEntry{"apps/v1", "Deployment", &k8s::apps::Deployment::descriptor},
    KindEntry{"apps/v1", "ReplicaSet", &k8s::apps::ReplicaSet::descriptor},
    KindEntry{"batch/v1", "Job", &k8s::batch::Job::descriptor},
    KindEntry{"batch/v1", "CronJob", &k8s::batch::CronJob::descriptor},
    KindEntry{"policy/v1", "Eviction", &k8s::policy::Eviction::descriptor},
    KindEntry{"authentication.k8s.io/v1", "TokenRequest", &k8s::authentication::TokenRequest::descriptor},
    KindEntry{"authentication.k8s.io/v1", "SelfSubjectReview",
              &k8s::authentication::SelfSubjectReview::descriptor},
    KindEntry{"authorization.k8s.io/v1", "SubjectAccessReview",
              &k8s::authorization::SubjectAccessReview::descriptor},
    KindEntry{"authorization.k8s.io/v1", "LocalSubjectAccessReview",
              &k8s::authorization::LocalSubjectAccessReview::descriptor},
    KindEntry{"authorization.k8s.io/v1", "SelfSubjectAccessReview",
              &k8s::authorization::SelfSubjectAccessReview::descriptor},
    KindEntry{"authorization.k8s.io/v1", "SelfSubjectRulesReview",
              &k8s::authorization::SelfSubjectRulesReview::descriptor},
    KindEntry{"certificates.k8s.io/v1", "CertificateSigningRequest",
              &k8s::certificates::CertificateSigningRequest::descriptor},
    KindEntry{"rbac.authorization.k8s.io/v1", "Role", &k8s::rbac::Role::descriptor},
    KindEntry{"rbac.authorization.k8s.io/v1", "ClusterRole", &k8s::rbac::ClusterRole::descriptor},
    KindEntry{"rbac.authorization.k8s.io/v1", "RoleBinding", &k8s::rbac::RoleBinding::descriptor},
    KindEntry{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding",
              &k8s::rbac::ClusterRoleBinding::descriptor},
    KindEntry{"", "DeleteOptions", &k8s::meta::DeleteOptions::descriptor},
};

const Descriptor* findKind(std::string_view apiVersion, std::string_view kind) {
  for (const auto& e : kKinds) {
    if (e.kind == kind && (e.apiVersion.empty() || e.apiVersion == apiVersion)) {
      return e.descriptor();
    }
  }
  return nullptr;
}

std::string base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t n = uint8_t(in[i]) << 16;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

// True if s is well-formed UTF-8 (nlohmann::json refuses to dump anything else).
bool validUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = uint8_t(s[i]);
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      auto cc = uint8_t(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

// Formats seconds since the epoch as RFC 3339 in UTC; micros adds ".ffffff" (Go's
// RFC3339Micro, used by MicroTime). Go refuses to marshal years outside 0..9999.
Result<std::string> rfc3339(int64_t seconds, std::optional<int32_t> micros,
                            const std::string& path) {
  // 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
  constexpr int64_t kMin = -62167219200, kMax = 253402300799;
  if (seconds < kMin || seconds > kMax) {
    return makeError(Code::BadRequest, "protobuf field " + path + ": time " +
                                           std::to_string(seconds) +
                                           " is outside the years 0000-9999");
  }
  std::string out = kube::rfc3339FromUnix(seconds);  // "...T15:04:05Z"
  if (micros) {
    char f[16];
    std::snprintf(f, sizeof f, ".%06d", *micros);
    out.insert(out.size() - 1, f);
  }
  return out;
}

class Converter {
 public:
  // Converts m to a JSON object; path names m in error messages.
  Result<json> object(const Message& m, const std::string& path) {
    json out = json::object();
    auto st = fillObject(m, path, out);
    if (!st) return st.error();
    return out;
  }

 private:
  struct FieldFlags {
    bool pointer = false;
    bool keepEmpty = false;
  };

  // Writes m's arrived fields into out (inline fields merge into out itself).
  kube::Status fillObject(const Message& m, const std::string& path, json& out) {
    const Reflection* r = m.GetReflection();
    std::vector<const FieldDescriptor*> fields;
    r->ListFields(m, &fields);
    for (const FieldDescriptor* f : fields) {
      std::string fpath = path.empty() ? f->name() : path + "." + f->name();
      const auto& opts = f->options();
      FieldFlags flags{opts.GetExtension(k8s::go_pointer), opts.GetExtension(k8s::json_keep_empty)};
      if (f->is_map()) {
        auto v = mapField(m, *f, fpath);
        if (!v) return v.error();
        out[f->name()] = std::move(*v);
      } else if (f->is_repeated()) {
        json arr = json::array();
        int n = r->FieldSize(m, f);
        for (int i = 0; i < n; ++i) {
          std::string ipath = fpath + "[" + std::to_string(i) + "]";
          auto v = f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE
                       ? messageValue(r->GetRepeatedMessage(m, f, i), ipath, {true, true})
                       : repeatedScalar(m, *f, i, ipath);
          if (!v) return v.error();
          arr.push_back(v->has_value() ? std::move(**v) : json(nullptr));
        }
        out[f->name()] = std::move(arr);
      } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        const Message& sub = r->GetMessage(m, f);
        if (opts.GetExtension(k8s::json_inline)) {
          auto st = fillObject(sub, fpath, out);
          if (!st) return st;
          continue;
        }
        auto v = messageValue(sub, fpath, flags);
        if (!v) return v.error();
        if (v->has_value()) out[f->name()] = std::move(**v);
      } else {
        auto v = singularScalar(m, *f, fpath, flags);
        if (!v) return v.error();
        if (v->has_value()) out[f->name()] = std::move(**v);
      }
    }
    return kube::Status::OK();
  }

  // A message-typed value: the special Kubernetes types, or a nested object. nullopt means
  // "omit" (an empty Quantity or zero IntOrString of an omitempty field).
  Result<std::optional<json>> messageValue(const Message& m, const std::string& path,
                                           FieldFlags flags) {
    const std::string& name = m.GetDescriptor()->full_name();
    bool keepZero = flags.pointer || flags.keepEmpty;
    if (name == k8s::meta::Time::descriptor()->full_name()) {
      // A zero Go time.Time travels as an empty message; Go's JSON writes it as null
      // (omitempty does not drop structs), e.g. a pod template's creationTimestamp.
      const auto& t = static_cast<const k8s::meta::Time&>(m);
      if (t.seconds() == 0 && t.nanos() == 0) return std::optional<json>{json(nullptr)};
      auto s = rfc3339(t.seconds(), std::nullopt, path);  // Go's Time drops nanos.
      if (!s) return s.error();
      return std::optional<json>{json(std::move(*s))};
    }
    if (name == k8s::meta::MicroTime::descriptor()->full_name()) {
      const auto& t = static_cast<const k8s::meta::MicroTime&>(m);
      if (t.seconds() == 0 && t.nanos() == 0) return std::optional<json>{json(nullptr)};
      if (t.nanos() < 0 || t.nanos() > 999999999) {
        return makeError(Code::BadRequest, "protobuf field " + path + ": nanos " +
                                               std::to_string(t.nanos()) +
                                               " is outside 0..999999999");
      }
      auto s = rfc3339(t.seconds(), t.nanos() / 1000, path);
      if (!s) return s.error();
      return std::optional<json>{json(std::move(*s))};
    }
    if (name == k8s::meta::Quantity::descriptor()->full_name()) {
      const auto& q = static_cast<const k8s::meta::Quantity&>(m);
      if (!validUtf8(q.string())) return invalidUtf8(path);
      if (q.string().empty()) {
        return keepZero ? std::optional<json>{json("0")} : std::optional<json>{};
      }
      return std::optional<json>{json(q.string())};
    }
    if (name == k8s::meta::IntOrString::descriptor()->full_name()) {
      const auto& v = static_cast<const k8s::meta::IntOrString&>(m);
      if (v.type() == 1) {
        if (!validUtf8(v.strval())) return invalidUtf8(path);
        if (v.strval().empty() && !keepZero) return std::optional<json>{};
        return std::optional<json>{json(v.strval())};
      }
      if (v.type() != 0) {
        return makeError(Code::BadRequest, "protobuf field " + path + ": IntOrString type " +
                                               std::to_string(v.type()) + " is neither 0 nor 1");
      }
      if (v.intval() == 0 && !keepZero) return std::optional<json>{};
      return std::optional<json>{json(v.intval())};
    }
    if (name == k8s::meta::FieldsV1::descriptor()->full_name()) {
      const auto& v = static_cast<const k8s::meta::FieldsV1&>(m);
      return embeddedJson(v.raw(), path);
    }
    if (name == k8s::runtime::RawExtension::descriptor()->full_name()) {
      const auto& v = static_cast<const k8s::runtime::RawExtension&>(m);
      return embeddedJson(v.raw(), path);
    }
    if (name == k8s::certificates::ExtraValue::descriptor()->full_name()) {
      // ExtraValue is a []string in Go; its JSON is the bare array.
      const auto& v = static_cast<const k8s::certificates::ExtraValue&>(m);
      json arr = json::array();
      for (const auto& s : v.items()) {
        if (!validUtf8(s)) return invalidUtf8(path);
        arr.push_back(s);
      }
      return std::optional<json>{std::move(arr)};
    }
    auto obj = object(m, path);
    if (!obj) return obj.error();
    return std::optional<json>{std::move(*obj)};
  }

  // JSON carried as bytes (FieldsV1.Raw, RawExtension.raw).
  Result<std::optional<json>> embeddedJson(const std::string& raw, const std::string& path) {
    if (raw.empty()) return std::optional<json>{};
    json v = json::parse(raw, nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded()) {
      return makeError(Code::BadRequest,
                       "protobuf field " + path + ": embedded raw object is not valid JSON");
    }
    return std::optional<json>{std::move(v)};
  }

  Result<json> mapField(const Message& m, const FieldDescriptor& f, const std::string& path) {
    const Reflection* r = m.GetReflection();
    const FieldDescriptor* keyField = f.message_type()->map_key();
    const FieldDescriptor* valueField = f.message_type()->map_value();
    json obj = json::object();
    int n = r->FieldSize(m, &f);
    for (int i = 0; i < n; ++i) {
      const Message& entry = r->GetRepeatedMessage(m, &f, i);
      const Reflection* er = entry.GetReflection();
      // Every map in the schema has string keys.
      std::string key = er->GetString(entry, keyField);
      if (!validUtf8(key)) return invalidUtf8(path);
      std::string vpath = path + "[" + json(key).dump() + "]";
      Result<std::optional<json>> v =
          valueField->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE
              ? messageValue(er->GetMessage(entry, valueField), vpath, {true, true})
              : singularScalar(entry, *valueField, vpath, {true, true});
      if (!v) return v.error();
      obj[key] = v->has_value() ? std::move(**v) : json(nullptr);
    }
    return obj;
  }

  Result<std::optional<json>> singularScalar(const Message& m, const FieldDescriptor& f,
                                             const std::string& path, FieldFlags flags) {
    const Reflection* r = m.GetReflection();
    bool keepZero = flags.pointer || flags.keepEmpty;
    auto emit = [&](json v, bool zero) -> Result<std::optional<json>> {
      if (zero && !keepZero) return std::optional<json>{};
      return std::optional<json>{std::move(v)};
    };
    switch (f.cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string s = r->GetString(m, &f);
        if (f.type() == FieldDescriptor::TYPE_BYTES) return emit(base64(s), s.empty());
        if (!validUtf8(s)) return invalidUtf8(path);
        bool zero = s.empty();
        return emit(json(std::move(s)), zero);
      }
      case FieldDescriptor::CPPTYPE_BOOL: {
        bool b = r->GetBool(m, &f);
        return emit(json(b), !b);
      }
      case FieldDescriptor::CPPTYPE_INT32: {
        auto v = r->GetInt32(m, &f);
        return emit(json(v), v == 0);
      }
      case FieldDescriptor::CPPTYPE_INT64: {
        auto v = r->GetInt64(m, &f);
        return emit(json(v), v == 0);
      }
      default:
        // The schema uses no other scalar types.
        return makeError(Code::Internal, "protobuf field " + path + " has an unsupported type");
    }
  }

  Result<std::optional<json>> repeatedScalar(const Message& m, const FieldDescriptor& f, int i,
                                             const std::string& path) {
    const Reflection* r = m.GetReflection();
    switch (f.cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string s = r->GetRepeatedString(m, &f, i);
        if (f.type() == FieldDescriptor::TYPE_BYTES) return std::optional<json>{base64(s)};
        if (!validUtf8(s)) return invalidUtf8(path);
        return std::optional<json>{json(std::move(s))};
      }
      case FieldDescriptor::CPPTYPE_BOOL:
        return std::optional<json>{json(r->GetRepeatedBool(m, &f, i))};
      case FieldDescriptor::CPPTYPE_INT32:
        return std::optional<json>{json(r->GetRepeatedInt32(m, &f, i))};
      case FieldDescriptor::CPPTYPE_INT64:
        return std::optional<json>{json(r->GetRepeatedInt64(m, &f, i))};
      default:
        return makeError(Code::Internal, "protobuf field " + path + " has an unsupported type");
    }
  }

  static kube::Error invalidUtf8(const std::string& path) {
    return makeError(Code::BadRequest, "protobuf field " + path + " is not valid UTF-8");
  }
};

}  // namespace

Result<json> decodeKubernetesProtobuf(std::string_view body) {
  if (!body.starts_with(kProtoEncodingPrefix)) {
    return makeError(Code::BadRequest,
                     "protobuf body does not start with the Kubernetes magic prefix "
                     "(6b 38 73 00)");
  }
  if (body.size() == kProtoEncodingPrefix.size()) {
    return makeError(Code::BadRequest, "protobuf body is empty after the magic prefix");
  }
  if (body.size() > kMaxBodyBytes) {
    return makeError(Code::RequestEntityTooLarge, "protobuf body is larger than 64 MiB");
  }
  body.remove_prefix(kProtoEncodingPrefix.size());
  // libprotobuf logs an ERROR line for each non-UTF-8 string it parses; such input is the
  // client's mistake and is reported below as BadRequest, so keep it out of the server log.
  google::protobuf::LogSilencer quiet;

  k8s::runtime::Unknown envelope;
  if (!envelope.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return makeError(Code::BadRequest,
                     "protobuf body is not a valid runtime.Unknown envelope (truncated or "
                     "malformed)");
  }
  const std::string& apiVersion = envelope.typemeta().apiversion();
  const std::string& kind = envelope.typemeta().kind();
  if (!validUtf8(apiVersion) || !validUtf8(kind)) {
    return makeError(Code::BadRequest, "protobuf envelope: apiVersion or kind is not UTF-8");
  }
  if (kind.empty()) {
    return makeError(Code::BadRequest, "protobuf envelope: Object 'Kind' is missing");
  }
  if (apiVersion.empty()) {
    return makeError(Code::BadRequest, "protobuf envelope: Object 'apiVersion' is missing");
  }
  if (!validUtf8(envelope.contentencoding()) || !validUtf8(envelope.contenttype())) {
    return makeError(Code::BadRequest,
                     "protobuf envelope: contentEncoding or contentType is not UTF-8");
  }
  if (!envelope.contentencoding().empty()) {
    return makeError(Code::UnsupportedMediaType, "protobuf envelope: content encoding " +
                                                     json(envelope.contentencoding()).dump() +
                                                     " is not supported");
  }
  const std::string& ct = envelope.contenttype();
  if (!ct.empty() && ct.find("protobuf") == std::string::npos) {
    return makeError(
        Code::UnsupportedMediaType,
        "protobuf envelope: raw content type " + json(ct).dump() + " is not supported; send JSON");
  }

  const Descriptor* d = findKind(apiVersion, kind);
  if (d == nullptr) {
    return makeError(Code::UnsupportedMediaType, "protobuf encoding of " + apiVersion + " " + kind +
                                                     " is not supported by this server; "
                                                     "send JSON");
  }
  const Message* prototype = MessageFactory::generated_factory()->GetPrototype(d);
  if (prototype == nullptr) {
    return makeError(Code::Internal, "no protobuf message type for " + apiVersion + " " + kind);
  }
  std::unique_ptr<Message> object(prototype->New());
  if (!object->ParseFromString(envelope.raw())) {
    return makeError(Code::BadRequest, "protobuf body: the " + apiVersion + " " + kind +
                                           " object is truncated or malformed");
  }

  Converter conv;
  auto out = conv.object(*object, "");
  if (!out) return out.error();
  json result = json::object();
  result["apiVersion"] = apiVersion;
  result["kind"] = kind;
  result.update(*out);
  return result;
}

}  // namespace strait::minicluster
