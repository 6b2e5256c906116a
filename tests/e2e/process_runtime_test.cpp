// The process runtime end to end, as root: `strait minicluster --runtime process` runs Pods as
// real processes in network namespaces. An agnhost Deployment spread over three nodes answers
// curl from another Pod across nodes; logs, exec, restarts and graceful deletion work; two
// clusters with the same pod CIDR run side by side; stopping, and kill -9 followed by a
// restart or `--cleanup`, leave no namespace, link or process behind.
//
// Skipped (with the reason) when the process runtime cannot run here
// (processRuntimeUnavailable(): not root, no usable `ip netns`, nft, dnsmasq or curl).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "e2e/cluster_fixture.h"

namespace strait::e2e {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

const char* kAgnhost = "registry.k8s.io/e2e-test-images/agnhost:2.52";

// What a cluster leaves on the machine, counting only its own things (other tests may make
// network namespaces at the same time): its namespaces (their names carry "-<cluster>-"),
// the process-runtime host links ("st" + 6 hex + "h") whose peer is in one of them, and the
// processes living in any namespace the cluster was seen to have (by namespace inode, so a
// process left in a namespace that lost its name still counts).
struct Footprint {
  int namespaces = 0, links = 0, processes = 0;
  bool operator==(const Footprint& o) const {
    return namespaces == o.namespaces && links == o.links && processes == o.processes;
  }
};
std::ostream& operator<<(std::ostream& os, const Footprint& f) {
  return os << "{namespaces " << f.namespaces << ", links " << f.links << ", processes "
            << f.processes << "}";
}

Footprint footprint(const std::vector<std::string>& clusters) {
  static std::set<ino_t> seen;  // inodes of the clusters' namespaces, across calls
  auto ours = [&](const std::string& text) {
    for (const auto& c : clusters) {
      if (text.find("-" + c + "-") != std::string::npos) return true;
    }
    return false;
  };
  Footprint f;
  std::stringstream names(runCommand({"ip", "netns", "list"}).out);
  for (std::string line; std::getline(names, line);) {
    if (!ours(line)) continue;
    ++f.namespaces;
    struct stat st {};
    const std::string name = line.substr(0, line.find(' '));
    if (::stat(("/run/netns/" + name).c_str(), &st) == 0) seen.insert(st.st_ino);
  }
  std::regex hostLink(R"(^\d+: st[0-9a-f]{6}h[@:])");
  std::stringstream links(runCommand({"ip", "-o", "link", "show"}).out);
  for (std::string l; std::getline(links, l);) {
    if (std::regex_search(l, hostLink) && ours(l)) ++f.links;
  }
  DIR* d = ::opendir("/proc");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    struct stat st {};
    std::string p = std::string("/proc/") + e->d_name + "/ns/net";
    if (::stat(p.c_str(), &st) == 0 && seen.count(st.st_ino)) ++f.processes;
  }
  if (d) ::closedir(d);
  return f;
}

class ProcessRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = processRuntimeUnavailable(); !why.empty()) GTEST_SKIP() << why;
    home_ = std::make_unique<TempDir>("strait-procrt-home");
  }

  // Starts a process-runtime cluster named `name` with `nodes` nodes.
  void startCluster(Minicluster& c, const std::string& name, int nodes) {
    std::string err = c.start(name, 90s, {"--runtime", "process", "--nodes", std::to_string(nodes),
                                          "--node-monitor-grace-period", "40s"});
    ASSERT_EQ(err, "") << err;
  }

  CommandResult kubectl(const Minicluster& c, const std::vector<std::string>& args,
                        const std::string& in = {}) {
    return kubectl(c.kubeconfig(), args, in);
  }
  CommandResult must(const Minicluster& c, const std::vector<std::string>& args,
                     const std::string& in = {}) {
    return must(c.kubeconfig(), args, in);
  }
  CommandResult kubectl(const std::string& kubeconfig, const std::vector<std::string>& args,
                        const std::string& in = {}) {
    std::vector<std::string> argv = {"/usr/bin/kubectl"};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv,
                      {{"KUBECONFIG", kubeconfig},
                       {"KUBECACHEDIR", home_->file("cache-" + std::to_string(++calls_))},
                       {"HOME", home_->path()}},
                      60s, in);
  }
  CommandResult must(const std::string& kubeconfig, const std::vector<std::string>& args,
                     const std::string& in = {}) {
    CommandResult r = kubectl(kubeconfig, args, in);
    std::string cmd;
    for (const auto& a : args) cmd += " " + a;
    EXPECT_EQ(r.exitCode, 0) << "kubectl" << cmd << "\n" << r.describe();
    return r;
  }
  json pods(const Minicluster& c, const std::string& selector) {
    std::vector<std::string> args = {"get", "pods", "-o", "json"};
    if (!selector.empty()) args.insert(args.end(), {"-l", selector});
    json list = json::parse(kubectl(c, args).out, nullptr, false);
    return list.is_object() ? list.value("items", json::array()) : json::array();
  }
  static bool ready(const json& pod) {
    if (pod["status"].value("phase", "") != "Running" || pod["status"].value("podIP", "").empty()) {
      return false;
    }
    for (const auto& cond : pod["status"].value("conditions", json::array())) {
      if (cond.value("type", "") == "Ready") return cond.value("status", "") == "True";
    }
    return false;
  }
  // Waits until `n` pods of `selector` are Running and Ready; returns them.
  json waitReady(const Minicluster& c, const std::string& selector, size_t n) {
    json items;
    bool ok = waitFor(
        [&] {
          items = pods(c, selector);
          size_t k = 0;
          for (const auto& p : items) k += ready(p) ? 1 : 0;
          return k == n && items.size() == n;
        },
        90s, 250ms);
    EXPECT_TRUE(ok) << kubectl(c, {"get", "pods", "-o", "wide"}).out << "\n" << c.serverLog();
    return items;
  }

  static std::string agnhostPod(const std::string& name, const std::string& node) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"labels", {{"app", name}}}}},
                {"spec",
                 {{"containers", json::array({{{"name", "agnhost"},
                                               {"image", kAgnhost},
                                               {"args", {"netexec", "--http-port=8080"}}}})}}}};
    if (!node.empty()) pod["spec"]["nodeName"] = node;
    return pod.dump();
  }
  static std::string clientPod(const std::string& node) {
    json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", "client"}, {"labels", {{"app", "client"}}}}},
        {"spec",
         {{"terminationGracePeriodSeconds", 1},
          {"containers",
           json::array({{{"name", "shell"},
                         {"image", "debian:12"},
                         {"command", {"sleep", "infinity"}},
                         {"env", json::array({{{"name", "GREETING"}, {"value", "hello"}},
                                              {{"name", "MY_POD_IP"},
                                               {"valueFrom",
                                                {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}},
                                              {{"name", "MY_NAME"},
                                               {"valueFrom",
                                                {{"fieldRef",
                                                  {{"fieldPath", "metadata.name"}}}}}}})}}})}}}};
    if (!node.empty()) pod["spec"]["nodeName"] = node;
    return pod.dump();
  }

  std::unique_ptr<TempDir> home_;
  int calls_ = 0;
};

