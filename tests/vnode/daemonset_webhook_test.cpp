// vnode/daemonset_webhook.h: DaemonSets get `type NotIn [virtual-kubelet]` in every required
// node selector term (or one new term), idempotently; DaemonSets that select virtual nodes
// explicitly are left alone.
#include "vnode/daemonset_webhook.h"

#include <gtest/gtest.h>

#include "kube/base64.h"
#include "kube/patch.h"

namespace strait::vnode {
namespace {

using nlohmann::json;

json daemonSet(json podSpecExtra = json::object()) {
  json spec = {{"containers", json::array({{{"name", "c"}, {"image", "i"}}})},
               {"tolerations", json::array({{{"operator", "Exists"}}})}};
  spec.update(podSpecExtra);
  return {{"apiVersion", "apps/v1"},
          {"kind", "DaemonSet"},
          {"metadata", {{"name", "proxy"}, {"namespace", "kube-system"}}},
          {"spec",
           {{"selector", {{"matchLabels", {{"app", "proxy"}}}}},
            {"template", {{"metadata", {{"labels", {{"app", "proxy"}}}}}, {"spec", spec}}}}}};
}

json review(const json& ds, const std::string& op = "CREATE") {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request", {{"uid", "u-7"}, {"operation", op}, {"namespace", "kube-system"}, {"object", ds}}}};
}

json applyAnswer(const json& ds, const json& answer) {
  EXPECT_EQ(answer["response"]["allowed"], true);
  EXPECT_EQ(answer["response"]["uid"], "u-7");
  std::string b64 = answer["response"].value("patch", "");
  if (b64.empty()) return ds;
  EXPECT_EQ(answer["response"]["patchType"], "JSONPatch");
  auto raw = kube::base64Decode(b64);
  EXPECT_TRUE(raw.has_value());
  auto patched = kube::applyJsonPatch(ds, json::parse(*raw));
  EXPECT_TRUE(patched.ok()) << patched.error().message;
  return *patched;
}

const json& terms(const json& ds) {
  return ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
           ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
}

TEST(DaemonSetWebhookTest, NoAffinityGetsOneTermAndIsIdempotent) {
  for (const char* op : {"CREATE", "UPDATE"}) {
    json out = applyAnswer(daemonSet(), admitDaemonSet(review(daemonSet(), op)));
    ASSERT_EQ(terms(out).size(), 1u) << out.dump();
    EXPECT_EQ(terms(out)[0], json({{"matchExpressions", json::array({virtualNodeExclusion()})}}));
    EXPECT_EQ(virtualNodeExclusion(),
              json({{"key", "type"}, {"operator", "NotIn"}, {"values", json::array({"virtual-kubelet"})}}));
    // A second pass changes nothing.
    json again = admitDaemonSet(review(out, op));
    EXPECT_FALSE(again["response"].contains("patch"));
    EXPECT_TRUE(daemonSetPatch(out).empty());
  }
  json del = admitDaemonSet(review(daemonSet(), "DELETE"));
  EXPECT_FALSE(del["response"].contains("patch"));
}

TEST(DaemonSetWebhookTest, AppendsToEveryExistingTermKeepingOtherAffinity) {
  json affinity = {
      {"podAntiAffinity", {{"x", 1}}},
      {"nodeAffinity",
       {{"preferredDuringSchedulingIgnoredDuringExecution", json::array({{{"weight", 1}}})},
        {"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           json::array({{{"matchExpressions",
                          json::array({{{"key", "kubernetes.io/os"}, {"operator", "In"},
                                        {"values", json::array({"linux"})}}})}},
                        {{"matchFields", json::array({{{"key", "metadata.name"},
                                                       {"operator", "In"},
                                                       {"values", json::array({"node-a"})}}})}}})}}}}}};
  json ds = daemonSet({{"affinity", affinity}});
  json out = applyAnswer(ds, admitDaemonSet(review(ds)));
  ASSERT_EQ(terms(out).size(), 2u);
  EXPECT_EQ(terms(out)[0]["matchExpressions"].size(), 2u);
  EXPECT_EQ(terms(out)[0]["matchExpressions"][0]["key"], "kubernetes.io/os");
  EXPECT_EQ(terms(out)[0]["matchExpressions"][1], virtualNodeExclusion());
  EXPECT_EQ(terms(out)[1]["matchFields"][0]["values"][0], "node-a");
  EXPECT_EQ(terms(out)[1]["matchExpressions"], json::array({virtualNodeExclusion()}));
  const json& a = out["spec"]["template"]["spec"]["affinity"];
  EXPECT_EQ(a["podAntiAffinity"], json({{"x", 1}}));
  EXPECT_EQ(a["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"].size(), 1u);
  EXPECT_TRUE(daemonSetPatch(out).empty());
  // One term already excluded, the other not: only the other is completed.
  json half = ds;
  half["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
      ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
      ["matchExpressions"].push_back(virtualNodeExclusion());
  json done = applyAnswer(half, admitDaemonSet(review(half)));
  EXPECT_EQ(terms(done)[0]["matchExpressions"].size(), 2u);
  EXPECT_EQ(terms(done)[1]["matchExpressions"].size(), 1u);
}

