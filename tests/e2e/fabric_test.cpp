// The network fabric end to end, as root, on the process runtime with real kubectl (a fresh
// KUBECACHEDIR per call), real helm, real curl/ping/socat inside real Pods and wg(8) on the
// agents' UAPI sockets:
//
//  - FabricDaemonSetTest: the chart's fabric DaemonSet (helm template, kubectl apply) runs
//    `strait fabric` as hostNetwork Pods in each node namespace of a three-node cluster with
//    its ServiceAccount's in-cluster config (RBAC enforced); the routes of every node but the
//    gateway node follow a hand-written strait-fabric ConfigMap, a bad entry is ignored with
//    a warning in the Pod's log, and deleting the ConfigMap removes them all.
//  - FabricTest: two process-runtime clusters with the SAME pod CIDR 10.244.0.0/16, each
//    agent running its gateway in its first node's namespace (--gateway --gateway-netns
//    --gateway-node), the fabric DaemonSet in both, `strait peer` (push; pull in the second
//    test), namespace demo offloaded and a Deployment that bursts into the cloud. Then
//    traffic between a home Pod and an offloaded Pod both ways (curl, ping, 100 MB with
//    SHA-256), `wg show` on both gateways, `strait status`, the counters, a cut of the UDP
//    path on the host (nft) and its heal, and unpeer leaving no peer, route or rule. A third
//    test peers one consumer with two providers, all three on 10.244.0.0/16: each provider
//    is reached through a remap of its own.
//
// Without root (or the process runtime's tools, or helm) every test is skipped with why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <iostream>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "e2e/fabric_fixture.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------------------------

class FabricDaemonSetTest : public FabricTestBase {};