TEST_F(ProcessRuntimeTest, DeploymentAcrossThreeNodesAnswersCurlFromAnotherPod) {
  Minicluster c;
  ASSERT_NO_FATAL_FAILURE(startCluster(c, "procrt-a", 3));
  json deploy = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", "web"}}},
      {"spec",
       {{"replicas", 3},
        {"selector", {{"matchLabels", {{"app", "web"}}}}},
        {"template",
         {{"metadata", {{"labels", {{"app", "web"}}}}},
          {"spec",
           {{"topologySpreadConstraints",
             json::array({{{"maxSkew", 1},
                           {"topologyKey", "kubernetes.io/hostname"},
                           {"whenUnsatisfiable", "DoNotSchedule"},
                           {"labelSelector", {{"matchLabels", {{"app", "web"}}}}}}})},
            {"containers", json::array({{{"name", "agnhost"},
                                         {"image", kAgnhost},
                                         {"args", {"netexec", "--http-port=8080"}},
                                         {"ports", json::array({{{"containerPort", 8080}}})}}})}}}}}}}};
  json svc = {{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata", {{"name", "web"}}},
              {"spec",
               {{"type", "NodePort"},
                {"selector", {{"app", "web"}}},
                {"ports", json::array({{{"name", "http"}, {"port", 80}, {"targetPort", 8080}}})}}}};
  must(c, {"apply", "-f", "-"}, deploy.dump());
  must(c, {"apply", "-f", "-"}, svc.dump());
  must(c, {"apply", "-f", "-"}, clientPod("node-0"));
  json web = waitReady(c, "app=web", 3);
  json client = waitReady(c, "app=client", 1);
  ASSERT_EQ(web.size(), 3u);
  ASSERT_EQ(client.size(), 1u);
  std::string clientIP = client[0]["status"]["podIP"];

  std::set<std::string> nodes, ips;
  for (const auto& p : web) {
    nodes.insert(p["spec"].value("nodeName", ""));
    ips.insert(p["status"].value("podIP", ""));
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"node-0", "node-1", "node-2"}));
  EXPECT_EQ(ips.size(), 3u);

  // Every replica answers from the client Pod, across nodes (host-gw routes).
  for (const auto& p : web) {
    std::string ip = p["status"]["podIP"];
    std::string name = p["metadata"]["name"];
    CommandResult r = must(c, {"exec", "client", "--", "curl", "-s", "--max-time", "5",
                               "http://" + ip + ":8080/hostname"});
    EXPECT_EQ(r.out, name) << "replica on " << p["spec"].value("nodeName", "") << " at " << ip;
    r = must(c, {"exec", "client", "--", "curl", "-s", "--max-time", "5",
                 "http://" + ip + ":8080/echo?msg=across"});
    EXPECT_EQ(r.out, "across");
    r = must(c, {"exec", "client", "--", "curl", "-s", "--max-time", "5",
                 "http://" + ip + ":8080/clientip"});
    EXPECT_EQ(r.out.substr(0, r.out.find(':')), clientIP);
  }

  // The Service's name resolves through the cluster DNS to its ClusterIP, and the ClusterIP
  // spreads connections over every replica (nftables DNAT, random per connection).
  std::string clusterIP = must(c, {"get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"}).out;
  EXPECT_EQ(must(c, {"exec", "client", "--", "getent", "hosts", "web.default.svc.cluster.local"})
                .out.substr(0, clusterIP.size() + 1),
            clusterIP + " ");
  std::set<std::string> answered, names;
  for (const auto& p : web) names.insert(p["metadata"]["name"]);
  for (int i = 0; i < 40 && answered.size() < names.size(); ++i) {
    CommandResult r = kubectl(c, {"exec", "client", "--", "curl", "-s", "--max-time", "5",
                                  "http://web/hostname"});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    answered.insert(r.out);
  }
  EXPECT_EQ(answered, names);
  // A hostNetwork Pod, in its node's own namespace, reaches the Service as well.
  json hostClient = json::parse(clientPod("node-1"));
  hostClient["metadata"]["name"] = "hostclient";
  hostClient["metadata"]["labels"]["app"] = "hostclient";
  hostClient["spec"]["hostNetwork"] = true;
  must(c, {"apply", "-f", "-"}, hostClient.dump());
  ASSERT_EQ(waitReady(c, "app=hostclient", 1).size(), 1u);
  CommandResult fromNode = must(c, {"exec", "hostclient", "--", "curl", "-s", "--max-time", "5",
                                    "http://" + clusterIP + "/hostname"});
  EXPECT_EQ(names.count(fromNode.out), 1u) << fromNode.describe();
  EXPECT_EQ(must(c, {"exec", "client", "--", "printenv", "WEB_SERVICE_HOST"}).out, clusterIP + "\n");
  EXPECT_EQ(must(c, {"exec", "client", "--", "printenv", "WEB_SERVICE_PORT_HTTP"}).out, "80\n");
  // The NodePort answers on every node's InternalIP, from this host too (its link to the
  // cluster's underlay).
  std::string nodePort =
      must(c, {"get", "service", "web", "-o", "jsonpath={.spec.ports[0].nodePort}"}).out;
  for (const auto& p : web) {
    std::string node = p["spec"].value("nodeName", "");
    std::string address =
        must(c, {"get", "node", node, "-o",
                 "jsonpath={.status.addresses[?(@.type==\"InternalIP\")].address}"})
            .out;
    CommandResult r = runCommand({"curl", "-s", "--max-time", "5",
                                  "http://" + address + ":" + nodePort + "/hostname"});
    EXPECT_EQ(r.exitCode, 0) << node << " " << address << ":" << nodePort << " " << r.describe();
    EXPECT_TRUE(names.count(r.out)) << r.out;
  }
  EXPECT_THAT(must(c, {"exec", "client", "--", "cat", "/etc/resolv.conf"}).out,
              HasSubstr("search default.svc.cluster.local svc.cluster.local cluster.local"));

  // Logs are what the container wrote; exec runs in the Pod's namespaces and environment.
  std::string webPod = web[0]["metadata"]["name"];
  EXPECT_THAT(must(c, {"logs", webPod}).out, HasSubstr("Started HTTP server on port 8080"));
  EXPECT_EQ(must(c, {"exec", webPod, "--", "hostname"}).out, webPod + "\n");
  EXPECT_EQ(must(c, {"exec", "client", "--", "printenv", "MY_POD_IP"}).out, clientIP + "\n");
  EXPECT_EQ(must(c, {"exec", "client", "--", "printenv", "MY_NAME"}).out, "client\n");
  EXPECT_EQ(must(c, {"exec", "client", "--", "printenv", "GREETING"}).out, "hello\n");
  EXPECT_THAT(must(c, {"exec", "client", "--", "cat", "/proc/net/fib_trie"}).out,
              HasSubstr(clientIP));
  EXPECT_EQ(must(c, {"exec", "-i", "client", "--", "cat"}, "piped through stdin").out,
            "piped through stdin");
  CommandResult failing = kubectl(c, {"exec", "client", "--", "sh", "-c", "exit 3"});
  EXPECT_EQ(failing.exitCode, 3) << failing.describe();

  // A replica's process ends on deletion (SIGTERM), long before the 30 s grace period.
  auto start = std::chrono::steady_clock::now();
  must(c, {"delete", "pod", webPod, "--wait=true"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  // The Deployment replaces it with one that answers too.
  web = waitReady(c, "app=web", 3);
  for (const auto& p : web) {
    if (p["metadata"]["name"] == webPod) continue;
    std::string ip = p["status"]["podIP"];
    EXPECT_EQ(must(c, {"exec", "client", "--", "curl", "-s", "--max-time", "5",
                       "http://" + ip + ":8080/hostname"})
                  .out,
              std::string(p["metadata"]["name"]));
  }
}

// `kubectl logs -f` follows a container's output as it is written, and `kubectl exec -it`
// (kubectl on a terminal, given by script(1)) runs the command on a terminal in the Pod.
TEST_F(ProcessRuntimeTest, LogsFollowAndExecWithATerminal) {
  Minicluster c;
  ASSERT_NO_FATAL_FAILURE(startCluster(c, "procrt-t", 1));
  json ticker = {{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata", {{"name", "ticker"}, {"labels", {{"app", "ticker"}}}}},
                 {"spec",
                  {{"terminationGracePeriodSeconds", 1},
                   {"containers",
                    json::array({{{"name", "tick"},
                                  {"image", "debian:12"},
                                  {"command", {"sh", "-c",
                                               "i=0; while true; do echo tick $i; i=$((i+1)); "
                                               "sleep 0.2; done"}}}})}}}};
  must(c, {"apply", "-f", "-"}, ticker.dump());
  ASSERT_EQ(waitReady(c, "app=ticker", 1).size(), 1u);

  BackgroundProcess follow;
  std::string error;
  ASSERT_TRUE(follow.start({"/usr/bin/kubectl", "logs", "-f", "ticker"},
                           {{"KUBECONFIG", c.kubeconfig()},
                            {"KUBECACHEDIR", home_->file("cache-follow")},
                            {"HOME", home_->path()}},
                           home_->file("follow.out"), home_->file("follow.err"), &error))
      << error;
  // Lines keep arriving on the one open request: a later tick than any seen at the start.
  ASSERT_TRUE(waitFor([&] { return follow.stdoutText().find("tick 3\n") != std::string::npos; },
                      30s))
      << follow.stdoutText() << follow.stderrText();
  std::string seen = follow.stdoutText();
  size_t at = seen.rfind("tick ");
  int last = at == std::string::npos ? 0 : std::stoi(seen.substr(at + 5));
  ASSERT_TRUE(waitFor(
      [&] {
        return follow.stdoutText().find("tick " + std::to_string(last + 5) + "\n") !=
               std::string::npos;
      },
      30s))
      << follow.stdoutText();
  EXPECT_TRUE(follow.running()) << "kubectl logs -f ended: " << follow.stderrText();
  follow.stop();

  // kubectl exec -it needs a terminal on its side: script(1) gives it one.
  CommandResult tty = runCommand(
      {"/usr/bin/script", "-qec",
       "/usr/bin/kubectl exec -it ticker -- sh -c 'tty; stty size; echo on-a-terminal'",
       "/dev/null"},
      {{"KUBECONFIG", c.kubeconfig()},
       {"KUBECACHEDIR", home_->file("cache-tty")},
       {"HOME", home_->path()},
       {"TERM", "xterm"}},
      60s, "");
  EXPECT_EQ(tty.exitCode, 0) << tty.describe();
  EXPECT_THAT(tty.out, HasSubstr("/dev/pts/")) << "the command did not run on a terminal";
  EXPECT_THAT(tty.out, HasSubstr("on-a-terminal"));
  EXPECT_THAT(tty.out, Not(HasSubstr("not a tty")));
}

TEST_F(ProcessRuntimeTest, ExitCodesDriveRestartsAndCrashLoopBackOff) {
  Minicluster c;
  ASSERT_NO_FATAL_FAILURE(startCluster(c, "procrt-r", 1));
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "crash"}, {"annotations", {{"strait.io/restart-backoff", "1s"}}}}},
              {"spec",
               {{"containers", json::array({{{"name", "c"},
                                             {"image", "debian:12"},
                                             {"command", {"sh", "-c", "echo run $$; exit 7"}}}})}}}};
  must(c, {"apply", "-f", "-"}, pod.dump());
  json cs;
  ASSERT_TRUE(waitFor(
      [&] {
        json p = json::parse(kubectl(c, {"get", "pod", "crash", "-o", "json"}).out, nullptr, false);
        if (!p.is_object()) return false;
        cs = p["status"].value("containerStatuses", json::array());
        return !cs.empty() && cs[0].value("restartCount", 0) >= 2;
      },
      60s, 200ms))
      << cs.dump();
  EXPECT_EQ(cs[0]["lastState"]["terminated"].value("exitCode", -1), 7) << cs.dump();
  EXPECT_THAT(must(c, {"logs", "crash", "--previous"}).out, HasSubstr("run "));
  json never = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", "once"}}},
                {"spec",
                 {{"restartPolicy", "Never"},
                  {"initContainers", json::array({{{"name", "init"},
                                                   {"image", "debian:12"},
                                                   {"command", {"sh", "-c", "echo init-ran"}}}})},
                  {"containers", json::array({{{"name", "c"},
                                               {"image", "debian:12"},
                                               {"command", {"sh", "-c", "echo done; exit 4"}}}})}}}};
  must(c, {"apply", "-f", "-"}, never.dump());
  ASSERT_TRUE(waitFor(
      [&] {
        return kubectl(c, {"get", "pod", "once", "-o", "jsonpath={.status.phase}"}).out == "Failed";
      },
      30s, 200ms));
  EXPECT_EQ(must(c, {"get", "pod", "once", "-o",
                     "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}"})
                .out,
            "4");
  EXPECT_EQ(must(c, {"logs", "once"}).out, "done\n");
  EXPECT_EQ(must(c, {"logs", "once", "-c", "init"}).out, "init-ran\n");

  // A container that ignores SIGTERM is killed when the grace period ends.
  json ignorer = {{"apiVersion", "v1"},
                   {"kind", "Pod"},
                   {"metadata", {{"name", "sigterm-ignorer"}}},
                   {"spec",
                    {{"terminationGracePeriodSeconds", 2},
                     {"containers", json::array({{{"name", "c"},
                                                  {"image", "debian:12"},
                                                  {"command", {"sh", "-c", "trap '' TERM; "
                                                               "while true; do sleep 0.2; done"}}}})}}}};
  must(c, {"apply", "-f", "-"}, ignorer.dump());
  ASSERT_TRUE(waitFor(
      [&] {
        json p = json::parse(kubectl(c, {"get", "pod", "sigterm-ignorer", "-o", "json"}).out, nullptr, false);
        return p.is_object() && ready(p);
      },
      30s, 200ms));
  auto start = std::chrono::steady_clock::now();
  must(c, {"delete", "pod", "sigterm-ignorer", "--wait=true"});
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 1800ms) << "SIGTERM was ignored: the grace period runs out first";
  EXPECT_LT(took, 15s);
}