TEST(DaemonSetWebhookTest, DaemonSetsSelectingVirtualNodesAreLeftAlone) {
  std::vector<json> explicitOnes = {
      daemonSet({{"nodeSelector", {{"type", "virtual-kubelet"}}}}),
      daemonSet({{"nodeSelector", {{"kubernetes.io/hostname", "strait-cloud"}}}}),
      daemonSet({{"nodeSelector", {{"strait.io/remote-cluster-id", "abc"}}}}),
      daemonSet({{"nodeName", "strait-cloud"}}),
  };
  auto withExpr = [](const char* part, json req) {
    return daemonSet({{"affinity",
                       {{"nodeAffinity",
                         {{"requiredDuringSchedulingIgnoredDuringExecution",
                           {{"nodeSelectorTerms",
                             json::array({{{part, json::array({req})}}})}}}}}}}});
  };
  explicitOnes.push_back(withExpr(
      "matchExpressions", {{"key", "type"}, {"operator", "In"}, {"values", json::array({"virtual-kubelet"})}}));
  explicitOnes.push_back(withExpr("matchExpressions", {{"key", "strait.io/remote-cluster-id"},
                                                       {"operator", "Exists"}}));
  explicitOnes.push_back(withExpr(
      "matchFields", {{"key", "metadata.name"}, {"operator", "In"}, {"values", json::array({"strait-cloud"})}}));
  for (const auto& ds : explicitOnes) {
    EXPECT_TRUE(selectsVirtualNodes(ds)) << ds.dump();
    EXPECT_FALSE(admitDaemonSet(review(ds))["response"].contains("patch")) << ds.dump();
  }
  // Not explicit: a different type, or a real node name.
  EXPECT_FALSE(selectsVirtualNodes(daemonSet({{"nodeSelector", {{"type", "edge"}}}})));
  EXPECT_FALSE(selectsVirtualNodes(withExpr(
      "matchFields", {{"key", "metadata.name"}, {"operator", "In"}, {"values", json::array({"node-a"})}})));
}

TEST(DaemonSetWebhookTest, MalformedReviewsAreAllowedUnchanged) {
  for (const json& bad : {json(), json::object(), json({{"request", 3}}),
                          json({{"request", {{"operation", "CREATE"}, {"object", "x"}}}}),
                          json({{"request", {{"operation", "CREATE"},
                                             {"object", {{"spec", {{"template", 1}}}}}}}})}) {
    json answer = admitDaemonSet(bad);
    EXPECT_EQ(answer["response"]["allowed"], true) << bad.dump();
    EXPECT_FALSE(answer["response"].contains("patch")) << bad.dump();
  }
}

}  // namespace
}  // namespace strait::vnode
