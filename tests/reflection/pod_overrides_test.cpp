// reflection/pod_overrides.h: OffloadingOverride validation (every problem named by field),
// provider and Pod selection, and what each rule and patch does to a forged remote Pod,
// including through forgeRemotePod so that the compared fields are the overridden ones.
#include "reflection/pod_overrides.h"

#include <gtest/gtest.h>

#include "reflection/pod_forge.h"

namespace strait::reflection {
namespace {

using nlohmann::json;

json override(const json& spec, const std::string& name = "o1") {
  return {{"apiVersion", "strait.io/v1alpha1"},
          {"kind", "OffloadingOverride"},
          {"metadata", {{"name", name}, {"namespace", "demo"}}},
          {"spec", spec}};
}

PodOverride parsed(const json& spec) {
  kube::Result<PodOverride> o = parsePodOverride(override(spec));
  EXPECT_TRUE(o.ok()) << o.error().message;
  return o.ok() ? *o : PodOverride{};
}

json remotePod() {
  return json::parse(R"({"apiVersion":"v1","kind":"Pod",
    "metadata":{"name":"web","namespace":"demo-c1",
      "labels":{"app":"web","strait.io/origin-uid":"u1"},"annotations":{"a":"1"}},
    "spec":{"containers":[
      {"name":"app","image":"nginx:1.27","resources":{"requests":{"cpu":"500m","memory":"1Gi"},
                                                       "limits":{"cpu":"2","memory":"2Gi"}}},
      {"name":"side","image":"quay.io/org/side:1"}],
      "tolerations":[{"key":"x","operator":"Exists"}]}})");
}

TEST(PodOverridesTest, RegistryRewriteReadsImagesAsDockerDoes) {
  EXPECT_EQ(rewriteImageRegistry("nginx:1.27", "docker.io", "mirror.local:5000"),
            "mirror.local:5000/library/nginx:1.27");
  EXPECT_EQ(rewriteImageRegistry("org/app@sha256:ab", "docker.io", "m.io"),
            "m.io/org/app@sha256:ab");
  EXPECT_EQ(rewriteImageRegistry("docker.io/org/app", "docker.io", "m.io"), "m.io/org/app");
  EXPECT_EQ(rewriteImageRegistry("quay.io/org/side:1", "quay.io", "m.io"), "m.io/org/side:1");
  EXPECT_EQ(rewriteImageRegistry("quay.io/org/side:1", "docker.io", "m.io"), "quay.io/org/side:1");
  EXPECT_EQ(rewriteImageRegistry("localhost/app", "localhost", "m.io"), "m.io/app");
}

TEST(PodOverridesTest, RulesChangeTheChosenContainersAndMetadata) {
  PodOverride o = parsed(json::parse(R"({"containers":["app"],"rules":{
    "imageRegistry":{"from":"docker.io","to":"mirror.local"},
    "addLabels":{"tier":"cloud"},"removeLabels":["app"],
    "addAnnotations":{"b":"2"},"removeAnnotations":["a"],
    "tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule"},
                   {"key":"x","operator":"Exists"}],
    "nodeSelector":{"disk":"ssd"},
    "resources":{"requests":0.5,"limits":"2"}}})"));
  json pod = remotePod();
  ASSERT_TRUE(applyPodOverride(pod, o).ok());
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "mirror.local/library/nginx:1.27");
  EXPECT_EQ(pod["spec"]["containers"][1]["image"], "quay.io/org/side:1");  // not chosen
  EXPECT_EQ(pod["metadata"]["labels"],
            json::parse(R"({"tier":"cloud","strait.io/origin-uid":"u1"})"));
  EXPECT_EQ(pod["metadata"]["annotations"], json::parse(R"({"b":"2"})"));
  ASSERT_EQ(pod["spec"]["tolerations"].size(), 2u);  // the existing one is not repeated
  EXPECT_EQ(pod["spec"]["tolerations"][1]["key"], "gpu");
  EXPECT_EQ(pod["spec"]["nodeSelector"]["disk"], "ssd");
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"], "250m");
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["requests"]["memory"], "512Mi");
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["cpu"], "4");
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["memory"], "4Gi");
  // Applying again changes nothing but the scaling (which compounds): the reflector applies
  // it to a fresh forge each time, so the result is stable.
}

