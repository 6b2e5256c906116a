#include "reflection/stream_messages.h"

#include <gtest/gtest.h>

namespace strait::reflection {
namespace {

using nlohmann::json;

json remotePod() {
  return json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"web-c"},
    "spec":{"containers":[{"name":"c","image":"i"}]}})");
}

StreamMessage roundTrip(const StreamMessage& m) {
  strait::v1::ReflectionEvent wire;
  std::string bytes = encodeStreamMessage(m).SerializeAsString();
  EXPECT_TRUE(wire.ParseFromString(bytes));
  auto back = decodeStreamMessage(wire);
  EXPECT_TRUE(back.ok()) << back.error().message;
  return back.ok() ? *back : StreamMessage{};
}

TEST(StreamMessages, EveryTypeRoundTrips) {
  StreamMessage a = roundTrip(StreamMessage::apply(remotePod(), "uid-1"));
  EXPECT_EQ(a.type, StreamMessageType::Apply);
  EXPECT_EQ(a.kind, "Pod");
  EXPECT_EQ(a.ns, "web-c");
  EXPECT_EQ(a.name, "p");
  EXPECT_EQ(a.object, remotePod());
  EXPECT_EQ(a.originUid, "uid-1");

  StreamMessage d = roundTrip(StreamMessage::remove("Pod", "web-c", "p", "uid-1", 30));
  EXPECT_EQ(d.type, StreamMessageType::Delete);
  EXPECT_EQ(d.gracePeriodSeconds(), 30);
  EXPECT_EQ(roundTrip(StreamMessage::remove("Pod", "web-c", "p", "uid-1", std::nullopt))
                .gracePeriodSeconds(),
            std::nullopt);

  StreamMessage s = roundTrip(StreamMessage::status(remotePod(), "uid-1"));
  EXPECT_EQ(s.type, StreamMessageType::Status);

  StreamMessage r = roundTrip(StreamMessage::resyncDone({"a", "b"}));
  EXPECT_EQ(r.resyncOriginUids(), (std::vector<std::string>{"a", "b"}));

  StreamMessage k;
  EXPECT_EQ(roundTrip(k).type, StreamMessageType::Keepalive);
}

strait::v1::ReflectionEvent good() { return encodeStreamMessage(StreamMessage::apply(remotePod(), "u")); }

void expectBad(const strait::v1::ReflectionEvent& e, const std::string& field) {
  auto r = decodeStreamMessage(e);
  ASSERT_FALSE(r.ok()) << field;
  EXPECT_EQ(r.error().code, kube::Code::BadRequest);
  EXPECT_EQ(r.error().field, field) << r.error().message;
}

TEST(StreamMessages, MalformedMessagesAreNamedErrors) {
  auto e = good();
  e.set_type("EXPLODE");
  expectBad(e, "type");
  e = good();
  e.set_origin_uid("");
  expectBad(e, "origin_uid");
  e = good();
  e.mutable_object()->set_kind("Deployment");
  expectBad(e, "object.kind");
  e = good();
  e.mutable_object()->set_api_version("apps/v1");
  expectBad(e, "object.api_version");
  e = good();
  e.mutable_object()->set_namespace_("../etc");
  expectBad(e, "object.namespace");
  e = good();
  e.mutable_object()->set_name("");
  expectBad(e, "object.name");
  e = good();
  e.mutable_object()->set_json("{\"kind\":");
  expectBad(e, "object.json");
  e = good();
  e.mutable_object()->set_json("[1]");
  expectBad(e, "object.json");
  e = good();
  e.mutable_object()->set_json(std::string(100000, '[') );
  expectBad(e, "object.json");
  e = good();
  e.mutable_object()->set_json(std::string(kMaxStreamObjectBytes + 1, ' '));
  expectBad(e, "object.json");
  e = good();
  e.mutable_object()->set_name("other");  // envelope and object disagree
  expectBad(e, "object.json");
  e = good();
  e.mutable_object()->clear_json();
  expectBad(e, "object.json");
  strait::v1::ReflectionEvent done;
  done.set_type("RESYNC_DONE");
  done.mutable_object()->set_json(R"({"originUids":[1]})");
  expectBad(done, "object.json");
  done.mutable_object()->set_json("{}");
  expectBad(done, "object.json");
}