TEST_F(FabricDaemonSetTest, RoutesFollowTheConfigMapOnEveryNodeButTheGateway) {
  home_ = new Minicluster();
  ASSERT_EQ(home_->start("fabds-" + suffix_, 60s,
                         {"--runtime", "process", "--nodes", "3", "--local-image",
                          "strait=" + straitBinary()}),
            "");
  std::vector<std::pair<std::string, std::string>> nodes;
  ASSERT_TRUE(waitFor([&] {
    nodes = realNodes(*home_);
    return nodes.size() == 3;
  }, 30s, 500ms))
      << kc(*home_, {"get", "nodes"}).describe();
  std::vector<std::string> netns;
  for (const auto& [node, ip] : nodes) {
    netns.push_back(nodeNetns("fabds-" + suffix_, node));
    ASSERT_FALSE(netns.back().empty()) << node << runCommand({"ip", "netns", "list"}).out;
    ASSERT_FALSE(ip.empty()) << node;
  }
  ASSERT_EQ(installFabric(*home_), "");

  const std::string gwNode = nodes[0].first, gwIp = nodes[0].second;
  auto configMap = [&](const std::string& cidrs) {
    return json{{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", {{"name", "strait-fabric"}, {"namespace", "strait-system"}}},
                {"data", {{"gatewayNode", gwNode}, {"gatewayIP", gwIp}, {"cidrs", cidrs}}}}
        .dump();
  };
  CommandResult applied =
      kc(*home_, {"apply", "-f", "-"}, 60s, configMap("10.240.0.0/16,banana,10.241.0.0/16"));
  ASSERT_EQ(applied.exitCode, 0) << applied.describe();

  // Every node but the gateway node routes both valid CIDRs via the gateway's address.
  for (size_t i = 1; i < nodes.size(); ++i) {
    EXPECT_TRUE(waitFor([&] {
      std::string r = routesIn(netns[i], true);
      return r.find("10.240.0.0/16 via " + gwIp) != std::string::npos &&
             r.find("10.241.0.0/16 via " + gwIp) != std::string::npos;
    }, 30s, 200ms))
        << nodes[i].first << ": " << routesIn(netns[i], false) << fabricLog(*home_, nodes[i].first);
  }
  EXPECT_EQ(routesIn(netns[0], true), "") << "the gateway node routes nothing by the fabric";
  // The bad entry is named in the log of each fabric, the change logged.
  std::string log1 = fabricLog(*home_, nodes[1].first);
  EXPECT_NE(log1.find("event=bad_entry"), std::string::npos) << log1;
  EXPECT_NE(log1.find("cidrs entry 2 \"banana\": not a CIDR"), std::string::npos) << log1;
  EXPECT_NE(log1.find("event=route_added route=\"10.240.0.0/16 via " + gwIp + "\""),
            std::string::npos)
      << log1;
  std::string log0 = fabricLog(*home_, gwNode);
  EXPECT_NE(log0.find("this_node_is_gateway=true"), std::string::npos) << log0;

  // A route removed by hand comes back (resync), one the fabric does not own stays.
  ASSERT_EQ(runCommand({"ip", "-n", netns[2], "route", "del", "10.241.0.0/16"}).exitCode, 0);
  ASSERT_EQ(runCommand({"ip", "-n", netns[2], "route", "add", "10.250.0.0/16", "via", gwIp})
                .exitCode,
            0);
  EXPECT_TRUE(waitFor([&] {
    return routesIn(netns[2], true).find("10.241.0.0/16 via " + gwIp) != std::string::npos;
  }, 15s, 200ms))
      << routesIn(netns[2], false);

  // A CIDR dropped from the ConfigMap goes; the others stay.
  applied = kc(*home_, {"apply", "-f", "-"}, 60s, configMap("10.241.0.0/16"));
  ASSERT_EQ(applied.exitCode, 0) << applied.describe();
  for (size_t i = 1; i < nodes.size(); ++i) {
    EXPECT_TRUE(waitFor([&] {
      std::string r = routesIn(netns[i], true);
      return r.find("10.240.0.0/16") == std::string::npos &&
             r.find("10.241.0.0/16 via " + gwIp) != std::string::npos;
    }, 15s, 200ms))
        << routesIn(netns[i], false);
  }

  // The ConfigMap deleted: every route of the fabric goes, the foreign one stays.
  ASSERT_EQ(kc(*home_, {"delete", "configmap", "-n", "strait-system", "strait-fabric"}).exitCode, 0);
  for (size_t i = 1; i < nodes.size(); ++i) {
    EXPECT_TRUE(waitFor([&] { return routesIn(netns[i], true).empty(); }, 15s, 200ms))
        << routesIn(netns[i], false);
  }
  EXPECT_NE(routesIn(netns[2], false).find("10.250.0.0/16 via " + gwIp), std::string::npos);

  // The fabric's ServiceAccount may read that ConfigMap and nothing else.
  CommandResult canOther = kc(*home_, {"auth", "can-i", "get", "configmap/strait-agent", "-n",
                                       "strait-system", "--as",
                                       "system:serviceaccount:strait-system:strait-fabric"});
  EXPECT_EQ(trimmed(canOther.out), "no") << canOther.describe();
  CommandResult canOwn = kc(*home_, {"auth", "can-i", "watch", "configmap/strait-fabric", "-n",
                                     "strait-system", "--as",
                                     "system:serviceaccount:strait-system:strait-fabric"});
  EXPECT_EQ(trimmed(canOwn.out), "yes") << canOwn.describe();
}

// ---------------------------------------------------------------------------------------

class FabricTest : public FabricFixture {};

TEST_F(FabricTest, PushPeeringCarriesHomeToCloudPodTrafficThroughTheTunnel) {
  std::string err = setUpFabric("push");
  ASSERT_EQ(err, "") << diagnostics();

  // The home side's view of the cloud's pod CIDR is a remap (both are 10.244.0.0/16), and
  // every home node but the gateway routes it to the gateway node by the fabric.
  json row = statusRow(*homeSide_.cluster);
  std::string cloudSeenHere = row.value("remoteCIDRSeenHere", "");
  std::string homeSeenThere = row.value("localCIDRSeenThere", "");
  ASSERT_FALSE(cloudSeenHere.empty()) << row.dump();
  ASSERT_FALSE(homeSeenThere.empty()) << row.dump();
  EXPECT_NE(cloudSeenHere, kPodCidr);
  EXPECT_NE(homeSeenThere, kPodCidr);
  EXPECT_TRUE(waitFor([&] {
    return routesIn(homeSide_.netns[1], true).find(cloudSeenHere + " via " + homeSide_.gatewayIp) !=
           std::string::npos;
  }, 30s, 500ms))
      << routesIn(homeSide_.netns[1], false) << fabricLog(*homeSide_.cluster, "node-1");
  EXPECT_TRUE(waitFor([&] {
    return routesIn(cloudSide_.netns[1], true).find(homeSeenThere + " via " + cloudSide_.gatewayIp) !=
           std::string::npos;
  }, 30s, 500ms))
      << routesIn(cloudSide_.netns[1], false);

  // A Deployment that bursts into the cloud, and a home Pod outside the offloaded namespace.
  std::string deployment = R"({"apiVersion":"apps/v1","kind":"Deployment",
    "metadata":{"name":"web","namespace":"demo"},
    "spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},
      "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web",
        "image":"registry.k8s.io/e2e-test-images/agnhost:2.47",
        "args":["netexec","--http-port=8080"],"ports":[{"containerPort":8080}],
        "resources":{"requests":{"cpu":"700m"}}}]}}}})";
  ASSERT_EQ(kc(*homeSide_.cluster, {"apply", "-f", "-"}, 60s, deployment).exitCode, 0);
  ASSERT_EQ(kc(*homeSide_.cluster, {"create", "namespace", "local"}).exitCode, 0);
  json client = runServerPod(*homeSide_.cluster, "local", "client");
  ASSERT_TRUE(client.is_object() && !client["status"].value("podIP", "").empty())
      << client.dump() << diagnostics();
  std::string clientIp = client["status"]["podIP"];

  json offloaded;
  std::string remoteNs = remoteNamespace("demo");
  ASSERT_TRUE(waitFor([&] {
    json pods = getJson(*homeSide_.cluster, {"get", "pods", "-n", "demo", "-l", "app=web"});
    for (const json& p : items(pods)) {
      if (p["spec"].value("nodeName", "") == kVirtualNode &&
          p["status"].value("phase", "") == "Running" && !p["status"].value("podIP", "").empty()) {
        offloaded = p;
        return true;
      }
    }
    return false;
  }, 120s, 1s))
      << diagnostics();
  std::string offloadedName = offloaded["metadata"]["name"];
  std::string offloadedIp = offloaded["status"]["podIP"];
  // The podIP reported at home lies in the remap, never in home's own pod CIDR.
  EXPECT_TRUE(inPrefix(offloadedIp, cloudSeenHere)) << offloadedIp << " " << cloudSeenHere;
  EXPECT_FALSE(inPrefix(offloadedIp, kPodCidr)) << offloadedIp;
  // The same Pod in the cloud: its real address, and its hostname.
  json remote;
  ASSERT_TRUE(waitFor([&] {
    json pods = getJson(*cloudSide_.cluster, {"get", "pods", "-n", remoteNs});
    for (const json& p : items(pods)) {
      if (p["status"].value("podIP", "") == translate(offloadedIp, cloudSeenHere, kPodCidr)) {
        remote = p;
        return true;
      }
    }
    return false;
  }, 30s, 500ms))
      << diagnostics();
  std::string remoteName = remote["metadata"]["name"];

  // Home Pod -> offloaded Pod: curl answers the offloaded Pod's hostname.
  std::string curl = "curl -s -m 5 http://" + offloadedIp + ":8080/hostname";
  CommandResult hello;
  ASSERT_TRUE(waitFor([&] {
    hello = execIn(*homeSide_.cluster, "local", "client", curl, 20s);
    return hello.exitCode == 0 && hello.out == remoteName;
  }, 30s, 1s))
      << hello.describe() << diagnostics();
  // Offloaded Pod -> home Pod: the home Pod's address as the cloud sees it; the home Pod sees
  // the offloaded Pod's address in home's view (the remapped source).
  std::string clientSeenThere = translate(clientIp, kPodCidr, homeSeenThere);
  CommandResult back = execIn(*cloudSide_.cluster, remoteNs, remoteName,
                              "curl -s -m 5 http://" + clientSeenThere + ":8080/clientip", 20s);
  ASSERT_EQ(back.exitCode, 0) << back.describe() << diagnostics();
  EXPECT_EQ(back.out.substr(0, back.out.find(':')), offloadedIp) << back.out;
  CommandResult backName = execIn(*cloudSide_.cluster, remoteNs, remoteName,
                                  "curl -s -m 5 http://" + clientSeenThere + ":8080/hostname");
  EXPECT_EQ(backName.out, "client") << backName.describe();
  // Ping both ways.
  CommandResult ping1 = execIn(*homeSide_.cluster, "local", "client", "ping -c 3 -W 2 " + offloadedIp);
  EXPECT_EQ(ping1.exitCode, 0) << ping1.describe();
  CommandResult ping2 =
      execIn(*cloudSide_.cluster, remoteNs, remoteName, "ping -c 3 -W 2 " + clientSeenThere);
  EXPECT_EQ(ping2.exitCode, 0) << ping2.describe();

  // `wg show` on both gateways: one peer, a recent handshake.
  for (const Side* side : {&homeSide_, &cloudSide_}) {
    auto hs = lines(wg(*side, "latest-handshakes"));
    ASSERT_EQ(hs.size(), 1u) << side->name << ": " << wg(*side, "dump");
    long long when = std::stoll(hs[0].substr(hs[0].find_last_of(" \t") + 1));
    EXPECT_GT(when, static_cast<long long>(::time(nullptr)) - 180) << hs[0];
  }
  // `strait status`: Up with a latency.
  row = statusRow(*homeSide_.cluster);
  EXPECT_EQ(row.value("tunnel", ""), "True") << row.dump();
  EXPECT_TRUE(row["tunnelLatencyMs"].is_number()) << row.dump();
  CommandResult table = strait({"status", "--kubeconfig", homeSide_.cluster->kubeconfig()});
  EXPECT_NE(table.out.find("TUNNEL"), std::string::npos) << table.out;

  // 100 MB home -> cloud through the tunnel, SHA-256 on both ends; the counters grow by at
  // least that much.
  const long long kBytes = 100LL * 1024 * 1024;
  std::string file = dir_->file("payload.bin");
  ASSERT_EQ(runCommand({"sh", "-c", "head -c " + std::to_string(kBytes) + " /dev/urandom > " + file})
                .exitCode,
            0);
  std::string sentSum = runCommand({"sha256sum", file}).out.substr(0, 64);
  auto homeBefore = transfer(homeSide_);
  auto cloudBefore = transfer(cloudSide_);
  BackgroundProcess receiver;
  std::string startErr;
  ASSERT_TRUE(receiver.start(
      {"kubectl", "--kubeconfig", cloudSide_.cluster->kubeconfig(), "exec", "-n", remoteNs, remoteName,
       "--", "sh", "-c", "socat -u TCP-LISTEN:9000,reuseaddr - | sha256sum"},
      {{"KUBECACHEDIR", dir_->file("kc-recv")}, {"HOME", dir_->path()}}, dir_->file("recv.out"),
      dir_->file("recv.err"), &startErr))
      << startErr;
  CommandResult send;
  ASSERT_TRUE(waitFor([&] {
    send = execIn(*homeSide_.cluster, "local", "client",
                  "socat -u FILE:" + file + " TCP:" + offloadedIp + ":9000", 300s);
    return send.exitCode == 0;
  }, 320s, 1s))
      << send.describe();
  ASSERT_TRUE(waitFor([&] { return !receiver.running(); }, 60s, 200ms)) << receiver.stderrText();
  EXPECT_EQ(receiver.stdoutText().substr(0, 64), sentSum) << receiver.stderrText();
  auto homeAfter = transfer(homeSide_);
  auto cloudAfter = transfer(cloudSide_);
  std::cerr << "fabric: offloaded Pod " << remoteName << " at " << offloadedIp << " (cloud's "
            << cloudSeenHere << " here), home Pod client at " << clientSeenThere
            << " in the cloud; 100 MiB sent: home gateway tx +"
            << homeAfter.second - homeBefore.second << " B, cloud gateway rx +"
            << cloudAfter.first - cloudBefore.first << " B\n";
  EXPECT_GE(homeAfter.second - homeBefore.second, kBytes) << "home gateway tx";
  EXPECT_GE(cloudAfter.first - cloudBefore.first, kBytes) << "cloud gateway rx";

  // Cutting the UDP path: curl fails and TunnelUp goes False within 10 s; healing brings both
  // back.
  ASSERT_EQ(cutUdp(), "");
  auto cutAt = std::chrono::steady_clock::now();
  EXPECT_TRUE(waitFor([&] { return statusRow(*homeSide_.cluster).value("tunnel", "") == "False"; },
                      10s, 250ms))
      << statusRow(*homeSide_.cluster).dump();
  auto downAfter = std::chrono::steady_clock::now() - cutAt;
  EXPECT_LE(downAfter, 12s);
  std::cerr << "fabric: TunnelUp False "
            << std::chrono::duration_cast<std::chrono::milliseconds>(downAfter).count()
            << " ms after the UDP path was cut\n";
  CommandResult cut = execIn(*homeSide_.cluster, "local", "client",
                             "curl -s -m 3 http://" + offloadedIp + ":8080/hostname", 20s);
  EXPECT_NE(cut.exitCode, 0) << cut.describe();
  healUdp();
  EXPECT_TRUE(waitFor([&] { return statusRow(*homeSide_.cluster).value("tunnel", "") == "True"; },
                      30s, 500ms))
      << statusRow(*homeSide_.cluster).dump();
  EXPECT_TRUE(waitFor([&] {
    hello = execIn(*homeSide_.cluster, "local", "client", curl, 20s);
    return hello.exitCode == 0 && hello.out == remoteName;
  }, 30s, 1s))
      << hello.describe();

  unpeerAndCheckClean({cloudSeenHere, homeSeenThere});
}

