// vnode/offloading_overrides.h: the validating webhook's answers and the CRD the agent
// installs.
#include "vnode/offloading_overrides.h"

#include <gtest/gtest.h>

namespace strait::vnode {
namespace {

using nlohmann::json;

json review(const json& spec) {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "u-7"},
            {"operation", "CREATE"},
            {"object",
             {{"apiVersion", "strait.io/v1alpha1"},
              {"kind", "OffloadingOverride"},
              {"metadata", {{"name", "o"}, {"namespace", "demo"}}},
              {"spec", spec}}}}}};
}

TEST(OffloadingOverridesTest, WebhookAllowsValidAndRefusesInvalidWithTheReason) {
  json ok = admitOffloadingOverride(
      review(json::parse(R"({"rules":{"imageRegistry":{"from":"docker.io","to":"m.io"}}})")));
  EXPECT_EQ(ok["response"]["uid"], "u-7");
  EXPECT_EQ(ok["response"]["allowed"], true);
  json bad = admitOffloadingOverride(
      review(json::parse(R"({"jsonPatch":[{"op":"fold","path":"/spec"}]})")));
  EXPECT_EQ(bad["response"]["allowed"], false);
  EXPECT_EQ(bad["response"]["status"]["code"], 400);
  const std::string msg = bad["response"]["status"]["message"];
  EXPECT_NE(msg.find("spec.jsonPatch[0].op"), std::string::npos) << msg;
  json malformed = admitOffloadingOverride(json::parse(R"({"request":7})"));
  EXPECT_EQ(malformed["response"]["allowed"], false);
}

TEST(OffloadingOverridesTest, CrdIsNamespacedStraitV1alpha1) {
  json crd = offloadingOverrideCrd();
  EXPECT_EQ(crd["metadata"]["name"], "offloadingoverrides.strait.io");
  EXPECT_EQ(crd["spec"]["scope"], "Namespaced");
  EXPECT_EQ(crd["spec"]["names"]["kind"], "OffloadingOverride");
  EXPECT_EQ(crd["spec"]["versions"][0]["name"], "v1alpha1");
}

}  // namespace
}  // namespace strait::vnode
