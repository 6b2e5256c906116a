// ReplicaSet controller, in process: pods from the template with a controller reference,
// scale up/down (not-ready pods deleted first), adoption and release, status counts.
#include "controller_fixture.h"
#include "kube/object.h"

namespace strait::minicluster::testing {
namespace {

json replicaSet(const std::string& name, int replicas) {
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", {{"app", name}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", name}, {"tier", "web"}}}}},
              {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "nginx"}}})}}}}}}}};
}

class ReplicaSetControllerTest : public ControllerTest {
 protected:
  std::vector<json> activePods(const std::string& sel) {
    std::vector<json> out;
    for (auto& p : list("", "pods", "default", sel)) {
      if (!p["metadata"].contains("deletionTimestamp")) out.push_back(p);
    }
    return out;
  }
};

TEST_F(ReplicaSetControllerTest, CreatesOwnedPodsFromTemplateAndReportsStatus) {
  auto rs = create("apps", "replicasets", "default", replicaSet("web", 3));
  ASSERT_TRUE(rs.ok()) << rs.error().message;
  std::string uid = kube::getUid(json::parse((*rs)->json));
  ASSERT_TRUE(eventually([&] { return list("", "pods", "default", "app=web").size() == 3; }));
  // No over-creation while the controller keeps syncing.
  std::this_thread::sleep_for(300ms);
  auto pods = list("", "pods", "default", "app=web");
  ASSERT_EQ(pods.size(), 3u);
  for (const auto& p : pods) {
    EXPECT_EQ(p["metadata"]["generateName"], "web-");
    EXPECT_EQ(p["metadata"]["labels"]["tier"], "web");
    ASSERT_TRUE(kube::isControlledBy(p, uid)) << p.dump();
    auto ref = *kube::getControllerOf(p);
    EXPECT_EQ(ref["kind"], "ReplicaSet");
    EXPECT_EQ(ref["blockOwnerDeletion"], true);
  }
  ASSERT_TRUE(eventually([&] {
    auto s = get("apps", "replicasets", "default", "web")->at("status");
    return s.value("replicas", 0) == 3 && s.value("fullyLabeledReplicas", 0) == 3 &&
           s.value("observedGeneration", 0) == 1 && !s.contains("readyReplicas");
  }));
  readyAll("default", "app=web");
  ASSERT_TRUE(eventually([&] {
    auto s = get("apps", "replicasets", "default", "web")->at("status");
    return s.value("readyReplicas", 0) == 3 && s.value("availableReplicas", 0) == 3;
  }));
}

TEST_F(ReplicaSetControllerTest, ScaleDownDeletesNotReadyPodsFirstAndReplacesDeletedOnes) {
  ASSERT_TRUE(create("apps", "replicasets", "default", replicaSet("web", 4)).ok());
  ASSERT_TRUE(eventually([&] { return activePods("app=web").size() == 4; }));
  auto pods = activePods("app=web");
  std::set<std::string> ready;
  for (int i = 0; i < 2; ++i) {
    setPodReady("default", pods[i]["metadata"]["name"], true);
    ready.insert(pods[i]["metadata"]["name"]);
  }
  // Scale only once the controller has seen the readiness (its pod informer may lag).
  ASSERT_TRUE(eventually([&] {
    return get("apps", "replicasets", "default", "web")->at("status").value("readyReplicas", 0) == 2;
  }));
  ASSERT_TRUE(mutate("apps", "replicasets", "default", "web", "", [](json& o) {
                o["spec"]["replicas"] = 2;
              }).ok());
  ASSERT_TRUE(eventually([&] { return activePods("app=web").size() == 2; }));
  for (const auto& p : activePods("app=web")) {
    EXPECT_TRUE(ready.count(p["metadata"]["name"])) << "a ready pod was deleted first";
  }
  // A deleted pod is replaced.
  DeleteOptions d;
  ASSERT_TRUE(rest_->remove(info("", "pods"), "default", *ready.begin(), d).ok());
  ASSERT_TRUE(eventually([&] {
    auto now = activePods("app=web");
    return now.size() == 2 && std::none_of(now.begin(), now.end(), [&](const json& p) {
             return p["metadata"]["name"] == *ready.begin();
           });
  }));
}

TEST_F(ReplicaSetControllerTest, AdoptsMatchingOrphansAndReleasesPodsThatStopMatching) {
  ASSERT_TRUE(create("", "pods", "default",
                     {{"metadata", {{"name", "orphan"}, {"labels", {{"app", "web"}}}}},
                      {"spec", {{"nodeName", "node-0"},
                                {"containers", json::array({{{"name", "c"}, {"image", "x"}}})}}}})
                  .ok());
  // Running and Ready: the pod most worth keeping. The controller's replica set and pod
  // informers are separate watches, so its first sync may not see the orphan yet and create
  // two pods; when it then adopts the orphan it is one over and must delete a new, unready
  // pod (upstream's ranking), never the orphan.
  setPodReady("default", "orphan", true);
  auto rs = create("apps", "replicasets", "default", replicaSet("web", 2));
  ASSERT_TRUE(rs.ok());
  std::string uid = kube::getUid(json::parse((*rs)->json));
  ASSERT_TRUE(eventually([&] {
    auto p = get("", "pods", "default", "orphan");
    return p && kube::isControlledBy(*p, uid);
  }));
  ASSERT_TRUE(eventually([&] { return activePods("app=web").size() == 2; }));
  // Relabel the adopted pod: released, and a replacement created.
  ASSERT_TRUE(mutate("", "pods", "default", "orphan", "", [](json& p) {
                p["metadata"]["labels"]["app"] = "other";
              }).ok());
  ASSERT_TRUE(eventually([&] {
    auto p = get("", "pods", "default", "orphan");
    return p && !kube::getControllerOf(*p) && activePods("app=web").size() == 2;
  }));
}

TEST_F(ReplicaSetControllerTest, DeletingTheReplicaSetRemovesItsPods) {
  ASSERT_TRUE(create("apps", "replicasets", "default", replicaSet("web", 2)).ok());
  ASSERT_TRUE(eventually([&] { return activePods("app=web").size() == 2; }));
  ASSERT_TRUE(rest_->remove(info("apps", "replicasets"), "default", "web", DeleteOptions{}).ok());
  ASSERT_TRUE(eventually([&] { return list("", "pods", "default", "app=web").empty(); }));
}

}  // namespace
}  // namespace strait::minicluster::testing
