// Services across the tunnel, as root, on the process runtime with real kubectl, the agents'
// gateways and the chart's fabric DaemonSet (FabricFixture: two clusters on the SAME pod CIDR
// 10.244.0.0/16, namespace demo offloaded, the tunnel Up). Real traffic, real DNS (the
// clusters' dnsmasq), real Service rules (nft DNAT in every node namespace):
//  - the provider's copy of a Service whose Pods all run at home lists those Pods at their
//    remapped addresses (the consumer's pod CIDR as the provider sees it), and an offloaded
//    Pod reaches it at http://db.<its namespace>.svc.cluster.local;
//  - a home Pod reaches http://api.demo.svc.cluster.local, whose Pods all run in the cloud;
//  - Service web with replicas at home and in the cloud answers from both, asked from home
//    and from an offloaded Pod; during a cut of the tunnel (its UDP path dropped on the host)
//    the consumer's slices mark the offloaded replicas not ready and every answer at home
//    comes from a home replica, while the provider's slices mark the home replicas not ready
//    (its own view of the tunnel; the reflection stream stays up) and every answer in the
//    cloud comes from a cloud replica; after the heal both sides' slices are ready again
//    and both kinds of replica answer on both sides.
// Timings are measured and printed with the load average.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "e2e/fabric_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

class ServiceTrafficTest : public FabricFixture {
 protected:
  // Deployment `name` in demo running agnhost netexec on 8080 with labels `labels`, at home
  // only (`cloud` false: off the virtual node by affinity) or on the virtual node only.
  std::string applyDeployment(const std::string& name, const json& labels, int replicas,
                              bool cloud) {
    json spec = {{"containers",
                  json::array({{{"name", "web"},
                                {"image", "registry.k8s.io/e2e-test-images/agnhost:2.47"},
                                {"args", json::array({"netexec", "--http-port=8080"})},
                                {"ports", json::array({{{"containerPort", 8080}}})}}})}};
    if (cloud) {
      spec["nodeSelector"] = {{"type", "virtual-kubelet"}};
      spec["tolerations"] = json::array({{{"operator", "Exists"}}});
    } else {
      spec["affinity"] = {
          {"nodeAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{"nodeSelectorTerms",
               json::array({{{"matchExpressions",
                              json::array({{{"key", "type"},
                                            {"operator", "NotIn"},
                                            {"values", json::array({"virtual-kubelet"})}}})}}})}}}}}};
    }
    json d = {{"apiVersion", "apps/v1"},
              {"kind", "Deployment"},
              {"metadata", {{"name", name}, {"namespace", "demo"}}},
              {"spec",
               {{"replicas", replicas},
                {"selector", {{"matchLabels", labels}}},
                {"template", {{"metadata", {{"labels", labels}}}, {"spec", spec}}}}}};
    CommandResult r = kc(*homeSide_.cluster, {"apply", "-f", "-"}, 60s, d.dump());
    return r.exitCode == 0 ? "" : r.describe();
  }

  // The names of `m`.
  static std::set<std::string> keys(const std::map<std::string, std::string>& m) {
    std::set<std::string> out;
    for (const auto& [k, v] : m) out.insert(k);
    return out;
  }
};

