// STATUS_PATCH on the reflection stream: the merge patch between two versions of a Pod turns
// the first into exactly the second, is much smaller than the Pod, is refused where it could
// not say the change exactly (a null member in the new version), survives the wire, and is checked
// on arrival (base version, kind, no change of identity). RESYNC_BEGIN says whether the
// consumer accepts it.
#include <gtest/gtest.h>

#include "kube/patch.h"
#include "reflection/stream_messages.h"

namespace strait::reflection {
namespace {

using json = nlohmann::json;

// A provider Pod as the API server stores it just after creation (Pending, unscheduled).
json pendingPod() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web-0", "namespace": "web-c1", "uid": "r-1", "resourceVersion": "41",
      "creationTimestamp": "2026-12-01T10:00:00Z",
      "labels": {"app": "web", "strait.io/origin-uid": "l-1",
                 "strait.io/origin-cluster-id": "c0c0c0c0-1111-4222-8333-444455556666"},
      "annotations": {"strait.io/origin-namespace": "web"}},
    "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
      "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
      "terminationMessagePath": "/dev/termination-log", "imagePullPolicy": "IfNotPresent"}],
      "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
      "serviceAccountName": "default", "schedulerName": "default-scheduler",
      "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                       "effect": "NoExecute", "tolerationSeconds": 300}],
      "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority", "priority": 0},
    "status": {"phase": "Pending", "qosClass": "Burstable"}
  })");
}