TEST_F(FabricTest, PullPeeringCarriesTrafficBothWaysAndUnpeersCleanly) {
  std::string err = setUpFabric("pull");
  ASSERT_EQ(err, "") << diagnostics();
  json row = statusRow(*homeSide_.cluster);
  EXPECT_EQ(row.value("mode", ""), "pull") << row.dump();
  std::string cloudSeenHere = row.value("remoteCIDRSeenHere", "");
  std::string homeSeenThere = row.value("localCIDRSeenThere", "");
  ASSERT_FALSE(cloudSeenHere.empty() || homeSeenThere.empty()) << row.dump();

  // One Pod on each side: a Pod in demo pinned to the virtual node, one at home.
  json home = runServerPod(*homeSide_.cluster, "default", "home-web");
  ASSERT_TRUE(home.is_object()) << diagnostics();
  std::string pinned = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"cloud-web","namespace":"demo"},
    "spec":{"nodeName":")" + std::string(kVirtualNode) + R"(","tolerations":[{"operator":"Exists"}],
    "containers":[{"name":"web","image":"registry.k8s.io/e2e-test-images/agnhost:2.47",
    "args":["netexec","--http-port=8080"],"ports":[{"containerPort":8080}]}]}})";
  ASSERT_EQ(kc(*homeSide_.cluster, {"apply", "-f", "-"}, 60s, pinned).exitCode, 0);
  json offloaded = waitRunning(*homeSide_.cluster, "demo", "cloud-web");
  ASSERT_TRUE(offloaded.is_object() && !offloaded["status"].value("podIP", "").empty())
      << offloaded.dump() << diagnostics();
  std::string offloadedIp = offloaded["status"]["podIP"];
  std::string homeIp = home["status"]["podIP"];
  CommandResult there;
  ASSERT_TRUE(waitFor([&] {
    there = execIn(*homeSide_.cluster, "default", "home-web",
                   "curl -s -m 5 http://" + offloadedIp + ":8080/hostname", 20s);
    return there.exitCode == 0 && !there.out.empty();
  }, 30s, 1s))
      << there.describe() << diagnostics();
  std::string remoteName = there.out;
  CommandResult back = execIn(*cloudSide_.cluster, remoteNamespace("demo"), remoteName,
                              "curl -s -m 5 http://" + translate(homeIp, kPodCidr, homeSeenThere) +
                                  ":8080/hostname",
                              20s);
  EXPECT_EQ(back.exitCode, 0) << back.describe();
  EXPECT_EQ(back.out, "home-web") << back.describe();
  for (const Side* side : {&homeSide_, &cloudSide_}) {
    EXPECT_EQ(lines(wg(*side, "peers")).size(), 1u) << side->name << wg(*side, "dump");
  }
  unpeerAndCheckClean({cloudSeenHere, homeSeenThere});
}