TEST_F(ServiceTrafficTest, ServicesAnswerAcrossTheTunnelAndAvoidItWhileItIsCut) {
  std::string err = setUpFabric("push");
  ASSERT_EQ(err, "") << diagnostics();
  const json row = statusRow(*homeSide_.cluster);
  const std::string homeSeenThere = row.value("localCIDRSeenThere", "");
  ASSERT_FALSE(homeSeenThere.empty()) << row.dump();
  ASSERT_NE(homeSeenThere, kPodCidr) << "the clusters' pod CIDRs overlap: remapped";
  const std::string remoteNs = remoteNamespace("demo");
  Minicluster& home = *homeSide_.cluster;
  Minicluster& cloud = *cloudSide_.cluster;

  // db: every replica at home. api: every replica in the cloud. web: both.
  ASSERT_EQ(applyDeployment("db", {{"app", "db"}}, 2, false), "");
  ASSERT_EQ(applyDeployment("api", {{"app", "api"}}, 2, true), "");
  ASSERT_EQ(applyDeployment("web-home", {{"app", "web"}, {"at", "home"}}, 2, false), "");
  ASSERT_EQ(applyDeployment("web-cloud", {{"app", "web"}, {"at", "cloud"}}, 2, true), "");
  for (const char* svc : {"db", "api", "web"}) {
    CommandResult r = kc(home, {"create", "service", "clusterip", svc, "-n", "demo", "--tcp=80:8080"});
    ASSERT_EQ(r.exitCode, 0) << r.describe();
  }
  ASSERT_EQ(kc(home, {"create", "namespace", "local"}).exitCode, 0);
  json client = runServerPod(home, "local", "client");
  ASSERT_TRUE(client.is_object() && !client["status"].value("podIP", "").empty())
      << client.dump() << diagnostics();

  std::map<std::string, std::string> db, api, webHome, webCloud, apiRemote, webCloudRemote;
  ASSERT_TRUE(waitFor([&] {
    db = readyPods(home, "demo", "app=db");
    api = readyPods(home, "demo", "app=api");
    webHome = readyPods(home, "demo", "app=web,at=home");
    webCloud = readyPods(home, "demo", "app=web,at=cloud");
    apiRemote = readyPods(cloud, remoteNs, "app=api");
    webCloudRemote = readyPods(cloud, remoteNs, "app=web,at=cloud");
    return db.size() == 2 && api.size() == 2 && webHome.size() == 2 && webCloud.size() == 2 &&
           apiRemote.size() == 2 && webCloudRemote.size() == 2;
  }, 180s, 1s))
      << diagnostics();
  for (const auto& [name, ip] : api) {
    EXPECT_FALSE(inPrefix(ip, kPodCidr)) << name << " " << ip << ": the cloud's remapped view";
  }

  // The provider's Service db lists the home replicas at their addresses in the provider's
  // view of home's pod CIDR (remapped), never at home's own addresses.
  std::set<std::string> dbThere;
  for (const auto& [name, ip] : db) dbThere.insert(translate(ip, kPodCidr, homeSeenThere));
  std::map<std::string, bool> cloudDb;
  EXPECT_TRUE(waitFor([&] {
    cloudDb = endpoints(cloud, remoteNs, "db");
    std::set<std::string> got;
    for (const auto& [ip, ready] : cloudDb) {
      if (ready) got.insert(ip);
    }
    return got == dbThere;
  }, 30s, 500ms))
      << "cloud slices of db: " << json(cloudDb).dump() << " want " << json(dbThere).dump()
      << diagnostics();

  // An offloaded Pod reaches db by its cluster DNS name; a home replica answers.
  const std::string apiPod = apiRemote.begin()->first;
  const std::string dbUrl = "http://db." + remoteNs + ".svc.cluster.local/hostname";
  std::vector<std::string> answers;
  EXPECT_TRUE(waitFor([&] {
    answers = ask(cloud, remoteNs, apiPod, dbUrl, 4);
    if (answers.size() != 4) return false;
    for (const std::string& a : answers) {
      if (!db.count(a)) return false;
    }
    return true;
  }, 60s, 1s))
      << dbUrl << " from " << apiPod << ": " << json(answers).dump() << diagnostics();

  // A home Pod reaches api, whose replicas all run in the cloud.
  const std::string apiUrl = "http://api.demo.svc.cluster.local/hostname";
  EXPECT_TRUE(waitFor([&] {
    answers = ask(home, "local", "client", apiUrl, 4);
    if (answers.size() != 4) return false;
    for (const std::string& a : answers) {
      if (!apiRemote.count(a)) return false;
    }
    return true;
  }, 60s, 1s))
      << apiUrl << ": " << json(answers).dump() << diagnostics();

  // web answers from home and from the cloud.
  const std::string webUrl = "http://web.demo.svc.cluster.local/hostname";
  auto sources = [&](const std::vector<std::string>& a) {
    std::pair<int, int> n{0, 0};  // home, cloud
    for (const std::string& h : a) {
      if (webHome.count(h)) ++n.first;
      if (webCloudRemote.count(h)) ++n.second;
    }
    return n;
  };
  std::pair<int, int> split;
  EXPECT_TRUE(waitFor([&] {
    answers = ask(home, "local", "client", webUrl, 20);
    split = sources(answers);
    return answers.size() == 20 && split.first > 0 && split.second > 0 &&
           split.first + split.second == 20;
  }, 60s, 1s))
      << json(answers).dump() << diagnostics();

  // web answers an offloaded Pod from home and from the cloud too.
  const std::string webThereUrl = "http://web." + remoteNs + ".svc.cluster.local/hostname";
  EXPECT_TRUE(waitFor([&] {
    answers = ask(cloud, remoteNs, apiPod, webThereUrl, 20);
    split = sources(answers);
    return answers.size() == 20 && split.first > 0 && split.second > 0 &&
           split.first + split.second == 20;
  }, 60s, 1s))
      << webThereUrl << " from " << apiPod << ": " << json(answers).dump() << diagnostics();
  // The home replicas of web in the provider's view (remapped addresses).
  std::set<std::string> webHomeThere;
  for (const auto& [name, ip] : webHome) webHomeThere.insert(translate(ip, kPodCidr, homeSeenThere));
  // The provider's slices of web: home replicas ready (want true) or not ready (false), the
  // cloud replicas ready in both cases.
  std::map<std::string, bool> cloudWeb;
  auto providerWebIs = [&](bool homeReady) {
    cloudWeb = endpoints(cloud, remoteNs, "web");
    for (const std::string& ip : webHomeThere) {
      if (!cloudWeb.count(ip) || cloudWeb[ip] != homeReady) return false;
    }
    for (const auto& [name, ip] : webCloudRemote) {
      if (!cloudWeb.count(ip) || !cloudWeb[ip]) return false;
    }
    return true;
  };
  ASSERT_TRUE(waitFor([&] { return providerWebIs(true); }, 30s, 250ms))
      << json(cloudWeb).dump() << " home replicas there " << json(webHomeThere).dump();

  // The cut: the consumer's slices of web keep the home replicas ready and mark the offloaded
  // ones not ready; every request is answered by a home replica. The provider's slices mark
  // the home replicas not ready; every request from an offloaded Pod is answered in the cloud.
  ASSERT_EQ(cutUdp(), "");
  const auto cutAt = Clock::now();
  std::map<std::string, bool> homeWeb;
  auto cloudNotReady = [&] {
    homeWeb = endpoints(home, "demo", "web");
    for (const auto& [name, ip] : webHome) {
      if (!homeWeb.count(ip) || !homeWeb[ip]) return false;
    }
    for (const auto& [name, ip] : webCloud) {
      if (!homeWeb.count(ip) || homeWeb[ip]) return false;
    }
    return true;
  };
  // The provider's own view of the tunnel: its slices hold the home replicas not ready
  // (nothing deleted: each address is still listed) while the reflection stream is up.
  double notReadyAfter = -1, providerNotReadyAfter = -1;
  ASSERT_TRUE(waitFor([&] {
    if (notReadyAfter < 0 && cloudNotReady()) notReadyAfter = secondsSince(cutAt);
    if (providerNotReadyAfter < 0 && providerWebIs(false)) {
      providerNotReadyAfter = secondsSince(cutAt);
    }
    return notReadyAfter >= 0 && providerNotReadyAfter >= 0;
  }, 30s, 250ms))
      << "home's slices " << json(homeWeb).dump() << " (offloaded not ready after "
      << notReadyAfter << " s); the provider's " << json(cloudWeb).dump()
      << " (home replicas there " << json(webHomeThere).dump() << ", not ready after "
      << providerNotReadyAfter << " s)" << diagnostics();
  for (const auto& [name, ip] : webCloud) {
    json pod = getJson(home, {"get", "pod", "-n", "demo", name});
    std::string reason;
    for (const json& c : pod["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "Ready") reason = c.value("reason", "");
    }
    EXPECT_EQ(reason, "ProviderUnreachable") << name;
  }
  // The Service rules follow the slices within ~100 ms; allow a second (a second round of
  // requests when the first one, sent at once, still reached an offloaded replica).
  waitFor([&] {
    answers = ask(home, "local", "client", webUrl, 20);
    split = sources(answers);
    return answers.size() == 20 && split.first == 20;
  }, 1s, 200ms);
  EXPECT_EQ(answers.size(), 20u) << json(answers).dump();
  EXPECT_EQ(split.first, 20) << "during the cut only home replicas answer: "
                             << json(answers).dump();
  // Nothing was deleted by the cut.
  EXPECT_EQ(readyPods(cloud, remoteNs, "app=web,at=cloud").size(), 2u);
  EXPECT_TRUE(providerWebIs(false)) << json(cloudWeb).dump();
  const json providerRow = statusRow(cloud);
  EXPECT_EQ(providerRow.value("tunnel", ""), "False") << providerRow.dump();
  // The provider's Service rules follow its slices (checked above); allowed a second too.
  waitFor([&] {
    answers = ask(cloud, remoteNs, apiPod, webThereUrl, 20);
    split = sources(answers);
    return answers.size() == 20 && split.second == 20;
  }, 1s, 200ms);
  EXPECT_EQ(answers.size(), 20u) << json(answers).dump();
  EXPECT_EQ(split.second, 20) << "during the cut only cloud replicas answer an offloaded Pod: "
                              << json(answers).dump() << diagnostics();

  // The heal: the offloaded replicas ready again, and both sides answer.
  healUdp();
  const auto healAt = Clock::now();
  ASSERT_TRUE(waitFor([&] {
    homeWeb = endpoints(home, "demo", "web");
    for (const auto& [name, ip] : webCloud) {
      if (!homeWeb.count(ip) || !homeWeb[ip]) return false;
    }
    return true;
  }, 60s, 250ms))
      << json(homeWeb).dump() << diagnostics();
  const double readyAfter = secondsSince(healAt);
  // The provider's slices: the home replicas ready again once its tunnel is Up, within 2 s
  // of it (the watch round and the tunnel status poll); allowed 5 s on a loaded machine.
  double providerTunnelUpAt = -1, providerReadyAt = -1;
  ASSERT_TRUE(waitFor([&] {
    if (providerTunnelUpAt < 0 && statusRow(cloud).value("tunnel", "") == "True") {
      providerTunnelUpAt = secondsSince(healAt);
    }
    if (providerReadyAt < 0 && providerWebIs(true)) providerReadyAt = secondsSince(healAt);
    return providerTunnelUpAt >= 0 && providerReadyAt >= 0;
  }, 60s, 100ms))
      << json(cloudWeb).dump() << " tunnel up after " << providerTunnelUpAt << diagnostics();
  EXPECT_LT(providerReadyAt - providerTunnelUpAt, 5.0)
      << "home replicas ready in the provider " << providerReadyAt << " s after the heal, its "
      << "tunnel Up after " << providerTunnelUpAt << " s";
  EXPECT_TRUE(waitFor([&] {
    answers = ask(home, "local", "client", webUrl, 20);
    split = sources(answers);
    return answers.size() == 20 && split.first > 0 && split.second > 0 &&
           split.first + split.second == 20;
  }, 60s, 1s))
      << json(answers).dump() << diagnostics();
  EXPECT_TRUE(waitFor([&] {
    answers = ask(cloud, remoteNs, apiPod, webThereUrl, 20);
    split = sources(answers);
    return answers.size() == 20 && split.first > 0 && split.second > 0 &&
           split.first + split.second == 20;
  }, 60s, 1s))
      << webThereUrl << ": " << json(answers).dump() << diagnostics();
  std::printf("figure: tunnel cut -> offloaded web replicas not ready in home's slices after "
              "%.2fs, home replicas not ready in the provider's after %.2fs; heal -> ready "
              "again at home after %.2fs, provider tunnel Up after %.2fs and home replicas "
              "ready there after %.2fs (load %s)\n",
              notReadyAfter, providerNotReadyAfter, readyAfter, providerTunnelUpAt,
              providerReadyAt, loadAverage().c_str());
}

}  // namespace
}  // namespace strait::e2e
