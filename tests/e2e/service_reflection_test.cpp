// Services and EndpointSlices across a peering, with real processes and real kubectl: two
// `strait minicluster` ("home" the consumer, "cloud" the provider), a `strait agent` on each,
// `strait peer` and namespace "svc" offloaded. The home agent reaches the cloud agent through
// a TcpProxy that the partition test cuts and heals. In "svc": Deployment web (kubectl create
// deployment) pinned to the virtual node, and a home Pod with the same app=web label,
// exposed with kubectl expose:
//  - the cloud has Service web with its own ClusterIP, its controller's slice listing the
//    cloud replicas and Strait's slice listing the home replica; home's slices list both;
//  - a single offloaded Pod exposed by `kubectl expose pod` gets its endpoint at home;
//  - changing ports and selector follows within a second; deleting removes Service and
//    slices; an opted-out Service never crosses;
//  - a Service of the same name that the cloud's user created is never touched: the home
//    Service gets a ReflectionConflict Event naming it, the ForeignCluster's status counts the
//    conflict, and reflection resumes once it is deleted;
//  - a partition marks the reflected endpoints not ready in the cloud and the offloaded Pods
//    not Ready (ProviderUnreachable) at home, deleting nothing; the heal restores both;
//  - unoffload leaves no Service or EndpointSlice in the cloud.
// Timings are measured and printed with the load average.

#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "e2e/offload_fixture.h"
#include "e2e/tcp_proxy.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kServiceNs = "svc";

class ServiceReflectionTest : public OffloadSuite {
 public:
  static void SetUpTestSuite() {
    proxy_ = new TcpProxy(0);
    error_ = setUp();
  }
  static std::string setUp() {
    OffloadSetup s;
    s.homeArgs = {"--nodes", "1"};
    s.cloudArgs = {"--nodes", "2", "--node-cpu", "8", "--node-memory", "32Gi"};
    s.cloudAgentArgs = {"--stream-keepalive", "500ms"};
    s.homeAgentArgs = {"--vnode-stream-grace", "4s"};
    if (std::string e = startClusters(s); !e.empty()) return e;
    if (std::string e = startAgentsThroughProxy(*proxy_, s); !e.empty()) return e;
    if (std::string e = peer({"--cpu", "8", "--memory", "16Gi", "--pods", "50"}); !e.empty()) {
      return e;
    }
    return offloadNamespace(kServiceNs);
  }
  static void TearDownTestSuite() {
    stopAll();
    delete proxy_;
    proxy_ = nullptr;
  }

 protected:
  void SetUp() override {
    OffloadSuite::SetUp();
    if (HasFatalFailure()) return;
    proxy_->resume();
    remoteNs_ = remoteNamespace(kServiceNs);
  }

