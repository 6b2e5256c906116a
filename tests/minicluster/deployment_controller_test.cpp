// Deployment controller, in process: ReplicaSets named <deployment>-<pod-template-hash>,
// scaling, RollingUpdate within maxSurge/maxUnavailable, Recreate, revisions, status and
// conditions. Pods are made Ready through the API (no kubelets here).
#include "controller_fixture.h"
#include "kube/object.h"
#include "minicluster/deployment_util.h"

namespace strait::minicluster::testing {
namespace {

json deployment(const std::string& name, int replicas, const std::string& image,
                const json& strategy = json()) {
  json d = {{"metadata", {{"name", name}}},
            {"spec",
             {{"replicas", replicas},
              {"selector", {{"matchLabels", {{"app", name}}}}},
              {"template",
               {{"metadata", {{"labels", {{"app", name}}}}},
                {"spec", {{"containers", json::array({{{"name", "c"}, {"image", image}}})}}}}}}}};
  if (!strategy.is_null()) d["spec"]["strategy"] = strategy;
  return d;
}

class DeploymentControllerTest : public ControllerTest {
 protected:
  std::vector<json> replicaSets(const std::string& app) {
    return list("apps", "replicasets", "default", "app=" + app);
  }
  int64_t specReplicas(const json& rs) { return rs["spec"].value("replicas", 0); }
  // Plays the kubelet until the deployment reports `want` available updated replicas.
  bool rollOut(const std::string& name, int want) {
    return eventually(
        [&] {
          readyAll("default", "app=" + name);
          auto d = get("apps", "deployments", "default", name);
          const json& s = (*d)["status"];
          return s.value("updatedReplicas", 0) == want && s.value("availableReplicas", 0) == want &&
                 s.value("replicas", 0) == want &&
                 s.value("observedGeneration", 0) == (*d)["metadata"].value("generation", 0);
        },
        60s);
  }
};

TEST(DeploymentUtilTest, HashEncodingAndFenceposts) {
  EXPECT_EQ(safeEncodeString("0123456789"), "456789bcdf");  // '0'=48 -> 48%27=21 -> '4'
  json tmpl = {{"metadata", {{"labels", {{"app", "x"}}}}}};
  std::string h = computePodTemplateHash(tmpl, std::nullopt);
  EXPECT_FALSE(h.empty());
  EXPECT_EQ(h, computePodTemplateHash(tmpl, std::nullopt));
  EXPECT_NE(h, computePodTemplateHash(tmpl, 1));
  EXPECT_EQ(h.find_first_not_of("bcdfghjklmnpqrstvwxz2456789"), std::string::npos);
  // 25% of 10: surge rounds up (3), unavailable down (2).
  json d = {{"spec", {{"replicas", 10}, {"strategy", {{"type", "RollingUpdate"}}}}}};
  auto f = resolveFenceposts(d);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->maxSurge, 3);
  EXPECT_EQ(f->maxUnavailable, 2);
  d["spec"]["strategy"]["rollingUpdate"] = {{"maxSurge", 0}, {"maxUnavailable", "0%"}};
  EXPECT_EQ(resolveFenceposts(d)->maxUnavailable, 1);  // both zero: unavailable becomes 1
  d["spec"]["strategy"]["rollingUpdate"] = {{"maxSurge", "x"}};
  EXPECT_FALSE(resolveFenceposts(d).ok());
  EXPECT_EQ(maxUnavailableOf({{"spec", {{"replicas", 3}, {"strategy", {{"type", "Recreate"}}}}}}), 0);
  EXPECT_TRUE(equalIgnoreHash({{"metadata", {{"labels", {{"a", "b"}, {"pod-template-hash", "x"}}}}}},
                              {{"metadata", {{"labels", {{"a", "b"}}}}}}));
}

TEST_F(DeploymentControllerTest, CreatesHashedReplicaSetAndBecomesAvailable) {
  ASSERT_TRUE(create("apps", "deployments", "default", deployment("web", 3, "nginx:1")).ok());
  ASSERT_TRUE(eventually([&] { return replicaSets("web").size() == 1; }));
  json rs = replicaSets("web")[0];
  std::string hash = rs["metadata"]["labels"]["pod-template-hash"];
  EXPECT_EQ(rs["metadata"]["name"], "web-" + hash);
  EXPECT_EQ(rs["spec"]["selector"]["matchLabels"]["pod-template-hash"], hash);
  EXPECT_EQ(rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"], hash);
  EXPECT_EQ(rs["metadata"]["annotations"][kRevisionAnnotation], "1");
  EXPECT_EQ(rs["metadata"]["annotations"][kDesiredReplicasAnnotation], "3");
  EXPECT_EQ(rs["metadata"]["annotations"][kMaxReplicasAnnotation], "4");  // 3 + 25% surge (1)
  ASSERT_TRUE(eventually([&] { return list("", "pods", "default", "app=web").size() == 3; }));
  ASSERT_TRUE(rollOut("web", 3));
  auto d = *get("apps", "deployments", "default", "web");
  EXPECT_EQ(d["metadata"]["annotations"][kRevisionAnnotation], "1");
  const json* avail = findCondition(d["status"], "Available");
  const json* prog = findCondition(d["status"], "Progressing");
  ASSERT_TRUE(avail && prog) << d["status"].dump();
  EXPECT_EQ((*avail)["reason"], "MinimumReplicasAvailable");
  EXPECT_EQ((*avail)["status"], "True");
  ASSERT_TRUE(eventually([&] {
    auto d = *get("apps", "deployments", "default", "web");
    const json* p = findCondition(d["status"], "Progressing");
    return p && (*p)["reason"] == "NewReplicaSetAvailable";
  }));
  d = *get("apps", "deployments", "default", "web");
  EXPECT_EQ((*findCondition(d["status"], "Progressing"))["message"],
            "ReplicaSet \"web-" + hash + "\" has successfully progressed.");
  EXPECT_EQ(d["status"].value("readyReplicas", 0), 3);
  EXPECT_FALSE(d["status"].contains("unavailableReplicas"));
}

TEST_F(DeploymentControllerTest, ScalingResizesTheOnlyReplicaSet) {
  ASSERT_TRUE(create("apps", "deployments", "default", deployment("web", 2, "nginx:1")).ok());
  ASSERT_TRUE(rollOut("web", 2));
  ASSERT_TRUE(mutate("apps", "deployments", "default", "web", "", [](json& d) {
                d["spec"]["replicas"] = 5;
              }).ok());
  ASSERT_TRUE(rollOut("web", 5));
  ASSERT_EQ(replicaSets("web").size(), 1u);
  EXPECT_EQ(replicaSets("web")[0]["metadata"]["annotations"][kDesiredReplicasAnnotation], "5");
  ASSERT_TRUE(mutate("apps", "deployments", "default", "web", "", [](json& d) {
                d["spec"]["replicas"] = 1;
              }).ok());
  ASSERT_TRUE(rollOut("web", 1));
  ASSERT_TRUE(eventually([&] { return list("", "pods", "default", "app=web").size() == 1; }));
}

TEST_F(DeploymentControllerTest, RollingUpdateStaysWithinSurgeAndUnavailability) {
  json strategy = {{"type", "RollingUpdate"},
                   {"rollingUpdate", {{"maxSurge", 1}, {"maxUnavailable", 0}}}};
  ASSERT_TRUE(create("apps", "deployments", "default", deployment("web", 4, "nginx:1", strategy)).ok());
  ASSERT_TRUE(rollOut("web", 4));
  std::string oldName = replicaSets("web")[0]["metadata"]["name"];
  ASSERT_TRUE(mutate("apps", "deployments", "default", "web", "", [](json& d) {
                d["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2";
              }).ok());
  // Watch the rollout: never more than 5 pods wanted, never fewer than 4 available ones.
  bool sawTwo = false;
  ASSERT_TRUE(eventually(
      [&] {
        auto sets = replicaSets("web");
        int64_t total = 0;
        for (const auto& rs : sets) total += specReplicas(rs);
        EXPECT_LE(total, 5);
        if (sets.size() == 2) sawTwo = true;
        // Ready one pod at a time, as a slow kubelet would.
        for (const auto& p : list("", "pods", "default", "app=web")) {
          if (!p["status"].contains("podIP") && !p["metadata"].contains("deletionTimestamp")) {
            setPodReady("default", p["metadata"]["name"], true);
            break;
          }
        }
        auto d = *get("apps", "deployments", "default", "web");
        return d["status"].value("observedGeneration", 0) == d["metadata"].value("generation", 0) &&
               d["status"].value("updatedReplicas", 0) == 4 &&
               d["status"].value("availableReplicas", 0) == 4 && d["status"].value("replicas", 0) == 4;
      },
      60s));
  EXPECT_TRUE(sawTwo);
  auto sets = replicaSets("web");
  ASSERT_EQ(sets.size(), 2u);
  for (const auto& rs : sets) {
    if (rs["metadata"]["name"] == oldName) {
      EXPECT_EQ(specReplicas(rs), 0);
      EXPECT_EQ(rs["metadata"]["annotations"][kRevisionAnnotation], "1");
    } else {
      EXPECT_EQ(specReplicas(rs), 4);
      EXPECT_EQ(rs["metadata"]["annotations"][kRevisionAnnotation], "2");
      EXPECT_EQ(rs["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:2");
    }
  }
  EXPECT_EQ((*get("apps", "deployments", "default", "web"))["metadata"]["annotations"]
                [kRevisionAnnotation],
            "2");
  // Rolling back to the first template reuses the old ReplicaSet with a new revision.
  ASSERT_TRUE(mutate("apps", "deployments", "default", "web", "", [](json& d) {
                d["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1";
              }).ok());
  ASSERT_TRUE(rollOut("web", 4));
  for (const auto& rs : replicaSets("web")) {
    if (rs["metadata"]["name"] == oldName) {
      EXPECT_EQ(specReplicas(rs), 4);
      EXPECT_EQ(rs["metadata"]["annotations"][kRevisionAnnotation], "3");
    }
  }
}

TEST_F(DeploymentControllerTest, RecreateScalesOldToZeroBeforeCreatingNew) {
  json strategy = {{"type", "Recreate"}};
  ASSERT_TRUE(create("apps", "deployments", "default", deployment("db", 2, "pg:1", strategy)).ok());
  ASSERT_TRUE(rollOut("db", 2));
  ASSERT_TRUE(mutate("apps", "deployments", "default", "db", "", [](json& d) {
                d["spec"]["template"]["spec"]["containers"][0]["image"] = "pg:2";
              }).ok());
  ASSERT_TRUE(eventually(
      [&] {
        auto sets = replicaSets("db");
        int64_t oldPods = 0, newPods = 0;
        for (const auto& p : list("", "pods", "default", "app=db")) {
          (p["spec"]["containers"][0]["image"] == "pg:1" ? oldPods : newPods)++;
        }
        EXPECT_FALSE(oldPods > 0 && newPods > 0) << "old and new pods at once";
        readyAll("default", "app=db");
        auto d = *get("apps", "deployments", "default", "db");
        return d["status"].value("updatedReplicas", 0) == 2 &&
               d["status"].value("availableReplicas", 0) == 2 && oldPods == 0;
      },
      60s));
}

TEST_F(DeploymentControllerTest, UnavailableDeploymentReportsMinimumReplicasUnavailable) {
  json strategy = {{"type", "RollingUpdate"},
                   {"rollingUpdate", {{"maxSurge", "25%"}, {"maxUnavailable", "25%"}}}};
  ASSERT_TRUE(create("apps", "deployments", "default", deployment("web", 4, "nginx", strategy)).ok());
  ASSERT_TRUE(eventually([&] {
    auto d = *get("apps", "deployments", "default", "web");
    const json* a = findCondition(d["status"], "Available");
    const json* p = findCondition(d["status"], "Progressing");
    return a && (*a)["status"] == "False" && (*a)["reason"] == "MinimumReplicasUnavailable" &&
           d["status"].value("unavailableReplicas", 0) == 4 && p &&
           (*p)["status"] == "True";
  }));
}

}  // namespace
}  // namespace strait::minicluster::testing