TEST(PodOverridesTest, PatchesApplyAfterTheRules) {
  PodOverride o = parsed(json::parse(R"({
    "rules":{"addLabels":{"tier":"cloud"}},
    "strategicMergePatch":{"spec":{"containers":[{"name":"app","env":[{"name":"REGION","value":"eu"}]}]}},
    "jsonPatch":[{"op":"replace","path":"/metadata/labels/tier","value":"edge"},
                 {"op":"add","path":"/spec/priority","value":5}]})"));
  json pod = remotePod();
  ASSERT_TRUE(applyPodOverride(pod, o).ok());
  EXPECT_EQ(pod["metadata"]["labels"]["tier"], "edge");
  EXPECT_EQ(pod["spec"]["priority"], 5);
  ASSERT_EQ(pod["spec"]["containers"].size(), 2u);  // merged by name, not replaced
  EXPECT_EQ(pod["spec"]["containers"][0]["env"][0]["value"], "eu");
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "nginx:1.27");
}

TEST(PodOverridesTest, OwnershipAndPathsThePodLacksFailNamingTheOverride) {
  PodOverride rename = parsed(json::parse(R"({"jsonPatch":[
    {"op":"replace","path":"/metadata/name","value":"other"}]})"));
  json pod = remotePod();
  kube::Status s = applyPodOverride(pod, rename);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("offloading override demo/o1"), std::string::npos);
  EXPECT_NE(s.error().message.find("name, namespace or strait.io/"), std::string::npos);
  EXPECT_EQ(s.error().field, kOverrideFailedField);
  PodOverride missing = parsed(json::parse(R"({"jsonPatch":[
    {"op":"remove","path":"/spec/volumes/0"}]})"));
  pod = remotePod();
  s = applyPodOverride(pod, missing);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("jsonPatch"), std::string::npos) << s.error().message;
}

TEST(PodOverridesTest, InvalidOverridesNameEveryProblem) {
  struct Case {
    const char* spec;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"jsonPatch":[{"op":"fold","path":"/spec"}]})",
            "spec.jsonPatch[0].op: \"fold\" is not one of"},
           {R"({"jsonPatch":[{"op":"add","path":"spec/x","value":1}]})",
            "spec.jsonPatch[0].path: not a JSON pointer"},
           {R"({"jsonPatch":[{"op":"add","path":"/spec/x"}]})",
            "spec.jsonPatch[0].value: required"},
           {R"({"jsonPatch":{"op":"add"}})", "spec.jsonPatch: expected a list"},
           {R"({"strategicMergePatch":{"spec":{"$patch":"merge"}}})", "spec.strategicMergePatch"},
           {R"({"strategicMergePatch":[1]})", "spec.strategicMergePatch: expected an object"},
           {R"({"rules":{"imageRegistry":{"from":"docker.io"}}})",
            "spec.rules.imageRegistry.to: required"},
           {R"({"rules":{"addLabels":{"bad key!":"v"}}})", "spec.rules.addLabels.bad key!"},
           {R"({"rules":{"removeLabels":["strait.io/origin-uid"]}})",
            "strait.io/ keys are Strait's own"},
           {R"({"rules":{"resources":{"requests":0}}})",
            "spec.rules.resources.requests: expected a number above 0"},
           {R"({"rules":{"tolerations":[{"key":"a","operator":"Maybe"}]}})",
            "spec.rules.tolerations[0].operator"},
           {R"({"rules":{"renameEverything":true}})", "spec.rules.renameEverything: unknown rule"},
           {R"({"providers":{"selector":{"matchExpressions":[{"key":"a","operator":"Near"}]}}})",
            "spec.providers.selector"},
           {R"({"podSelector":{"matchLabels":{"a":7}}})", "spec.podSelector"},
           {R"({"patches":[]})", "spec.patches: unknown field"}}) {
    kube::Result<PodOverride> o = parsePodOverride(override(json::parse(c.spec)));
    ASSERT_FALSE(o.ok()) << c.spec;
    EXPECT_EQ(o.code(), kube::Code::Invalid);
    EXPECT_NE(o.error().message.find(c.says), std::string::npos)
        << c.spec << " -> " << o.error().message;
  }
  // Two problems, both named.
  kube::Result<PodOverride> two = parsePodOverride(
      override(json::parse(R"({"rules":{"imageRegistry":{}},"jsonPatch":[{"op":"add"}]})")));
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.error().message.find("imageRegistry.from"), std::string::npos);
  EXPECT_NE(two.error().message.find("jsonPatch[0].path"), std::string::npos);
  EXPECT_FALSE(parsePodOverride(json::parse(R"({"metadata":{"name":"x"}})")).ok());
}

