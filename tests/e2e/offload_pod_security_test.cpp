// A consumer cannot run privileged Pods on the provider: with real processes (two `strait
// minicluster`, a `strait agent` on each, `strait peer`, `strait offload`, real kubectl), a
// Pod with hostNetwork + hostPID + a hostPath "/" volume in an offloaded namespace is
// refused by the provider agent (default --pod-security baseline) with ProviderRefused
// naming the violated rules, on the local Pod's status and as an Event, and never exists in
// the provider, whose namespaces for the consumer carry pod-security.kubernetes.io/enforce;
// after the provider agent restarts with --pod-security privileged the same Pod runs. The
// minicluster's own Pod Security Admission: kubectl create of a hostNetwork Pod in a
// namespace labelled enforce=baseline is refused with upstream's message, and warn=restricted
// makes kubectl print upstream's warning.
// The tests of the suite run in order on the same clusters.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "e2e/offload_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;


class OffloadPodSecurityTest : public OffloadSuite {
 public:
  static void SetUpTestSuite() {
    OffloadSetup s;
    s.homeArgs = {"--nodes", "1"};
    s.cloudArgs = {"--nodes", "1"};
    s.peerArgs = {"--cpu", "4", "--memory", "8Gi", "--pods", "20"};
    s.namespaces = {};
    startAll(s);
  }
  static void TearDownTestSuite() { stopAll(); }

 protected:
  // The string at `pointer` in `j`; "" when `j` is not an object or has none there.
  static std::string at(const json& j, const char* pointer) {
    if (!j.is_object()) return "";
    json::json_pointer ptr(pointer);
    return j.contains(ptr) && j[ptr].is_string() ? j[ptr].get<std::string>() : "";
  }
  // The Pod a hostile consumer user writes: the host's network, PIDs and root filesystem.
  static json privilegedPod(const std::string& ns, const std::string& name) {
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"spec",
             {{"nodeSelector", {{"kubernetes.io/hostname", "strait-cloud"}}},
              {"hostNetwork", true},
              {"hostPID", true},
              {"terminationGracePeriodSeconds", 1},
              {"containers",
               {{{"name", "app"},
                 {"image", "nginx:1.27"},
                 {"volumeMounts", {{{"name", "root"}, {"mountPath", "/host"}}}},
                 {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "32Mi"}}}}}}}},
              {"volumes", {{{"name", "root"}, {"hostPath", {{"path", "/"}}}}}}}}};
  }
  std::string diagnostics() {
    auto tail = [](const std::string& s) { return s.size() > 4000 ? s.substr(s.size() - 4000) : s; };
    return "\n--- home agent ---\n" + tail(homeAgent_->logs()) + "\n--- cloud agent ---\n" +
           tail(cloudAgent_->logs());
  }

};

