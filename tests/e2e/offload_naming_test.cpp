// Remote namespace naming and unoffload with real processes: two `strait minicluster` ("home"
// and "cloud", one node each), a `strait agent` on each, `strait peer`, then per test:
//  - `strait offload namespace NS --naming same`: Pods bound to the virtual node run in the
//    cloud namespace of the same name, created and labelled as this consumer's; `strait
//    unoffload` removes it;
//  - a cloud namespace of that name that Strait did not create (a user's), or that another
//    consumer maps, is never taken over: the local Pod carries ProviderRefused naming why,
//    and unoffload leaves the namespace alone;
//  - with the default naming, unoffload removes `<ns>-<consumer-id>`; unpeer removes every
//    mapped namespace.
// The suite setup (clusters, agents, peering) runs in each test process (ctest runs every
// test in a process of its own); each test uses namespaces of its own.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "e2e/offload_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

class OffloadNamingTest : public OffloadSuite {
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
  void SetUp() override {
    OffloadSuite::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(waitFor([&] { return vnodeReady() == "True"; }, 60s)) << diagnostics();
  }
  // Creates namespace `ns` at home and offloads it with `naming`.
  void offload(const std::string& ns, const std::string& naming) {
    ASSERT_EQ(kubectl(*home_, {"create", "namespace", ns}).exitCode, 0);
    CommandResult off = strait({"offload", "namespace", ns, "--kubeconfig", home_->kubeconfig(),
                                "--naming", naming});
    ASSERT_EQ(off.exitCode, 0) << off.describe();
  }
  // A Pod at home that the scheduler places on the virtual node (the webhook adds the
  // toleration in offloaded namespaces).
  void createVnodePod(const std::string& ns, const std::string& name) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", ns}}},
                {"spec",
                 {{"nodeSelector", {{"kubernetes.io/hostname", "strait-cloud"}}},
                  {"terminationGracePeriodSeconds", 1},
                  {"containers",
                   {{{"name", "app"},
                     {"image", "nginx:1.27"},
                     {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "32Mi"}}}}}}}}}}};
    CommandResult r = kubectl(*home_, {"apply", "-f", "-"}, pod.dump());
    ASSERT_EQ(r.exitCode, 0) << r.describe();
  }
  std::string phase(const Minicluster& c, const std::string& ns, const std::string& name) {
    json p = getJson(c, {"get", "pod", name, "-n", ns});
    return p.is_object() ? p.value("/status/phase"_json_pointer, std::string()) : "";
  }
  // The cloud namespace `ns`: null when absent.
  json cloudNamespace(const std::string& ns) { return getJson(*cloud_, {"get", "namespace", ns}); }
  bool cloudNamespaceGone(const std::string& ns) {
    CommandResult r = kubectl(*cloud_, {"get", "namespace", ns});
    return r.exitCode != 0 && r.err.find("NotFound") != std::string::npos;
  }
  std::string diagnostics() {
    auto tail = [](const std::string& s) { return s.size() > 5000 ? s.substr(s.size() - 5000) : s; };
    return "\n--- home agent ---\n" + tail(homeAgent_->logs()) + "\n--- cloud agent ---\n" +
           tail(cloudAgent_->logs());
  }
  // Waits until the local Pod carries reason ProviderRefused; returns its message.
  std::string refusal(const std::string& ns, const std::string& name) {
    std::string message;
    waitFor([&] {
      json p = getJson(*home_, {"get", "pod", name, "-n", ns});
      if (!p.is_object() || p.value("/status/reason"_json_pointer, std::string()) != "ProviderRefused") {
        return false;
      }
      message = p.value("/status/message"_json_pointer, std::string());
      return true;
    }, 60s);
    return message;
  }
  void unoffloadForce(const std::string& ns) {
    CommandResult un = strait({"unoffload", "namespace", ns, "--kubeconfig", home_->kubeconfig(),
                               "--force"});
    ASSERT_EQ(un.exitCode, 0) << un.describe();
  }

};

TEST_F(OffloadNamingTest, SameNamingRunsPodsInTheSameNamedNamespaceAndUnoffloadRemovesIt) {
  offload("samens", "same");
  createVnodePod("samens", "a");
  ASSERT_TRUE(waitFor([&] { return phase(*cloud_, "samens", "a") == "Running"; }, 90s))
      << getJson(*home_, {"get", "pod", "a", "-n", "samens"}).dump(2) << diagnostics();
  EXPECT_TRUE(waitFor([&] { return phase(*home_, "samens", "a") == "Running"; }, 60s));
  json ns = cloudNamespace("samens");
  ASSERT_TRUE(ns.is_object());
  EXPECT_EQ(ns.value("/metadata/labels/strait.io~1origin-cluster-id"_json_pointer, std::string()),
            consumerId())
      << ns.dump(2);
  EXPECT_EQ(cloudNamespace("samens-" + consumerId()), json());  // nothing under the default name
  // kubectl logs through the virtual node finds the same-named remote Pod.
  CommandResult logs = kubectl(*home_, {"logs", "a", "-n", "samens"});
  EXPECT_EQ(logs.exitCode, 0) << logs.describe();

  unoffloadForce("samens");
  EXPECT_TRUE(waitFor([&] { return cloudNamespaceGone("samens"); }, 90s))
      << cloudNamespace("samens").dump(2) << diagnostics();
}

