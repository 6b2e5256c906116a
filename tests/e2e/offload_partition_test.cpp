// Offloading through a network partition, with real processes: two `strait minicluster` ("home" and
// "cloud"), a `strait agent` on each, `strait peer` and `strait offload namespace part`, where the
// home agent reaches the cloud agent only through a TcpProxy (the cloud agent advertises the
// proxy's port) that a test cuts and heals. The virtual node's stream grace is kGrace.
//  - a partition shorter than the grace: the node stays Ready, local Pods stay Running, the
//    remote Pods keep their uids; what changed meanwhile (one Pod created, one deleted) is
//    synced afterwards and nothing else is re-sent (the home agent's stream counters);
//  - a longer one: the node turns NotReady (ReflectionStreamDown), the home cluster's node
//    lifecycle controller taints it not-ready:NoExecute and evicts the Pods that tolerate
//    that for a few seconds only, while those tolerating it forever stay; after the heal the
//    remote Pods of the evicted ones are deleted (one of them force-deleted at home during the
//    cut, as operators do with Pods stuck Terminating), the others are untouched (same uids
//    and resourceVersions), and the ReplicaSet's replacements, which only prefer the virtual
//    node, ran at home meanwhile and keep running there.
// Each test sets up what it needs on top of the suite's clusters (ctest runs each test in a
// process of its own) and measures its timings, printed with the load average.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <map>
#include <set>

#include "e2e/offload_fixture.h"
#include "e2e/tcp_proxy.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/object.h"
#include "kube/watch.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace res = kube::resources;

constexpr const char* kNs = "part";
constexpr const char* kNode = "strait-cloud";
constexpr auto kGrace = 8s;  // the home agent's --vnode-stream-grace

std::unique_ptr<kube::Client> clientFor(const std::string& kubeconfig) {
  auto cfg = kube::loadKubeconfig({{kubeconfig}, ""});
  if (!cfg.ok()) return nullptr;
  auto c = kube::newClient(*cfg);
  return c.ok() ? std::move(*c) : nullptr;
}

// The integer `key=` of the last line of `log` holding `event=<event>` at or after `from`;
// -1 when there is none.
int64_t lastField(const std::string& log, const std::string& event, const std::string& key,
                  size_t from = 0) {
  size_t at = log.rfind("event=" + event + " ");
  if (at == std::string::npos || at < from) return -1;
  size_t end = log.find('\n', at);
  std::string line = log.substr(at, end == std::string::npos ? std::string::npos : end - at);
  size_t p = line.find(" " + key + "=");
  if (p == std::string::npos) return -1;
  return std::strtoll(line.c_str() + p + key.size() + 2, nullptr, 10);
}

