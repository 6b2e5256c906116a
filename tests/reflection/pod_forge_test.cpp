#include "reflection/pod_forge.h"

#include <gtest/gtest.h>

#include "reflection/labels.h"

namespace strait::reflection {
namespace {

using nlohmann::json;

// A Pod as the consumer's API server stores it after admission and binding.
json localPod() {
  return json::parse(R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "web-7d4f", "namespace": "web", "uid": "uid-1",
    "resourceVersion": "42", "generation": 1, "generateName": "web-",
    "creationTimestamp": "2026-11-30T04:00:00Z",
    "labels": {"app": "web"}, "annotations": {"note": "x"},
    "finalizers": ["example.com/f"],
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                         "uid": "rs-uid", "controller": true}]},
  "spec": {
    "nodeName": "strait-cloud", "schedulerName": "default-scheduler",
    "priority": 1000, "priorityClassName": "high", "preemptionPolicy": "Never",
    "schedulingGates": [], "readinessGates": [{"conditionType": "example.com/ready"}],
    "serviceAccountName": "builder",
    "nodeSelector": {"type": "virtual-kubelet", "topology.kubernetes.io/zone": "eu-1a"},
    "tolerations": [
      {"key": "virtual-node.strait.io/not-allowed", "operator": "Exists", "effect": "NoExecute"},
      {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
       "tolerationSeconds": 300}],
    "affinity": {
      "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
          {"matchExpressions": [{"key": "strait.io/remote-cluster-id", "operator": "In",
                                 "values": ["p1"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
          {"weight": 1, "preference": {"matchExpressions": [
            {"key": "type", "operator": "In", "values": ["virtual-kubelet"]}]}},
          {"weight": 2, "preference": {"matchExpressions": [
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["big"]}]}}]},
      "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "namespaces": ["web", "other"],
         "topologyKey": "kubernetes.io/hostname"}]}},
    "containers": [{"name": "app", "image": "nginx:1",
      "env": [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
        {"name": "UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
        {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
        {"name": "PLAIN", "value": "v"}],
      "volumeMounts": [
        {"name": "kube-api-access-abcde", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"},
        {"name": "conf", "mountPath": "/etc/conf"}]}],
    "volumes": [
      {"name": "kube-api-access-abcde", "projected": {"sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
          "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}},
      {"name": "conf", "configMap": {"name": "web-conf"}}]
  },
  "status": {"phase": "Pending", "qosClass": "BestEffort"}
})");
}

PodForgeContext ctx() {
  PodForgeContext c;
  c.consumerId = "consumer-1";
  c.remoteNamespace = "web-consumer-1";
  c.virtualNodeName = "strait-cloud";
  c.virtualNodeAddress = "10.0.0.9";
  c.virtualNodeLabelKeys = {"type", "strait.io/remote-cluster-id", "kubernetes.io/hostname"};
  return c;
}

json envOf(const json& pod, const std::string& name) {
  for (const json& e : pod["spec"]["containers"][0]["env"]) {
    if (e["name"] == name) return e;
  }
  return json();
}

TEST(PodForge, MetadataIsMappedWithOriginMarkers) {
  auto r = forgeRemotePod(localPod(), ctx());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const json& m = (*r)["metadata"];
  EXPECT_EQ(m["name"], "web-7d4f");
  EXPECT_EQ(m["namespace"], "web-consumer-1");
  EXPECT_EQ(m["labels"]["app"], "web");
  EXPECT_EQ(m["labels"][std::string(kLabelOriginClusterId)], "consumer-1");
  EXPECT_EQ(m["labels"][std::string(kLabelOriginUid)], "uid-1");
  EXPECT_EQ(m["labels"]["strait.io/managed-by"], "strait");
  EXPECT_EQ(m["annotations"]["note"], "x");
  EXPECT_EQ(m["annotations"][std::string(kAnnotationOriginNamespace)], "web");
  for (const char* gone : {"uid", "resourceVersion", "generation", "generateName",
                           "creationTimestamp", "finalizers", "ownerReferences"}) {
    EXPECT_FALSE(m.contains(gone)) << gone;
  }
  EXPECT_FALSE(r->contains("status"));
  EXPECT_TRUE(isOwnedBy(*r, "consumer-1"));
  EXPECT_FALSE(isOwnedBy(*r, "consumer-2"));
  EXPECT_EQ(originUid(*r), "uid-1");
}

TEST(PodForge, SchedulingFieldsAreStripped) {
  json spec = (*forgeRemotePod(localPod(), ctx()))["spec"];
  for (const char* gone : {"nodeName", "schedulerName", "priority", "priorityClassName",
                           "preemptionPolicy", "schedulingGates", "readinessGates"}) {
    EXPECT_FALSE(spec.contains(gone)) << gone;
  }
  EXPECT_EQ(spec["nodeSelector"], json({{"topology.kubernetes.io/zone", "eu-1a"}}));
  ASSERT_EQ(spec["tolerations"].size(), 1u);
  EXPECT_EQ(spec["tolerations"][0]["key"], "node.kubernetes.io/not-ready");
  const json& na = spec["affinity"]["nodeAffinity"];
  // The required term selected only the virtual node: satisfied, so dropped.
  EXPECT_FALSE(na.contains("requiredDuringSchedulingIgnoredDuringExecution"));
  ASSERT_EQ(na["preferredDuringSchedulingIgnoredDuringExecution"].size(), 1u);
  EXPECT_EQ(na["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"], 2);
  EXPECT_EQ(spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                [0]["namespaces"],
            json({"web-consumer-1", "other"}));
}

TEST(PodForge, RequiredAffinityOnOtherKeysIsKept) {
  json pod = localPod();
  pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
      json::parse(R"({"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "type", "operator": "In", "values": ["virtual-kubelet"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]}]})");
  json na = (*forgeRemotePod(pod, ctx()))["spec"]["affinity"]["nodeAffinity"];
  json exprs = na["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
                 ["matchExpressions"];
  ASSERT_EQ(exprs.size(), 1u);
  EXPECT_EQ(exprs[0]["key"], "kubernetes.io/arch");
}

