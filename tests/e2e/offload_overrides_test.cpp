// OffloadingOverrides with real processes and real kubectl: one consumer ("home") peered with
// two providers ("cloud-a", "cloud-b"), namespace "multi" offloaded to both, then:
//  - an override for cloud-a only (image registry docker.io -> mirror.example.com, a gpu
//    toleration) shows in the Pod cloud-a runs and not in cloud-b's; the local Pods keep
//    their images; the remote Pod stays as overridden (no update loop: its resourceVersion
//    holds still while the reflection keeps running);
//  - an invalid override (a JSON patch op "fold", a strategic merge patch that is not an
//    object) is refused at creation by the agent's validating webhook, with the reason;
//  - an override whose JSON patch makes the remote Pod invalid (a container name the API
//    server refuses) leaves the local Pod Pending with reason ProviderRefused and the
//    provider API server's message.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "e2e/two_providers_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

std::string podJson(const std::string& name, const std::string& node, const std::string& app) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "multi"}, {"labels", {{"app", app}}}}}};
  pod["spec"]["nodeSelector"]["kubernetes.io/hostname"] = node;
  pod["spec"]["terminationGracePeriodSeconds"] = 1;
  pod["spec"]["containers"] = json::array(
      {{{"name", "c"}, {"image", "nginx:1.27"}, {"resources", {{"requests", {{"cpu", "100m"}}}}}}});
  return pod.dump();
}