size_t countOf(const std::string& log, const std::string& needle) {
  size_t n = 0;
  for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
  return n;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Counts the writes to one Node (MODIFIED events of a watch) from construction on.
class NodeWriteCounter {
 public:
  NodeWriteCounter(kube::Client& c, const std::string& node) {
    thread_ = std::jthread([&c, node, this](std::stop_token stop) {
      kube::WatchOptions o;
      o.fieldSelector = "metadata.name=" + node;
      std::string rv;
      if (auto cur = c.get(res::kNodes, "", node); cur.ok()) rv = kube::getResourceVersion(*cur);
      while (!stop.stop_requested()) {
        o.resourceVersion = rv;
        (void)c.watch(res::kNodes, "", o, [&](kube::WatchEvent&& e) {
          if (e.type == kube::WatchEventType::Modified) writes_++;
          if (!e.resourceVersion().empty()) rv = e.resourceVersion();
          return true;
        }, stop);
      }
    });
  }
  int writes() const { return writes_.load(); }

 private:
  std::atomic<int> writes_{0};
  std::jthread thread_;  // last: stopped and joined first
};

class OffloadPartitionTest : public OffloadSuite {
 public:
  static void SetUpTestSuite() {
    proxy_ = new TcpProxy(0);
    error_ = setUpClusters();
  }
  // The agents talk through proxy_, which the tests cut and heal.
  static std::string setUpClusters() {
    OffloadSetup s;
    s.homeArgs = {"--nodes", "1"};
    s.cloudArgs = {"--nodes", "2", "--node-cpu", "8", "--node-memory", "32Gi"};
    s.cloudAgentArgs = {"--stream-keepalive", "500ms"};
    s.homeAgentArgs = {"--vnode-stream-grace", "8s"};
    if (std::string e = startClusters(s); !e.empty()) return e;
    if (std::string e = startAgentsThroughProxy(*proxy_, s); !e.empty()) return e;
    if (std::string e = peer({"--cpu", "8", "--memory", "16Gi", "--pods", "50"}); !e.empty()) {
      return e;
    }
    if (std::string e = offloadNamespace(kNs); !e.empty()) return e;
    auto home = clientFor(home_->kubeconfig());
    if (!home) return "no client for home";
    auto cm = home->get(res::kConfigMaps, "strait-system", "strait-agent");
    if (!cm.ok()) return "strait-agent ConfigMap: " + cm.error().message;
    remoteNs_ = std::string(kNs) + "-" + cm->value("/data/clusterID"_json_pointer, std::string());
    return "";
  }
  static void TearDownTestSuite() {
    stopAll();
    delete proxy_;
    proxy_ = nullptr;
  }

  // The virtual node's Ready (status, reason); ("", "") when it cannot be read.
  static std::pair<std::string, std::string> nodeReady(kube::Client& c) {
    auto node = c.get(res::kNodes, "", kNode);
    if (!node.ok()) return {};
    for (const json& cond : node->value("/status/conditions"_json_pointer, json::array())) {
      if (cond.value("type", "") == "Ready") {
        return {cond.value("status", ""), cond.value("reason", "")};
      }
    }
    return {};
  }

 protected:
  void SetUp() override {
    OffloadSuite::SetUp();
    if (HasFatalFailure()) return;
    home = clientFor(home_->kubeconfig());
    cloud = clientFor(cloud_->kubeconfig());
    ASSERT_TRUE(home && cloud);
    proxy_->resume();  // whatever an earlier test left
  }

  // kubectl against home with a fresh cache dir.
  CommandResult kubectl(const std::vector<std::string>& args, const std::string& stdinText = "") {
    return OffloadSuite::kubectl(*home_, args, stdinText);
  }

  // Local Pods of namespace part with label `selector`, by name.
  std::map<std::string, json> localPods(const std::string& selector) {
    kube::ListOptions o;
    o.labelSelector = selector;
    std::map<std::string, json> out;
    auto l = home->list(res::kPods, kNs, o);
    if (!l.ok()) return out;
    for (const json& p : l->value("items", json::array())) out[kube::getName(p)] = p;
    return out;
  }
  // Remote Pods in the mapped namespace, by origin uid.
  std::map<std::string, json> remotePods() {
    std::map<std::string, json> out;
    auto l = cloud->list(res::kPods, remoteNs_);
    if (!l.ok()) return out;
    for (const json& p : l->value("items", json::array())) {
      out[kube::getLabels(p)["strait.io/origin-uid"]] = p;
    }
    return out;
  }
  static std::string phase(const json& p) {
    return p.value("/status/phase"_json_pointer, std::string());
  }
  static bool runningWithIp(const json& p) {
    return phase(p) == "Running" && !p.value("/status/podIP"_json_pointer, std::string()).empty();
  }
  // Every local Pod matching `selector` runs (with an IP) on the virtual node, none is
  // terminating, there are `n`, and each has exactly one Running remote Pod.
  bool allRunningBothSides(const std::string& selector, size_t n) {
    std::map<std::string, json> local = localPods(selector);
    if (local.size() != n) return false;
    std::map<std::string, json> remote = remotePods();
    for (const auto& [name, p] : local) {
      if (kube::isBeingDeleted(p) || !runningWithIp(p)) return false;
      if (p.value("/spec/nodeName"_json_pointer, std::string()) != kNode) return false;
      auto r = remote.find(kube::getUid(p));
      if (r == remote.end() || phase(r->second) != "Running") return false;
    }
    return true;
  }
  bool hasTaint(const std::string& key, const std::string& effect) {
    auto node = home->get(res::kNodes, "", kNode);
    if (!node.ok()) return false;
    for (const json& t : node->value("/spec/taints"_json_pointer, json::array())) {
      if (t.value("key", "") == key && t.value("effect", "") == effect) return true;
    }
    return false;
  }
  std::string diagnostics() {
    auto tail = [](const std::string& s) { return s.size() > 8000 ? s.substr(s.size() - 8000) : s; };
    auto node = home->get(res::kNodes, "", kNode);
    return "\n--- node ---\n" + (node.ok() ? node->dump() : node.error().message) +
           "\n--- home agent ---\n" + tail(homeAgent_->logs()) + "\n--- cloud agent ---\n" +
           tail(cloudAgent_->logs());
  }

  // A Pod (or a Pod template) of 100m on the virtual node: pinned there (nodeSelector), or
  // only preferring it (node affinity), so that it may run at home when the virtual node is
  // tainted.
  static json podSpec(const json& extraTolerations = json::array(), bool pinned = true) {
    json spec = {{"terminationGracePeriodSeconds", 1},
                 {"tolerations", extraTolerations},
                 {"containers",
                  {{{"name", "app"},
                    {"image", "nginx:1.27"},
                    {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "32Mi"}}}}}}}}};
    if (pinned) {
      spec["nodeSelector"] = {{"kubernetes.io/hostname", kNode}};
    } else {
      json term = {{"matchExpressions",
                    {{{"key", "kubernetes.io/hostname"}, {"operator", "In"}, {"values", {kNode}}}}}};
      spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] =
          json::array({{{"weight", 100}, {"preference", term}}});
    }
    return spec;
  }
  static std::string pod(const std::string& name, const std::string& group) {
    json p = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", kNs}, {"labels", {{"group", group}}}}},
              {"spec", podSpec()}};
    return p.dump();
  }
  // A Deployment whose Pods tolerate not-ready and unreachable (NoExecute) for `seconds`
  // (forever when negative), pinned to the virtual node or preferring it.
  static std::string deployment(const std::string& name, int replicas, int seconds, bool pinned) {
    json tolerations = json::array();
    for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
      json t = {{"key", key}, {"operator", "Exists"}, {"effect", "NoExecute"}};
      if (seconds >= 0) t["tolerationSeconds"] = seconds;
      tolerations.push_back(t);
    }
    json d = {{"apiVersion", "apps/v1"},
              {"kind", "Deployment"},
              {"metadata", {{"name", name}, {"namespace", kNs}}},
              {"spec",
               {{"replicas", replicas},
                {"selector", {{"matchLabels", {{"app", name}}}}},
                {"template",
                 {{"metadata", {{"labels", {{"app", name}, {"group", "long"}}}}},
                  {"spec", podSpec(tolerations, pinned)}}}}}};
    return d.dump();
  }

  static TcpProxy* proxy_;
  static std::string remoteNs_;
  std::unique_ptr<kube::Client> home, cloud;
};

