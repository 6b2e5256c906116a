// What a consumer's Services and EndpointSlices become in a provider (service_forge.h), and
// the mirror decision both reflectors take.
#include "reflection/service_forge.h"

#include <gtest/gtest.h>

#include "reflection/stream_messages.h"

namespace strait::reflection {
namespace {

using nlohmann::json;

const ObjectForgeContext kCtx{"consumer-1", "shop-consumer-1"};

// A NodePort Service as the consumer's API server stores it (defaults and allocations in).
json storedService() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Service",
    "metadata": {"name": "web", "namespace": "shop", "uid": "svc-uid-1",
                 "resourceVersion": "42", "labels": {"app": "web"},
                 "annotations": {"team": "a",
                   "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
    "spec": {
      "type": "NodePort", "selector": {"app": "web"},
      "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
      "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": "http",
                 "nodePort": 30080, "appProtocol": "http"},
                {"name": "metrics", "protocol": "TCP", "port": 9090, "targetPort": 9090,
                 "nodePort": 30090}],
      "sessionAffinity": "ClientIP",
      "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 600}},
      "publishNotReadyAddresses": true,
      "internalTrafficPolicy": "Local", "externalTrafficPolicy": "Local",
      "healthCheckNodePort": 31000,
      "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"
    },
    "status": {"loadBalancer": {}}
  })");
}

TEST(ForgeRemoteServiceTest, KeepsRoutingFieldsAndLeavesAllocationsToTheProvider) {
  kube::Result<json> out = forgeRemoteService(storedService(), kCtx);
  ASSERT_TRUE(out.ok()) << out.error().message;
  const json& r = *out;
  EXPECT_EQ(r["metadata"]["name"], "web");
  EXPECT_EQ(r["metadata"]["namespace"], "shop-consumer-1");
  EXPECT_FALSE(r["metadata"].contains("uid"));
  EXPECT_FALSE(r["metadata"].contains("resourceVersion"));
  EXPECT_EQ(r["metadata"]["labels"]["app"], "web");
  EXPECT_EQ(r["metadata"]["labels"]["strait.io/origin-cluster-id"], "consumer-1");
  EXPECT_EQ(r["metadata"]["labels"]["strait.io/origin-uid"], "svc-uid-1");
  EXPECT_EQ(r["metadata"]["annotations"]["team"], "a");
  EXPECT_EQ(r["metadata"]["annotations"]["strait.io/origin-namespace"], "shop");
  EXPECT_FALSE(r["metadata"]["annotations"].contains(
      "kubectl.kubernetes.io/last-applied-configuration"));
  const json& spec = r["spec"];
  EXPECT_EQ(spec["type"], "NodePort");
  EXPECT_EQ(spec["selector"], json({{"app", "web"}}));
  EXPECT_EQ(spec["sessionAffinity"], "ClientIP");
  EXPECT_EQ(spec["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"], 600);
  EXPECT_EQ(spec["publishNotReadyAddresses"], true);
  EXPECT_EQ(spec["internalTrafficPolicy"], "Local");
  EXPECT_EQ(spec["externalTrafficPolicy"], "Local");
  EXPECT_EQ(spec["ipFamilies"], json::array({"IPv4"}));
  EXPECT_EQ(spec["ipFamilyPolicy"], "SingleStack");
  for (const char* allocated : {"clusterIP", "clusterIPs", "healthCheckNodePort"}) {
    EXPECT_FALSE(spec.contains(allocated)) << allocated;
  }
  EXPECT_EQ(spec["ports"], json::parse(R"([
    {"name": "http", "protocol": "TCP", "port": 80, "targetPort": "http", "appProtocol": "http"},
    {"name": "metrics", "protocol": "TCP", "port": 9090, "targetPort": 9090}])"));
  EXPECT_FALSE(r.contains("status"));
}

TEST(ForgeRemoteServiceTest, HeadlessStaysHeadlessAndExternalNameKeepsItsName) {
  json headless = storedService();
  headless["spec"] = {{"clusterIP", "None"}, {"clusterIPs", {"None"}}, {"type", "ClusterIP"},
                      {"selector", {{"app", "db"}}}};
  kube::Result<json> h = forgeRemoteService(headless, kCtx);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ((*h)["spec"]["clusterIP"], "None");
  EXPECT_EQ((*h)["spec"]["clusterIPs"], json::array({"None"}));

  json ext = storedService();
  ext["spec"] = {{"type", "ExternalName"}, {"externalName", "db.example.com"}};
  kube::Result<json> e = forgeRemoteService(ext, kCtx);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)["spec"], json({{"type", "ExternalName"}, {"externalName", "db.example.com"}}));
}

