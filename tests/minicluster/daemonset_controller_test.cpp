// DaemonSet API rules and controller, in process: defaults and validation, one Pod per
// eligible node bound by matchFields node affinity, taints and tolerations (the daemon
// tolerations included), failed Pods replaced, a template change rolled maxUnavailable at a
// time, status counts, and the Pods deleted with their DaemonSet.
#include "controller_fixture.h"
#include "kube/object.h"
#include "minicluster/daemonset_util.h"

namespace strait::minicluster::testing {
namespace {

json daemonSet(const std::string& name, json podSpecExtra = json::object()) {
  json spec = {{"containers", json::array({{{"name", "c"}, {"image", "agent:1"}}})}};
  spec.update(podSpecExtra);
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"selector", {{"matchLabels", {{"app", name}}}}},
            {"template", {{"metadata", {{"labels", {{"app", name}}}}}, {"spec", spec}}}}}};
}

json node(const std::string& name, json taints = json::array(), json labels = json::object()) {
  labels["kubernetes.io/hostname"] = name;
  return {{"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", {{"taints", taints}}},
          {"status", {{"allocatable", {{"cpu", "2"}, {"memory", "4Gi"}, {"pods", "110"}}}}}};
}

class DaemonSetControllerTest : public ControllerTest {
 protected:
  // Active daemon Pods by the node they target.
  std::map<std::string, json> podsByNode(const std::string& sel) {
    std::map<std::string, json> out;
    for (auto& p : list("", "pods", "default", sel)) {
      if (p["metadata"].contains("deletionTimestamp")) continue;
      auto target = daemonPodTargetNode(p);
      EXPECT_TRUE(target.has_value()) << p.dump();
      if (target) {
        EXPECT_EQ(out.count(*target), 0u) << "two daemon Pods on " << *target;
        out[*target] = p;
      }
    }
    return out;
  }
  json status(const std::string& name) {
    return get("apps", "daemonsets", "default", name)->value("status", json::object());
  }
  void addNodes(std::initializer_list<const char*> names) {
    for (const char* n : names) ASSERT_TRUE(create("", "nodes", "", node(n)).ok());
  }
};