TEST(PodForge, ServiceAccountTokenVolumeIsLeftToTheProvider) {
  json spec = (*forgeRemotePod(localPod(), ctx()))["spec"];
  ASSERT_EQ(spec["volumes"].size(), 1u);
  EXPECT_EQ(spec["volumes"][0]["name"], "conf");
  ASSERT_EQ(spec["containers"][0]["volumeMounts"].size(), 1u);
  EXPECT_EQ(spec["containers"][0]["volumeMounts"][0]["name"], "conf");
  EXPECT_EQ(spec["serviceAccountName"], "builder");
}

TEST(PodForge, ServiceAccountTokenCanComeFromAReflectedSecret) {
  PodForgeContext c = ctx();
  c.serviceAccountTokenSecret = "builder-token";
  json spec = (*forgeRemotePod(localPod(), c))["spec"];
  ASSERT_EQ(spec["volumes"].size(), 2u);
  const json& src = spec["volumes"][0]["projected"]["sources"][0];
  EXPECT_EQ(src["secret"]["name"], "builder-token");
  EXPECT_EQ(src["secret"]["items"][0]["path"], "token");
  EXPECT_EQ(spec["containers"][0]["volumeMounts"].size(), 2u);
}

TEST(PodForge, DownwardApiEnvIsResolved) {
  json pod = *forgeRemotePod(localPod(), ctx());
  // status.podIP stays a fieldRef: the provider's kubelet fills in the Pod's real IP.
  EXPECT_EQ(envOf(pod, "POD_IP")["valueFrom"]["fieldRef"]["fieldPath"], "status.podIP");
  EXPECT_EQ(envOf(pod, "NS"), json({{"name", "NS"}, {"value", "web"}}));
  EXPECT_EQ(envOf(pod, "NODE")["value"], "strait-cloud");
  EXPECT_EQ(envOf(pod, "HOST_IP")["value"], "10.0.0.9");
  EXPECT_EQ(envOf(pod, "UID")["value"], "uid-1");
  EXPECT_TRUE(envOf(pod, "APP").contains("valueFrom"));
  EXPECT_EQ(envOf(pod, "PLAIN")["value"], "v");
}