TEST(ForgeRemoteServiceTest, RefusesWhatIsNotAService) {
  EXPECT_EQ(forgeRemoteService(json::object(), kCtx).code(), kube::Code::Invalid);
  json noUid = storedService();
  noUid["metadata"].erase("uid");
  EXPECT_EQ(forgeRemoteService(noUid, kCtx).code(), kube::Code::Invalid);
}

TEST(ServiceNeedsUpdateTest, IgnoresWhatTheProviderAllocatedButSeesPortAndSelectorChanges) {
  json forged = *forgeRemoteService(storedService(), kCtx);
  // As the provider stores it: its own clusterIP, nodePorts, status.
  json stored = forged;
  stored["metadata"]["uid"] = "remote-uid";
  stored["metadata"]["resourceVersion"] = "7";
  stored["spec"]["clusterIP"] = "10.200.0.5";
  stored["spec"]["clusterIPs"] = {"10.200.0.5"};
  stored["spec"]["healthCheckNodePort"] = 32000;
  stored["spec"]["ports"][0]["nodePort"] = 31111;
  stored["status"] = {{"loadBalancer", json::object()}};
  EXPECT_FALSE(serviceNeedsUpdate(forged, stored));

  json ports = storedService();
  ports["spec"]["ports"][0]["port"] = 8080;
  EXPECT_TRUE(serviceNeedsUpdate(*forgeRemoteService(ports, kCtx), stored));
  json selector = storedService();
  selector["spec"]["selector"] = {{"app", "web2"}};
  EXPECT_TRUE(serviceNeedsUpdate(*forgeRemoteService(selector, kCtx), stored));
  json labels = storedService();
  labels["metadata"]["labels"]["tier"] = "front";
  EXPECT_TRUE(serviceNeedsUpdate(*forgeRemoteService(labels, kCtx), stored));
}

TEST(ServiceReflectionDisabledTest, OnlyTheDisabledValueOptsOut) {
  json svc = storedService();
  EXPECT_FALSE(serviceReflectionDisabled(svc));
  svc["metadata"]["annotations"]["strait.io/reflection"] = "enabled";
  EXPECT_FALSE(serviceReflectionDisabled(svc));
  svc["metadata"]["annotations"]["strait.io/reflection"] = "disabled";
  EXPECT_TRUE(serviceReflectionDisabled(svc));
}

// A slice of the consumer's EndpointSlice controller: one home Pod, one offloaded Pod (on the
// virtual node), one home Pod terminating.
json storedSlice() {
  return json::parse(R"({
    "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
    "metadata": {"name": "web-abcde", "namespace": "shop", "uid": "slice-uid-1",
                 "labels": {"kubernetes.io/service-name": "web",
                            "endpointslice.kubernetes.io/managed-by":
                                "endpointslice-controller.k8s.io"},
                 "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": "x"},
                 "ownerReferences": [{"kind": "Service", "name": "web", "uid": "svc-uid-1"}]},
    "addressType": "IPv4",
    "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    "endpoints": [
      {"addresses": ["10.244.0.5"], "nodeName": "home-node", "zone": "z1",
       "conditions": {"ready": true, "serving": true, "terminating": false},
       "targetRef": {"kind": "Pod", "name": "web-1", "namespace": "shop"}},
      {"addresses": ["10.250.0.7"], "nodeName": "strait-cloud",
       "conditions": {"ready": true, "serving": true, "terminating": false}},
      {"addresses": ["10.244.0.6"], "nodeName": "home-node", "hostname": "web-2",
       "conditions": {"ready": false, "serving": true, "terminating": true}}
    ]
  })");
}

const IsVirtualNode kVirtual = [](const std::string& n) { return n == "strait-cloud"; };