TcpProxy* OffloadPartitionTest::proxy_ = nullptr;
std::string OffloadPartitionTest::remoteNs_;

TEST_F(OffloadPartitionTest, ShortPartitionKeepsPodsAndSyncsOnlyTheDifference) {
  const std::vector<std::string> names = {"short-1", "short-2", "short-3", "short-4"};
  for (const std::string& n : names) {
    CommandResult r = kubectl({"apply", "-f", "-"}, pod(n, "short"));
    ASSERT_EQ(r.exitCode, 0) << r.describe();
  }
  ASSERT_TRUE(waitFor([&] { return allRunningBothSides("group=short", 4); }, 120s))
      << diagnostics();
  std::map<std::string, json> remoteBefore = remotePods();
  std::map<std::string, json> localBefore = localPods("group=short");

  // Cut. The home agent notices at once (the proxy closes the connections) and logs the
  // stream's APPLY/DELETE totals, final for the connection that ended.
  const std::string downLine = "event=reflection_stream_down";
  const size_t downsBefore = countOf(homeAgent_->logs(), downLine);
  const size_t logMark = homeAgent_->logs().size();
  const size_t createdMark = cloudAgent_->logs().size();
  const auto cutAt = Clock::now();
  proxy_->cut();
  ASSERT_TRUE(waitFor([&] { return countOf(homeAgent_->logs(), downLine) > downsBefore; }, 30s))
      << diagnostics();
  const int64_t applies0 = lastField(homeAgent_->logs(), "reflection_stream_down", "applies", logMark);
  const int64_t deletes0 = lastField(homeAgent_->logs(), "reflection_stream_down", "deletes", logMark);
  ASSERT_GE(applies0, 4) << diagnostics();

  // Meanwhile at home: one new Pod (bound to the still Ready virtual node), one deleted.
  CommandResult created = kubectl({"apply", "-f", "-"}, pod("short-5", "short"));
  ASSERT_EQ(created.exitCode, 0) << created.describe();
  CommandResult deleted = kubectl({"delete", "pod", "short-4", "-n", kNs, "--wait=false"});
  ASSERT_EQ(deleted.exitCode, 0) << deleted.describe();
  EXPECT_EQ(nodeReady(*home).first, "True");
  for (const std::string& n : {"short-1", "short-2", "short-3"}) {
    auto p = home->get(res::kPods, kNs, n);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(phase(*p), "Running") << n;
  }
  const auto cutFor = Clock::now() - cutAt;
  // Only meaningful while shorter than the grace (a very slow machine would fail here).
  ASSERT_LT(cutFor, kGrace - 2s) << "the cut lasted " << seconds(cutFor) << " s";

  // Heal: the difference is synced.
  const size_t resyncsBefore = countOf(homeAgent_->logs(), "event=resync_done ");
  const auto healAt = Clock::now();
  proxy_->resume();
  ASSERT_TRUE(waitFor([&] { return countOf(homeAgent_->logs(), "event=resync_done ") > resyncsBefore; },
                      60s))
      << diagnostics();
  const auto resyncAt = Clock::now();
  const std::string deletedUid = kube::getUid(localBefore["short-4"]);
  ASSERT_TRUE(waitFor([&] {
    return allRunningBothSides("group=short", 4) && localPods("group=short").count("short-5") &&
           remotePods().count(deletedUid) == 0;
  }, 60s)) << diagnostics();
  const auto syncedAt = Clock::now();

  // The node never went NotReady, and the three untouched Pods are the same remote Pods,
  // not even updated.
  EXPECT_EQ(homeAgent_->logs().find("event=vnode_ready_changed node=strait-cloud ready=False",
                                    logMark),
            std::string::npos)
      << diagnostics();
  std::map<std::string, json> remoteAfter = remotePods();
  for (const std::string& n : {"short-1", "short-2", "short-3"}) {
    const std::string uid = kube::getUid(localBefore[n]);
    ASSERT_TRUE(remoteAfter.count(uid)) << n;
    EXPECT_EQ(kube::getUid(remoteAfter[uid]), kube::getUid(remoteBefore[uid])) << n;
    EXPECT_EQ(remoteAfter[uid].value("/metadata/resourceVersion"_json_pointer, std::string()),
              remoteBefore[uid].value("/metadata/resourceVersion"_json_pointer, std::string()))
        << n;
  }
  // Only the difference went on the stream: short-5's APPLY (a lost reply may add one retry)
  // and short-4's DELETE; the cloud agent created only short-5.
  int64_t applies = -1, deletes = -1;
  ASSERT_TRUE(waitFor([&] {
    std::string log = homeAgent_->logs();
    applies = lastField(log, "stream_counters", "applies", logMark);
    deletes = lastField(log, "stream_counters", "deletes", logMark);
    return applies >= applies0 + 1 && deletes >= deletes0 + 1;
  }, 30s)) << "applies=" << applies << " deletes=" << deletes << diagnostics();
  EXPECT_LE(applies - applies0, 2) << diagnostics();
  EXPECT_EQ(deletes - deletes0, 1) << diagnostics();
  const std::string cloudLog = cloudAgent_->logs().substr(createdMark);
  EXPECT_EQ(countOf(cloudLog, "event=remote_created kind=Pod"), 1u) << cloudLog;
  EXPECT_NE(cloudLog.find("name=short-5 "), std::string::npos) << cloudLog;

  std::printf("short partition: cut %.1f s (grace %lld s), heal->resync %.1f s, heal->synced "
              "%.1f s, applies after heal %lld, deletes %lld, load %s\n",
              seconds(cutFor), static_cast<long long>(kGrace.count()), seconds(resyncAt - healAt),
              seconds(syncedAt - healAt), static_cast<long long>(applies - applies0),
              static_cast<long long>(deletes - deletes0), loadAverage().c_str());
  RecordProperty("heal_to_synced_ms", static_cast<int>(seconds(syncedAt - healAt) * 1000));
  (void)kubectl({"delete", "pods", "-n", kNs, "-l", "group=short", "--wait=false"});
}