TEST_F(OffloadPodSecurityTest, ProviderRefusesAPrivilegedPodThenAdmitsItWhenPrivilegedIsAllowed) {
  ASSERT_TRUE(waitFor([&] { return vnodeReady() == "True"; }, 60s)) << diagnostics();
  ASSERT_EQ(kubectl(*home_, {"create", "namespace", "web"}).exitCode, 0);
  CommandResult off = strait({"offload", "namespace", "web", "--kubeconfig", home_->kubeconfig()});
  ASSERT_EQ(off.exitCode, 0) << off.describe();
  const std::string remoteNs = "web-" + consumerId();
  // A harmless Pod first: it runs, and the mapped namespace carries the provider's level.
  json plain = privilegedPod("web", "plain");
  plain["spec"].erase("hostNetwork");
  plain["spec"].erase("hostPID");
  plain["spec"].erase("volumes");
  plain["spec"]["containers"][0].erase("volumeMounts");
  ASSERT_EQ(kubectl(*home_, {"apply", "-f", "-"}, plain.dump()).exitCode, 0);
  ASSERT_TRUE(waitFor([&] {
    json p = getJson(*cloud_, {"get", "pod", "plain", "-n", remoteNs});
    return at(p, "/status/phase") == "Running";
  }, 90s)) << diagnostics();
  json ns = getJson(*cloud_, {"get", "namespace", remoteNs});
  EXPECT_EQ(at(ns, "/metadata/labels/pod-security.kubernetes.io~1enforce"),
            "baseline")
      << ns.dump(2);
  json tenant = getJson(*cloud_, {"get", "namespace", "strait-tenant-" + consumerId()});
  EXPECT_EQ(at(tenant, "/metadata/labels/pod-security.kubernetes.io~1enforce"),
            "baseline")
      << tenant.dump(2);

  // The privileged Pod: refused by the provider agent, with the rules it breaks.
  ASSERT_EQ(kubectl(*home_, {"apply", "-f", "-"}, privilegedPod("web", "root").dump()).exitCode, 0);
  std::string message;
  ASSERT_TRUE(waitFor([&] {
    json p = getJson(*home_, {"get", "pod", "root", "-n", "web"});
    if (at(p, "/status/reason") != "ProviderRefused") return false;
    message = at(p, "/status/message");
    return true;
  }, 60s)) << getJson(*home_, {"get", "pod", "root", "-n", "web"}).dump(2) << diagnostics();
  EXPECT_NE(message.find("violates PodSecurity \"baseline:latest\": host namespaces "
                         "(hostNetwork=true, hostPID=true), hostPath volumes (volume \"root\")"),
            std::string::npos)
      << message;
  bool evented = false;
  ASSERT_TRUE(waitFor([&] {
    json events = getJson(*home_, {"get", "events", "-n", "web"});
    if (!events.is_object()) return false;
    for (const json& e : events.value("items", json::array())) {
      if (e.value("reason", "") == "ProviderRefused" &&
          at(e, "/involvedObject/name") == "root" &&
          e.value("message", "").find("hostPath volumes (volume \"root\")") != std::string::npos) {
        evented = true;
      }
    }
    return evented;
  }, 30s));
  // Never in the provider, not even after the consumer retried (the provider refused it
  // twice).
  auto refusals = [&] {
    const std::string logs = cloudAgent_->logs();
    int n = 0;
    for (size_t at = logs.find("event=stream_request_failed"); at != std::string::npos;
         at = logs.find("event=stream_request_failed", at + 1)) {
      size_t eol = logs.find('\n', at);
      if (logs.substr(at, eol - at).find("name=root ") != std::string::npos) ++n;
    }
    return n;
  };
  EXPECT_TRUE(waitFor([&] { return refusals() >= 2; }, 40s)) << diagnostics();
  CommandResult remote = kubectl(*cloud_, {"get", "pod", "root", "-n", remoteNs});
  EXPECT_NE(remote.exitCode, 0) << remote.describe();
  EXPECT_NE(remote.err.find("NotFound"), std::string::npos) << remote.describe();

  // The provider's operator allows privileged Pods: the same Pod runs (the consumer retries).
  const std::string endpoint = cloudAgent_->endpoint();
  cloudAgent_->stop();
  std::vector<std::string> args = kAgentArgs;
  args.insert(args.end(), {"--share", "1", "--pod-security", "privileged"});
  ASSERT_EQ(cloudAgent_->start(cloud_->kubeconfig(), "cloud", args, endpoint), "");
  EXPECT_TRUE(waitFor([&] {
    json p = getJson(*cloud_, {"get", "pod", "root", "-n", remoteNs});
    return at(p, "/status/phase") == "Running" &&
           p.value("/spec/hostNetwork"_json_pointer, false);
  }, 120s)) << getJson(*home_, {"get", "pod", "root", "-n", "web"}).dump(2) << diagnostics();
  EXPECT_TRUE(waitFor([&] {
    json p = getJson(*home_, {"get", "pod", "root", "-n", "web"});
    return at(p, "/status/phase") == "Running";
  }, 60s));
  // The namespace it made under baseline now carries the new level.
  json relabelled = getJson(*cloud_, {"get", "namespace", remoteNs});
  EXPECT_EQ(at(relabelled, "/metadata/labels/pod-security.kubernetes.io~1enforce"),
            "privileged")
      << relabelled.dump(2);
}

TEST_F(OffloadPodSecurityTest, MiniclusterEnforcesAndWarnsByNamespaceLabels) {
  ASSERT_EQ(kubectl(*cloud_, {"create", "namespace", "locked"}).exitCode, 0);
  ASSERT_EQ(kubectl(*cloud_, {"label", "namespace", "locked",
                              "pod-security.kubernetes.io/enforce=baseline",
                              "pod-security.kubernetes.io/warn=restricted"})
                .exitCode,
            0);
  CommandResult refused = kubectl(*cloud_, {"run", "hostnet", "-n", "locked", "--image",
                                            "nginx:1.27", "--restart", "Never",
                                            "--overrides", R"({"spec":{"hostNetwork":true}})"});
  EXPECT_NE(refused.exitCode, 0) << refused.describe();
  EXPECT_NE(refused.err.find("Error from server (Forbidden): pods \"hostnet\" is forbidden: "
                             "violates PodSecurity \"baseline:latest\": host namespaces "
                             "(hostNetwork=true)"),
            std::string::npos)
      << refused.describe();
  EXPECT_NE(kubectl(*cloud_, {"get", "pod", "hostnet", "-n", "locked"}).exitCode, 0);
  // Baseline-clean but not restricted: created, with upstream's warning printed by kubectl.
  CommandResult warned = kubectl(*cloud_, {"run", "plain", "-n", "locked", "--image",
                                           "nginx:1.27", "--restart", "Never"});
  EXPECT_EQ(warned.exitCode, 0) << warned.describe();
  EXPECT_NE(warned.err.find("Warning: would violate PodSecurity \"restricted:latest\": "
                            "allowPrivilegeEscalation != false (container \"plain\" must set "
                            "securityContext.allowPrivilegeEscalation=false)"),
            std::string::npos)
      << warned.describe();
  // Workloads are warned about for their Pod template, never refused.
  CommandResult deploy = kubectl(*cloud_, {"create", "deployment", "d", "-n", "locked",
                                           "--image", "nginx:1.27"});
  EXPECT_EQ(deploy.exitCode, 0) << deploy.describe();
  EXPECT_NE(deploy.err.find("Warning: would violate PodSecurity \"restricted:latest\""),
            std::string::npos)
      << deploy.describe();
}

}  // namespace
}  // namespace strait::e2e
