// Node health monitoring and condition taints (see node_lifecycle.h). One thread: it folds
// node and lease events into a per-node "last probe" time and checks every monitor period.
#include "minicluster/node_lifecycle.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <map>
#include <thread>

#include "kube/object.h"
#include "minicluster/event_recorder.h"
#include "minicluster/loop_thread.h"
#include "minicluster/watch_gather.h"

namespace strait::minicluster {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;
using kube::Code;

constexpr const char* kUnreachable = "node.kubernetes.io/unreachable";
constexpr const char* kNotReady = "node.kubernetes.io/not-ready";
constexpr const char* kNetworkUnavailable = "node.kubernetes.io/network-unavailable";
constexpr const char* kLeasePrefix = "/coordination.k8s.io/leases/kube-node-lease/";

struct Health {
  std::string heartbeat;   // Ready.lastHeartbeatTime last seen
  std::string renewTime;   // lease renewTime last seen
  std::string readyStatus; // True / False / Unknown
  bool networkUnavailable = false;  // condition NetworkUnavailable=True
  Steady::time_point probe;
  bool taintsSynced = false;
};

// The status of condition `type`, "" when the node has none.
std::string conditionStatus(const json& node, const char* type) {
  const json& st = node.value("status", json::object());
  if (!st.is_object() || !st.contains("conditions") || !st["conditions"].is_array()) return "";
  for (const auto& c : st["conditions"]) {
    if (c.is_object() && c.value("type", "") == type) return c.value("status", "");
  }
  return "";
}

std::string readyOf(const json& node, std::string* heartbeat) {
  const json& st = node.value("status", json::object());
  if (!st.is_object() || !st.contains("conditions") || !st["conditions"].is_array()) return "";
  for (const auto& c : st["conditions"]) {
    if (c.is_object() && c.value("type", "") == "Ready") {
      if (heartbeat) *heartbeat = c.value("lastHeartbeatTime", "");
      return c.value("status", "");
    }
  }
  return "";
}

class NodeLifecycleImpl : public NodeLifecycleController {
 public:
  NodeLifecycleImpl(Store& store, Registry& registry, Rest& rest, NodeLifecycleOptions opts)
      : store_(store),
        rest_(rest),
        opts_(opts),
        nodes_(registry.find("", "v1", "nodes")),
        pods_(registry.find("", "v1", "pods")),
        recorder_(rest, registry, "node-controller") {}
  ~NodeLifecycleImpl() override { stop(); }

  void start() override { loop_.start([this] { run(); }); }
  void stop() override { loop_.stop(); }

 private:
  void run() {
    auto nodes = store_.list("/core/nodes/");
    for (const auto& o : nodes.items) observeNode(*o);
    auto leases = store_.list(kLeasePrefix);
    for (const auto& o : leases.items) observeLease(*o);
    auto w = store_.watch("/", nodes.rv);
    if (!w) {
      spdlog::error("event=node_lifecycle_watch_failed error=\"{}\"", w.error().message);
      return;
    }
    auto nextCheck = Steady::now() + opts_.monitorPeriod;
    while (!loop_.stopping()) {
      auto ev = nextGathered(**w, 100ms);
      if ((*w)->ended()) {
        auto again = store_.watch("/", store_.revision());
        if (!again) return;
        w = std::move(again);
        continue;
      }
      while (ev) {
        const Event& e = **ev;
        if (e.object->key.rfind("/core/nodes/", 0) == 0) {
          if (e.type == EventType::Deleted) {
            health_.erase(e.object->key.substr(std::string("/core/nodes//").size()));
          } else {
            observeNode(*e.object);
          }
        } else if (e.object->key.rfind(kLeasePrefix, 0) == 0 && e.type != EventType::Deleted) {
          observeLease(*e.object);
        }
        ev = (*w)->next(0ms);
      }
      if (Steady::now() >= nextCheck) {
        nextCheck = Steady::now() + opts_.monitorPeriod;
        monitor();
      }
    }
  }

  void observeNode(const Object& o) {
    json node = json::parse(o.json, nullptr, false);
    if (node.is_discarded()) return;
    std::string name = kube::getName(node), hb;
    std::string ready = readyOf(node, &hb);
    auto [it, inserted] = health_.try_emplace(name);
    Health& h = it->second;
    if (inserted || hb != h.heartbeat) h.probe = Steady::now();
    const bool networkUnavailable = conditionStatus(node, "NetworkUnavailable") == "True";
    if (inserted || ready != h.readyStatus || networkUnavailable != h.networkUnavailable) {
      h.taintsSynced = false;
    }
    h.heartbeat = hb;
    h.readyStatus = ready;
    h.networkUnavailable = networkUnavailable;
  }

  void observeLease(const Object& o) {
    json lease = json::parse(o.json, nullptr, false);
    if (lease.is_discarded()) return;
    auto it = health_.find(kube::getName(lease));
    if (it == health_.end()) return;
    std::string renew = lease.value("spec", json::object()).value("renewTime", "");
    if (renew != it->second.renewTime) {
      it->second.renewTime = renew;
      it->second.probe = Steady::now();
    }
  }