TEST_F(ProcessRuntimeTest, ProbesDriveReadinessServiceRulesAndRestarts) {
  Minicluster c;
  ASSERT_NO_FATAL_FAILURE(startCluster(c, "procrt-p", 1));
  TempDir flags("strait-procrt-ready");
  auto probed = [&](const std::string& name) {
    json pod = json::parse(agnhostPod(name, ""));
    pod["metadata"]["labels"]["app"] = "probed";
    pod["spec"]["containers"][0]["readinessProbe"] = {
        {"exec", {{"command", {"cat", flags.file("ready-" + name)}}}},
        {"periodSeconds", 1},
        {"failureThreshold", 1}};
    return pod.dump();
  };
  json svc = {{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata", {{"name", "probed"}}},
              {"spec",
               {{"selector", {{"app", "probed"}}},
                {"ports", json::array({{{"port", 80}, {"targetPort", 8080}}})}}}};
  must(c, {"apply", "-f", "-"}, svc.dump());
  must(c, {"apply", "-f", "-"}, probed("probed-a"));
  must(c, {"apply", "-f", "-"}, probed("probed-b"));
  must(c, {"apply", "-f", "-"}, clientPod(""));
  waitReady(c, "app=client", 1);
  // Not ready until the probe's file exists.
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(pods(c, "app=probed").size(), 2u);
  for (const auto& p : pods(c, "app=probed")) EXPECT_FALSE(ready(p)) << p["status"].dump();
  writeFile(flags.file("ready-probed-a"), "yes");
  writeFile(flags.file("ready-probed-b"), "yes");
  json both = waitReady(c, "app=probed", 2);
  ASSERT_EQ(both.size(), 2u);
  std::string ipB;
  for (const auto& p : both) {
    if (p["metadata"]["name"] == "probed-b") ipB = p["status"]["podIP"];
  }
  std::string nodeNs;
  std::stringstream list(runCommand({"ip", "netns", "list"}).out);
  for (std::string l; std::getline(list, l);) {
    if (l.find("-procrt-p-node-0") != std::string::npos) nodeNs = l.substr(0, l.find(' '));
  }
  ASSERT_FALSE(nodeNs.empty());
  auto rules = [&] {
    return runCommand({"ip", "netns", "exec", nodeNs, "nft", "list", "table", "ip",
                       "strait-services"})
        .out;
  };
  // An endpoint appears as "IP:8080" (alone) or "IP . 8080" (in a numgen map).
  auto targets = [&](const std::string& r) {
    return r.find(ipB + ":8080") != std::string::npos || r.find(ipB + " . 8080") != std::string::npos;
  };
  ASSERT_TRUE(waitFor([&] { return targets(rules()); }, 10s)) << rules();

  // A failing readiness probe takes the replica out of the endpoints and the rules.
  ::unlink(flags.file("ready-probed-b").c_str());
  auto failedAt = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitFor([&] { return !targets(rules()); }, 10s, 20ms))
      << rules();
  auto took = std::chrono::steady_clock::now() - failedAt;
  EXPECT_LT(took, 2500ms) << "readiness failure to nftables rules";
  std::cerr << "readiness failure to rules: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms\n";
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(must(c, {"exec", "client", "--", "curl", "-s", "--max-time", "5",
                       "http://probed.default.svc.cluster.local/hostname"})
                  .out,
              "probed-a");
  }

  // A failing liveness probe restarts the container.
  json live = json::parse(agnhostPod("live", ""));
  live["spec"]["containers"][0]["livenessProbe"] = {
      {"httpGet", {{"path", "/missing"}, {"port", 8080}}}, {"periodSeconds", 1}, {"failureThreshold", 2}};
  must(c, {"apply", "-f", "-"}, live.dump());
  ASSERT_TRUE(waitFor(
      [&] {
        return kubectl(c, {"get", "pod", "live", "-o",
                           "jsonpath={.status.containerStatuses[0].restartCount}"})
                   .out >= "1";
      },
      30s, 250ms))
      << must(c, {"get", "pod", "live", "-o", "yaml"}).out;
  EXPECT_THAT(must(c, {"get", "events", "--field-selector", "involvedObject.name=live"}).out,
              HasSubstr("Liveness probe failed"));
}

