#pragma once
// The network fabric's e2e fixtures (root, process runtime): FabricTestBase (tool checks,
// kubectl with a fresh KUBECACHEDIR, the chart's fabric DaemonSet, address helpers) and
// FabricFixture (two clusters on the SAME pod CIDR, each agent with its gateway in its first
// node's namespace, the fabric in both, peered, namespace demo offloaded, the tunnel Up).
// Used by fabric_test.cpp and service_traffic_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "e2e/offload_fixture.h"

namespace strait::e2e {

class FabricTestBase : public OffloadSuite {
 protected:
  using json = nlohmann::json;

  // The pod CIDR of every cluster of these tests.
  static constexpr const char* kPodCidr = "10.244.0.0/16";

  // <build>/tools/helm; "" when missing.
  static std::string helmBinary();
  static std::string trimmed(std::string s);
  // The non-empty lines of `text`, trimmed.
  static std::vector<std::string> lines(const std::string& text);
  // The network namespace of node `node` of process-runtime cluster `cluster`
  // ("<marker>-<cluster>-<node>"); "" when there is none.
  static std::string nodeNetns(const std::string& cluster, const std::string& node);
  // `ip route` in namespace `ns`, Strait's routes only (rtnetlink protocol 199) when `own`.
  static std::string routesIn(const std::string& ns, bool own);
  // The items of a list (empty when `list` is not one, e.g. a failed kubectl).
  static json items(const json& list);
  // An IPv4 address as a 32-bit number; 0 when malformed.
  static uint32_t ipv4(const std::string& text);
  static std::string ipv4Text(uint32_t v);
  static bool inPrefix(const std::string& ip, const std::string& cidr);
  // `ip` moved from its prefix `from` ("10.244.0.0/16") into `to` (same length).
  static std::string translate(const std::string& ip, const std::string& from,
                               const std::string& to);

  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the network fabric needs root (network namespaces)";
    if (std::string why = processRuntimeUnavailable(); !why.empty()) {
      GTEST_SKIP() << "the process runtime is unavailable: " << why;
    }
    if (helmBinary().empty()) GTEST_SKIP() << "no helm in <build>/tools (scripts/install-deps.sh)";
    for (const char* tool : {"wg", "socat", "ping", "curl", "sha256sum", "nft"}) {
      if (runCommand({"sh", "-c", std::string("command -v ") + tool}).exitCode != 0) {
        GTEST_SKIP() << tool << " not installed (scripts/install-deps.sh)";
      }
    }
    OffloadSuite::SetUp();
    suffix_ = std::to_string(::getpid());
  }

  void TearDown() override {
    if (!nftTable_.empty()) runCommand({"nft", "delete", "table", "inet", nftTable_});
    stopAll();
  }