TEST_F(OffloadPartitionTest, LongPartitionMakesNodeNotReadyAndEvictsPerTolerations) {
  // tolerant: pinned to the virtual node, tolerates forever; brief: prefers the virtual
  // node, tolerates 2 s.
  for (const auto& [name, secs] : {std::pair{"tolerant", -1}, std::pair{"brief", 2}}) {
    CommandResult r =
        kubectl({"apply", "-f", "-"}, deployment(name, 2, secs, std::string(name) == "tolerant"));
    ASSERT_EQ(r.exitCode, 0) << r.describe();
  }
  ASSERT_TRUE(waitFor([&] {
    return allRunningBothSides("app=tolerant", 2) && allRunningBothSides("app=brief", 2);
  }, 120s)) << diagnostics();
  std::map<std::string, json> tolerant = localPods("app=tolerant");
  std::map<std::string, json> brief = localPods("app=brief");
  std::map<std::string, json> remoteBefore = remotePods();
  const size_t logMark = homeAgent_->logs().size();

  // Cut for longer than the grace.
  auto nodeWrites = std::make_unique<NodeWriteCounter>(*home, kNode);
  const auto cutAt = Clock::now();
  proxy_->cut();
  std::pair<std::string, std::string> ready;
  ASSERT_TRUE(waitFor([&] {
    ready = nodeReady(*home);
    return ready.first == "False" || ready.first == "Unknown";
  }, kGrace + 60s)) << diagnostics();
  const auto notReadyAt = Clock::now();
  EXPECT_EQ(ready.first, "False");  // the virtual kubelet still posts (Lease and status)
  EXPECT_EQ(ready.second, "ReflectionStreamDown");
  EXPECT_GE(notReadyAt - cutAt, kGrace - 1s);
  ASSERT_TRUE(waitFor([&] { return hasTaint("node.kubernetes.io/not-ready", "NoExecute"); }, 30s))
      << diagnostics();
  const auto taintedAt = Clock::now();
  // kubectl logs on a Pod of the cut-off node fails at once, saying why (no hang).
  CommandResult logs = kubectl({"logs", "-n", kNs, tolerant.begin()->first});
  EXPECT_NE(logs.exitCode, 0) << logs.describe();
  EXPECT_FALSE(logs.timedOut);
  EXPECT_NE(logs.err.find("virtual node strait-cloud: the provider agent cannot be reached"),
            std::string::npos)
      << logs.describe();

  // The taint manager evicts the brief Pods after their 2 s; the ReplicaSet replaces them.
  auto evicted = [&](const std::string& name) {
    auto p = home->get(res::kPods, kNs, name);
    return !p.ok() || kube::isBeingDeleted(*p);
  };
  ASSERT_TRUE(waitFor([&] {
    for (const auto& [name, p] : brief) {
      if (!evicted(name)) return false;
    }
    return true;
  }, 60s)) << diagnostics();
  const auto evictedAt = Clock::now();
  // What an operator does with a Pod stuck Terminating on an unreachable node: force-delete
  // it. Its origin is then gone for good; its remote copy must still go after the heal.
  const std::string forced = brief.begin()->first;
  CommandResult force = kubectl({"delete", "pod", forced, "-n", kNs, "--force", "--grace-period=0"});
  ASSERT_EQ(force.exitCode, 0) << force.describe();
  EXPECT_EQ(home->get(res::kPods, kNs, forced).code(), kube::Code::NotFound);
  // Their replacements run at home meanwhile (the tainted virtual node is not feasible).
  std::map<std::string, json> replacements;
  ASSERT_TRUE(waitFor([&] {
    replacements.clear();
    for (const auto& [name, p] : localPods("app=brief")) {
      if (brief.count(name) || kube::isBeingDeleted(p)) continue;
      if (!runningWithIp(p) || p.value("/spec/nodeName"_json_pointer, std::string()) == kNode) {
        return false;
      }
      replacements[name] = p;
    }
    return replacements.size() == 2;
  }, 60s)) << diagnostics();
  const auto replacedAt = Clock::now();
  // The tolerant ones stay, Running; nothing was deleted in the cloud while cut off.
  for (const auto& [name, p] : tolerant) {
    auto now = home->get(res::kPods, kNs, name);
    ASSERT_TRUE(now.ok()) << name;
    EXPECT_FALSE(kube::isBeingDeleted(*now)) << name;
    EXPECT_EQ(phase(*now), "Running") << name;
  }
  EXPECT_EQ(remotePods().size(), remoteBefore.size());

  // The Node was written at the transitions (stream down within the grace, NotReady, the
  // lifecycle's taints), not at every node-controller round (500 ms).
  const int writesWhileCut = nodeWrites->writes();
  nodeWrites.reset();
  EXPECT_LE(writesWhileCut, 6) << diagnostics();

  // Heal: Ready again, the taints go, the evicted Pods' remote copies are deleted (their
  // origin is gone), the tolerant ones' are the same, the replacements run in the cloud.
  const auto healAt = Clock::now();
  proxy_->resume();
  ASSERT_TRUE(waitFor([&] { return nodeReady(*home).first == "True"; }, 60s)) << diagnostics();
  const auto readyAt = Clock::now();
  ASSERT_TRUE(waitFor([&] {
    std::map<std::string, json> remote = remotePods();
    for (const auto& [name, p] : brief) {
      if (remote.count(kube::getUid(p)) || home->get(res::kPods, kNs, name).ok()) return false;
    }
    return allRunningBothSides("app=tolerant", 2);
  }, 120s)) << diagnostics();
  const auto syncedAt = Clock::now();
  // The force-deleted Pod's remote copy went by the consumer's DELETE ("origin pod is gone")
  // or the provider's orphan sweep after RESYNC_DONE; either is logged by the cloud agent.
  const std::string cloudLog = cloudAgent_->logs();
  const bool byDelete = cloudLog.find("event=remote_deleted kind=Pod namespace=" + remoteNs_ +
                                      " name=" + forced + " ") != std::string::npos;
  const bool bySweep = cloudLog.find("event=remote_orphan_deleted kind=Pod namespace=" +
                                     remoteNs_ + " name=" + forced + " ") != std::string::npos;
  EXPECT_TRUE(byDelete || bySweep) << cloudLog;
  // The node lifecycle controller removes its taints once Ready is True (next monitor round).
  EXPECT_TRUE(waitFor([&] {
    return !hasTaint("node.kubernetes.io/not-ready", "NoExecute") &&
           !hasTaint("node.kubernetes.io/not-ready", "NoSchedule");
  }, 30s)) << diagnostics();
  std::map<std::string, json> remoteAfter = remotePods();
  for (const auto& [name, p] : tolerant) {
    const std::string uid = kube::getUid(p);
    ASSERT_TRUE(remoteAfter.count(uid)) << name;
    EXPECT_EQ(kube::getUid(remoteAfter[uid]), kube::getUid(remoteBefore[uid])) << name;
    EXPECT_EQ(remoteAfter[uid].value("/metadata/resourceVersion"_json_pointer, std::string()),
              remoteBefore[uid].value("/metadata/resourceVersion"_json_pointer, std::string()))
        << name;
  }
  // The replacements keep running at home.
  for (const auto& [name, p] : replacements) {
    auto now = home->get(res::kPods, kNs, name);
    ASSERT_TRUE(now.ok()) << name;
    EXPECT_EQ(kube::getUid(*now), kube::getUid(p));
    EXPECT_TRUE(runningWithIp(*now)) << name;
  }
  EXPECT_NE(homeAgent_->logs().find("event=vnode_ready_changed node=strait-cloud ready=False "
                                    "reason=ReflectionStreamDown",
                                    logMark),
            std::string::npos);

  std::printf("long partition: cut->NotReady %.1f s (grace %lld s), cut->tainted %.1f s, "
              "cut->evicted %.1f s (tolerationSeconds 2), cut->replacements Running at home %.1f s, heal->Ready %.1f s, heal->synced %.1f s, "
              "force-deleted Pod's remote copy removed by %s, Node writes during the cut %d, load %s\n",
              seconds(notReadyAt - cutAt), static_cast<long long>(kGrace.count()),
              seconds(taintedAt - cutAt), seconds(evictedAt - cutAt), seconds(replacedAt - cutAt),
              seconds(readyAt - healAt),
              seconds(syncedAt - healAt), bySweep ? "the orphan sweep" : "a DELETE",
              writesWhileCut, loadAverage().c_str());
  RecordProperty("cut_to_not_ready_ms", static_cast<int>(seconds(notReadyAt - cutAt) * 1000));
  RecordProperty("heal_to_ready_ms", static_cast<int>(seconds(readyAt - healAt) * 1000));
  RecordProperty("heal_to_synced_ms", static_cast<int>(seconds(syncedAt - healAt) * 1000));
  (void)kubectl({"delete", "deployments", "tolerant", "brief", "-n", kNs, "--wait=false"});
}

}  // namespace
}  // namespace strait::e2e