TEST_F(OffloadNamingTest, SameNamingNeverTakesOverAUsersNamespace) {
  // The cloud's own user has namespace "userns" with a Pod of theirs.
  ASSERT_EQ(kubectl(*cloud_, {"create", "namespace", "userns"}).exitCode, 0);
  ASSERT_EQ(kubectl(*cloud_, {"run", "theirs", "-n", "userns", "--image", "nginx:1.27",
                              "--restart", "Never"})
                .exitCode,
            0);
  offload("userns", "same");
  createVnodePod("userns", "mine");
  std::string why = refusal("userns", "mine");
  EXPECT_NE(why.find("namespace userns"), std::string::npos) << why << diagnostics();
  EXPECT_NE(why.find("never taken over"), std::string::npos) << why;
  // The refusal also reached the user as an Event on the local Pod.
  bool evented = false;
  json events = getJson(*home_, {"get", "events", "-n", "userns"});
  for (const json& e : events.value("items", json::array())) {
    if (e.value("reason", "") == "ProviderRefused" &&
        e.value("/involvedObject/name"_json_pointer, std::string()) == "mine" &&
        e.value("message", "").find("never taken over") != std::string::npos) {
      evented = true;
    }
  }
  EXPECT_TRUE(evented) << events.dump(2);
  json ns = cloudNamespace("userns");
  EXPECT_FALSE(ns.value("/metadata/labels"_json_pointer, json::object())
                   .contains("strait.io/origin-cluster-id"))
      << ns.dump(2);
  json pods = getJson(*cloud_, {"get", "pods", "-n", "userns"});
  ASSERT_EQ(pods.value("items", json::array()).size(), 1u) << pods.dump(2);
  EXPECT_EQ(pods["items"][0]["metadata"]["name"], "theirs");

  // Unoffloading asks the provider to delete it; it is not Strait's, so it stays.
  unoffloadForce("userns");
  ASSERT_TRUE(waitFor([&] {
    return homeAgent_->logs().find("event=remote_namespace_not_released node=strait-cloud "
                                   "namespace=userns") != std::string::npos;
  }, 60s)) << diagnostics();
  EXPECT_TRUE(cloudNamespace("userns").is_object());
  EXPECT_EQ(phase(*cloud_, "userns", "theirs").empty(), false);
}

TEST_F(OffloadNamingTest, SameNamingRefusesANamespaceAnotherConsumerMaps) {
  // As another consumer's mapped namespace looks in the provider.
  json other = {{"apiVersion", "v1"},
                {"kind", "Namespace"},
                {"metadata",
                 {{"name", "shared"},
                  {"labels",
                   {{"strait.io/managed-by", "strait"},
                    {"strait.io/origin-cluster-id", "0f0f0f0f-0000-4000-8000-000000000001"},
                    {"strait.io/origin-uid", "namespace"}}}}}};
  ASSERT_EQ(kubectl(*cloud_, {"apply", "-f", "-"}, other.dump()).exitCode, 0);
  offload("shared", "same");
  createVnodePod("shared", "p");
  std::string why = refusal("shared", "p");
  EXPECT_NE(why.find("already mapped by another consumer"), std::string::npos)
      << why << diagnostics();
  EXPECT_NE(why.find("0f0f0f0f-0000-4000-8000-000000000001"), std::string::npos) << why;
  json pods = getJson(*cloud_, {"get", "pods", "-n", "shared"});
  EXPECT_TRUE(pods.value("items", json::array()).empty()) << pods.dump(2);
}

TEST_F(OffloadNamingTest, DefaultNamingUnoffloadRemovesTheMappedNamespaceAndUnpeerTheRest) {
  const std::string id = consumerId();
  offload("defns", "default");
  offload("keepns", "same");
  createVnodePod("defns", "a");
  createVnodePod("keepns", "b");
  ASSERT_TRUE(waitFor([&] {
    return phase(*cloud_, "defns-" + id, "a") == "Running" && phase(*cloud_, "keepns", "b") == "Running";
  }, 90s)) << diagnostics();

  unoffloadForce("defns");
  EXPECT_TRUE(waitFor([&] { return cloudNamespaceGone("defns-" + id); }, 90s))
      << cloudNamespace("defns-" + id).dump(2) << diagnostics();
  EXPECT_TRUE(cloudNamespace("keepns").is_object());  // still offloaded: kept

  // Unpeer removes the remaining mapped namespace. It refuses while Pods are on the virtual
  // node (this test's and, in one process, the other tests'): those go first (their remote
  // copies are deleted as orphans).
  CommandResult del = kubectl(*home_, {"delete", "pods", "-A", "--field-selector",
                                       "spec.nodeName=strait-cloud", "--grace-period=0", "--force"});
  ASSERT_EQ(del.exitCode, 0) << del.describe();
  ASSERT_TRUE(waitFor([&] { return phase(*cloud_, "keepns", "b").empty(); }, 90s)) << diagnostics();
  CommandResult un = strait({"unpeer", "--kubeconfig", home_->kubeconfig(), "--remote-kubeconfig",
                             cloud_->kubeconfig()});
  ASSERT_EQ(un.exitCode, 0) << un.describe();
  EXPECT_TRUE(waitFor([&] { return cloudNamespaceGone("keepns"); }, 90s))
      << cloudNamespace("keepns").dump(2) << diagnostics();
}

}  // namespace
}  // namespace strait::e2e