TEST_F(ProcessRuntimeTest, TwoClustersWithTheSamePodCidrRunSideBySide) {
  Minicluster a, b;
  ASSERT_NO_FATAL_FAILURE(startCluster(a, "procrt-x", 1));
  ASSERT_NO_FATAL_FAILURE(startCluster(b, "procrt-y", 1));
  for (Minicluster* c : {&a, &b}) {
    must(*c, {"apply", "-f", "-"}, agnhostPod(c == &a ? "web-x" : "web-y", "node-0"));
    must(*c, {"apply", "-f", "-"}, clientPod("node-0"));
  }
  json wa = waitReady(a, "app=web-x", 1), wb = waitReady(b, "app=web-y", 1);
  waitReady(a, "app=client", 1);
  waitReady(b, "app=client", 1);
  ASSERT_EQ(wa.size(), 1u);
  ASSERT_EQ(wb.size(), 1u);
  std::string ipA = wa[0]["status"]["podIP"], ipB = wb[0]["status"]["podIP"];
  EXPECT_EQ(ipA, ipB) << "both clusters allocate from 10.244.0.0/16 the same way";
  EXPECT_EQ(must(a, {"exec", "client", "--", "curl", "-s", "--max-time", "5",
                     "http://" + ipA + ":8080/hostname"})
                .out,
            "web-x");
  EXPECT_EQ(must(b, {"exec", "client", "--", "curl", "-s", "--max-time", "5",
                     "http://" + ipB + ":8080/hostname"})
                .out,
            "web-y");
}