TEST(StreamMessages, RequestsAndRepliesRoundTripWithSeqAndError) {
  StreamMessage g = roundTrip(StreamMessage::get("ConfigMap", "web-c", "conf", 7));
  EXPECT_EQ(g.type, StreamMessageType::Get);
  EXPECT_EQ(g.seq, 7u);
  EXPECT_EQ(g.kind, "ConfigMap");
  EXPECT_TRUE(g.object.is_null());

  StreamMessage ok = roundTrip(StreamMessage::reply(9, remotePod()));
  EXPECT_EQ(ok.type, StreamMessageType::Reply);
  EXPECT_EQ(ok.seq, 9u);
  EXPECT_FALSE(ok.error.has_value());
  ASSERT_TRUE(ok.replyResult().ok());
  EXPECT_EQ(*ok.replyResult(), remotePod());

  StreamMessage none = roundTrip(StreamMessage::reply(10, json()));
  ASSERT_TRUE(none.replyResult().ok());
  EXPECT_TRUE(none.replyResult()->is_null());

  StreamMessage err = roundTrip(StreamMessage::reply(
      11, kube::makeError(kube::Code::Forbidden, "pod exceeds the grant: cpu requested 3")));
  ASSERT_FALSE(err.replyResult().ok());
  EXPECT_EQ(err.replyResult().code(), kube::Code::Forbidden);
  EXPECT_EQ(err.replyResult().error().message, "pod exceeds the grant: cpu requested 3");
  for (kube::Code c : {kube::Code::NotFound, kube::Code::Conflict, kube::Code::Gone,
                       kube::Code::Unavailable, kube::Code::Invalid}) {
    EXPECT_EQ(roundTrip(StreamMessage::reply(1, kube::makeError(c, "x"))).replyResult().code(), c);
  }

  StreamMessage a = StreamMessage::apply(remotePod(), "uid-1");
  a.seq = 42;
  EXPECT_EQ(roundTrip(a).seq, 42u);
  EXPECT_EQ(roundTrip(StreamMessage::ofType(StreamMessageType::Synced)).type,
            StreamMessageType::Synced);
}

TEST(StreamMessages, MalformedRequestsAndRepliesAreNamedErrors) {
  auto get = encodeStreamMessage(StreamMessage::get("Pod", "web-c", "p", 3));
  get.set_seq(0);
  expectBad(get, "seq");
  get = encodeStreamMessage(StreamMessage::get("Pod", "web-c", "p", 3));
  get.mutable_object()->set_json(remotePod().dump());
  expectBad(get, "object.json");
  get = encodeStreamMessage(StreamMessage::get("Deployment", "web-c", "p", 3));
  expectBad(get, "object.kind");

  auto reply = encodeStreamMessage(StreamMessage::reply(5, json()));
  reply.set_seq(0);
  expectBad(reply, "seq");
  reply = encodeStreamMessage(StreamMessage::reply(5, json()));
  reply.set_error_reason("Explode");
  expectBad(reply, "error_reason");
  reply.set_error_reason("Forbidden");
  reply.set_error_message(std::string(70000, 'x'));
  expectBad(reply, "error_message");
  reply = encodeStreamMessage(StreamMessage::reply(5, remotePod()));
  reply.mutable_object()->set_name("other");
  expectBad(reply, "object.json");
  // Only a REPLY carries an error.
  auto apply = good();
  apply.set_error_reason("Forbidden");
  expectBad(apply, "error_reason");
}


json exportedService() {
  return json::parse(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"db",
    "namespace":"shop","labels":{"strait.io/imported-from":"prov-1"}},
    "spec":{"type":"ClusterIP","ports":[{"name":"sql","protocol":"TCP","port":5432}]}})");
}

