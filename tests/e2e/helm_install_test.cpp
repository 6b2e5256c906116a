// The path a user takes on real clusters, on two process-runtime miniclusters ("home", the
// consumer, and "cloud", the provider), with the real helm of <build>/tools and real kubectl:
// `helm install strait charts/strait` into each (the chart's image mapped to the built strait
// binary with --local-image, so the agents run as Pods with their ServiceAccount token and
// in-cluster config), both agents Ready; a request outside the chart's RBAC refused; `strait
// peer` (the consumer's agent Pod dials the provider's NodePort across the underlays, as
// between two clouds); a Deployment offloaded, Running in the provider and Running in the
// consumer's status; `helm upgrade` of both with a changed value keeps the provider's
// identity and the peering; `strait unpeer` and `helm uninstall` of both leave no object
// with Strait's labels (the identity Secret excepted, which the chart keeps) and no agent
// process. Without root (or `ip netns`, nft, dnsmasq) it checks install and uninstall on the
// simulated runtime instead and says so in the skip message.
#include <dirent.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <set>

#include "e2e/cluster_fixture.h"

namespace strait::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kGrpcNodePort = 30743;
constexpr int kLinkNodePort = 30744;

std::string helmBinary() {
  if (const char* h = std::getenv("STRAIT_HELM"); h && *h) return h;
  std::string strait = straitBinary();
  if (strait.empty()) return "";
  std::string helm = (fs::path(strait).parent_path() / "tools" / "helm").string();
  return ::access(helm.c_str(), X_OK) == 0 ? helm : "";
}

std::string chartDir() {
  return (fs::path(__FILE__).parent_path().parent_path().parent_path() / "charts" / "strait")
      .string();
}

// Pids whose command line names `needle` (e.g. "--cluster-name=home-123").
std::vector<pid_t> processesWithArg(const std::string& needle) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (!end || *end != '\0' || pid <= 0) continue;
    std::string cmd = readFile(std::string("/proc/") + e->d_name + "/cmdline");
    for (char& c : cmd) {
      if (c == '\0') c = ' ';
    }
    if (cmd.find(needle) != std::string::npos) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(d);
  return out;
}

// One cluster, its helm release and its tools' environment.
struct Cluster {
  std::string name;  // cluster name = the agent's --cluster-name
  Minicluster server;
  std::unique_ptr<TempDir> dir;
  int calls = 0;

  Env env() {
    std::string cache = dir->file("kubecache-" + std::to_string(++calls));
    return {{"KUBECONFIG", server.kubeconfig()}, {"KUBECACHEDIR", cache},
            {"HOME", dir->path()},                {"HELM_CACHE_HOME", dir->file("helm-cache")},
            {"HELM_CONFIG_HOME", dir->file("helm-config")},
            {"HELM_DATA_HOME", dir->file("helm-data")}};
  }
  CommandResult kubectl(const std::vector<std::string>& args, const std::string& in = "") {
    std::vector<std::string> argv = {"/usr/bin/kubectl"};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, env(), 60s, in);
  }
  CommandResult helm(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {helmBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, env(), 300s);
  }
  json getJson(const std::vector<std::string>& args) {
    std::vector<std::string> a = {"get"};
    a.insert(a.end(), args.begin(), args.end());
    a.insert(a.end(), {"-o", "json"});
    CommandResult r = kubectl(a);
    if (r.exitCode != 0) return json();
    json j = json::parse(r.out, nullptr, false);
    return j.is_discarded() ? json() : j;
  }
  // Every object (of every listable kind but Events and metrics) that carries a strait.io/
  // label (but the minicluster's own node pool label) or the chart's
  // app.kubernetes.io/name=strait, or is a ForeignCluster, as "kind ns/name"; `except` names
  // allowed ones, and what Kubernetes itself keeps after an uninstall is allowed too: the
  // CRD (Helm never deletes crds/), the virtual kubelets' approved serving CSRs (the
  // cluster's CSR cleaner removes them after an hour) and the provider's records of used
  // peering tokens (kept until they expire, so that a token is never accepted twice).
  std::vector<std::string> straitObjects(const std::set<std::string>& except, std::string* error) {
    CommandResult r = kubectl({"api-resources", "--verbs=list", "-o", "name"});
    if (r.exitCode != 0) {
      *error = "api-resources: " + r.describe();
      return {};
    }
    std::string kinds;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line == "events" || line == "events.events.k8s.io" ||
          line.find("metrics.k8s.io") != std::string::npos || line == "componentstatuses") {
        continue;
      }
      kinds += (kinds.empty() ? "" : ",") + line;
    }
    json list = getJson({kinds, "-A"});
    if (list.is_null()) {
      *error = "kubectl get " + kinds + " -A failed";
      return {};
    }
    std::vector<std::string> found;
    for (const json& o : list.value("items", json::array())) {
      const json& md = o.value("metadata", json::object());
      std::string id = o.value("kind", "") + " " + md.value("namespace", "") + "/" +
                       md.value("name", "");
      bool strait = o.value("kind", "") == "ForeignCluster";
      const json& labels = md.value("labels", json::object());
      for (const auto& [k, v] : labels.items()) {
        if ((k.rfind("strait.io/", 0) == 0 && k != "strait.io/pool") ||
            (k == "app.kubernetes.io/name" && v.is_string() && v.get<std::string>() == "strait")) {
          strait = true;
        }
      }
      const std::string kind = o.value("kind", "");
      bool keptByKubernetes =
          (kind == "CustomResourceDefinition" && (md.value("name", "") == "foreignclusters.strait.io" ||
                                                  md.value("name", "") == "offloadingoverrides.strait.io")) ||
          (kind == "CertificateSigningRequest" && o.value("status", json::object()).contains("certificate")) ||
          (kind == "Secret" && labels.value("strait.io/component", "") == "token" &&
           md.value("annotations", json::object()).contains("strait.io/used-at"));
      if (strait && !keptByKubernetes && !except.count(id)) found.push_back(id);
    }
    return found;
  }
};

class HelmInstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (helmBinary().empty()) GTEST_SKIP() << "no helm in <build>/tools (scripts/install-deps.sh)";
    if (straitBinary().empty()) GTEST_SKIP() << "no strait binary";
    pid_ = std::to_string(::getpid());
    home_.name = "home-" + pid_;
    cloud_.name = "cloud-" + pid_;
    home_.dir = std::make_unique<TempDir>("strait-helm-home");
    cloud_.dir = std::make_unique<TempDir>("strait-helm-cloud");
  }
  void TearDown() override {
    for (Cluster* c : {&home_, &cloud_}) {
      if (HasFailure() && c->server.running()) {
        std::cerr << "--- " << c->name << " pods\n"
                  << c->kubectl({"get", "pods", "-A", "-o", "wide"}).out;
        std::cerr << "--- " << c->name << " agent log\n"
                  << c->kubectl({"logs", "-n", "strait-system", "deployment/strait-agent",
                                 "--tail=60"})
                         .out;
      }
      c->server.stop();
    }
  }

  // helm install ARGS into `c` with the values the clusters need; "" or what failed.
  std::string install(Cluster& c, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"install", "strait", chartDir(), "-n", "strait-system",
                                     "--create-namespace", "--set", "clusterName=" + c.name};
    args.insert(args.end(), extra.begin(), extra.end());
    CommandResult r = c.helm(args);
    return r.exitCode == 0 ? "" : "helm install into " + c.name + ": " + r.describe();
  }

  std::string pid_;
  Cluster home_, cloud_;
};