  CommandResult home(const std::vector<std::string>& args, const std::string& in = "") {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"-n", kServiceNs});
    return kubectl(*home_, a, in);
  }
  json cloudGet(const std::vector<std::string>& args) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"-n", remoteNs_});
    return getJson(*cloud_, a);
  }
  json homeGet(const std::vector<std::string>& args) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"-n", kServiceNs});
    return getJson(*home_, a);
  }

  // The endpoints of the slices in `slices` (a list) by managed-by value: Pod name (or
  // address when the slice names no Pod) -> ready.
  static std::map<std::string, std::map<std::string, bool>> endpointsByManager(
      const json& slices) {
    std::map<std::string, std::map<std::string, bool>> out;
    if (!slices.is_object()) return out;
    for (const json& s : slices.value("items", json::array())) {
      const std::string mgr = s.value(
          "/metadata/labels/endpointslice.kubernetes.io~1managed-by"_json_pointer, std::string());
      for (const json& e : s.value("endpoints", json::array())) {
        const bool ready = e.value("/conditions/ready"_json_pointer, false);
        // By Pod name where the slice names it (addresses may repeat across the clusters,
        // whose pod CIDRs overlap), else by address.
        const std::string pod = e.value("/targetRef/name"_json_pointer, std::string());
        if (!pod.empty()) {
          out[mgr][pod] = ready;
          continue;
        }
        for (const json& a : e.value("addresses", json::array())) {
          out[mgr][a.get<std::string>()] = ready;
        }
      }
    }
    return out;
  }

  // Name -> IP of the home Pods labelled app=web, split by whether they run on the virtual
  // node.
  using PodIps = std::map<std::string, std::string>;
  std::pair<PodIps, PodIps> webPodIps() {
    PodIps homeIps, cloudIps;
    json pods = homeGet({"get", "pods", "-l", "app=web"});
    if (!pods.is_object()) return {};
    for (const json& p : pods.value("items", json::array())) {
      const std::string ip = p.value("/status/podIP"_json_pointer, std::string());
      if (ip.empty() || p.contains("/metadata/deletionTimestamp"_json_pointer)) continue;
      (p.value("/spec/nodeName"_json_pointer, std::string()) == kVirtualNode ? cloudIps
                                                                              : homeIps)
          [p.value("/metadata/name"_json_pointer, std::string())] = ip;
    }
    return {homeIps, cloudIps};
  }

  // web: 2 replicas on the virtual node (kubectl create deployment + a nodeSelector), 1 Pod at
  // home with the same label; exposed by kubectl expose. Waits until every Pod has an IP.
  void createWeb() {
    ASSERT_EQ(home({"create", "deployment", "web", "--image", "nginx:1.27", "--replicas", "2",
                    "--port", "8080"}).exitCode, 0);
    ASSERT_EQ(home({"patch", "deployment", "web", "--type", "merge", "-p",
                    R"({"spec":{"template":{"spec":{"nodeSelector":{"type":"virtual-kubelet"}}}}})"})
                  .exitCode, 0);
    ASSERT_EQ(home({"run", "web-home", "--image", "nginx:1.27", "--labels", "app=web",
                    "--overrides",
                    R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"type","operator":"NotIn","values":["virtual-kubelet"]}]}]}}}}})"})
                  .exitCode, 0);
    // The first ReplicaSet's Pods (before the nodeSelector) are gone once the rollout is done.
    CommandResult rollout = home({"rollout", "status", "deployment/web", "--timeout", "120s"});
    ASSERT_EQ(rollout.exitCode, 0) << rollout.describe();
    CommandResult ex = home({"expose", "deployment", "web", "--port", "80", "--target-port",
                             "8080"});
    ASSERT_EQ(ex.exitCode, 0) << ex.describe();
    ASSERT_TRUE(waitFor([&] {
      json pods = homeGet({"get", "pods", "-l", "app=web"});
      auto [h, c] = webPodIps();
      return pods.is_object() && pods["items"].size() == 3 && h.size() == 1 && c.size() == 2;
    }, 120s)) << home({"get", "pods", "-o", "wide"}).out << agentLogs();
  }

  static TcpProxy* proxy_;
  std::string remoteNs_;
};

TcpProxy* ServiceReflectionTest::proxy_ = nullptr;