// The same Pod bound and running.
json runningPod() {
  json p = pendingPod();
  p["metadata"]["resourceVersion"] = "57";
  p["spec"]["nodeName"] = "provider-node-3";
  p["status"] = json::parse(R"({
    "phase": "Running", "qosClass": "Burstable", "hostIP": "172.18.0.4",
    "hostIPs": [{"ip": "172.18.0.4"}], "podIP": "10.0.3.7", "podIPs": [{"ip": "10.0.3.7"}],
    "startTime": "2026-12-01T10:00:01Z",
    "conditions": [
      {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-01T10:00:00Z"},
      {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-12-01T10:00:01Z"},
      {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-12-01T10:00:02Z"},
      {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-01T10:00:02Z"}],
    "containerStatuses": [{"name": "app", "ready": true, "started": true, "restartCount": 0,
      "image": "nginx:1.27", "imageID": "sim://nginx:1.27", "containerID": "sim://abc",
      "state": {"running": {"startedAt": "2026-12-01T10:00:02Z"}}}]
  })");
  return p;
}

TEST(CreateMergePatchTest, ApplyingItGivesExactlyTheNewVersion) {
  const json before = pendingPod(), after = runningPod();
  json patch = createMergePatch(before, after);
  kube::Result<json> applied = kube::applyMergePatch(before, patch);
  ASSERT_TRUE(applied.ok()) << applied.error().message;
  EXPECT_EQ(*applied, after);
  // Only what changed travels: the spec's untouched fields and the metadata are not in it.
  EXPECT_EQ(patch["spec"], json({{"nodeName", "provider-node-3"}}));
  EXPECT_EQ(patch["metadata"], json({{"resourceVersion", "57"}}));
  EXPECT_FALSE(patch.contains("apiVersion"));
  // A member that disappears becomes null; applied, it is gone.
  json later = after;
  later["status"].erase("podIP");
  later["metadata"]["labels"].erase("app");
  json removal = createMergePatch(after, later);
  EXPECT_TRUE(removal["status"]["podIP"].is_null());
  EXPECT_TRUE(removal["metadata"]["labels"]["app"].is_null());
  EXPECT_EQ(*kube::applyMergePatch(after, removal), later);
  // No change: an empty patch.
  EXPECT_EQ(createMergePatch(after, after), json::object());
}

TEST(StatusPatchTest, IsSmallAndRoundTripsTheWire) {
  const json before = pendingPod(), after = runningPod();
  std::optional<StreamMessage> m = StreamMessage::statusPatch(before, after, "l-1");
  ASSERT_TRUE(m.has_value());
  v1::ReflectionEvent e = encodeStreamMessage(*m);
  EXPECT_EQ(e.type(), "STATUS_PATCH");
  EXPECT_EQ(e.base_resource_version(), "41");
  v1::ReflectionEvent whole = encodeStreamMessage(StreamMessage::status(after, "l-1"));
  EXPECT_LT(e.ByteSizeLong() * 3 / 2, whole.ByteSizeLong())
      << e.ByteSizeLong() << " vs " << whole.ByteSizeLong();
  kube::Result<StreamMessage> back = decodeStreamMessage(e);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->type, StreamMessageType::StatusPatch);
  EXPECT_EQ(back->ns, "web-c1");
  EXPECT_EQ(back->name, "web-0");
  EXPECT_EQ(back->originUid, "l-1");
  EXPECT_EQ(back->baseResourceVersion, "41");
  kube::Result<json> patched = back->applyStatusPatch(before);
  ASSERT_TRUE(patched.ok()) << patched.error().message;
  EXPECT_EQ(*patched, after);
}

TEST(StatusPatchTest, ANullMemberInTheNewVersionOrAnotherUidGetsAWholeStatus) {
  json after = runningPod();
  after["status"]["nominatedNodeName"] = nullptr;
  EXPECT_FALSE(StreamMessage::statusPatch(pendingPod(), after, "l-1").has_value());
  json other = runningPod();
  other["metadata"]["uid"] = "r-2";  // re-created under the same name
  EXPECT_FALSE(StreamMessage::statusPatch(pendingPod(), other, "l-1").has_value());
  json noVersion = pendingPod();
  noVersion["metadata"].erase("resourceVersion");
  EXPECT_FALSE(StreamMessage::statusPatch(noVersion, runningPod(), "l-1").has_value());
}

// Every Pod condition an API server writes carries "lastProbeTime": null. A null inside an
// array travels whole with the array (RFC 7386 replaces arrays), so such a Pod still gets a
// patch, and applying it gives exactly the new version, nulls included.
TEST(StatusPatchTest, NullsInsideArraysLikeLastProbeTimeStillGetAPatch) {
  json after = runningPod();
  for (json& c : after["status"]["conditions"]) c["lastProbeTime"] = nullptr;
  after["status"]["containerStatuses"][0]["lastState"] = json::object({{"terminated", nullptr}});
  std::optional<StreamMessage> m = StreamMessage::statusPatch(pendingPod(), after, "l-1");
  ASSERT_TRUE(m.has_value());
  kube::Result<json> applied = m->applyStatusPatch(pendingPod());
  ASSERT_TRUE(applied.ok()) << applied.error().message;
  EXPECT_EQ(*applied, after);
  EXPECT_TRUE((*applied)["status"]["conditions"][0]["lastProbeTime"].is_null());
  // The next change (Ready flips) patches the version with the nulls just as well.
  json notReady = after;
  notReady["metadata"]["resourceVersion"] = "60";
  notReady["status"]["conditions"][3]["status"] = "False";
  std::optional<StreamMessage> again = StreamMessage::statusPatch(after, notReady, "l-1");
  ASSERT_TRUE(again.has_value());
  kube::Result<json> applied2 = again->applyStatusPatch(*applied);
  ASSERT_TRUE(applied2.ok()) << applied2.error().message;
  EXPECT_EQ(*applied2, notReady);
}

TEST(StatusPatchTest, DecodeRefusesWhatIsNotAPodPatchOnAKnownBase) {
  v1::ReflectionEvent e =
      encodeStreamMessage(*StreamMessage::statusPatch(pendingPod(), runningPod(), "l-1"));
  v1::ReflectionEvent noBase = e;
  noBase.clear_base_resource_version();
  kube::Result<StreamMessage> r = decodeStreamMessage(noBase);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "reflection stream message: base_resource_version: required on STATUS_PATCH");
  v1::ReflectionEvent configMap = e;
  configMap.mutable_object()->set_kind("ConfigMap");
  r = decodeStreamMessage(configMap);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "reflection stream message: object.kind: only a Pod's status is patched");
  v1::ReflectionEvent status = encodeStreamMessage(StreamMessage::status(runningPod(), "l-1"));
  status.set_base_resource_version("41");
  r = decodeStreamMessage(status);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "reflection stream message: base_resource_version: only a STATUS_PATCH carries one");
  v1::ReflectionEvent noOrigin = e;
  noOrigin.clear_origin_uid();
  EXPECT_FALSE(decodeStreamMessage(noOrigin).ok());
}

TEST(StatusPatchTest, APatchMayNotChangeThePodsIdentity) {
  StreamMessage m = *StreamMessage::statusPatch(pendingPod(), runningPod(), "l-1");
  m.object["metadata"]["name"] = "someone-else";
  kube::Result<json> r = m.applyStatusPatch(pendingPod());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "reflection stream message: object.json: a STATUS_PATCH may not change the kind, "
            "namespace, name or uid");
  m.object = {{"metadata", {{"uid", "r-9"}}}};
  EXPECT_FALSE(m.applyStatusPatch(pendingPod()).ok());
}

TEST(StatusPatchTest, ResyncBeginSaysWhetherTheConsumerAcceptsPatches) {
  kube::Result<StreamMessage> m = decodeStreamMessage(encodeStreamMessage(StreamMessage::resyncBegin()));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(m->acceptsStatusPatch());
  // An earlier consumer's RESYNC_BEGIN carries nothing: whole STATUS messages only.
  m = decodeStreamMessage(encodeStreamMessage(StreamMessage::ofType(StreamMessageType::ResyncBegin)));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_FALSE(m->acceptsStatusPatch());
}

}  // namespace
}  // namespace strait::reflection
