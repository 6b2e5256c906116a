// Offloading survives a crash: an agent killed with SIGKILL in the middle of a burst of Pods
// bound to the virtual node converges, once restarted with the same arguments, to exactly
// one remote Pod per local Pod, with no remote Pod deleted and re-created, none left without
// its origin, and every local Pod Running with a pod IP; deleting the Deployment directly
// then empties both clusters. Real processes throughout: two `strait minicluster` ("home"
// with one node, "cloud" with 4 nodes of 8 CPU), a `strait agent` on each, `strait peer`,
// `strait offload namespace`, real kubectl for the workload. The progress of the burst is
// polled with an in-process client (kubectl is too slow to catch it in the middle).
//
// Each test has its own offloaded namespace (both offloaded in the suite's setup: ctest runs
// every test in a process of its own, so no test depends on another).

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "e2e/offload_fixture.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/object.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace res = kube::resources;

constexpr int kBurst = 30;
const char* const kVnode = "strait-cloud";
const char* const kOriginUid = "strait.io/origin-uid";

std::unique_ptr<kube::Client> clientFor(const std::string& kubeconfig) {
  auto cfg = kube::loadKubeconfig({{kubeconfig}, ""});
  if (!cfg.ok()) return nullptr;
  auto c = kube::newClient(*cfg);
  return c.ok() ? std::move(*c) : nullptr;
}

// One Pod as the invariants see it.
struct PodView {
  std::string name, uid, originUid, phase, podIp, node;
  bool deleting = false;
  std::string describe() const {
    std::ostringstream o;
    o << name << " uid=" << uid;
    if (!originUid.empty()) o << " origin=" << originUid;
    o << " phase=" << (phase.empty() ? "-" : phase) << " ip=" << (podIp.empty() ? "-" : podIp)
      << " node=" << (node.empty() ? "-" : node) << (deleting ? " TERMINATING" : "");
    return o.str();
  }
};

PodView viewOf(const json& p) {
  PodView v;
  v.name = kube::getName(p);
  v.uid = kube::getUid(p);
  v.deleting = kube::isBeingDeleted(p);
  v.originUid = p.value("/metadata/labels"_json_pointer, json::object()).value(kOriginUid, "");
  v.phase = p.value("/status/phase"_json_pointer, std::string());
  v.podIp = p.value("/status/podIP"_json_pointer, std::string());
  v.node = p.value("/spec/nodeName"_json_pointer, std::string());
  return v;
}

class OffloadChaosTest : public OffloadSuite {
 public:
  static void SetUpTestSuite() {
    OffloadSetup s;
    s.homeArgs = {"--nodes", "1", "--node-cpu", "2", "--node-memory", "8Gi"};
    s.namespaces = {"chaos-consumer", "chaos-provider"};
    startAll(s);
  }
  static void TearDownTestSuite() { stopAll(); }

 protected:
  void SetUp() override {
    OffloadSuite::SetUp();
    if (HasFatalFailure()) return;
    home = clientFor(home_->kubeconfig());
    cloud = clientFor(cloud_->kubeconfig());
    ASSERT_TRUE(home && cloud);
    kube::Result<json> cm = home->get(res::kConfigMaps, "strait-system", "strait-agent");
    ASSERT_TRUE(cm.ok()) << cm.error().message;
    consumerId_ = (*cm).value("/data/clusterID"_json_pointer, std::string());
    ASSERT_FALSE(consumerId_.empty()) << cm->dump();
  }

  CommandResult kubectl(const std::vector<std::string>& args, const std::string& stdinText = "") {
    return OffloadSuite::kubectl(*home_, args, stdinText);
  }

