// An exported provider Service reached from the consumer through the tunnel, as root, on the
// process runtime with real kubectl, the agents' gateways and the chart's fabric DaemonSet
// (FabricFixture: two clusters on the SAME pod CIDR 10.244.0.0/16, the tunnel Up). In the
// cloud, namespace shop (not an offloaded one: the cloud's own) holds Deployment db
// (agnhost netexec) behind Service db; `strait expose service shop/db --to <home>`; home
// then has Service shop/db without selector whose slices list the cloud Pods at home's
// remapped view of the cloud's pod CIDR, and a home Pod gets answers from the cloud Pods at
// http://db.shop.svc.cluster.local. Timings are measured and printed with the load average.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "e2e/fabric_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

class ServiceImportTrafficTest : public FabricFixture {};

TEST_F(ServiceImportTrafficTest, AHomePodReachesAnExportedCloudServiceByName) {
  std::string err = setUpFabric("push");
  ASSERT_EQ(err, "") << diagnostics();
  const json row = statusRow(*homeSide_.cluster);
  const std::string cloudSeenHere = row.value("remoteCIDRSeenHere", "");
  ASSERT_FALSE(cloudSeenHere.empty()) << row.dump();
  ASSERT_NE(cloudSeenHere, kPodCidr) << "the clusters' pod CIDRs overlap: remapped";
  Minicluster& home = *homeSide_.cluster;
  Minicluster& cloud = *cloudSide_.cluster;

  ASSERT_EQ(kc(cloud, {"create", "namespace", "shop"}).exitCode, 0);
  json labels = {{"app", "db"}};
  json d = {{"apiVersion", "apps/v1"},
            {"kind", "Deployment"},
            {"metadata", {{"name", "db"}, {"namespace", "shop"}}},
            {"spec",
             {{"replicas", 2},
              {"selector", {{"matchLabels", labels}}},
              {"template",
               {{"metadata", {{"labels", labels}}},
                {"spec",
                 {{"containers",
                   json::array({{{"name", "web"},
                                 {"image", "registry.k8s.io/e2e-test-images/agnhost:2.47"},
                                 {"args", json::array({"netexec", "--http-port=8080"})},
                                 {"ports", json::array({{{"containerPort", 8080}}})}}})}}}}}}}};
  CommandResult applied = kc(cloud, {"apply", "-f", "-"}, 60s, d.dump());
  ASSERT_EQ(applied.exitCode, 0) << applied.describe();
  CommandResult svc = kc(cloud, {"create", "service", "clusterip", "db", "-n", "shop",
                                 "--tcp=80:8080"});
  ASSERT_EQ(svc.exitCode, 0) << svc.describe();
  ASSERT_EQ(kc(home, {"create", "namespace", "local"}).exitCode, 0);
  json client = runServerPod(home, "local", "client");
  ASSERT_TRUE(client.is_object() && !client["status"].value("podIP", "").empty())
      << client.dump() << diagnostics();
  std::map<std::string, std::string> db;
  ASSERT_TRUE(waitFor([&] {
    db = readyPods(cloud, "shop", "app=db");
    return db.size() == 2;
  }, 180s, 1s)) << diagnostics();

  const auto t0 = Clock::now();
  CommandResult ex = strait({"expose", "service", "shop/db", "--kubeconfig", cloud.kubeconfig(),
                             "--to", consumerId()});
  ASSERT_EQ(ex.exitCode, 0) << ex.describe();
  std::set<std::string> want;
  for (const auto& [name, ip] : db) want.insert(translate(ip, kPodCidr, cloudSeenHere));
  std::set<std::string> got;
  ASSERT_TRUE(waitFor([&] {
    got = readyAddresses(endpoints(home, "shop", "db"));
    return got == want;
  }, 30s, 500ms)) << "home slices of shop/db: " << json(got).dump() << " want "
                  << json(want).dump() << diagnostics();
  const double imported = secondsSince(t0);
  json homeSvc = getJson(home, {"get", "service", "db", "-n", "shop"});
  ASSERT_TRUE(homeSvc.is_object());
  EXPECT_FALSE(homeSvc["spec"].contains("selector"));

  // A home Pod asks by name; the cloud replicas answer through the tunnel.
  const std::string url = "http://db.shop.svc.cluster.local/hostname";
  std::vector<std::string> answers;
  const auto t1 = Clock::now();
  EXPECT_TRUE(waitFor([&] {
    answers = ask(home, "local", "client", url, 4);
    if (answers.size() != 4) return false;
    for (const std::string& a : answers) {
      if (!db.count(a)) return false;
    }
    return true;
  }, 60s, 1s))
      << url << " from home: " << json(answers).dump() << diagnostics();
  std::printf("figure: exported Service imported with remapped endpoints %.2fs after `strait "
              "expose service`, first 4/4 answers from the cloud %.2fs later (load %s)\n",
              imported, secondsSince(t1), loadAverage().c_str());
}

}  // namespace
}  // namespace strait::e2e