TEST_F(ServiceReflectionTest, ServicesAndEndpointSlicesFollowBothWays) {
  createWeb();
  if (HasFatalFailure()) return;
  auto [homeIps, cloudIps] = webPodIps();

  // The cloud: Service web with its own ClusterIP; its controller lists the cloud replicas,
  // Strait's slice the home one. Home: its controller lists all three.
  json homeSvc = homeGet({"get", "service", "web"});
  ASSERT_TRUE(homeSvc.is_object());
  const std::string homeClusterIp = homeSvc.value("/spec/clusterIP"_json_pointer, std::string());
  std::map<std::string, std::map<std::string, bool>> cloudEp, homeEp;
  const auto t0 = Clock::now();
  ASSERT_TRUE(waitFor([&] {
    cloudEp = endpointsByManager(cloudGet({"get", "endpointslices", "-l",
                                           "kubernetes.io/service-name=web"}));
    homeEp = endpointsByManager(homeGet({"get", "endpointslices", "-l",
                                         "kubernetes.io/service-name=web"}));
    return cloudEp["endpointslice.strait.io"].size() == 1 &&
           cloudEp["endpointslice-controller.k8s.io"].size() == 2 &&
           homeEp["endpointslice-controller.k8s.io"].size() == 3;
  }, 60s)) << cloudGet({"get", "endpointslices"}).dump(1) << agentLogs();
  const double converged = secondsSince(t0);
  json cloudSvc = cloudGet({"get", "service", "web"});
  ASSERT_TRUE(cloudSvc.is_object());
  const std::string cloudClusterIp = cloudSvc.value("/spec/clusterIP"_json_pointer, std::string());
  EXPECT_FALSE(cloudClusterIp.empty());
  EXPECT_NE(cloudClusterIp, "None");
  EXPECT_EQ(cloudSvc.value("/metadata/labels/strait.io~1origin-uid"_json_pointer, std::string()),
            homeSvc.value("/metadata/uid"_json_pointer, std::string()));
  EXPECT_EQ(cloudSvc["spec"]["selector"], json({{"app", "web"}}));
  EXPECT_EQ(cloudSvc["spec"]["ports"][0]["port"], 80);
  EXPECT_EQ(cloudSvc["spec"]["ports"][0]["targetPort"], 8080);
  EXPECT_EQ(cloudEp["endpointslice.strait.io"].count(homeIps.begin()->second), 1u)
      << "the home replica's address is reflected";
  EXPECT_TRUE(cloudEp["endpointslice.strait.io"][homeIps.begin()->second]);
  for (const auto& [pod, ip] : homeIps) EXPECT_TRUE(homeEp["endpointslice-controller.k8s.io"][pod]);
  for (const auto& [pod, ip] : cloudIps) {
    EXPECT_TRUE(homeEp["endpointslice-controller.k8s.io"][pod]) << pod;
    EXPECT_TRUE(cloudEp["endpointslice-controller.k8s.io"][pod]) << pod;
  }
  std::printf("figure: service+slices in the provider %.2fs after the pods had IPs (load %s, "
              "home ClusterIP %s, cloud ClusterIP %s)\n",
              converged, loadAverage().c_str(), homeClusterIp.c_str(), cloudClusterIp.c_str());

  // A single offloaded Pod exposed by kubectl expose gets its endpoint at home.
  ASSERT_EQ(home({"run", "solo", "--image", "nginx:1.27", "--labels", "app=solo", "--overrides",
                  R"({"spec":{"nodeSelector":{"type":"virtual-kubelet"}}})"}).exitCode, 0);
  ASSERT_EQ(home({"expose", "pod", "solo", "--port", "80"}).exitCode, 0);
  EXPECT_TRUE(waitFor([&] {
    json pod = homeGet({"get", "pod", "solo"});
    const std::string ip = pod.is_object() ? pod.value("/status/podIP"_json_pointer, std::string())
                                           : std::string();
    auto ep = endpointsByManager(homeGet({"get", "endpointslices", "-l",
                                          "kubernetes.io/service-name=solo"}));
    return !ip.empty() && ep["endpointslice-controller.k8s.io"].size() == 1 &&
           ep["endpointslice-controller.k8s.io"]["solo"];
  }, 90s)) << homeGet({"get", "endpointslices"}).dump(1);

  // Ports follow.
  auto t1 = Clock::now();
  ASSERT_EQ(home({"patch", "service", "web", "--type", "json", "-p",
                  R"([{"op":"replace","path":"/spec/ports/0/port","value":81}])"}).exitCode, 0);
  ASSERT_TRUE(waitFor([&] {
    json s = cloudGet({"get", "service", "web"});
    return s.is_object() && s.value("/spec/ports/0/port"_json_pointer, 0) == 81;
  }, 30s));
  const double portsFollowed = secondsSince(t1);
  EXPECT_EQ(cloudGet({"get", "service", "web"}).value("/spec/clusterIP"_json_pointer, std::string()),
            cloudClusterIp) << "the provider's ClusterIP is kept across updates";
  // The selector follows: nothing matches any more, so the reflected slice goes.
  auto t2 = Clock::now();
  ASSERT_EQ(home({"patch", "service", "web", "--type", "merge", "-p",
                  R"({"spec":{"selector":{"app":"nothing"}}})"}).exitCode, 0);
  ASSERT_TRUE(waitFor([&] {
    json s = cloudGet({"get", "service", "web"});
    auto ep = endpointsByManager(cloudGet({"get", "endpointslices", "-l",
                                           "endpointslice.kubernetes.io/managed-by=endpointslice.strait.io"}));
    return s.is_object() && s["spec"]["selector"] == json({{"app", "nothing"}}) && ep.empty();
  }, 30s)) << cloudGet({"get", "endpointslices"}).dump(1);
  const double selectorFollowed = secondsSince(t2);
  // Deleting removes the Service and whatever slice Strait made.
  auto t3 = Clock::now();
  ASSERT_EQ(home({"patch", "service", "web", "--type", "merge", "-p",
                  R"({"spec":{"selector":{"app":"web"}}})"}).exitCode, 0);
  ASSERT_TRUE(waitFor([&] {
    return endpointsByManager(cloudGet({"get", "endpointslices", "-l",
                                        "kubernetes.io/service-name=web"}))["endpointslice.strait.io"]
               .size() == 1;
  }, 30s));
  t3 = Clock::now();
  ASSERT_EQ(home({"delete", "service", "web"}).exitCode, 0);
  ASSERT_TRUE(waitFor([&] {
    json svcs = cloudGet({"get", "services", "--field-selector", "metadata.name=web"});
    json slices = cloudGet({"get", "endpointslices", "-l",
                            "endpointslice.kubernetes.io/managed-by=endpointslice.strait.io,"
                            "kubernetes.io/service-name=web"});
    return svcs.is_object() && svcs["items"].empty() && slices.is_object() &&
           slices["items"].empty();
  }, 30s));
  const double deleteFollowed = secondsSince(t3);
  std::printf("figure: ports followed in %.2fs, selector %.2fs, deletion %.2fs (load %s)\n",
              portsFollowed, selectorFollowed, deleteFollowed, loadAverage().c_str());
  EXPECT_LT(portsFollowed, 3.0);
  EXPECT_LT(deleteFollowed, 3.0);

  // An opted-out Service never crosses.
  ASSERT_EQ(home({"create", "service", "clusterip", "private", "--tcp", "80:8080"}).exitCode, 0);
  ASSERT_EQ(home({"annotate", "service", "private", "strait.io/reflection=disabled"}).exitCode, 0);
  ASSERT_EQ(home({"create", "service", "clusterip", "marker", "--tcp", "80:8080"}).exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return cloudGet({"get", "service", "marker"}).is_object(); }, 30s));
  EXPECT_FALSE(cloudGet({"get", "service", "private"}).is_object());

  // A Service the cloud's user created under the same name is left alone; home hears of it.
  CommandResult own = kubectl(*cloud_, {"create", "service", "clusterip", "taken", "--tcp",
                                        "9999:9999", "-n", remoteNs_});
  ASSERT_EQ(own.exitCode, 0) << own.describe();
  json before = cloudGet({"get", "service", "taken"});
  ASSERT_EQ(home({"create", "service", "clusterip", "taken", "--tcp", "80:8080"}).exitCode, 0);
  std::string message;
  ASSERT_TRUE(waitFor([&] {
    json evs = homeGet({"get", "events", "--field-selector",
                        "involvedObject.name=taken,reason=ReflectionConflict"});
    if (!evs.is_object() || evs["items"].empty()) return false;
    message = evs["items"][0].value("message", "");
    return evs["items"][0].value("type", "") == "Warning";
  }, 30s)) << agentLogs();
  EXPECT_NE(message.find("taken"), std::string::npos) << message;
  EXPECT_NE(message.find("not created by Strait"), std::string::npos) << message;
  json fcStatus;
  EXPECT_TRUE(waitFor([&] {
    json fcs = getJson(*home_, {"get", "foreignclusters"});
    if (!fcs.is_object() || fcs["items"].empty()) return false;
    fcStatus = fcs["items"][0].value("status", json::object());
    return fcStatus.value("/reflection/conflicts"_json_pointer, -1) == 1;
  }, 30s)) << fcStatus.dump(1);
  // `strait status` shows the conflict in the peering's row.
  CommandResult st = strait({"status", "--kubeconfig", home_->kubeconfig()});
  ASSERT_EQ(st.exitCode, 0) << st.describe();
  EXPECT_NE(st.out.find("SERVICES(svc/slices/conflicts)"), std::string::npos) << st.out;
  {
    const size_t row = st.out.find("\ncloud");
    ASSERT_NE(row, std::string::npos) << st.out;
    const std::string line = st.out.substr(row + 1, st.out.find('\n', row + 1) - row - 1);
    EXPECT_EQ(line.substr(line.size() - 2), "/1") << line;
  }
  json after = cloudGet({"get", "service", "taken"});
  ASSERT_TRUE(after.is_object());
  EXPECT_EQ(after["metadata"]["uid"], before["metadata"]["uid"]);
  EXPECT_EQ(after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"]);
  EXPECT_EQ(after["spec"]["ports"][0]["port"], 9999);
  // Once the other Service is gone, reflection resumes by itself.
  ASSERT_EQ(kubectl(*cloud_, {"delete", "service", "taken", "-n", remoteNs_}).exitCode, 0);
  EXPECT_TRUE(waitFor([&] {
    json s = cloudGet({"get", "service", "taken"});
    return s.is_object() && s.value("/spec/ports/0/port"_json_pointer, 0) == 80;
  }, 30s));
  EXPECT_TRUE(waitFor([&] {
    json fcs = getJson(*home_, {"get", "foreignclusters"});
    return fcs.is_object() && !fcs["items"].empty() &&
           fcs["items"][0].value("/status/reflection/conflicts"_json_pointer, -1) == 0;
  }, 30s));

  // Unoffload leaves no Service or EndpointSlice of ours in the cloud.
  CommandResult un = strait({"unoffload", "namespace", kServiceNs, "--kubeconfig", home_->kubeconfig(),
                             "--force"});
  ASSERT_EQ(un.exitCode, 0) << un.describe();
  EXPECT_TRUE(waitFor([&] {
    json s = getJson(*cloud_, {"get", "services", "-A", "-l", "strait.io/origin-cluster-id"});
    json e = getJson(*cloud_, {"get", "endpointslices", "-A", "-l", "strait.io/origin-cluster-id"});
    return s.is_object() && s["items"].empty() && e.is_object() && e["items"].empty();
  }, 120s)) << getJson(*cloud_, {"get", "services", "-A"}).dump(1);
}

