#pragma once
// The messages of the reflection stream (Reflection.Stream in proto/strait/peering.proto: one
// bidirectional gRPC stream per peering, protobuf envelopes carrying Kubernetes JSON). The
// envelope is v1::ReflectionEvent as declared there; this file gives its `type` field a
// closed vocabulary and checks every field of what arrives, so a malformed or hostile
// message is an error value naming what is wrong, never a crash.
//
//   type          direction             object (api_version/kind/namespace/name + json)
//   APPLY         consumer -> provider  the forged remote object, full JSON
//   DELETE        consumer -> provider  json = DeleteOptions (gracePeriodSeconds, uid
//                                        precondition); names the remote object; kind
//                                        Namespace (namespace = name, origin_uid
//                                        "namespace"): the namespace is no longer offloaded
//   STATUS        provider -> consumer  the remote object as stored (status included)
//   STATUS_PATCH  provider -> consumer  a Pod changed since its previous STATUS or
//                                        STATUS_PATCH on this stream: json = the RFC 7386
//                                        merge patch from that version to the new one,
//                                        base_resource_version = that version's. Sent only
//                                        to a consumer whose RESYNC_BEGIN accepts it (below);
//                                        a consumer whose copy is not at the base version
//                                        asks for the Pod again with a GET
//   GONE          provider -> consumer  the remote object no longer exists; json empty
//   EVENT         provider -> consumer  a core/v1 Event about the remote object (kind Event;
//                                        origin_uid = the local object it concerns)
//   RESYNC_BEGIN  consumer -> provider  a full list of APPLYs follows (after (re)connect);
//                                        json {"accepts":["STATUS_PATCH","EXPORT"]} from a
//                                        consumer that applies STATUS_PATCH (without it, or
//                                        from an earlier build, every change is a whole
//                                        STATUS) and imports exported Services (without
//                                        "EXPORT" none is sent)
//   RESYNC_DONE   consumer -> provider  the list is complete: json = {"originUids":[...]};
//                                        the provider may now delete objects whose origin is
//                                        not listed (never before: a slow
//                                        consumer must not lose healthy Pods)
//   KEEPALIVE     both                  liveness for StreamHealth; no object
//   GET           consumer -> provider  names the remote object; json empty
//   REPLY         provider -> consumer  answers the APPLY, DELETE or GET with the same seq:
//                                        the object as stored (json empty when there is
//                                        none, e.g. after a completed delete), or
//                                        error_reason + error_message (Kubernetes reason)
//   SYNCED        provider -> consumer  the STATUS of every existing remote Pod of this
//                                        consumer has been sent (once per stream)
//   EXPORT        provider -> consumer  a provider Service exported to this consumer, or an
//                                        EndpointSlice of one, as the consumer should hold
//                                        it (service_export.h; kind Service or
//                                        EndpointSlice, origin_uid = the provider object's
//                                        uid). Sent only to a consumer whose RESYNC_BEGIN
//                                        accepts it: the full list after each RESYNC_BEGIN,
//                                        then every change
//   UNEXPORT      provider -> consumer  the exported Service or EndpointSlice named is no
//                                        longer exported (deleted, or the consumer taken
//                                        off its strait.io/export-to list); json empty
//   EXPORT_SYNCED provider -> consumer  the full list of EXPORTs is complete: json =
//                                        {"originUids":[...]} of every object exported now;
//                                        the consumer may now delete its imported copies
//                                        whose origin is not listed (never before)
//
// origin_uid is required on APPLY, DELETE, STATUS, STATUS_PATCH, GONE, EVENT, EXPORT and
// UNEXPORT (which carry a Service or an EndpointSlice only); seq (non-zero) on GET and
// REPLY (APPLY and DELETE carry one when the sender wants to match the REPLY). Kinds carried:
// Pod, ConfigMap, Secret, ServiceAccount, Service (apiVersion v1), EndpointSlice
// (discovery.k8s.io/v1) and Event (v1). Pure; thread-safe.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kube/status.h"
#include "proto/strait/peering.pb.h"

namespace strait::reflection {

enum class StreamMessageType {
  Apply,
  Delete,
  Status,
  Gone,
  Event,
  ResyncBegin,
  ResyncDone,
  Keepalive,
  Get,
  Reply,
  Synced,
  StatusPatch,
  Export,
  Unexport,
  ExportSynced,
};

const char* streamMessageTypeName(StreamMessageType t);
// The apiVersion the stream carries `kind` in: discovery.k8s.io/v1 for EndpointSlice, v1
// for every other kind.
const char* streamApiVersionOf(const std::string& kind);

// Largest object JSON accepted in one message (a Secret or ConfigMap may hold up to 1 MiB of
// data; its JSON with base64 and metadata stays under this).
inline constexpr size_t kMaxStreamObjectBytes = 3 * 1024 * 1024;

struct StreamMessage {
  StreamMessageType type = StreamMessageType::Keepalive;
  std::string apiVersion;  // streamApiVersionOf(kind)
  std::string kind;        // Pod, ConfigMap, Secret, ServiceAccount, Service, EndpointSlice, Event
  std::string ns;          // remote (provider) namespace
  std::string name;
  nlohmann::json object;   // parsed json; null when the type carries none
  std::string originUid;
  uint64_t seq = 0;                   // request number; a REPLY echoes it
  std::optional<kube::Error> error;   // REPLY: the failure (code and message), if any
  std::string baseResourceVersion;    // STATUS_PATCH: the version the patch applies to