// One consumer and two providers, all three with pod CIDR 10.244.0.0/16: home sees each
// provider through a remap of its own, so two offloaded Pods with the same real address in
// their clusters answer at home on two different addresses, each through its own tunnel.
TEST_F(FabricTest, TwoProvidersWithTheSamePodCidrAreEachReachableThroughTheirOwnRemap) {
  struct Cluster3 {
    std::string agentName, clusterName, interface, netns;
    int port = 0;
    Minicluster cluster;
    AgentProcess agent;
  };
  int base = 50000 + (::getpid() % 5000) * 3;
  std::vector<std::unique_ptr<Cluster3>> all;
  for (const char* name : {"home", "cloud-a", "cloud-b"}) {
    auto c = std::make_unique<Cluster3>();
    c->agentName = name;
    c->clusterName = std::string(name) + "-3-" + suffix_;
    c->interface = "s3" + std::string(1, name[name[0] == 'h' ? 0 : 6]) + suffix_;
    c->port = base + static_cast<int>(all.size());
    all.push_back(std::move(c));
  }
  // Each cluster with its agent and gateway; the three side by side.
  auto startOne = [&](Cluster3& c) -> std::string {
    if (std::string e = c.cluster.start(c.clusterName, 60s,
                                        {"--runtime", "process", "--nodes", "1", "--node-cpu",
                                         "4", "--pod-cidr", kPodCidr, "--local-image",
                                         "strait=" + straitBinary()});
        !e.empty()) {
      return c.agentName + ": " + e;
    }
    // The cluster's one node (kubectl with a cache of this thread's own).
    TempDir scratch("strait-fabric3");
    int calls = 0;
    std::vector<std::string> nodes;
    if (!waitFor([&] {
          CommandResult r = runCommand(
              {"kubectl", "--kubeconfig", c.cluster.kubeconfig(), "get", "nodes", "-o", "json"},
              {{"KUBECACHEDIR", scratch.file("kc" + std::to_string(++calls))},
               {"HOME", scratch.path()}});
          nodes.clear();
          for (const json& n : items(json::parse(r.out, nullptr, false))) {
            nodes.push_back(n["metadata"].value("name", ""));
          }
          return nodes.size() == 1;
        }, 30s, 500ms)) {
      return c.agentName + ": expected 1 node";
    }
    c.netns = nodeNetns(c.clusterName, nodes[0]);
    if (c.netns.empty()) return c.agentName + ": no namespace for " + nodes[0];
    std::vector<std::string> args = kAgentArgs;
    if (c.agentName != "home") args.insert(args.end(), {"--share", "1"});
    args.insert(args.end(), {"--gateway", "--gateway-netns", "/run/netns/" + c.netns,
                             "--gateway-node", nodes[0], "--gateway-port",
                             std::to_string(c.port), "--gateway-interface", c.interface,
                             "--pod-cidr", kPodCidr});
    if (std::string e = c.agent.start(c.cluster.kubeconfig(), c.agentName, args); !e.empty()) {
      return c.agentName + " agent: " + e;
    }
    return "";
  };
  ASSERT_EQ(inParallel({[&] { return startOne(*all[0]); }, [&] { return startOne(*all[1]); },
                        [&] { return startOne(*all[2]); }}),
            "");
  Cluster3& home = *all[0];
  auto logs = [&] {
    std::string out;
    for (auto& c : all) {
      std::string l = c->agent.logs();
      out += "\n--- " + c->agentName + " agent ---\n" + (l.size() > 4000 ? l.substr(l.size() - 4000) : l);
    }
    return out;
  };
  for (size_t i = 1; i < all.size(); ++i) {
    CommandResult p = strait({"peer", "--kubeconfig", home.cluster.kubeconfig(),
                              "--remote-kubeconfig", all[i]->cluster.kubeconfig(), "--cpu", "2",
                              "--memory", "4Gi", "--pods", "20"},
                             120s);
    ASSERT_EQ(p.exitCode, 0) << p.describe() << logs();
  }
  ASSERT_EQ(kc(home.cluster, {"create", "namespace", "multi"}).exitCode, 0);
  CommandResult off = strait({"offload", "namespace", "multi", "--kubeconfig",
                              home.cluster.kubeconfig()});
  ASSERT_EQ(off.exitCode, 0) << off.describe();

  // Both tunnels Up, each provider seen through a remap of its own.
  json rows;
  ASSERT_TRUE(waitFor([&] {
    CommandResult r = strait({"status", "--kubeconfig", home.cluster.kubeconfig(), "-o", "json"});
    rows = json::parse(r.out, nullptr, false);
    if (rows.is_object() && rows.contains("items")) rows = rows["items"];
    if (!rows.is_array() || rows.size() != 2) return false;
    for (const json& row : rows) {
      if (row.value("tunnel", "") != "True") return false;
    }
    return true;
  }, 90s, 1s))
      << rows.dump(2) << logs();
  std::map<std::string, std::string> seenHere;  // provider -> its pod CIDR as home sees it
  for (const json& row : rows) seenHere[row.value("remote", "")] = row.value("remoteCIDRSeenHere", "");
  ASSERT_EQ(seenHere.size(), 2u) << rows.dump(2);
  EXPECT_NE(seenHere["cloud-a"], seenHere["cloud-b"]);
  for (const auto& [name, cidr] : seenHere) {
    EXPECT_FALSE(cidr.empty()) << name;
    EXPECT_NE(cidr, kPodCidr) << name;
  }
  EXPECT_EQ(lines(runCommand({"wg", "show", home.interface, "peers"}).out).size(), 2u)
      << runCommand({"wg", "show", home.interface}).out;

  // One Pod on each provider, one at home; each offloaded Pod answers on its own address.
  json client = runServerPod(home.cluster, "default", "client");
  ASSERT_TRUE(client.is_object()) << logs();
  std::map<std::string, std::string> ipOf;
  for (const char* provider : {"cloud-a", "cloud-b"}) {
    std::string pod = std::string("on-") + (provider[6]);
    std::string manifest = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + pod +
                           R"(","namespace":"multi"},"spec":{"nodeName":"strait-)" + provider +
                           R"(","tolerations":[{"operator":"Exists"}],"containers":[{"name":"web",
        "image":"registry.k8s.io/e2e-test-images/agnhost:2.47","args":["netexec","--http-port=8080"],
        "ports":[{"containerPort":8080}]}]}})";
    ASSERT_EQ(kc(home.cluster, {"apply", "-f", "-"}, 60s, manifest).exitCode, 0);
    json p = waitRunning(home.cluster, "multi", pod);
    ASSERT_TRUE(p.is_object() && !p["status"].value("podIP", "").empty()) << p.dump() << logs();
    ipOf[provider] = p["status"]["podIP"];
    EXPECT_TRUE(inPrefix(ipOf[provider], seenHere[provider]))
        << provider << " " << ipOf[provider] << " " << seenHere[provider];
  }
  EXPECT_NE(ipOf["cloud-a"], ipOf["cloud-b"]);
  // The real addresses in the two clouds are the same plan; home tells them apart.
  EXPECT_EQ(translate(ipOf["cloud-a"], seenHere["cloud-a"], kPodCidr),
            translate(ipOf["cloud-b"], seenHere["cloud-b"], kPodCidr));
  for (const char* provider : {"cloud-a", "cloud-b"}) {
    CommandResult hello;
    EXPECT_TRUE(waitFor([&] {
      hello = execIn(home.cluster, "default", "client",
                     "curl -s -m 5 http://" + ipOf[provider] + ":8080/hostname", 20s);
      return hello.exitCode == 0 && hello.out == std::string("on-") + provider[6];
    }, 30s, 1s))
        << provider << ": " << hello.describe() << logs();
  }
}

}  // namespace
}  // namespace strait::e2e