TEST_F(ServiceReflectionTest, APartitionMarksEndpointsNotReadyOnBothSidesAndTheHealRestoresThem) {
  createWeb();
  if (HasFatalFailure()) return;
  auto [homeIps, cloudIps] = webPodIps();
  ASSERT_TRUE(waitFor([&] {
    auto ep = endpointsByManager(cloudGet({"get", "endpointslices", "-l",
                                           "kubernetes.io/service-name=web"}));
    return ep["endpointslice.strait.io"].size() == 1 && ep["endpointslice.strait.io"].begin()->second;
  }, 60s)) << agentLogs();
  json cloudSvc = cloudGet({"get", "service", "web"});
  ASSERT_TRUE(cloudSvc.is_object());

  const auto cut = Clock::now();
  proxy_->cut();
  double cloudMarked = -1, homeMarked = -1;
  ASSERT_TRUE(waitFor([&] {
    auto cloudEp = endpointsByManager(cloudGet({"get", "endpointslices", "-l",
                                                "kubernetes.io/service-name=web"}));
    if (cloudMarked < 0 && cloudEp["endpointslice.strait.io"].size() == 1 &&
        !cloudEp["endpointslice.strait.io"].begin()->second) {
      cloudMarked = secondsSince(cut);
    }
    auto homeEp = endpointsByManager(homeGet({"get", "endpointslices", "-l",
                                              "kubernetes.io/service-name=web"}));
    bool offloadedNotReady = true;
    for (const auto& [pod, ip] : cloudIps) {
      offloadedNotReady = offloadedNotReady &&
                          homeEp["endpointslice-controller.k8s.io"].count(pod) &&
                          !homeEp["endpointslice-controller.k8s.io"][pod];
    }
    if (homeMarked < 0 && offloadedNotReady) homeMarked = secondsSince(cut);
    return cloudMarked >= 0 && homeMarked >= 0;
  }, 60s)) << "cloud=" << cloudMarked << " home=" << homeMarked
            << home({"get", "pods", "-o", "wide"}).out
            << homeGet({"get", "pods", "-l", "app=web"}).dump(1)
            << homeGet({"get", "endpointslices"}).dump(1) << agentLogs();
  // The reason is said on the offloaded Pods; the home replica stays ready; nothing deleted.
  json pods = homeGet({"get", "pods", "-l", "app=web", "--field-selector",
                       "spec.nodeName=strait-cloud"});
  ASSERT_TRUE(pods.is_object());
  ASSERT_EQ(pods["items"].size(), 2u);
  for (const json& p : pods["items"]) {
    for (const json& c : p.value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == "Ready") {
        EXPECT_EQ(c.value("status", ""), "False");
        EXPECT_EQ(c.value("reason", ""), "ProviderUnreachable");
      }
    }
  }
  auto homeEp = endpointsByManager(homeGet({"get", "endpointslices", "-l",
                                            "kubernetes.io/service-name=web"}));
  EXPECT_TRUE(homeEp["endpointslice-controller.k8s.io"][homeIps.begin()->first]);
  json stillThere = cloudGet({"get", "service", "web"});
  ASSERT_TRUE(stillThere.is_object());
  EXPECT_EQ(stillThere["metadata"]["uid"], cloudSvc["metadata"]["uid"]);

  const auto heal = Clock::now();
  proxy_->resume();
  double cloudRestored = -1, homeRestored = -1;
  ASSERT_TRUE(waitFor([&] {
    auto cloudEp = endpointsByManager(cloudGet({"get", "endpointslices", "-l",
                                                "kubernetes.io/service-name=web"}));
    if (cloudRestored < 0 && cloudEp["endpointslice.strait.io"].size() == 1 &&
        cloudEp["endpointslice.strait.io"].begin()->second) {
      cloudRestored = secondsSince(heal);
    }
    auto ep = endpointsByManager(homeGet({"get", "endpointslices", "-l",
                                          "kubernetes.io/service-name=web"}));
    bool ready = true;
    for (const auto& [pod, ip] : cloudIps) ready = ready && ep["endpointslice-controller.k8s.io"][pod];
    if (homeRestored < 0 && ready) homeRestored = secondsSince(heal);
    return cloudRestored >= 0 && homeRestored >= 0;
  }, 60s)) << "cloud=" << cloudRestored << " home=" << homeRestored << agentLogs();
  std::printf("figure: after the cut, cloud endpoints not ready at %.2fs, home offloaded pods "
              "not ready at %.2fs; after the heal restored at %.2fs (cloud) and %.2fs (home) "
              "(load %s)\n",
              cloudMarked, homeMarked, cloudRestored, homeRestored, loadAverage().c_str());
  // The consumer redials at least every second, then resyncs: both well within 5 s.
  EXPECT_LT(cloudRestored, 5.0);
  EXPECT_LT(homeRestored, 5.0);

  // Unpeering leaves no Service or EndpointSlice of ours in the cloud.
  CommandResult del = home({"delete", "pods", "--field-selector", "spec.nodeName=strait-cloud",
                            "--grace-period=0", "--force"});
  (void)home({"delete", "deployment", "web"});
  (void)del;
  CommandResult un = strait({"unoffload", "namespace", kServiceNs, "--kubeconfig", home_->kubeconfig(),
                             "--force"});
  ASSERT_EQ(un.exitCode, 0) << un.describe();
  CommandResult unpeer = strait({"unpeer", "--kubeconfig", home_->kubeconfig(),
                                 "--remote-kubeconfig", cloud_->kubeconfig()});
  EXPECT_EQ(unpeer.exitCode, 0) << unpeer.describe();
  EXPECT_TRUE(waitFor([&] {
    json s = getJson(*cloud_, {"get", "services", "-A", "-l", "strait.io/origin-cluster-id"});
    json e = getJson(*cloud_, {"get", "endpointslices", "-A", "-l", "strait.io/origin-cluster-id"});
    return s.is_object() && s["items"].empty() && e.is_object() && e["items"].empty();
  }, 120s)) << getJson(*cloud_, {"get", "services", "-A"}).dump(1);
}

}  // namespace
}  // namespace strait::e2e