TEST_F(ProcessRuntimeTest, WithoutRootItExitsTwoNamingWhatIsMissingAndCreatesNothing) {
  if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "setpriv (util-linux) is missing";
  Footprint before = footprint({"procrt-n"});
  TempDir dir("strait-procrt-nonroot");
  CommandResult r = runCommand({"/usr/bin/setpriv", "--reuid", "65534", "--regid", "65534",
                                "--clear-groups", straitBinary(), "minicluster", "--name",
                                "procrt-n", "--runtime", "process", "--nodes", "1", "--listen",
                                "127.0.0.1:0", "--kubeconfig-out", dir.file("kubeconfig")},
                               {}, 30s);
  EXPECT_EQ(r.exitCode, 2) << r.describe();
  EXPECT_THAT(r.err, HasSubstr("missing=\"root"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("kubeconfig")));
  EXPECT_EQ(footprint({"procrt-n"}), before);
}

TEST_F(ProcessRuntimeTest, StopAndKillLeaveNothingBehind) {
  const std::vector<std::string> names = {"procrt-z"};
  Footprint before = footprint(names);
  Minicluster c;
  ASSERT_NO_FATAL_FAILURE(startCluster(c, "procrt-z", 2));
  must(c, {"apply", "-f", "-"}, agnhostPod("web", ""));
  waitReady(c, "app=web", 1);
  Footprint running = footprint(names);
  EXPECT_EQ(running.namespaces, before.namespaces + 4) << "underlay, 2 nodes, 1 pod";
  EXPECT_EQ(running.links, before.links + 1);
  EXPECT_GE(running.processes, before.processes + 1);

  // SIGTERM: everything goes.
  c.stop();
  EXPECT_EQ(c.exitCode(), 0) << c.serverLog();
  EXPECT_EQ(footprint(names), before);

  // kill -9, then a restart over the same data dir sweeps the leftovers and runs the pod
  // again; its clean stop leaves nothing.
  ASSERT_EQ(c.restart(false, 90s), "");
  waitReady(c, "app=web", 1);
  ASSERT_EQ(c.restart(true, 90s), "");
  json again = waitReady(c, "app=web", 1);
  EXPECT_EQ(footprint(names).namespaces, before.namespaces + 4) << "no duplicate left";
  ASSERT_EQ(again.size(), 1u);
  c.stop();
  EXPECT_EQ(footprint(names), before);

  // kill -9, then `strait minicluster --cleanup NAME` (refused while the cluster runs).
  TempDir dir("strait-procrt-kill");
  BackgroundProcess server;
  std::string error;
  ASSERT_TRUE(server.start({straitBinary(), "minicluster", "--name", "procrt-z", "--listen",
                            "127.0.0.1:0", "--kubeconfig-out", dir.file("kubeconfig"),
                            "--runtime", "process", "--nodes", "1"},
                           {}, dir.file("out"), dir.file("err"), &error))
      << error;
  ASSERT_TRUE(waitFor([&] { return std::filesystem::exists(dir.file("kubeconfig")); }, 60s))
      << server.stderrText();
  must(dir.file("kubeconfig"), {"apply", "-f", "-"}, agnhostPod("web", ""));
  ASSERT_TRUE(waitFor(
      [&] {
        json p = json::parse(kubectl(dir.file("kubeconfig"), {"get", "pod", "web", "-o", "json"}).out,
                             nullptr, false);
        return p.is_object() && ready(p);
      },
      60s, 200ms))
      << server.stderrText();
  CommandResult busy = runCommand({straitBinary(), "minicluster", "--cleanup", "procrt-z"});
  EXPECT_EQ(busy.exitCode, 1) << busy.describe();
  EXPECT_EQ(footprint(names).namespaces, before.namespaces + 3) << "underlay, node, pod";
  ::kill(server.pid(), SIGKILL);
  ASSERT_TRUE(waitFor([&] { return !server.running(); }, 10s));
  EXPECT_GT(footprint(names).namespaces, before.namespaces) << "a killed cluster leaves them";
  CommandResult cleanup = runCommand({straitBinary(), "minicluster", "--cleanup", "procrt-z"});
  EXPECT_EQ(cleanup.exitCode, 0) << cleanup.describe();
  EXPECT_EQ(footprint(names), before);
}

}  // namespace
}  // namespace strait::e2e