  void monitor() {
    auto now = Steady::now();
    for (auto& [name, h] : health_) {
      if (now - h.probe > opts_.gracePeriod && h.readyStatus != "Unknown" && !h.readyStatus.empty()) {
        markUnknown(name);
        h.readyStatus = "Unknown";
        h.taintsSynced = false;
      }
      if (!h.taintsSynced) h.taintsSynced = syncTaints(name, h);
    }
  }

  void markUnknown(const std::string& name) {
    std::string nowS = kube::rfc3339Now();
    auto r = rest_.mutate(*nodes_, "", name, "status", [&](json& node) -> kube::Status {
      json& conds = node["status"]["conditions"];
      if (!conds.is_array()) return kube::Status::OK();
      for (auto& c : conds) {
        std::string type = c.value("type", "");
        if (type != "Ready" && type != "MemoryPressure" && type != "DiskPressure" &&
            type != "PIDPressure") {
          continue;
        }
        if (c.value("status", "") == "Unknown") continue;
        c["status"] = "Unknown";
        c["reason"] = "NodeStatusUnknown";
        c["message"] = "Kubelet stopped posting node status.";
        c["lastTransitionTime"] = nowS;
      }
      return kube::Status::OK();
    });
    if (!r) {
      spdlog::warn("event=node_mark_unknown_failed node={} error=\"{}\"", name, r.error().message);
      return;
    }
    spdlog::info("event=node_not_ready node={} reason=NodeStatusUnknown", name);
    json node = json::parse((*r)->json, nullptr, false);
    recorder_.record(node, "Normal", "NodeNotReady", "Node " + name + " status is now: NodeNotReady");
    markPodsNotReady(name);
  }

  void markPodsNotReady(const std::string& node) {
    auto pods = store_.list("/core/pods/", [&](const Object& o) {
      auto it = o.fields.find("spec.nodeName");
      return it != o.fields.end() && it->second == node;
    });
    std::string nowS = kube::rfc3339Now();
    for (const auto& o : pods.items) {
      json pod = json::parse(o->json, nullptr, false);
      if (pod.is_discarded()) continue;
      (void)rest_.mutate(*pods_, kube::getNamespace(pod), kube::getName(pod), "status",
                   [&](json& p) -> kube::Status {
                     json& conds = p["status"]["conditions"];
                     if (!conds.is_array()) return kube::Status::OK();
                     for (auto& c : conds) {
                       if (c.value("type", "") == "Ready" && c.value("status", "") != "False") {
                         c["status"] = "False";
                         c["lastTransitionTime"] = nowS;
                       }
                     }
                     return kube::Status::OK();
                   });
    }
  }

  // Makes the node's condition taints match its health, as upstream's node lifecycle
  // controller does: Ready=Unknown -> unreachable, Ready=False -> not-ready (NoSchedule and
  // NoExecute), NetworkUnavailable=True -> network-unavailable (NoSchedule). True when done.
  bool syncTaints(const std::string& name, const Health& h) {
    const std::string& ready = h.readyStatus;
    std::string want = ready == "Unknown" ? kUnreachable : ready == "False" ? kNotReady : "";
    std::string nowS = kube::rfc3339Now();
    auto r = rest_.mutate(*nodes_, "", name, "", [&](json& node) -> kube::Status {
      json& spec = node["spec"];
      if (!spec.is_object()) spec = json::object();
      json taints = spec.value("taints", json::array());
      json kept = json::array();
      bool have[2] = {false, false};
      bool haveNetwork = false;
      for (const auto& t : taints) {
        std::string key = t.value("key", "");
        if (key == kNetworkUnavailable) {
          if (h.networkUnavailable && !haveNetwork) kept.push_back(t);
          haveNetwork = haveNetwork || h.networkUnavailable;
          continue;
        }
        if (key != kUnreachable && key != kNotReady) {
          kept.push_back(t);
          continue;
        }
        if (key != want) continue;  // a stale condition taint goes
        kept.push_back(t);
        have[t.value("effect", "") == "NoExecute" ? 1 : 0] = true;
      }
      if (!want.empty()) {
        if (!have[0]) kept.push_back({{"key", want}, {"effect", "NoSchedule"}});
        if (!have[1]) kept.push_back({{"key", want}, {"effect", "NoExecute"}, {"timeAdded", nowS}});
      }
      if (h.networkUnavailable && !haveNetwork) {
        kept.push_back({{"key", kNetworkUnavailable}, {"effect", "NoSchedule"}});
      }
      if (kept.empty()) {
        spec.erase("taints");
      } else {
        spec["taints"] = kept;
      }
      return kube::Status::OK();
    });
    if (!r && r.error().code != Code::NotFound) {
      spdlog::warn("event=node_taint_failed node={} error=\"{}\"", name, r.error().message);
      return false;
    }
    return true;
  }

  Store& store_;
  Rest& rest_;
  NodeLifecycleOptions opts_;
  ResourceInfoPtr nodes_, pods_;
  EventRecorder recorder_;
  LoopThread loop_;
  std::map<std::string, Health> health_;  // loop thread only
};

}  // namespace

std::unique_ptr<NodeLifecycleController> newNodeLifecycleController(Store& store,
                                                                     Registry& registry,
                                                                     Rest& rest,
                                                                     NodeLifecycleOptions opts) {
  return std::make_unique<NodeLifecycleImpl>(store, registry, rest, opts);
}

}  // namespace strait::minicluster