TEST(OffloadOverridesTest, OverrideForOneProviderShowsOnlyThereAndBadOnesAreRefused) {
  TwoProviders t("strait-overrides");
  ASSERT_EQ(t.start(), "");
  Minicluster &home = t.home, &cloudA = t.cloudA, &cloudB = t.cloudB;
  auto diagnostics = [&] { return t.diagnostics(); };
  auto kubectlOn = [&](const Minicluster& c, const std::vector<std::string>& args,
                       const std::string& in = "") { return t.kubectlOn(c, args, in); };
  auto kubectl = [&](const std::vector<std::string>& args, const std::string& in = "") {
    return t.kubectl(args, in);
  };
  for (const std::string node : {"strait-cloud-a", "strait-cloud-b"}) {
    CommandResult ready;
    ASSERT_TRUE(waitFor(
        [&] {
          ready = kubectl({"get", "node", node, "-o",
                           "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"});
          return ready.out == "True";
        },
        60s))
        << node << ": " << ready.describe() << diagnostics();
  }
  ASSERT_EQ(kubectl({"create", "namespace", "multi"}).exitCode, 0);
  CommandResult off = runCommand(
      {straitBinary(), "offload", "namespace", "multi", "--kubeconfig", home.kubeconfig()}, {},
      60s);
  ASSERT_EQ(off.exitCode, 0) << off.describe();

  // Refused at creation, with the reason.
  CommandResult badOp = kubectl({"apply", "-f", "-"}, R"({"apiVersion":"strait.io/v1alpha1",
    "kind":"OffloadingOverride","metadata":{"name":"bad-op","namespace":"multi"},
    "spec":{"jsonPatch":[{"op":"fold","path":"/spec"}]}})");
  EXPECT_NE(badOp.exitCode, 0) << badOp.describe();
  EXPECT_NE(badOp.err.find("denied the request"), std::string::npos) << badOp.describe();
  EXPECT_NE(badOp.err.find("spec.jsonPatch[0].op: \"fold\" is not one of"), std::string::npos)
      << badOp.describe();
  CommandResult badSmp = kubectl({"apply", "-f", "-"}, R"({"apiVersion":"strait.io/v1alpha1",
    "kind":"OffloadingOverride","metadata":{"name":"bad-smp","namespace":"multi"},
    "spec":{"strategicMergePatch":["spec"]}})");
  EXPECT_NE(badSmp.exitCode, 0) << badSmp.describe();
  EXPECT_NE(badSmp.err.find("spec.strategicMergePatch: expected an object"), std::string::npos)
      << badSmp.describe();
  EXPECT_NE(kubectl({"get", "offloadingoverride", "bad-op", "-n", "multi"}).exitCode, 0);

  CommandResult good = kubectl({"apply", "-f", "-"}, R"({"apiVersion":"strait.io/v1alpha1",
    "kind":"OffloadingOverride","metadata":{"name":"mirror","namespace":"multi"},
    "spec":{"providers":{"names":["cloud-a"]},"podSelector":{"matchLabels":{"app":"web"}},
      "rules":{"imageRegistry":{"from":"docker.io","to":"mirror.example.com"},
               "tolerations":[{"key":"example.com/gpu","operator":"Exists","effect":"NoSchedule"}]}}})");
  ASSERT_EQ(good.exitCode, 0) << good.describe();
  CommandResult breaking = kubectl({"apply", "-f", "-"}, R"({"apiVersion":"strait.io/v1alpha1",
    "kind":"OffloadingOverride","metadata":{"name":"breaks","namespace":"multi"},
    "spec":{"podSelector":{"matchLabels":{"app":"broken"}},
      "jsonPatch":[{"op":"replace","path":"/spec/containers/0/name","value":"Not_A_Label"}]}})");
  ASSERT_EQ(breaking.exitCode, 0) << breaking.describe();

  ASSERT_EQ(kubectl({"apply", "-f", "-"}, podJson("on-a", "strait-cloud-a", "web")).exitCode, 0);
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, podJson("on-b", "strait-cloud-b", "web")).exitCode, 0);
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, podJson("broken", "strait-cloud-b", "broken")).exitCode,
            0);
  for (const std::string pod : {"on-a", "on-b"}) {
    CommandResult st;
    ASSERT_TRUE(waitFor(
        [&] {
          st = kubectl({"get", "pod", pod, "-n", "multi", "-o", "jsonpath={.status.phase}"});
          return st.out == "Running";
        },
        90s))
        << pod << ": " << st.describe() << diagnostics();
  }
  auto remotePod = [&](const Minicluster& cloud, const std::string& name) {
    CommandResult r = kubectlOn(cloud, {"get", "pods", "-A", "-l", "strait.io/origin-cluster-id",
                                        "--field-selector", "metadata.name=" + name, "-o", "json"});
    json l = json::parse(r.out, nullptr, false);
    return l.is_object() && l.contains("items") && l["items"].size() == 1 ? l["items"][0] : json();
  };
  auto hasGpuToleration = [](const json& pod) {
    for (const json& t : pod["spec"].value("tolerations", json::array())) {
      if (t.value("key", "") == "example.com/gpu") return true;
    }
    return false;
  };
  json a = remotePod(cloudA, "on-a");
  json b = remotePod(cloudB, "on-b");
  ASSERT_TRUE(a.is_object()) << diagnostics();
  ASSERT_TRUE(b.is_object()) << diagnostics();
  EXPECT_EQ(a["spec"]["containers"][0]["image"], "mirror.example.com/library/nginx:1.27");
  EXPECT_TRUE(hasGpuToleration(a)) << a["spec"].dump();
  EXPECT_EQ(b["spec"]["containers"][0]["image"], "nginx:1.27");
  EXPECT_FALSE(hasGpuToleration(b)) << b["spec"].dump();
  EXPECT_EQ(
      kubectl({"get", "pod", "on-a", "-n", "multi", "-o", "jsonpath={.spec.containers[0].image}"})
          .out,
      "nginx:1.27");

  // No update loop: the overridden remote Pod is what the reconcile compares.
  const std::string rv = a["metadata"].value("resourceVersion", "");
  std::this_thread::sleep_for(3s);  // several reconcile rounds (status, resync) go by
  json again = remotePod(cloudA, "on-a");
  EXPECT_EQ(again["metadata"].value("resourceVersion", ""), rv) << again.dump();

  // A patch that makes the remote Pod invalid: the provider's API server says why.
  CommandResult reason;
  EXPECT_TRUE(waitFor(
      [&] {
        reason = kubectl({"get", "pod", "broken", "-n", "multi", "-o",
                          "jsonpath={.status.reason}|{.status.message}"});
        return reason.out.rfind("ProviderRefused|", 0) == 0;
      },
      60s))
      << reason.describe() << diagnostics();
  EXPECT_NE(reason.out.find("Not_A_Label"), std::string::npos) << reason.out;
  EXPECT_FALSE(remotePod(cloudB, "broken").is_object());
}

}  // namespace
}  // namespace strait::e2e
