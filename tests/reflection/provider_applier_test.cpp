// The provider's re-validation of the Pods a consumer sends (sanitizeProviderPod), whatever
// the consumer's forge did: scheduling fields stripped, Pod Security level enforced.
#include "reflection/provider_applier.h"

#include <gtest/gtest.h>

#include "reflection/pod_forge.h"

namespace strait::reflection {
namespace {

using nlohmann::json;
using kube::PodSecurityLevel;

// What a hand-made stream message could carry: a Pod pinned to a chosen provider node.
json pinnedPod() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "pinned", "namespace": "web-c1"},
    "spec": {
      "nodeName": "provider-node-2",
      "schedulerName": "my-scheduler",
      "priorityClassName": "system-node-critical",
      "nodeSelector": {"kubernetes.io/hostname": "provider-node-2", "zone": "a"},
      "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
          {"key": "metadata.name", "operator": "In", "values": ["provider-node-2"]}]}]}}},
      "tolerations": [{"key": "virtual-node.strait.io/not-allowed", "operator": "Exists"},
                      {"key": "dedicated", "operator": "Exists"}],
      "containers": [{"name": "c", "image": "busybox"}]
    }
  })");
}

TEST(SanitizeProviderPodTest, StripsTheSchedulingFieldsOfAForgedPod) {
  kube::Result<json> out = sanitizeProviderPod(pinnedPod(), PodSecurityLevel::Baseline);
  ASSERT_TRUE(out.ok()) << out.error().message;
  const json& spec = (*out)["spec"];
  EXPECT_FALSE(spec.contains("nodeName"));
  EXPECT_FALSE(spec.contains("schedulerName"));
  EXPECT_FALSE(spec.contains("priorityClassName"));
  EXPECT_EQ(spec["nodeSelector"], json({{"zone", "a"}}));
  EXPECT_FALSE(spec.contains("affinity"));
  EXPECT_EQ(spec["tolerations"], json::parse(R"([{"key": "dedicated", "operator": "Exists"}])"));
  EXPECT_EQ(spec["containers"], pinnedPod()["spec"]["containers"]);
}

TEST(SanitizeProviderPodTest, RefusesAPrivilegedPodWithUpstreamsMessage) {
  json pod = pinnedPod();
  pod["spec"]["hostNetwork"] = true;
  pod["spec"]["hostPID"] = true;
  pod["spec"]["volumes"] = json::parse(R"([{"name": "root", "hostPath": {"path": "/"}}])");
  kube::Result<json> out = sanitizeProviderPod(pod, PodSecurityLevel::Baseline);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, kube::Code::Forbidden);
  EXPECT_EQ(out.error().message,
            "pods \"pinned\" is forbidden: violates PodSecurity \"baseline:latest\": host "
            "namespaces (hostNetwork=true, hostPID=true), hostPath volumes (volume \"root\")");
  // The level is the provider's: privileged admits it (still unpinned).
  kube::Result<json> admitted = sanitizeProviderPod(pod, PodSecurityLevel::Privileged);
  ASSERT_TRUE(admitted.ok());
  EXPECT_FALSE((*admitted)["spec"].contains("nodeName"));
  EXPECT_TRUE((*admitted)["spec"]["hostNetwork"].get<bool>());
}

TEST(SanitizeProviderPodTest, RestrictedRefusesWhatBaselineAdmits) {
  EXPECT_TRUE(sanitizeProviderPod(pinnedPod(), PodSecurityLevel::Baseline).ok());
  kube::Result<json> out = sanitizeProviderPod(pinnedPod(), PodSecurityLevel::Restricted);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message.find("violates PodSecurity \"restricted:latest\": "
                                     "allowPrivilegeEscalation != false"),
            std::string::npos)
      << out.error().message;
}

TEST(SanitizeProviderPodTest, ReservedNamespacesAndLabels) {
  for (const char* ns : {"default", "kube-system", "kube-public", "strait-system",
                         "strait-tenant-other"}) {
    EXPECT_TRUE(isProviderReservedNamespace(ns)) << ns;
  }
  for (const char* ns : {"web-c1", "web", "kubeflow", "strait"}) {
    EXPECT_FALSE(isProviderReservedNamespace(ns)) << ns;
  }
  EXPECT_EQ(podSecurityNamespaceLabels(PodSecurityLevel::Restricted),
            json({{"pod-security.kubernetes.io/enforce", "restricted"},
                  {"pod-security.kubernetes.io/enforce-version", "latest"}}));
}

}  // namespace
}  // namespace strait::reflection