  // Convenience constructors.
  static StreamMessage apply(const nlohmann::json& remoteObject, std::string originUid);
  static StreamMessage remove(std::string kind, std::string ns, std::string name,
                              std::string originUid, std::optional<int64_t> gracePeriodSeconds);
  static StreamMessage status(const nlohmann::json& remoteObject, std::string originUid);
  // DELETE of mapped namespace `remoteNs` (unoffloaded): the provider deletes it if it
  // created it for this consumer.
  static StreamMessage removeNamespace(const std::string& remoteNs);
  static StreamMessage resyncDone(const std::vector<std::string>& originUids);
  static StreamMessage get(std::string kind, std::string ns, std::string name, uint64_t seq);
  // REPLY to request `seq`: the object (null for none) or the error.
  static StreamMessage reply(uint64_t seq, const kube::Result<nlohmann::json>& result);
  static StreamMessage ofType(StreamMessageType t);  // KEEPALIVE, SYNCED, RESYNC_BEGIN
  // RESYNC_BEGIN saying that this consumer applies STATUS_PATCH, and imports exported
  // Services when `acceptsExports`.
  static StreamMessage resyncBegin(bool acceptsExports = false);
  // EXPORT of `object` (a forged Service or EndpointSlice) whose provider object has uid
  // `originUid`.
  static StreamMessage exported(const nlohmann::json& object, std::string originUid);
  // UNEXPORT of the Service or EndpointSlice ns/name exported from provider uid `originUid`.
  static StreamMessage unexport(std::string kind, std::string ns, std::string name,
                                std::string originUid);
  // EXPORT_SYNCED listing the origin uids of everything exported now.
  static StreamMessage exportSynced(const std::vector<std::string>& originUids);
  // STATUS_PATCH of Pod `before` (as last sent) to `after`, both as stored with the same
  // uid; nullopt when a patch cannot say it (a null member of an object in `after`, which a
  // merge patch would read as a deletion; nulls inside arrays travel whole, as RFC 7386
  // replaces arrays; or no resourceVersion): send a whole STATUS instead.
  static std::optional<StreamMessage> statusPatch(const nlohmann::json& before,
                                                  const nlohmann::json& after,
                                                  std::string originUid);

  // DELETE: the grace period in the DeleteOptions, if any.
  std::optional<int64_t> gracePeriodSeconds() const;
  // RESYNC_DONE and EXPORT_SYNCED: the listed origin uids (empty on any other type or
  // malformed list).
  std::vector<std::string> resyncOriginUids() const;
  // REPLY: the object or the error it carries (null object when none).
  kube::Result<nlohmann::json> replyResult() const;
  // RESYNC_BEGIN: the consumer accepts STATUS_PATCH.
  bool acceptsStatusPatch() const;
  // RESYNC_BEGIN: the consumer imports exported Services (EXPORT, UNEXPORT, EXPORT_SYNCED).
  bool acceptsExports() const;
  // STATUS_PATCH: `cached` (the consumer's copy, at baseResourceVersion) with the patch
  // applied. BadRequest when the patch would change the object's kind, namespace, name or
  // uid, or is too deep.
  kube::Result<nlohmann::json> applyStatusPatch(const nlohmann::json& cached) const;
};

// RFC 7386 merge patch that turns `from` into `to` (objects merge member by member, a member
// absent from `to` becomes null, anything else differing is replaced whole). Pure.
nlohmann::json createMergePatch(const nlohmann::json& from, const nlohmann::json& to);

// To the wire. Never fails (the JSON is dumped with invalid UTF-8 replaced).
strait::v1::ReflectionEvent encodeStreamMessage(const StreamMessage& m);

// From the wire. BadRequest naming the field on: unknown type, missing origin_uid where
// required, unsupported apiVersion/kind, invalid namespace or name, JSON that does not parse
// or is too large, an object whose own kind/namespace/name disagree with the envelope, a
// GET or REPLY without seq, a REPLY with an unknown error reason or an over-long message.
kube::Result<StreamMessage> decodeStreamMessage(const strait::v1::ReflectionEvent& e);

// Messages and bytes (serialized protobuf size) each way, for one session or a total.
struct StreamCounters {
  uint64_t messagesIn = 0;
  uint64_t bytesIn = 0;
  uint64_t messagesOut = 0;
  uint64_t bytesOut = 0;
  uint64_t applies = 0;   // APPLY requests received (provider) or sent on a stream (consumer)
  uint64_t deletes = 0;
  uint64_t errors = 0;    // REPLYs carrying an error
};

// The same counts, bumped from any thread; snapshot() reads them (each exact, not all taken
// at one instant).
struct LiveStreamCounters {
  std::atomic<uint64_t> messagesIn{0}, bytesIn{0}, messagesOut{0}, bytesOut{0};
  std::atomic<uint64_t> applies{0}, deletes{0}, errors{0};

  StreamCounters snapshot() const {
    return {messagesIn, bytesIn, messagesOut, bytesOut, applies, deletes, errors};
  }
};

}  // namespace strait::reflection
