// libFuzzer target for the reflection stream's decoding (reflection/stream_messages.h): what
// a peer sends arrives as v1::ReflectionEvent bytes and must become a StreamMessage or a
// named error, never a crash. The first input byte picks the mode:
//   even: the rest is the protobuf encoding of a ReflectionEvent;
//   odd:  the second byte picks type and kind, the first byte's bits a few fields, and
//         the rest is the JSON payload of that envelope (so the JSON paths — object parsing, RESYNC_DONE's
//         originUids, DELETE's DeleteOptions, REPLY, the provider's reads of a Pod, the
//         consumer's reads of an exported Service or EndpointSlice — are
//         reached without the fuzzer first having to learn protobuf).
// Checks: a decoded message re-encodes to something that decodes to the same message (an
// accepted message is never rejected or changed by a round trip); the provider's and
// consumer's accessors never throw.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "reflection/labels.h"
#include "reflection/pod_forge.h"
#include "reflection/service_export.h"
#include "reflection/stream_messages.h"

namespace {

using json = nlohmann::json;
using strait::reflection::StreamMessage;
using strait::reflection::StreamMessageType;

[[noreturn]] void fail(const char* what, const StreamMessage& m) {
  std::fprintf(stderr, "stream_message_fuzz: %s (type=%s kind=%s ns=%s name=%s)\n", what,
               strait::reflection::streamMessageTypeName(m.type), m.kind.c_str(), m.ns.c_str(),
               m.name.c_str());
  std::abort();
}

// What the provider and the consumer read from a message they accepted.
void readLikeThePeersDo(const StreamMessage& m) {
  (void)m.gracePeriodSeconds();
  (void)m.resyncOriginUids();
  (void)m.replyResult();
  if (m.object.is_object()) {
    (void)strait::reflection::isOwnedBy(m.object, "consumer");
    (void)strait::reflection::originUid(m.object);
    if (m.kind == "Pod") (void)strait::reflection::mutablePodFields(m.object);
  }
  if (m.type == StreamMessageType::Export) {
    // What the consumer's importer does with an exported object before writing it.
    json mapped = strait::reflection::mapExportedSliceAddresses(
        m.object, [](const std::string& ip) { return ip; });
    (void)strait::reflection::decideImport(mapped, m.object, "provider");
    (void)strait::reflection::endpointSliceNotReady(mapped);
  }
}

void roundTrip(const StreamMessage& m) {
  strait::v1::ReflectionEvent again;
  const std::string bytes = strait::reflection::encodeStreamMessage(m).SerializeAsString();
  if (!again.ParseFromString(bytes)) fail("re-encoded message does not parse", m);
  auto back = strait::reflection::decodeStreamMessage(again);
  if (!back.ok()) fail(("re-encoded message rejected: " + back.error().message).c_str(), m);
  if (back->type != m.type || back->kind != m.kind || back->ns != m.ns || back->name != m.name ||
      back->originUid != m.originUid || back->seq != m.seq || back->object != m.object ||
      back->error.has_value() != m.error.has_value() ||
      (m.error && back->error->code != m.error->code)) {
    fail("round trip changed the message", m);
  }
}

constexpr const char* kTypes[] = {"APPLY", "DELETE",   "STATUS",        "GONE",
                                  "EVENT", "RESYNC_BEGIN", "RESYNC_DONE", "KEEPALIVE",
                                  "GET",   "REPLY",    "SYNCED",        "EXPORT",
                                  "UNEXPORT", "EXPORT_SYNCED"};
constexpr int kTypeCount = sizeof(kTypes) / sizeof(kTypes[0]);
constexpr const char* kKinds[] = {"Pod",       "ConfigMap", "Secret", "ServiceAccount",
                                  "Event",     "Namespace", "Node",   "",
                                  "Service",   "EndpointSlice"};
constexpr int kKindCount = sizeof(kKinds) / sizeof(kKinds[0]);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const char* rest = reinterpret_cast<const char*>(data + 1);
  strait::v1::ReflectionEvent e;
  if ((mode & 1) == 0) {
    if (!e.ParseFromArray(rest, static_cast<int>(size - 1))) return 0;
  } else {
    // data[1]: type (% kTypeCount) and kind (/ kTypeCount % kKindCount); mode's bits: flags;
    // the rest: the JSON.
    if (size < 2) return 0;
    const int t = data[1] % kTypeCount;
    e.set_type(kTypes[t]);
    e.set_origin_uid((mode & 0x40) ? "" : "uid-1");
    e.set_seq((mode & 0x80) ? 0 : 7);
    if (t == 9 && (mode & 0x20)) {
      e.set_error_reason("Forbidden");
      e.set_error_message("refused");
    }
    strait::v1::ObjectRequest* o = e.mutable_object();
    const char* kind = kKinds[(data[1] / kTypeCount) % kKindCount];
    o->set_api_version(strait::reflection::streamApiVersionOf(kind));
    o->set_kind(kind);
    o->set_namespace_("web");
    o->set_name((mode & 0x10) ? "web" : "p");
    rest = reinterpret_cast<const char*>(data + 2);
    size -= 1;
    o->set_json(std::string(rest, size - 1));
  }
  auto m = strait::reflection::decodeStreamMessage(e);
  if (!m.ok()) {
    if (m.error().message.empty()) std::abort();  // every refusal says why
    return 0;
  }
  readLikeThePeersDo(*m);
  roundTrip(*m);
  return 0;
}