TEST(ForgeRemoteEndpointSliceTest, CarriesOnlyTheConsumersOwnEndpointsManagedByStrait) {
  kube::Result<json> out = forgeRemoteEndpointSlice(storedSlice(), kCtx, kVirtual);
  ASSERT_TRUE(out.ok()) << out.error().message;
  const json& r = *out;
  EXPECT_EQ(r["apiVersion"], "discovery.k8s.io/v1");
  EXPECT_EQ(r["kind"], "EndpointSlice");
  EXPECT_EQ(r["metadata"]["name"], "web-abcde");
  EXPECT_EQ(r["metadata"]["namespace"], "shop-consumer-1");
  EXPECT_EQ(r["metadata"]["labels"]["kubernetes.io/service-name"], "web");
  EXPECT_EQ(r["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
            "endpointslice.strait.io");
  EXPECT_EQ(r["metadata"]["labels"]["strait.io/origin-uid"], "slice-uid-1");
  EXPECT_FALSE(r["metadata"].contains("ownerReferences"));
  EXPECT_FALSE(r["metadata"]["annotations"].contains(
      "endpoints.kubernetes.io/last-change-trigger-time"));
  EXPECT_EQ(r["addressType"], "IPv4");
  EXPECT_EQ(r["ports"], storedSlice()["ports"]);
  EXPECT_EQ(r["endpoints"], json::parse(R"([
    {"addresses": ["10.244.0.5"],
     "conditions": {"ready": true, "serving": true, "terminating": false}},
    {"addresses": ["10.244.0.6"], "hostname": "web-2",
     "conditions": {"ready": false, "serving": true, "terminating": true}}])"));
  EXPECT_TRUE(endpointSliceHasEndpoints(r));
}

TEST(ForgeRemoteEndpointSliceTest, ASliceOfOffloadedPodsOnlyHasNothingToReflect) {
  json slice = storedSlice();
  slice["endpoints"] = json::array({slice["endpoints"][1]});
  kube::Result<json> out = forgeRemoteEndpointSlice(slice, kCtx, kVirtual);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(endpointSliceHasEndpoints(*out));
}

TEST(ForgeRemoteEndpointSliceTest, RefusesASliceWithoutService) {
  json slice = storedSlice();
  slice["metadata"]["labels"].erase("kubernetes.io/service-name");
  kube::Result<json> out = forgeRemoteEndpointSlice(slice, kCtx, kVirtual);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.code(), kube::Code::Invalid);
  EXPECT_NE(out.error().message.find("kubernetes.io/service-name"), std::string::npos);
}

TEST(EndpointSliceNeedsUpdateTest, FollowsConditionChanges) {
  json forged = *forgeRemoteEndpointSlice(storedSlice(), kCtx, kVirtual);
  json stored = forged;
  stored["metadata"]["uid"] = "r";
  stored["metadata"]["resourceVersion"] = "3";
  EXPECT_FALSE(endpointSliceNeedsUpdate(forged, stored));
  json notReady = storedSlice();
  notReady["endpoints"][0]["conditions"]["ready"] = false;
  EXPECT_TRUE(endpointSliceNeedsUpdate(*forgeRemoteEndpointSlice(notReady, kCtx, kVirtual),
                                       stored));
}

TEST(EndpointSliceNotReadyTest, ClearsReadyAndServingKeepsTerminating) {
  json forged = *forgeRemoteEndpointSlice(storedSlice(), kCtx, kVirtual);
  bool changed = false;
  json out = endpointSliceNotReady(forged, &changed);
  EXPECT_TRUE(changed);
  for (const json& e : out["endpoints"]) {
    EXPECT_EQ(e["conditions"]["ready"], false);
    EXPECT_EQ(e["conditions"]["serving"], false);
  }
  EXPECT_EQ(out["endpoints"][1]["conditions"]["terminating"], true);
  EXPECT_EQ(out["endpoints"][0]["addresses"], forged["endpoints"][0]["addresses"]);
  endpointSliceNotReady(out, &changed);
  EXPECT_FALSE(changed);  // already marked: nothing to write
}