  // kubectl against `c` with a fresh KUBECACHEDIR and a timeout of its own.
  CommandResult kc(const Minicluster& c, const std::vector<std::string>& args,
                   std::chrono::milliseconds timeout = 60s, const std::string& stdinText = "") {
    std::vector<std::string> argv = {"kubectl", "--kubeconfig", c.kubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    Env env = {{"KUBECACHEDIR", dir_->path() + "/kc" + std::to_string(++calls_)},
               {"HOME", dir_->path()}};
    return runCommand(argv, env, timeout, stdinText);
  }

  // The real Nodes of `c` (no virtual node), sorted by name, with their InternalIP.
  std::vector<std::pair<std::string, std::string>> realNodes(const Minicluster& c) {
    std::vector<std::pair<std::string, std::string>> out;
    json nodes = getJson(c, {"get", "nodes"});
    for (const json& n : items(nodes)) {
      if (n["metadata"].value("labels", json::object()).contains("strait.io/virtual-node")) {
        continue;
      }
      std::string ip;
      for (const json& a : n["status"].value("addresses", json::array())) {
        if (a.value("type", "") == "InternalIP") ip = a.value("address", "");
      }
      out.emplace_back(n["metadata"]["name"].get<std::string>(), ip);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // The Running, Ready Pods of `ns` with `selector` in `c`: name -> podIP.
  std::map<std::string, std::string> readyPods(const Minicluster& c, const std::string& ns,
                                               const std::string& selector) {
    std::map<std::string, std::string> out;
    for (const json& p : items(getJson(c, {"get", "pods", "-n", ns, "-l", selector}))) {
      if (p["metadata"].contains("deletionTimestamp")) continue;
      if (p["status"].value("phase", "") != "Running") continue;
      bool ready = false;
      for (const json& cond : p["status"].value("conditions", json::array())) {
        if (cond.value("type", "") == "Ready") ready = cond.value("status", "") == "True";
      }
      if (ready && !p["status"].value("podIP", "").empty()) {
        out[p["metadata"]["name"]] = p["status"]["podIP"];
      }
    }
    return out;
  }

  // The endpoints of Service `svc` in `ns` of `c` (every slice, whoever manages it):
  // address -> ready.
  std::map<std::string, bool> endpoints(const Minicluster& c, const std::string& ns,
                                        const std::string& svc) {
    std::map<std::string, bool> out;
    json slices = getJson(c, {"get", "endpointslices", "-n", ns, "-l",
                              "kubernetes.io/service-name=" + svc});
    for (const json& s : items(slices)) {
      for (const json& e : s.value("endpoints", json::array())) {
        const bool ready = e.value("/conditions/ready"_json_pointer, true);
        for (const json& a : e.value("addresses", json::array())) out[a.get<std::string>()] = ready;
      }
    }
    return out;
  }
  // The ready addresses of endpoints().
  static std::set<std::string> readyAddresses(const std::map<std::string, bool>& endpoints) {
    std::set<std::string> out;
    for (const auto& [address, ready] : endpoints) {
      if (ready) out.insert(address);
    }
    return out;
  }

  // `n` requests to `url` from `pod` (curl in the Pod): the bodies of the answers (the
  // answering Pod's hostname for agnhost), "" for a failed one.
  std::vector<std::string> ask(const Minicluster& c, const std::string& ns, const std::string& pod,
                               const std::string& url, int n) {
    std::string script = "for i in $(seq " + std::to_string(n) + "); do curl -s -m 3 " + url +
                         " || printf FAILED; echo; done";
    CommandResult r = kc(c, {"exec", "-n", ns, pod, "--", "sh", "-c", script},
                         std::chrono::seconds(120));
    std::vector<std::string> out;
    std::stringstream in(r.out);
    for (std::string l; std::getline(in, l);) out.push_back(l == "FAILED" ? "" : trimmed(l));
    return out;
  }

  // Applies the chart's fabric (helm template --show-only templates/fabric.yaml, image
  // `strait`, which the clusters map to the built binary) to each of `clusters` and waits for
  // one Running fabric Pod per real node in every one of them. Returns "" or what failed.
  std::string installFabric(const std::vector<const Minicluster*>& clusters) {
    std::string chart = (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() /
                         "charts" / "strait")
                            .string();
    CommandResult rendered = runCommand(
        {helmBinary(), "template", "strait", chart, "-n", "strait-system", "--set",
         "clusterName=fabric-test", "--set", "fabric.enabled=true", "--set",
         "fabric.extraArgs={--resync=2s}", "--show-only", "templates/fabric.yaml"},
        {{"HOME", dir_->path()}, {"HELM_CACHE_HOME", dir_->file("helm-cache")},
         {"HELM_CONFIG_HOME", dir_->file("helm-config")},
         {"HELM_DATA_HOME", dir_->file("helm-data")}});
    if (rendered.exitCode != 0) return "helm template: " + rendered.describe();
    std::vector<size_t> want;
    for (const Minicluster* c : clusters) {
      CommandResult ns = kc(*c, {"get", "namespace", "strait-system"});
      if (ns.exitCode != 0) {
        CommandResult made = kc(*c, {"create", "namespace", "strait-system"});
        if (made.exitCode != 0) return "create namespace strait-system: " + made.describe();
      }
      CommandResult applied = kc(*c, {"apply", "-f", "-"}, 60s, rendered.out);
      if (applied.exitCode != 0) return "kubectl apply: " + applied.describe();
      want.push_back(realNodes(*c).size());
    }
    // The clusters' fabric Pods start side by side; each cluster is polled until all of its
    // own run.
    std::vector<bool> done(clusters.size(), false);
    json pods;
    size_t failed = 0;
    bool ok = waitFor([&] {
      for (size_t i = 0; i < clusters.size(); ++i) {
        if (done[i]) continue;
        pods = getJson(*clusters[i], {"get", "pods", "-n", "strait-system", "-l",
                                      "app.kubernetes.io/component=fabric"});
        size_t running = 0;
        for (const json& p : items(pods)) {
          if (p["status"].value("phase", "") == "Running") ++running;
        }
        done[i] = running == want[i];
        if (!done[i]) {
          failed = i;
          return false;
        }
      }
      return true;
    }, 90s, 500ms);
    if (!ok) {
      return "fabric Pods not Running on every node of cluster " + std::to_string(failed + 1) +
             " of " + std::to_string(clusters.size()) + ": " + pods.dump();
    }
    return "";
  }
  std::string installFabric(const Minicluster& c) {
    return installFabric(std::vector<const Minicluster*>{&c});
  }

  // The fabric Pod's log on `node`.
  std::string fabricLog(const Minicluster& c, const std::string& node) {
    json pods = getJson(c, {"get", "pods", "-n", "strait-system", "-l",
                            "app.kubernetes.io/component=fabric", "--field-selector",
                            "spec.nodeName=" + node});
    if (items(pods).empty()) return "";
    std::string name = pods["items"][0]["metadata"]["name"];
    return kc(c, {"logs", "-n", "strait-system", name}).out;
  }

  std::string suffix_;
  std::string nftTable_;
  int calls_ = 0;
};

class FabricFixture : public FabricTestBase {
 protected:
  struct Side {
    Minicluster* cluster = nullptr;
    std::string name;           // cluster name
    std::string gatewayNode, gatewayIp, gatewayNetns;
    std::string interface;      // the gateway's TUN interface and UAPI socket name
    int port = 0;               // the gateway's UDP port
    std::vector<std::string> netns;  // every node namespace
  };

  // Two clusters with the same pod CIDR, their agents with a gateway, the fabric in both,
  // the peering (`mode` push or pull), demo offloaded, the tunnel Up. Returns "" or what
  // failed.
  std::string setUpFabric(const std::string& mode) {
    OffloadSetup s;
    std::vector<std::string> clusterArgs = {"--runtime", "process", "--nodes", "2", "--node-cpu",
                                            "1", "--pod-cidr", kPodCidr, "--local-image",
                                            "strait=" + straitBinary()};
    s.homeArgs = clusterArgs;
    s.cloudArgs = clusterArgs;
    s.cloudArgs[5] = "4";  // cloud nodes: 4 CPUs
    if (std::string e = startClusters(s); !e.empty()) return e;
    homeSide_.cluster = OffloadSuite::home_;
    cloudSide_.cluster = OffloadSuite::cloud_;
    homeSide_.name = "home-" + suffix_;
    cloudSide_.name = "cloud-" + suffix_;
    int base = 40000 + (::getpid() % 10000) * 2;
    homeSide_.port = base;
    cloudSide_.port = base + 1;
    homeSide_.interface = "sfh" + suffix_;
    cloudSide_.interface = "sfc" + suffix_;
    for (Side* side : {&homeSide_, &cloudSide_}) {
      std::vector<std::pair<std::string, std::string>> nodes;
      if (!waitFor([&] {
            nodes = realNodes(*side->cluster);
            return nodes.size() == 2;
          }, 30s, 500ms)) {
        return side->name + ": expected 2 nodes";
      }
      for (const auto& n : nodes) {
        side->netns.push_back(nodeNetns(side->name, n.first));
        if (side->netns.back().empty()) return side->name + ": no namespace for " + n.first;
      }
      side->gatewayNode = nodes[0].first;
      side->gatewayIp = nodes[0].second;
      side->gatewayNetns = side->netns[0];
      for (const std::string& ns : side->netns) rulesBefore_[ns] = rules(ns);
    }
    auto gatewayArgs = [](const Side& side) {
      return std::vector<std::string>{"--gateway", "--gateway-netns",
                                      "/run/netns/" + side.gatewayNetns, "--gateway-node",
                                      side.gatewayNode, "--gateway-port", std::to_string(side.port),
                                      "--gateway-interface", side.interface, "--pod-cidr", kPodCidr};
    };
    s.homeAgentArgs = gatewayArgs(homeSide_);
    s.cloudAgentArgs = gatewayArgs(cloudSide_);
    if (std::string e = startAgents(s); !e.empty()) return e;
    if (std::string e = installFabric({homeSide_.cluster, cloudSide_.cluster}); !e.empty()) {
      return "home (1), cloud (2): " + e;
    }
    std::vector<std::string> peerArgs = {"--cpu", "8", "--memory", "16Gi", "--pods", "50"};
    if (mode == "pull") peerArgs.insert(peerArgs.end(), {"--mode", "pull"});
    if (std::string e = peer(peerArgs); !e.empty()) return e;
    if (std::string e = offloadNamespace("demo"); !e.empty()) return e;
    json row;
    if (!waitFor([&] {
          row = statusRow(*homeSide_.cluster);
          return row.value("tunnel", "") == "True";
        }, 60s, 500ms)) {
      return "the tunnel did not come Up: " + row.dump() + agentLogs();
    }
    return "";
  }

  json statusRow(const Minicluster& c) {
    CommandResult r = strait({"status", "--kubeconfig", c.kubeconfig(), "-o", "json"}, 30s);
    if (r.exitCode != 0) return json();
    json rows = json::parse(r.out, nullptr, false);
    if (rows.is_object() && rows.contains("items")) rows = rows["items"];
    return rows.is_array() && rows.size() == 1 ? rows[0] : json();
  }

  static std::string rules(const std::string& ns) {
    return runCommand({"ip", "-n", ns, "rule", "show"}).out;
  }

  // A Pod running agnhost netexec on 8080, from YAML; waits until Running with a podIP.
  json runServerPod(const Minicluster& c, const std::string& ns, const std::string& name) {
    std::string manifest = json{{"apiVersion", "v1"},
                                {"kind", "Pod"},
                                {"metadata", {{"name", name}, {"namespace", ns}}},
                                {"spec",
                                 {{"containers",
                                   json::array({{{"name", "web"},
                                                 {"image", "registry.k8s.io/e2e-test-images/agnhost:2.47"},
                                                 {"args", json::array({"netexec", "--http-port=8080"})},
                                                 {"ports", json::array({{{"containerPort", 8080}}})}}})}}}}
                               .dump();
    CommandResult r = kc(c, {"apply", "-f", "-"}, 60s, manifest);
    if (r.exitCode != 0) return json();
    return waitRunning(c, ns, name);
  }

  json waitRunning(const Minicluster& c, const std::string& ns, const std::string& name) {
    json pod;
    waitFor([&] {
      pod = getJson(c, {"get", "pod", "-n", ns, name});
      return pod.is_object() && pod["status"].value("phase", "") == "Running" &&
             !pod["status"].value("podIP", "").empty();
    }, 90s, 500ms);
    return pod;
  }

  // Runs `sh -c script` in `pod` of `c` (kubectl exec).
  CommandResult execIn(const Minicluster& c, const std::string& ns, const std::string& pod,
                       const std::string& script, std::chrono::milliseconds timeout = 60s) {
    return kc(c, {"exec", "-n", ns, pod, "--", "sh", "-c", script}, timeout);
  }

  // `wg show <interface> <what>` against the gateway's UAPI socket.
  static std::string wg(const Side& side, const std::string& what) {
    return runCommand({"wg", "show", side.interface, what}).out;
  }
  // The transfer counters (rx, tx) of the gateway's only peer; {-1,-1} when not exactly one.
  static std::pair<long long, long long> transfer(const Side& side) {
    auto l = lines(wg(side, "transfer"));
    if (l.size() != 1) return {-1, -1};
    std::stringstream in(l[0]);
    std::string key;
    long long rx = -1, tx = -1;
    in >> key >> rx >> tx;
    return {rx, tx};
  }

  // Blocks the gateways' UDP ports in the host's forward path (the clusters' only link).
  std::string cutUdp() {
    nftTable_ = "strait-fabric-test-" + suffix_;
    std::string script = "table inet " + nftTable_ + " {\n  chain forward {\n" +
                         "    type filter hook forward priority -10; policy accept;\n" +
                         "    udp dport { " + std::to_string(homeSide_.port) + ", " +
                         std::to_string(cloudSide_.port) + " } drop\n" +
                         "    udp sport { " + std::to_string(homeSide_.port) + ", " +
                         std::to_string(cloudSide_.port) + " } drop\n  }\n}\n";
    CommandResult r = runCommand({"nft", "-f", "-"}, {}, 10s, script);
    return r.exitCode == 0 ? "" : r.describe();
  }
  void healUdp() {
    runCommand({"nft", "delete", "table", "inet", nftTable_});
    nftTable_.clear();
  }

  // Deletes the demo namespace, unpeers, and checks that no peer, route or rule is left.
  void unpeerAndCheckClean(const std::vector<std::string>& remoteCidrs) {
    CommandResult del = kc(*homeSide_.cluster, {"delete", "namespace", "demo", "--wait",
                                            "--timeout=120s"}, 150s);
    EXPECT_EQ(del.exitCode, 0) << del.describe();
    CommandResult un = strait({"unpeer", "--kubeconfig", homeSide_.cluster->kubeconfig(),
                               "--remote-kubeconfig", cloudSide_.cluster->kubeconfig(), "--timeout",
                               "2m"},
                              150s);
    ASSERT_EQ(un.exitCode, 0) << un.describe() << agentLogs();
    for (const Side* side : {&homeSide_, &cloudSide_}) {
      EXPECT_TRUE(waitFor([&] { return trimmed(wg(*side, "peers")).empty(); }, 30s, 500ms))
          << side->name << ": " << runCommand({"wg", "show", side->interface}).out;
      for (const std::string& ns : side->netns) {
        EXPECT_TRUE(waitFor([&] {
          if (!routesIn(ns, true).empty()) return false;
          std::string all = routesIn(ns, false);
          for (const std::string& cidr : remoteCidrs) {
            if (all.find(cidr) != std::string::npos) return false;
          }
          return true;
        }, 30s, 500ms))
            << ns << ": " << routesIn(ns, false);
        EXPECT_EQ(rules(ns), rulesBefore_[ns]) << ns;
      }
    }
  }

  std::string diagnostics() {
    return "\nhome pods:\n" + kc(*homeSide_.cluster, {"get", "pods", "-A", "-o", "wide"}).out +
           "cloud pods:\n" + kc(*cloudSide_.cluster, {"get", "pods", "-A", "-o", "wide"}).out +
           "home status: " + statusRow(*homeSide_.cluster).dump() + "\n" + agentLogs();
  }

  Side homeSide_, cloudSide_;
  std::map<std::string, std::string> rulesBefore_;
};

}  // namespace strait::e2e