TEST_F(DaemonSetControllerTest, DefaultsAndTemplateGeneration) {
  auto r = create("apps", "daemonsets", "default", daemonSet("agent"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  json ds = json::parse((*r)->json);
  EXPECT_EQ(ds["spec"]["updateStrategy"],
            json({{"type", "RollingUpdate"},
                  {"rollingUpdate", {{"maxUnavailable", 1}, {"maxSurge", 0}}}}));
  EXPECT_EQ(ds["spec"]["revisionHistoryLimit"], 10);
  EXPECT_FALSE(ds["spec"].contains("replicas"));
  EXPECT_EQ(ds["metadata"]["generation"], 1);
  EXPECT_EQ(daemonSetTemplateGeneration(ds), 1);
  EXPECT_EQ(ds["status"]["desiredNumberScheduled"], 0);
  // A spec change outside the template bumps generation, not the template generation.
  ASSERT_TRUE(mutate("apps", "daemonsets", "default", "agent", "", [](json& o) {
                o["spec"]["minReadySeconds"] = 1;
              }).ok());
  ds = *get("apps", "daemonsets", "default", "agent");
  EXPECT_EQ(ds["metadata"]["generation"], 2);
  EXPECT_EQ(daemonSetTemplateGeneration(ds), 1);
  ASSERT_TRUE(mutate("apps", "daemonsets", "default", "agent", "", [](json& o) {
                o["spec"]["template"]["spec"]["containers"][0]["image"] = "agent:2";
              }).ok());
  ds = *get("apps", "daemonsets", "default", "agent");
  EXPECT_EQ(ds["metadata"]["generation"], 3);
  EXPECT_EQ(daemonSetTemplateGeneration(ds), 2);
}

TEST_F(DaemonSetControllerTest, ValidationMessagesFollowUpstream) {
  json bad = daemonSet("agent");
  bad["spec"]["template"]["metadata"]["labels"] = {{"app", "other"}};
  auto r = create("apps", "daemonsets", "default", bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, kube::Code::Invalid);
  EXPECT_NE(r.error().message.find("spec.template.metadata.labels: Invalid value: "
                                   "map[string]string{\"app\":\"other\"}: `selector` does not "
                                   "match template `labels`"),
            std::string::npos)
      << r.error().message;

  bad = daemonSet("agent");
  bad["spec"]["selector"] = json::object();
  r = create("apps", "daemonsets", "default", bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("empty selector is invalid for daemonset"), std::string::npos)
      << r.error().message;

  bad = daemonSet("agent");
  bad["spec"].erase("selector");
  r = create("apps", "daemonsets", "default", bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("spec.selector: Required value"), std::string::npos);

  bad = daemonSet("agent", {{"restartPolicy", "Never"}});
  r = create("apps", "daemonsets", "default", bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("spec.template.spec.restartPolicy: Unsupported value: "
                                   "\"Never\": supported values: \"Always\""),
            std::string::npos)
      << r.error().message;
}

TEST_F(DaemonSetControllerTest, OnePodPerNodeBoundByNodeAffinityAndStatusCounts) {
  addNodes({"n1", "n2", "n3"});
  auto r = create("apps", "daemonsets", "default", daemonSet("agent"));
  ASSERT_TRUE(r.ok());
  std::string uid = kube::getUid(json::parse((*r)->json));
  ASSERT_TRUE(eventually([&] { return podsByNode("app=agent").size() == 3; }));
  std::this_thread::sleep_for(300ms);  // no over-creation while the controller keeps syncing
  auto pods = podsByNode("app=agent");
  ASSERT_EQ(pods.size(), 3u);
  for (const auto& [nodeName, p] : pods) {
    EXPECT_TRUE(kube::isControlledBy(p, uid));
    EXPECT_EQ(p["metadata"]["labels"]["pod-template-generation"], "1");
    EXPECT_EQ(p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
               ["nodeSelectorTerms"][0]["matchFields"][0],
              json({{"key", "metadata.name"}, {"operator", "In"}, {"values", json::array({nodeName})}}));
    std::set<std::string> tolerated;
    for (const auto& t : p["spec"]["tolerations"]) tolerated.insert(t.value("key", ""));
    for (const char* k : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
                          "node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure",
                          "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable"}) {
      EXPECT_TRUE(tolerated.count(k)) << k;
    }
    EXPECT_FALSE(tolerated.count("node.kubernetes.io/network-unavailable"));
  }
  ASSERT_TRUE(eventually([&] {
    auto s = status("agent");
    return s.value("desiredNumberScheduled", -1) == 3 && s.value("currentNumberScheduled", -1) == 3 &&
           s.value("numberReady", -1) == 0 && s.value("numberMisscheduled", -1) == 0 &&
           s.value("updatedNumberScheduled", 0) == 3 && s.value("numberUnavailable", 0) == 3 &&
           s.value("observedGeneration", 0) == 1;
  })) << status("agent").dump();
  readyAll("default", "app=agent");
  ASSERT_TRUE(eventually([&] {
    auto s = status("agent");
    return s.value("numberReady", 0) == 3 && s.value("numberAvailable", 0) == 3 &&
           !s.contains("numberUnavailable");
  })) << status("agent").dump();
  // A new node gets its Pod; a deleted node's Pod goes.
  addNodes({"n4"});
  ASSERT_TRUE(eventually([&] { return podsByNode("app=agent").count("n4") == 1; }));
  ASSERT_TRUE(rest_->remove(info("", "nodes"), "", "n1", DeleteOptions{}).ok());
  ASSERT_TRUE(eventually([&] {
    auto now = podsByNode("app=agent");
    return now.size() == 3 && !now.count("n1");
  }));
  // Deleting the DaemonSet deletes its Pods (garbage collector).
  ASSERT_TRUE(rest_->remove(info("apps", "daemonsets"), "default", "agent", DeleteOptions{}).ok());
  ASSERT_TRUE(eventually([&] { return list("", "pods", "default", "app=agent").empty(); }));
}

TEST_F(DaemonSetControllerTest, TaintsSelectorsAndCordon) {
  json noSchedule = json::array({{{"key", "dedicated"}, {"value", "db"}, {"effect", "NoSchedule"}}});
  ASSERT_TRUE(create("", "nodes", "", node("plain")).ok());
  ASSERT_TRUE(create("", "nodes", "", node("tainted", noSchedule)).ok());
  json cordoned = node("cordoned", json::array({{{"key", "node.kubernetes.io/unschedulable"},
                                                 {"effect", "NoSchedule"}}}));
  cordoned["spec"]["unschedulable"] = true;
  ASSERT_TRUE(create("", "nodes", "", cordoned).ok());
  ASSERT_TRUE(create("", "nodes", "", node("gpu", json::array(), {{"gpu", "true"}})).ok());

  ASSERT_TRUE(create("apps", "daemonsets", "default", daemonSet("agent")).ok());
  ASSERT_TRUE(create("apps", "daemonsets", "default",
                     daemonSet("gpu", {{"nodeSelector", {{"gpu", "true"}}}}))
                  .ok());
  ASSERT_TRUE(eventually([&] {
    auto p = podsByNode("app=agent");
    return p.size() == 3 && p.count("plain") && p.count("cordoned") && p.count("gpu");
  }));
  ASSERT_TRUE(eventually([&] {
    auto p = podsByNode("app=gpu");
    return p.size() == 1 && p.count("gpu");
  }));
  ASSERT_TRUE(eventually([&] { return status("agent").value("desiredNumberScheduled", 0) == 3; }));

  // NoSchedule added later: the existing Pod may stay (upstream), counted misscheduled.
  ASSERT_TRUE(mutate("", "nodes", "", "plain", "", [&](json& n) {
                n["spec"]["taints"] = noSchedule;
              }).ok());
  ASSERT_TRUE(eventually([&] {
    auto s = status("agent");
    return s.value("desiredNumberScheduled", 0) == 2 && s.value("numberMisscheduled", 0) == 1;
  })) << status("agent").dump();
  EXPECT_EQ(podsByNode("app=agent").count("plain"), 1u);
  // NoExecute not tolerated: the Pod is deleted.
  ASSERT_TRUE(mutate("", "nodes", "", "plain", "", [&](json& n) {
                n["spec"]["taints"] = json::array(
                    {{{"key", "dedicated"}, {"value", "db"}, {"effect", "NoExecute"}}});
              }).ok());
  ASSERT_TRUE(eventually([&] { return !podsByNode("app=agent").count("plain"); }));
  ASSERT_TRUE(eventually([&] {
    auto s = status("agent");
    return s.value("desiredNumberScheduled", 0) == 2 && s.value("numberMisscheduled", 1) == 0;
  })) << status("agent").dump();

  // A DaemonSet tolerating everything runs on every node.
  ASSERT_TRUE(create("apps", "daemonsets", "default",
                     daemonSet("all", {{"tolerations", json::array({{{"operator", "Exists"}}})}}))
                  .ok());
  ASSERT_TRUE(eventually([&] { return podsByNode("app=all").size() == 4; }));
}

TEST_F(DaemonSetControllerTest, FailedPodIsReplaced) {
  addNodes({"n1"});
  ASSERT_TRUE(create("apps", "daemonsets", "default", daemonSet("agent")).ok());
  ASSERT_TRUE(eventually([&] { return podsByNode("app=agent").size() == 1; }));
  std::string first = podsByNode("app=agent")["n1"]["metadata"]["name"];
  ASSERT_TRUE(mutate("", "pods", "default", first, "status", [](json& p) {
                p["status"]["phase"] = "Failed";
              }).ok());
  ASSERT_TRUE(eventually([&] {
    auto p = podsByNode("app=agent");
    return p.size() == 1 && p["n1"]["metadata"]["name"] != first;
  }));
}

TEST_F(DaemonSetControllerTest, TemplateChangeRollsOneNodeAtATime) {
  addNodes({"n1", "n2", "n3"});
  ASSERT_TRUE(create("apps", "daemonsets", "default", daemonSet("agent")).ok());
  ASSERT_TRUE(eventually([&] { return readyAll("default", "app=agent") == 3; }));
  ASSERT_TRUE(eventually([&] { return status("agent").value("numberAvailable", 0) == 3; }));
  ASSERT_TRUE(mutate("apps", "daemonsets", "default", "agent", "", [](json& o) {
                o["spec"]["template"]["spec"]["containers"][0]["image"] = "agent:2";
              }).ok());
  size_t minActive = 3;
  bool done = eventually([&] {
    auto pods = podsByNode("app=agent");
    size_t ready = 0;
    for (auto& [n, p] : pods) {
      bool isReady = false;
      for (const auto& c : p["status"].value("conditions", json::array())) {
        if (c["type"] == "Ready" && c["status"] == "True") isReady = true;
      }
      if (isReady) ++ready;
    }
    minActive = std::min(minActive, ready);
    readyAll("default", "app=agent");
    auto s = status("agent");
    return s.value("updatedNumberScheduled", 0) == 3 && s.value("numberAvailable", 0) == 3 &&
           s.value("observedGeneration", 0) == 2;
  }, 60s);
  ASSERT_TRUE(done) << status("agent").dump();
  EXPECT_GE(minActive, 2u) << "more than maxUnavailable=1 node without a ready daemon Pod";
  for (const auto& [n, p] : podsByNode("app=agent")) {
    EXPECT_EQ(p["metadata"]["labels"]["pod-template-generation"], "2");
    EXPECT_EQ(p["spec"]["containers"][0]["image"], "agent:2");
  }
}

TEST(DaemonSetUtilTest, NodeAffinityExpressionsAndTargetNode) {
  json ds = daemonSet("agent");
  ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
      json::array({{{"matchExpressions",
                     json::array({{{"key", "type"}, {"operator", "NotIn"},
                                   {"values", json::array({"virtual-kubelet"})}}})}}});
  json real = node("real");
  json virt = node("strait-cloud", json::array(), {{"type", "virtual-kubelet"}});
  EXPECT_TRUE(nodeShouldRunDaemonPod(real, ds).shouldRun);
  auto d = nodeShouldRunDaemonPod(virt, ds);
  EXPECT_FALSE(d.shouldRun);
  EXPECT_FALSE(d.shouldContinueRunning);

  json hostNet = daemonSet("net", {{"hostNetwork", true}});
  json notReadyNet = node("n", json::array({{{"key", "node.kubernetes.io/network-unavailable"},
                                             {"effect", "NoSchedule"}}}));
  EXPECT_TRUE(nodeShouldRunDaemonPod(notReadyNet, hostNet).shouldRun);
  EXPECT_FALSE(nodeShouldRunDaemonPod(notReadyNet, daemonSet("plain")).shouldRun);

  json pod = newDaemonPod(ds, "real", {{"kind", "DaemonSet"}});
  EXPECT_EQ(daemonPodTargetNode(pod), "real");
  pod["spec"]["nodeName"] = "other";
  EXPECT_EQ(daemonPodTargetNode(pod), "other");
  EXPECT_EQ(daemonPodTargetNode(json::object()), std::nullopt);

  json pct = daemonSet("p");
  pct["spec"]["updateStrategy"] = {{"rollingUpdate", {{"maxUnavailable", "50%"}}}};
  EXPECT_EQ(daemonSetMaxUnavailable(pct, 5), 3);
  EXPECT_EQ(daemonSetMaxUnavailable(daemonSet("d"), 5), 1);
}

}  // namespace
}  // namespace strait::minicluster::testing