TEST(PodOverridesTest, SelectsProvidersByNameOrLabelsAndPodsByLabels) {
  PodOverride any = parsed(json::object());
  EXPECT_TRUE(overrideSelectsProvider(any, "cloud-a", {}));
  PodOverride named = parsed(json::parse(R"({"providers":{"names":["cloud-a"]}})"));
  EXPECT_TRUE(overrideSelectsProvider(named, "cloud-a", {}));
  EXPECT_FALSE(overrideSelectsProvider(named, "cloud-b", {}));
  PodOverride labelled = parsed(json::parse(
      R"({"providers":{"selector":{"matchLabels":{"tier":"gold"}}},
          "podSelector":{"matchExpressions":[{"key":"app","operator":"In","values":["web"]}]}})"));
  EXPECT_TRUE(overrideSelectsProvider(labelled, "cloud-b", {{"tier", "gold"}}));
  EXPECT_FALSE(overrideSelectsProvider(labelled, "cloud-b", {{"tier", "silver"}}));
  EXPECT_TRUE(overrideSelectsPod(labelled, remotePod()));
  EXPECT_FALSE(
      overrideSelectsPod(labelled, json::parse(R"({"metadata":{"labels":{"app":"db"}}})")));
}

TEST(PodOverridesTest, ForgeAppliesOverridesSoTheComparedFieldsAreTheOverriddenOnes) {
  json local = json::parse(R"({"apiVersion":"v1","kind":"Pod",
    "metadata":{"name":"web","namespace":"demo","uid":"u1","labels":{"app":"web"}},
    "spec":{"nodeName":"strait-cloud","containers":[{"name":"app","image":"nginx:1.27"}]}})");
  PodForgeContext ctx;
  ctx.consumerId = "c1";
  ctx.remoteNamespace = "demo-c1";
  ctx.virtualNodeName = "strait-cloud";
  ctx.overrides.push_back(std::make_shared<const PodOverride>(parsed(json::parse(
      R"({"rules":{"imageRegistry":{"from":"docker.io","to":"m.io"},
                   "tolerations":[{"key":"gpu","operator":"Exists"}]}})"))));
  kube::Result<json> a = forgeRemotePod(local, ctx);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ((*a)["spec"]["containers"][0]["image"], "m.io/library/nginx:1.27");
  kube::Result<json> b = forgeRemotePod(local, ctx);
  ASSERT_TRUE(b.ok());
  // The same local Pod forges the same overridden Pod: a remote copy made from it compares
  // equal, so the reconcile sends no update.
  EXPECT_EQ(mutablePodFields(*a), mutablePodFields(*b));
  PodForgeContext plain = ctx;
  plain.overrides.clear();
  EXPECT_NE(mutablePodFields(*forgeRemotePod(local, plain)), mutablePodFields(*a));
}

}  // namespace
}  // namespace strait::reflection