  // A Deployment whose Pods all go to the virtual node (nodeSelector + tolerations written
  // out, so the burst does not depend on the webhook of the agent being killed: the virtual
  // node's own taint, and network-unavailable, which a virtual node without a tunnel has).
  static std::string deployment(const std::string& ns, int replicas) {
    return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"burst","namespace":")" +
           ns + R"("},"spec":{"replicas":)" + std::to_string(replicas) +
           R"(,"selector":{"matchLabels":{"app":"burst"}},
        "template":{"metadata":{"labels":{"app":"burst"}},"spec":{"terminationGracePeriodSeconds":1,
          "nodeSelector":{"kubernetes.io/hostname":"strait-cloud"},
          "tolerations":[{"key":"virtual-node.strait.io/not-allowed","operator":"Exists"},
            {"key":"node.kubernetes.io/network-unavailable","operator":"Exists","effect":"NoSchedule"}],
          "containers":[{"name":"c","image":"nginx:1.27",
            "resources":{"requests":{"cpu":"100m","memory":"32Mi"}}}]}}}})";
  }

  std::string remoteNs(const std::string& ns) const { return ns + "-" + consumerId_; }

  // Pods of a namespace (nullopt when the list failed: the caller polls again).
  static std::optional<std::vector<PodView>> pods(kube::Client& c, const std::string& ns) {
    kube::Result<json> l = c.list(res::kPods, ns);
    if (!l.ok()) return std::nullopt;
    std::vector<PodView> out;
    for (const json& p : l->value("items", json::array())) out.push_back(viewOf(p));
    return out;
  }

  static std::string list(const std::vector<PodView>& ps) {
    std::string s;
    for (const PodView& p : ps) s += "\n    " + p.describe();
    return s.empty() ? " (none)" : s;
  }

  // Every violation of the convergence invariants, one line each ("" = converged):
  //  - every local Pod is bound to the virtual node, Running with a pod IP, and mirrored by
  //    exactly one remote Pod carrying its uid as origin uid;
  //  - no remote Pod whose origin is gone;
  //  - every remote Pod recorded at the kill whose origin still exists has the same uid.
  std::string violations(const std::string& ns, const std::vector<PodView>& recorded,
                         int expectedLocal) {
    auto local = pods(*home, ns);
    auto remote = pods(*cloud, remoteNs(ns));
    if (!local || !remote) return "listing failed";
    std::ostringstream o;
    std::map<std::string, std::vector<PodView>> byOrigin;
    for (const PodView& r : *remote) byOrigin[r.originUid].push_back(r);
    std::set<std::string> localUids;
    int live = 0;
    for (const PodView& l : *local) {
      localUids.insert(l.uid);
      if (!l.deleting) ++live;
      if (l.node != kVnode || l.phase != "Running" || l.podIp.empty() || l.deleting) {
        o << "\n  local pod not Running with an IP on " << kVnode << ": " << l.describe();
      }
      auto it = byOrigin.find(l.uid);
      if (it == byOrigin.end()) {
        o << "\n  local pod without a remote pod: " << l.describe();
      } else if (it->second.size() > 1) {
        o << "\n  DUPLICATE remote pods for " << l.describe() << ":" << list(it->second);
      }
    }
    if (live != expectedLocal) o << "\n  " << live << " live local pods, want " << expectedLocal;
    for (const PodView& r : *remote) {
      if (!localUids.count(r.originUid)) o << "\n  remote pod whose origin is gone: " << r.describe();
    }
    std::map<std::string, std::string> remoteUidByName;
    for (const PodView& r : *remote) remoteUidByName[r.name] = r.uid;
    for (const PodView& r : recorded) {
      if (!localUids.count(r.originUid)) continue;  // its origin went away: may go too
      auto it = remoteUidByName.find(r.name);
      if (it == remoteUidByName.end()) {
        o << "\n  remote pod recorded at the kill was DELETED: " << r.describe();
      } else if (it->second != r.uid) {
        o << "\n  remote pod recorded at the kill was RE-CREATED (now uid " << it->second
          << "): " << r.describe();
      }
    }
    std::string v = o.str();
    if (!v.empty()) v += "\n  local:" + list(*local) + "\n  remote:" + list(*remote);
    return v;
  }

  std::string diagnostics() {
    auto tail = [](const std::string& s) { return s.size() > 8000 ? s.substr(s.size() - 8000) : s; };
    return "\n--- home agent ---\n" + tail(homeAgent_->logs()) + "\n--- cloud agent ---\n" +
           tail(cloudAgent_->logs());
  }

  // The scenario of both tests: a burst of kBurst Pods; `victim` killed with SIGKILL once a
  // few but not all remote Pods exist, the remote Pods recorded, the agent restarted with the
  // same arguments; convergence; then the Deployment deleted directly empties both sides.
  void killDuringBurstAndConverge(AgentProcess& victim, const std::string& who,
                                  const std::string& ns) {
    auto orphanSweeps = [] {
      const std::string log = cloudAgent_->logs();
      size_t n = 0;
      for (size_t at = log.find("event=remote_orphan_deleted"); at != std::string::npos;
           at = log.find("event=remote_orphan_deleted", at + 1)) {
        ++n;
      }
      return n;
    };
    const size_t sweptBefore = orphanSweeps();
    CommandResult d = kubectl({"apply", "-f", "-"}, deployment(ns, kBurst));
    ASSERT_EQ(d.exitCode, 0) << d.describe();
    size_t seen = 0;
    const bool caught = waitFor([&] {
      auto r = pods(*cloud, remoteNs(ns));
      seen = r ? r->size() : seen;
      return r && r->size() >= 3;
    }, 120s, 5ms);
    ASSERT_TRUE(caught) << "remote pods never appeared (" << seen << ")" << diagnostics();
    ASSERT_LT(seen, static_cast<size_t>(kBurst))
        << "the burst was fully reflected before the kill could happen" << diagnostics();
    victim.kill();
    std::vector<PodView> recorded;
    ASSERT_TRUE(waitFor([&] {
      auto r = pods(*cloud, remoteNs(ns));
      if (r) recorded = *r;
      return r.has_value();
    }, 30s));
    std::cout << "kill -9 of the " << who << " agent with " << recorded.size() << "/" << kBurst
              << " remote pods" << std::endl;

    std::string restarted = victim.restart();
    ASSERT_EQ(restarted, "") << restarted;
    const auto since = std::chrono::steady_clock::now();
    std::string problems;
    const bool converged = waitFor([&] {
      problems = violations(ns, recorded, kBurst);
      return problems.empty();
    }, 240s, 200ms);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - since);
    ASSERT_TRUE(converged) << "no convergence after restarting the " << who << " agent:"
                           << problems << diagnostics();
    std::cout << "figure: " << who << "_agent_kill9 remote_at_kill=" << recorded.size()
              << " converged_after_restart_ms=" << took.count() << " loadavg=" << loadAverage()
              << std::endl;
    EXPECT_EQ(orphanSweeps(), sweptBefore)
        << "the provider deleted remote pods as orphans although every origin lives"
        << diagnostics();

    // Deleting the Deployment directly (no scale to zero first) leaves both sides empty.
    CommandResult del = kubectl({"delete", "deployment", "burst", "-n", ns, "--wait=false"});
    ASSERT_EQ(del.exitCode, 0) << del.describe();
    std::optional<std::vector<PodView>> local, remote;
    ASSERT_TRUE(waitFor([&] {
      local = pods(*home, ns);
      remote = pods(*cloud, remoteNs(ns));
      return local && remote && local->empty() && remote->empty();
    }, 120s, 200ms)) << "after deleting the Deployment:\n  local:" << list(local.value_or(std::vector<PodView>{}))
                     << "\n  remote:" << list(remote.value_or(std::vector<PodView>{}))
                     << diagnostics();
  }

  std::unique_ptr<kube::Client> home, cloud;
  std::string consumerId_;
};

TEST_F(OffloadChaosTest, KilledConsumerAgentConvergesWithoutDuplicatesOrLosses) {
  killDuringBurstAndConverge(*homeAgent_, "consumer", "chaos-consumer");
}

TEST_F(OffloadChaosTest, KilledProviderAgentConvergesWithoutDuplicatesOrLosses) {
  killDuringBurstAndConverge(*cloudAgent_, "provider", "chaos-provider");
}

}  // namespace
}  // namespace strait::e2e
