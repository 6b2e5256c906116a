// vnode/toleration_webhook.h: offloaded namespaces' Pods get the toleration (and, for one
// provider, the node affinity); DaemonSet Pods and other namespaces are left alone.
#include "vnode/toleration_webhook.h"

#include <gtest/gtest.h>

#include "kube/base64.h"
#include "kube/patch.h"

namespace strait::vnode {
namespace {

using nlohmann::json;

json review(const json& pod, const std::string& ns = "demo") {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "u-1"}, {"operation", "CREATE"}, {"namespace", ns}, {"object", pod}}}};
}

const json kPod = json::parse(R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}]}})");

OffloadingLookup lookup(Offloading o) {
  return [o](const std::string& ns) -> std::optional<Offloading> {
    if (ns == "demo") return o;
    return Offloading{};
  };
}

json applyPatch(const json& pod, const json& answer) {
  std::string b64 = answer["response"].value("patch", "");
  if (b64.empty()) return pod;
  auto raw = kube::base64Decode(b64);
  EXPECT_TRUE(raw.has_value());
  auto patched = kube::applyJsonPatch(pod, json::parse(*raw));
  EXPECT_TRUE(patched.ok()) << patched.error().message;
  return *patched;
}

TEST(TolerationWebhookTest, OffloadedNamespaceGetsTheToleration) {
  Offloading o{true, "", reflection::NamingStrategy::Default};
  json ans = admitPod(review(kPod), lookup(o), {});
  EXPECT_EQ(ans["response"]["uid"], "u-1");
  EXPECT_EQ(ans["response"]["allowed"], true);
  EXPECT_EQ(ans["response"]["patchType"], "JSONPatch");
  json pod = applyPatch(kPod, ans);
  ASSERT_EQ(pod["spec"]["tolerations"].size(), 2u);
  EXPECT_EQ(pod["spec"]["tolerations"][0]["key"], "virtual-node.strait.io/not-allowed");
  EXPECT_EQ(pod["spec"]["tolerations"][0]["effect"], "NoExecute");
  // A virtual node without a tunnel is NetworkUnavailable, which taints it NoSchedule.
  EXPECT_EQ(pod["spec"]["tolerations"][1]["key"], "node.kubernetes.io/network-unavailable");
  EXPECT_EQ(pod["spec"]["tolerations"][1]["effect"], "NoSchedule");
  EXPECT_FALSE(pod["spec"].contains("affinity"));
  // A second pass changes nothing (already tolerated).
  EXPECT_TRUE(tolerationPatch(pod, o, {}).empty());
}

TEST(TolerationWebhookTest, OtherNamespacesAndDaemonSetPodsAreLeftAlone) {
  Offloading o{true, "", reflection::NamingStrategy::Default};
  json other = admitPod(review(kPod, "elsewhere"), lookup(o), {});
  EXPECT_FALSE(other["response"].contains("patch"));
  EXPECT_EQ(other["response"]["allowed"], true);
  json ds = kPod;
  ds["metadata"]["ownerReferences"] =
      json::parse(R"([{"apiVersion":"apps/v1","kind":"DaemonSet","name":"d","uid":"x","controller":true}])");
  EXPECT_FALSE(admitPod(review(ds), lookup(o), {})["response"].contains("patch"));
  // Unknown namespace (lookup failed), malformed reviews: allowed, unchanged.
  EXPECT_FALSE(admitPod(review(kPod), [](const std::string&) { return std::nullopt; }, {})
                   ["response"].contains("patch"));
  for (const json& bad : {json(), json::array(), json::parse(R"({"request":7})"),
                          json::parse(R"({"request":{"operation":"CREATE","object":"x"}})")}) {
    json a = admitPod(bad, lookup(o), {});
    EXPECT_EQ(a["response"]["allowed"], true) << bad.dump();
    EXPECT_FALSE(a["response"].contains("patch")) << bad.dump();
  }
}

TEST(TolerationWebhookTest, OneProviderAddsAffinityKeepingThePodsOwnTerms) {
  Offloading o{true, "cloud", reflection::NamingStrategy::Default};
  json pod = json::parse(R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}],
    "tolerations":[{"key":"other","operator":"Exists"}],
    "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{
      "nodeSelectorTerms":[{"matchExpressions":[{"key":"disk","operator":"In","values":["ssd"]}]}]}}}}})");
  json out = applyPatch(pod, admitPod(review(pod), lookup(o), {}));
  ASSERT_EQ(out["spec"]["tolerations"].size(), 3u);  // its own and the two added
  const json& terms = out["spec"]["affinity"]["nodeAffinity"]
                         ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 2u);
  for (const json& t : terms) {
    ASSERT_EQ(t["matchExpressions"].size(), 2u);
    EXPECT_EQ(t["matchExpressions"][0]["key"], "disk");
  }
  EXPECT_EQ(terms[0]["matchExpressions"][1]["operator"], "DoesNotExist");
  EXPECT_EQ(terms[1]["matchExpressions"][1]["values"][0], "strait-cloud");
  // No taint configured (and network-unavailable not tolerated): no toleration, the
  // affinity still applies.
  TolerationWebhookConfig noTaint;
  noTaint.taintEffect = "";
  noTaint.tolerateNetworkUnavailable = false;
  json ops = tolerationPatch(kPod, o, noTaint);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0]["path"], "/spec/affinity");
}

}  // namespace
}  // namespace strait::vnode