TEST(StreamMessages, ExportMessagesRoundTrip) {
  StreamMessage e = roundTrip(StreamMessage::exported(exportedService(), "svc-uid"));
  EXPECT_EQ(e.type, StreamMessageType::Export);
  EXPECT_EQ(e.kind, "Service");
  EXPECT_EQ(e.apiVersion, "v1");
  EXPECT_EQ(e.ns, "shop");
  EXPECT_EQ(e.name, "db");
  EXPECT_EQ(e.originUid, "svc-uid");
  EXPECT_EQ(e.object, exportedService());

  json slice = {{"apiVersion", "discovery.k8s.io/v1"},
                {"kind", "EndpointSlice"},
                {"metadata", {{"name", "db-x1"}, {"namespace", "shop"}}},
                {"addressType", "IPv4"},
                {"endpoints", json::array()}};
  StreamMessage es = roundTrip(StreamMessage::exported(slice, "slice-uid"));
  EXPECT_EQ(es.kind, "EndpointSlice");
  EXPECT_EQ(es.apiVersion, "discovery.k8s.io/v1");

  StreamMessage u = roundTrip(StreamMessage::unexport("EndpointSlice", "shop", "db-x1", "slice-uid"));
  EXPECT_EQ(u.type, StreamMessageType::Unexport);
  EXPECT_EQ(u.kind, "EndpointSlice");
  EXPECT_EQ(u.name, "db-x1");
  EXPECT_EQ(u.originUid, "slice-uid");
  EXPECT_TRUE(u.object.is_null());

  StreamMessage s = roundTrip(StreamMessage::exportSynced({"svc-uid", "slice-uid"}));
  EXPECT_EQ(s.type, StreamMessageType::ExportSynced);
  EXPECT_EQ(s.resyncOriginUids(), (std::vector<std::string>{"svc-uid", "slice-uid"}));
  EXPECT_TRUE(roundTrip(StreamMessage::exportSynced({})).resyncOriginUids().empty());

  // A consumer says whether it imports: a provider sends exports only to one that does.
  EXPECT_TRUE(roundTrip(StreamMessage::resyncBegin(true)).acceptsExports());
  EXPECT_TRUE(roundTrip(StreamMessage::resyncBegin(true)).acceptsStatusPatch());
  EXPECT_FALSE(roundTrip(StreamMessage::resyncBegin(false)).acceptsExports());
  EXPECT_TRUE(roundTrip(StreamMessage::resyncBegin(false)).acceptsStatusPatch());
  EXPECT_FALSE(roundTrip(StreamMessage::exportSynced({})).acceptsExports());
}

TEST(StreamMessages, MalformedExportMessagesAreNamedErrors) {
  // Only a Service or an EndpointSlice is exported.
  auto pod = encodeStreamMessage(StreamMessage::exported(remotePod(), "u"));
  expectBad(pod, "object.kind");
  auto e = encodeStreamMessage(StreamMessage::exported(exportedService(), "u"));
  e.set_origin_uid("");
  expectBad(e, "origin_uid");
  e = encodeStreamMessage(StreamMessage::exported(exportedService(), "u"));
  e.mutable_object()->clear_json();
  expectBad(e, "object.json");
  e = encodeStreamMessage(StreamMessage::exported(exportedService(), "u"));
  e.mutable_object()->set_name("other");  // envelope and object disagree
  expectBad(e, "object.json");
  e = encodeStreamMessage(StreamMessage::exported(exportedService(), "u"));
  e.mutable_object()->set_namespace_("Shop!");
  expectBad(e, "object.namespace");
  e = encodeStreamMessage(StreamMessage::exported(exportedService(), "u"));
  e.mutable_object()->set_api_version("discovery.k8s.io/v1");
  expectBad(e, "object.api_version");

  auto u = encodeStreamMessage(StreamMessage::unexport("Service", "shop", "db", "u"));
  u.mutable_object()->set_json(exportedService().dump());
  expectBad(u, "object.json");
  u = encodeStreamMessage(StreamMessage::unexport("Secret", "shop", "db", "u"));
  expectBad(u, "object.kind");
  u = encodeStreamMessage(StreamMessage::unexport("Service", "shop", "db", "u"));
  u.set_origin_uid("");
  expectBad(u, "origin_uid");

  strait::v1::ReflectionEvent synced;
  synced.set_type("EXPORT_SYNCED");
  synced.mutable_object()->set_json(R"({"originUids":"a"})");
  expectBad(synced, "object.json");
  synced.mutable_object()->set_json(R"({"originUids":[true]})");
  expectBad(synced, "object.json");
}

}  // namespace
}  // namespace strait::reflection