TEST_F(HelmInstallTest, InstallPeerOffloadUpgradeUninstallOnTwoClusters) {
  if (std::string why = processRuntimeUnavailable(); !why.empty()) {
    // The simulated runtime runs no agent; the release's objects still come and go.
    ASSERT_EQ(cloud_.server.start(cloud_.name, 60s, {"--nodes", "1"}), "");
    ASSERT_EQ(install(cloud_, {}), "");
    json dep = cloud_.getJson({"deployment", "-n", "strait-system", "strait-agent"});
    ASSERT_FALSE(dep.is_null());
    EXPECT_EQ(dep["spec"]["template"]["spec"]["serviceAccountName"], "strait");
    CommandResult un = cloud_.helm({"uninstall", "strait", "-n", "strait-system", "--wait"});
    ASSERT_EQ(un.exitCode, 0) << un.describe();
    std::string error;
    EXPECT_EQ(cloud_.straitObjects({}, &error), std::vector<std::string>{}) << error;
    GTEST_SKIP() << "the process runtime is unavailable (" << why
                 << "): checked helm install and uninstall on the simulated runtime only";
  }
  // Distinct pod CIDRs per cluster and per process: the host routes each podCIDR to its node
  // (the API server reaches Pod IPs) and another test's cluster may run beside these.
  int k = 100 + (::getpid() % 60) * 2;
  auto startServer = [&](Cluster& c) {
    std::string cidr = "10." + std::to_string(&c == &home_ ? k : k + 1) + ".0.0/16";
    std::string e = c.server.start(c.name, 60s,
                                   {"--runtime", "process", "--nodes", "1", "--node-cpu", "4",
                                    "--node-memory", "8Gi", "--pod-cidr", cidr, "--local-image",
                                    "strait=" + straitBinary()});
    return e.empty() ? e : c.name + ": " + e;
  };
  // The two clusters are independent until the peering: each step runs on both side by side.
  ASSERT_EQ(inParallel({[&] { return startServer(home_); }, [&] { return startServer(cloud_); }}),
            "");
  const std::vector<std::string> values = {
      "--set", "service.type=NodePort",
      "--set", "service.grpcNodePort=" + std::to_string(kGrpcNodePort),
      "--set", "service.linkNodePort=" + std::to_string(kLinkNodePort),
      "--set", "agent.share=1",
      "--set", "agent.leaderLeaseDuration=5s",
      "--wait", "--timeout", "3m"};
  ASSERT_EQ(inParallel({[&] { return install(cloud_, values); },
                        [&] { return install(home_, values); }}),
            "");

  // The agents run as Pods of the chart's image, Ready (helm --wait), with in-cluster config.
  std::map<std::string, std::string> nodeIp;
  for (Cluster* c : {&home_, &cloud_}) {
    json pods = c->getJson({"pods", "-n", "strait-system", "-l",
                            "app.kubernetes.io/component=agent"});
    ASSERT_EQ(pods.value("items", json::array()).size(), 1u) << pods.dump();
    const json& pod = pods["items"][0];
    EXPECT_EQ(pod["status"]["phase"], "Running") << pod.dump();
    bool ready = false;
    for (const json& cond : pod["status"].value("conditions", json::array())) {
      if (cond.value("type", "") == "Ready") ready = cond.value("status", "") == "True";
    }
    EXPECT_TRUE(ready) << c->name << ": agent Pod not Ready";
    nodeIp[c->name] = pod["status"].value("hostIP", "");
    // The endpoint other clusters dial: the node's InternalIP and the peering node port.
    CommandResult ep = c->kubectl({"get", "configmap", "-n", "strait-system", "strait-agent",
                                   "-o", "jsonpath={.data.endpoint}"});
    EXPECT_EQ(ep.out, nodeIp[c->name] + ":" + std::to_string(kGrpcNodePort)) << ep.describe();
  }
  // The process running the agent is the built binary, with the chart's arguments.
  ASSERT_FALSE(processesWithArg("--cluster-name=" + cloud_.name).empty());

  // The agent's ServiceAccount token is refused what the chart does not grant.
  CommandResult token = cloud_.kubectl({"create", "token", "strait", "-n", "strait-system"});
  ASSERT_EQ(token.exitCode, 0) << token.describe();
  std::string tokenText = token.out;
  while (!tokenText.empty() && tokenText.back() == '\n') tokenText.pop_back();
  CommandResult help = runCommand({straitBinary(), "minicluster", "--help"});
  if (help.out.find("--authorization-mode") != std::string::npos) {
    // kubectl with the token alone (no client certificate of the admin's kubeconfig).
    std::string credError;
    auto admin = loadAdminCredentials(cloud_.server.kubeconfig(), cloud_.dir->path(), &credError);
    ASSERT_TRUE(admin.has_value()) << credError;
    ASSERT_TRUE(writeFile(cloud_.dir->file("empty.kubeconfig"), ""));
    auto asAgent = [&](const std::vector<std::string>& args) {
      std::vector<std::string> argv = {"/usr/bin/kubectl", "--server", admin->server,
                                       "--certificate-authority", admin->caFile, "--token",
                                       tokenText};
      argv.insert(argv.end(), args.begin(), args.end());
      Env env = cloud_.env();
      env["KUBECONFIG"] = cloud_.dir->file("empty.kubeconfig");
      return runCommand(argv, env);
    };
    // The chart grants nothing on Deployments (the provider side's cluster-wide rights are
    // on Pods, ConfigMaps, Secrets and ServiceAccounts).
    CommandResult deployments = asAgent({"get", "deployments", "-n", "kube-system"});
    EXPECT_NE(deployments.exitCode, 0) << deployments.describe();
    EXPECT_NE(deployments.err.find("Forbidden"), std::string::npos) << deployments.describe();
    CommandResult nodes = asAgent({"get", "nodes"});
    EXPECT_EQ(nodes.exitCode, 0) << "the chart grants list nodes: " << nodes.describe();
  }

  std::string providerId = cloud_.kubectl({"get", "configmap", "-n", "strait-system",
                                           "strait-agent", "-o", "jsonpath={.data.clusterID}"})
                               .out;
  ASSERT_FALSE(providerId.empty());

  // Peer: the consumer's agent Pod dials the provider's node port across the underlays.
  CommandResult peer = runCommand(
      {straitBinary(), "peer", "--kubeconfig", home_.server.kubeconfig(), "--remote-kubeconfig",
       cloud_.server.kubeconfig(), "--cpu", "2", "--memory", "4Gi", "--pods", "20", "--timeout",
       "2m"},
      {}, 150s);
  ASSERT_EQ(peer.exitCode, 0) << peer.describe();
  const std::string vnode = "strait-" + cloud_.name;
  auto vnodeReady = [&] {
    json n = home_.getJson({"node", vnode});
    for (const json& c : n.is_null() ? json::array() : n["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
    }
    return false;
  };
  ASSERT_TRUE(waitFor(vnodeReady, 90s, 500ms)) << "virtual node " << vnode << " not Ready";

  // Offload a Deployment: Running in the provider, and so in the consumer's status.
  ASSERT_EQ(home_.kubectl({"create", "namespace", "demo"}).exitCode, 0);
  CommandResult off = runCommand({straitBinary(), "offload", "namespace", "demo",
                                  "--kubeconfig", home_.server.kubeconfig()});
  ASSERT_EQ(off.exitCode, 0) << off.describe();
  const std::string deployment = R"({"apiVersion":"apps/v1","kind":"Deployment",
    "metadata":{"name":"web","namespace":"demo"},
    "spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},
      "template":{"metadata":{"labels":{"app":"web"}},
        "spec":{"nodeSelector":{"type":"virtual-kubelet"},
          "containers":[{"name":"web","image":"registry.k8s.io/e2e-test-images/agnhost:2.47",
            "args":["netexec","--http-port=8080"],"ports":[{"containerPort":8080}]}]}}}})";
  CommandResult created = home_.kubectl({"apply", "-f", "-"}, deployment);
  ASSERT_EQ(created.exitCode, 0) << created.describe();
  auto runningPods = [](const json& list) {
    int n = 0;
    for (const json& p : list.value("items", json::array())) {
      if (p["status"].value("phase", "") == "Running") ++n;
    }
    return n;
  };
  auto offloadedRunning = [&] {
    json local = home_.getJson({"pods", "-n", "demo", "-l", "app=web"});
    json remote = cloud_.getJson({"pods", "-A", "-l", "app=web"});
    return !local.is_null() && !remote.is_null() && runningPods(local) == 1 &&
           runningPods(remote) == 1 && local["items"][0]["spec"].value("nodeName", "") == vnode;
  };
  ASSERT_TRUE(waitFor(offloadedRunning, 120s, 500ms))
      << home_.kubectl({"get", "pods", "-A", "-o", "wide"}).out
      << cloud_.kubectl({"get", "pods", "-A", "-o", "wide"}).out;
  // The webhook, reached by the consumer's API server through its Service, gave the
  // toleration at creation (not the repair of a Pending Pod).
  json webPod = home_.getJson({"pods", "-n", "demo", "-l", "app=web"})["items"][0];
  bool tolerated = false;
  for (const json& t : webPod["spec"].value("tolerations", json::array())) {
    if (t.value("key", "").find("strait.io") != std::string::npos) tolerated = true;
  }
  EXPECT_TRUE(tolerated) << webPod["spec"].dump();
  std::string homeLog =
      home_.kubectl({"logs", "-n", "strait-system", "deployment/strait-agent"}).out;
  EXPECT_EQ(homeLog.find("created_without_webhook"), std::string::npos)
      << "the toleration came from the repair, not the webhook";
  CommandResult cfg = home_.kubectl({"get", "mutatingwebhookconfiguration", "strait-offloading",
                                     "-o", "jsonpath={.webhooks[0].clientConfig.caBundle}"});
  EXPECT_FALSE(cfg.out.empty()) << "the agent injects the caBundle: " << cfg.describe();

  // helm upgrade with a changed value: the agents restart, same identity, same peering.
  std::string homeAgentPod = home_.kubectl({"get", "pods", "-n", "strait-system", "-l",
                                            "app.kubernetes.io/component=agent", "-o",
                                            "jsonpath={.items[0].metadata.uid}"})
                                 .out;
  // Home also stops keeping its identity on uninstall (its peers may forget it).
  auto upgrade = [&](Cluster& c) {
    std::vector<std::string> args = {"upgrade", "strait", chartDir(), "-n", "strait-system",
                                     "--reuse-values", "--set", "agent.logLevel=debug",
                                     "--wait", "--timeout", "3m"};
    if (&c == &home_) args.insert(args.end(), {"--set", "identity.keepOnUninstall=false"});
    CommandResult up = c.helm(args);
    return up.exitCode == 0 ? "" : c.name + ": " + up.describe();
  };
  ASSERT_EQ(inParallel({[&] { return upgrade(cloud_); }, [&] { return upgrade(home_); }}), "");
  for (Cluster* c : {&cloud_, &home_}) {
    json dep = c->getJson({"deployment", "-n", "strait-system", "strait-agent"});
    std::string args = dep["spec"]["template"]["spec"]["containers"][0]["args"].dump();
    EXPECT_NE(args.find("--log-level=debug"), std::string::npos) << args;
  }
  EXPECT_NE(home_.kubectl({"get", "pods", "-n", "strait-system", "-l",
                           "app.kubernetes.io/component=agent", "-o",
                           "jsonpath={.items[0].metadata.uid}"})
                .out,
            homeAgentPod)
      << "the upgrade did not restart the agent";
  EXPECT_EQ(cloud_.kubectl({"get", "configmap", "-n", "strait-system", "strait-agent", "-o",
                            "jsonpath={.data.clusterID}"})
                .out,
            providerId);
  ASSERT_TRUE(waitFor(vnodeReady, 90s, 500ms)) << "virtual node not Ready after the upgrade";
  ASSERT_TRUE(waitFor(offloadedRunning, 60s, 500ms)) << "offloaded Pod lost in the upgrade";
  json fc = home_.getJson({"foreignclusters"});
  ASSERT_EQ(fc.value("items", json::array()).size(), 1u) << fc.dump();
  EXPECT_EQ(fc["items"][0]["metadata"]["name"], cloud_.name);

  // Unpeer and uninstall: nothing of Strait's is left but the identity Secret.
  ASSERT_EQ(home_.kubectl({"delete", "namespace", "demo", "--wait", "--timeout=120s"}).exitCode, 0);
  CommandResult unpeer = runCommand({straitBinary(), "unpeer", "--kubeconfig",
                                     home_.server.kubeconfig(), "--remote-kubeconfig",
                                     cloud_.server.kubeconfig(), "--timeout", "2m"},
                                    {}, 150s);
  ASSERT_EQ(unpeer.exitCode, 0) << unpeer.describe();
  auto uninstall = [&](Cluster& c) {
    CommandResult un =
        c.helm({"uninstall", "strait", "-n", "strait-system", "--wait", "--timeout", "2m"});
    return un.exitCode == 0 ? "" : c.name + ": " + un.describe();
  };
  ASSERT_EQ(inParallel({[&] { return uninstall(home_); }, [&] { return uninstall(cloud_); }}), "");
  for (Cluster* c : {&home_, &cloud_}) {
    std::string error;
    std::vector<std::string> left;
    bool clean = waitFor(
        [&] {
          // Home's identity went with the release (identity.keepOnUninstall=false).
          left = c->straitObjects(c == &cloud_ ? std::set<std::string>{"Secret strait-system/"
                                                                       "strait-identity"}
                                               : std::set<std::string>{},
                                  &error);
          // What the agent wrote itself goes with the release's ServiceAccount, its owner:
          // the endpoint ConfigMap and the leader Lease (which carries no label).
          for (const char* kind : {"configmap", "lease"}) {
            if (c->kubectl({"get", kind, "-n", "strait-system", "strait-agent"}).exitCode == 0) {
              left.push_back(std::string(kind) + " strait-system/strait-agent");
            }
          }
          return error.empty() && left.empty();
        },
        60s, 1s);
    std::string listed;
    for (const auto& o : left) listed += "\n  " + o;
    EXPECT_TRUE(clean) << c->name << " keeps:" << listed << error;
    EXPECT_EQ(c->kubectl({"get", "secret", "-n", "strait-system", "strait-identity"}).exitCode,
              c == &cloud_ ? 0 : 1)
        << c->name << ": identity.keepOnUninstall (cloud: true, home: false)";
    EXPECT_TRUE(waitFor([&] { return processesWithArg("--cluster-name=" + c->name).empty(); },
                        30s, 200ms))
        << c->name << ": an agent process outlived helm uninstall";
  }
}

}  // namespace
}  // namespace strait::e2e