TEST(HoldEndpointSliceTest, KeepsTheConditionsSentAndReleaseRestoresThem) {
  const json forged = *forgeRemoteEndpointSlice(storedSlice(), kCtx, kVirtual);
  bool changed = false;
  json held = holdEndpointSlice(forged, &changed);
  EXPECT_TRUE(changed);
  for (const json& e : held["endpoints"]) {
    EXPECT_EQ(e["conditions"]["ready"], false);
    EXPECT_EQ(e["conditions"]["serving"], false);
  }
  json record = json::parse(
      held["metadata"]["annotations"][kAnnotationHeldEndpointConditions].get<std::string>());
  EXPECT_EQ(record["10.244.0.5"], forged["endpoints"][0]["conditions"]);
  EXPECT_EQ(record["10.244.0.6"], forged["endpoints"][1]["conditions"]);
  // Held again (the next watch round, or a mark after a stream outage): the record of what
  // was sent stays, not the not-ready conditions.
  json again = holdEndpointSlice(held, &changed);
  EXPECT_FALSE(changed);
  EXPECT_EQ(again, held);

  json released = releaseEndpointSlice(held, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(released, forged);
  releaseEndpointSlice(released, &changed);
  EXPECT_FALSE(changed);  // nothing held: nothing to write

  // An endpoint the record does not name keeps its conditions; a record edited into
  // something else than an object is dropped, the conditions kept.
  json added = held;
  added["endpoints"].push_back({{"addresses", {"10.244.0.9"}}, {"conditions", {{"ready", false}}}});
  EXPECT_EQ(releaseEndpointSlice(added)["endpoints"][2]["conditions"]["ready"], false);
  json broken = held;
  broken["metadata"]["annotations"][kAnnotationHeldEndpointConditions] = "[1,";
  json out = releaseEndpointSlice(broken, &changed);
  EXPECT_TRUE(changed);
  EXPECT_FALSE(out["metadata"]["annotations"].contains(kAnnotationHeldEndpointConditions));
  EXPECT_EQ(out["endpoints"], held["endpoints"]);
}

TEST(DecideMirrorTest, NeverTouchesWhatIsNotOurs) {
  MirrorInput in;
  in.wanted = true;
  in.remoteExists = true;
  in.remoteOurs = false;
  EXPECT_EQ(decideMirror(in), MirrorAction::Conflict);
  in.wanted = false;
  EXPECT_EQ(decideMirror(in), MirrorAction::None);  // not wanted: not deleted either
}

TEST(DecideMirrorTest, CreatesUpdatesDeletes) {
  MirrorInput in;
  in.wanted = true;
  EXPECT_EQ(decideMirror(in), MirrorAction::Apply);
  in.remoteExists = in.remoteOurs = in.remoteSameOrigin = true;
  EXPECT_EQ(decideMirror(in), MirrorAction::None);
  in.differs = true;
  EXPECT_EQ(decideMirror(in), MirrorAction::Apply);
  in.remoteSameOrigin = false;  // an earlier incarnation of the same name
  EXPECT_EQ(decideMirror(in), MirrorAction::Delete);
  in.wanted = false;
  EXPECT_EQ(decideMirror(in), MirrorAction::Delete);
  in.remoteExists = in.remoteOurs = false;
  EXPECT_EQ(decideMirror(in), MirrorAction::None);
}

TEST(StreamMessagesTest, CarriesServicesAndEndpointSlicesInTheirOwnVersions) {
  json slice = *forgeRemoteEndpointSlice(storedSlice(), kCtx, kVirtual);
  StreamMessage m = StreamMessage::apply(slice, "slice-uid-1");
  EXPECT_EQ(m.apiVersion, "discovery.k8s.io/v1");
  kube::Result<StreamMessage> back = decodeStreamMessage(encodeStreamMessage(m));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->kind, "EndpointSlice");
  EXPECT_EQ(back->object, slice);

  StreamMessage svc = StreamMessage::apply(*forgeRemoteService(storedService(), kCtx), "u");
  ASSERT_TRUE(decodeStreamMessage(encodeStreamMessage(svc)).ok());

  // An EndpointSlice claimed as v1 is refused, naming the field.
  strait::v1::ReflectionEvent e = encodeStreamMessage(m);
  e.mutable_object()->set_api_version("v1");
  kube::Result<StreamMessage> bad = decodeStreamMessage(e);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), kube::Code::BadRequest);
  EXPECT_NE(bad.error().message.find("object.api_version"), std::string::npos);
  EXPECT_EQ(StreamMessage::remove("EndpointSlice", "ns", "n", "u", std::nullopt).apiVersion,
            "discovery.k8s.io/v1");
}

}  // namespace
}  // namespace strait::reflection