TEST(PodForge, APoolNodesPodIsPinnedToThePool) {
  PodForgeContext c = ctx();
  c.virtualNodeLabelKeys.insert("strait.io/peering-pool");
  peering::PoolSpec gpu;
  gpu.name = "gpu";
  gpu.nodeSelector = {{"nvidia.com/gpu.present", "true"}};
  c.poolOfNode = [gpu](const std::string& node) -> std::optional<peering::PoolSpec> {
    if (node == "strait-cloud-gpu") return gpu;
    return std::nullopt;
  };
  json local = localPod();
  local["spec"]["nodeName"] = "strait-cloud-gpu";
  local["spec"]["nodeSelector"]["strait.io/peering-pool"] = "gpu";
  auto r = forgeRemotePod(local, c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["metadata"]["labels"]["strait.io/peering-pool"], "gpu");
  // The pool's selector added; the pool node's own label key stripped, others kept.
  EXPECT_EQ((*r)["spec"]["nodeSelector"],
            json({{"nvidia.com/gpu.present", "true"}, {"topology.kubernetes.io/zone", "eu-1a"}}));
  EXPECT_EQ(peering::podPool(*r), "gpu");
  EXPECT_TRUE(peering::podPinnedTo(*r, gpu.nodeSelector));
  EXPECT_EQ(envOf(*r, "NODE")["value"], "strait-cloud-gpu");

  // Bound to the peering's own node: not pinned, whatever poolOfNode says.
  auto plain = forgeRemotePod(localPod(), c);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE((*plain)["metadata"]["labels"].contains("strait.io/peering-pool"));
  EXPECT_FALSE((*plain)["spec"]["nodeSelector"].contains("nvidia.com/gpu.present"));

  // A selector the pool's nodes can never match is refused, naming it.
  local["spec"]["nodeSelector"]["nvidia.com/gpu.present"] = "false";
  auto contradicts = forgeRemotePod(local, c);
  ASSERT_FALSE(contradicts.ok());
  EXPECT_EQ(contradicts.error().code, kube::Code::Invalid);
  EXPECT_NE(contradicts.error().message.find("nvidia.com/gpu.present"), std::string::npos)
      << contradicts.error().message;
}

TEST(PodForge, DaemonSetPodsAreRefused) {
  json pod = localPod();
  pod["metadata"]["ownerReferences"][0]["kind"] = "DaemonSet";
  auto r = forgeRemotePod(pod, ctx());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, kube::Code::Forbidden);
  EXPECT_NE(r.error().message.find("DaemonSet"), std::string::npos);
  EXPECT_TRUE(isDaemonSetPod(pod));
}

TEST(PodForge, MalformedPodsAreErrorsNotCrashes) {
  for (const char* text :
       {"null", "[]", "{}", R"({"metadata":{"name":"a","namespace":"n","uid":"u"}})",
        R"({"metadata":{"name":"a","namespace":"n","uid":"u"},"spec":{"containers":[]}})",
        R"({"metadata":{"name":"a","namespace":"n","uid":"u"},"spec":{"containers":[1]}})",
        R"({"metadata":{"name":"a","namespace":"n"},"spec":{"containers":[{}]}})"}) {
    auto r = forgeRemotePod(json::parse(text), ctx());
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().code, kube::Code::Invalid) << text;
  }
  // Mistyped nested fields are tolerated (copied as they are or skipped), never a throw.
  json odd = json::parse(R"({"metadata":{"name":"a","namespace":"n","uid":"u",
    "ownerReferences":[{"kind":5,"controller":true}]},
    "spec":{"containers":[{"name":"c","env":[{"name":"x","valueFrom":{"fieldRef":{"fieldPath":7}}},
      3]}],"tolerations":[{"key":1},"x"],"nodeSelector":{"type":1},"volumes":[{"name":2,
      "projected":{"sources":[{"serviceAccountToken":{"path":9}}]}}],
      "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms":[{"matchExpressions":[{"key":3}]},7]}}}}})");
  EXPECT_TRUE(forgeRemotePod(odd, ctx()).ok());
}

TEST(PodForge, MutableFieldsSeeImageAndLabelChangesOnly) {
  json a = *forgeRemotePod(localPod(), ctx());
  json b = a;
  b["spec"]["containers"][0]["resources"] = {{"requests", {{"cpu", "1"}}}};
  EXPECT_EQ(mutablePodFields(a), mutablePodFields(b));
  b["spec"]["containers"][0]["image"] = "nginx:2";
  EXPECT_NE(mutablePodFields(a), mutablePodFields(b));
  json c = a;
  c["metadata"]["labels"]["tier"] = "front";
  EXPECT_NE(mutablePodFields(a), mutablePodFields(c));
}

}  // namespace
}  // namespace strait::reflection
