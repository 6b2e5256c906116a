// The consumer agent's toleration webhook with the real API server path: `strait agent`
// registers a MutatingWebhookConfiguration (failurePolicy Ignore, namespaceSelector on the
// offloading label, caBundle of its own CA); `strait offload namespace` marks a namespace;
// Pods created there with real kubectl get the virtual node's toleration (and, offloaded to
// one provider, the node affinity); other namespaces are untouched; `strait unoffload`
// refuses nothing when no Pod is offloaded and stops the mutation; with the agent stopped
// Pod creation still succeeds.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "e2e/cluster_fixture.h"
#include "e2e/peering_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

class OffloadWebhookTest : public ClusterTest {
 protected:
  CommandResult strait(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {straitBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, {}, 60s);
  }
  json pod(const std::string& ns, const std::string& name) {
    CommandResult r = kubectl({"get", "pod", name, "-n", ns, "-o", "json"});
    return r.exitCode == 0 ? json::parse(r.out, nullptr, false) : json();
  }
  static bool tolerates(const json& p) {
    for (const json& t : p["spec"].value("tolerations", json::array())) {
      if (t.value("key", "") == "virtual-node.strait.io/not-allowed" &&
          t.value("effect", "") == "NoExecute") {
        return true;
      }
    }
    return false;
  }
  CommandResult createPod(const std::string& ns, const std::string& name) {
    return kubectl({"run", name, "-n", ns, "--image", "nginx:1.27", "--restart", "Never"});
  }
};

TEST_F(OffloadWebhookTest, OffloadedNamespacesPodsGetTheTolerationOthersDoNot) {
  AgentProcess agent;
  ASSERT_EQ(agent.start(cluster().kubeconfig(), "home", {}), "");
  ASSERT_TRUE(waitFor([&] { return agent.logs().find("event=webhook_started") != std::string::npos; }, 30s))
      << agent.logs();
  CommandResult cfg = kubectl({"get", "mutatingwebhookconfiguration", "strait-offloading", "-o",
                               "jsonpath={.webhooks[0].failurePolicy} {.webhooks[0].namespaceSelector.matchLabels}"});
  EXPECT_EQ(cfg.out, R"(Ignore {"strait.io/offloaded":"true"})") << cfg.describe();

  ASSERT_EQ(kubectl({"create", "namespace", "demo"}).exitCode, 0);
  ASSERT_EQ(kubectl({"create", "namespace", "plain"}).exitCode, 0);
  // A provider name no peering has is refused, naming it.
  CommandResult bad = strait({"offload", "namespace", "demo", "--kubeconfig", cluster().kubeconfig(),
                              "--remote-name", "nowhere"});
  EXPECT_NE(bad.exitCode, 0);
  EXPECT_NE(bad.err.find("nowhere"), std::string::npos) << bad.describe();
  CommandResult badNaming = strait({"offload", "namespace", "demo", "--kubeconfig",
                                    cluster().kubeconfig(), "--naming", "odd"});
  EXPECT_NE(badNaming.exitCode, 0);
  EXPECT_NE(badNaming.err.find("--naming"), std::string::npos) << badNaming.describe();

  CommandResult off = strait({"offload", "namespace", "demo", "--kubeconfig", cluster().kubeconfig()});
  ASSERT_EQ(off.exitCode, 0) << off.describe();
  CommandResult labels = kubectl({"get", "namespace", "demo", "-o",
                                  "jsonpath={.metadata.labels.strait\\.io/offloaded} "
                                  "{.metadata.annotations.strait\\.io/namespace-naming}"});
  EXPECT_EQ(labels.out, "true default") << labels.describe();

  // The webhook's namespace cache may lag the label by a moment; a miss is looked up.
  ASSERT_EQ(createPod("demo", "a").exitCode, 0);
  ASSERT_EQ(createPod("plain", "b").exitCode, 0);
  EXPECT_TRUE(tolerates(pod("demo", "a"))) << pod("demo", "a")["spec"].dump();
  EXPECT_FALSE(tolerates(pod("plain", "b"))) << pod("plain", "b")["spec"].dump();
  EXPECT_FALSE(pod("demo", "a")["spec"].contains("affinity"));

  // Unoffload: no Pod is on a virtual node, so nothing is refused; new Pods are left alone.
  CommandResult un = strait({"unoffload", "namespace", "demo", "--kubeconfig", cluster().kubeconfig()});
  ASSERT_EQ(un.exitCode, 0) << un.describe();
  ASSERT_EQ(createPod("demo", "c").exitCode, 0);
  EXPECT_FALSE(tolerates(pod("demo", "c")));

  // Strait down never blocks Pod creation (failurePolicy Ignore).
  ASSERT_EQ(strait({"offload", "namespace", "demo", "--kubeconfig", cluster().kubeconfig()}).exitCode, 0);
  agent.stop();
  CommandResult d = createPod("demo", "d");
  EXPECT_EQ(d.exitCode, 0) << d.describe();
}

}  // namespace
}  // namespace strait::e2e
