// The NoExecute taint manager (see node_lifecycle.h). One thread keeps, from a store watch,
// each node's NoExecute taints and the pods bound to each node; whenever either changes it
// re-evaluates the node's pods and keeps one deadline per pod to evict.
#include <spdlog/spdlog.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "kube/object.h"
#include "minicluster/event_recorder.h"
#include "minicluster/node_lifecycle.h"
#include "minicluster/scheduler_plugins.h"
#include "minicluster/loop_thread.h"
#include "minicluster/watch_gather.h"

namespace strait::minicluster {
namespace {

using namespace std::chrono_literals;
using SysClock = std::chrono::system_clock;
using kube::Code;

std::string fieldOf(const Object& o, const char* f) {
  auto it = o.fields.find(f);
  return it == o.fields.end() ? std::string() : it->second;
}

class TaintEvictionImpl : public NodeLifecycleController {
 public:
  TaintEvictionImpl(Store& store, Registry& registry, Rest& rest)
      : store_(store),
        rest_(rest),
        pods_(registry.find("", "v1", "pods")),
        recorder_(rest, registry, "taint-eviction-controller") {}
  ~TaintEvictionImpl() override { stop(); }

  void start() override { loop_.start([this] { run(); }); }
  void stop() override { loop_.stop(); }

 private:
  void run() {
    auto nodes = store_.list("/core/nodes/");
    auto pods = store_.list("/core/pods/");
    for (const auto& o : nodes.items) onNode(*o);
    for (const auto& o : pods.items) onPod(*o);
    auto w = store_.watch("/core/", nodes.rv);
    if (!w) {
      spdlog::error("event=taint_eviction_watch_failed error=\"{}\"", w.error().message);
      return;
    }
    while (!loop_.stopping()) {
      auto ev = nextGathered(**w, 200ms);
      if ((*w)->ended()) {
        auto again = store_.watch("/core/", store_.revision());
        if (!again) return;
        w = std::move(again);
        continue;
      }
      while (ev) {
        const Event& e = **ev;
        const std::string& key = e.object->key;
        if (key.rfind("/core/pods/", 0) == 0) {
          if (e.type == EventType::Deleted) {
            dropPod(key);
          } else {
            onPod(*e.object);
          }
        } else if (key.rfind("/core/nodes/", 0) == 0) {
          if (e.type == EventType::Deleted) {
            taints_.erase(fieldOf(*e.object, "metadata.name"));
          } else {
            onNode(*e.object);
          }
        }
        ev = (*w)->next(0ms);
      }
      evictDue();
    }
  }

  void onNode(const Object& o) {
    json node = json::parse(o.json, nullptr, false);
    if (node.is_discarded()) return;
    auto info = sched::parseNode(node);
    std::vector<sched::Taint> noExec;
    for (const auto& t : info.taints) {
      if (t.effect == "NoExecute") noExec.push_back(t);
    }
    auto& cur = taints_[info.name];
    bool same = cur.size() == noExec.size() &&
                std::equal(cur.begin(), cur.end(), noExec.begin(), [](const auto& a, const auto& b) {
                  return a.key == b.key && a.value == b.value && a.timeAdded == b.timeAdded;
                });
    if (same) return;
    cur = std::move(noExec);
    for (const auto& key : podsOn_[info.name]) evaluate(key);
  }

  void onPod(const Object& o) {
    std::string node = fieldOf(o, "spec.nodeName");
    if (node.empty()) return;
    auto prev = podNode_.find(o.key);
    if (prev == podNode_.end() || prev->second != node) {
      if (prev != podNode_.end()) podsOn_[prev->second].erase(o.key);
      podNode_[o.key] = node;
      podsOn_[node].insert(o.key);
      evaluate(o.key);
    }
  }

  void dropPod(const std::string& key) {
    auto it = podNode_.find(key);
    if (it != podNode_.end()) {
      podsOn_[it->second].erase(key);
      podNode_.erase(it);
    }
    deadlines_.erase(key);
  }

  // Sets or clears the pod's eviction deadline from its node's NoExecute taints.
  void evaluate(const std::string& key) {
    deadlines_.erase(key);
    auto node = podNode_.find(key);
    if (node == podNode_.end()) return;
    auto t = taints_.find(node->second);
    if (t == taints_.end() || t->second.empty()) return;
    auto cur = store_.get(key);
    if (!cur) return;
    json pod = json::parse((*cur)->json, nullptr, false);
    if (pod.is_discarded() || kube::isBeingDeleted(pod)) return;
    std::string phase = fieldOf(**cur, "status.phase");
    if (phase == "Succeeded" || phase == "Failed") return;
    auto info = sched::parsePod(pod);
    if (!info) return;
    auto now = SysClock::now();
    std::optional<SysClock::time_point> when;
    for (const auto& taint : t->second) {
      std::optional<int64_t> best;  // longest toleration of this taint; nullopt = none
      bool forever = false;
      for (const auto& tol : info->tolerations) {
        if (!tol.tolerates(taint)) continue;
        if (!tol.tolerationSeconds) {
          forever = true;
          break;
        }
        best = std::max(best.value_or(INT64_MIN), *tol.tolerationSeconds);
      }
      if (forever) continue;
      SysClock::time_point added = now;
      if (auto p = kube::parseRfc3339(taint.timeAdded)) added = *p;
      auto at = best ? added + std::chrono::seconds(std::max<int64_t>(*best, 0)) : now;
      if (!when || at < *when) when = at;
    }
    if (when) deadlines_[key] = *when;
  }

  void evictDue() {
    auto now = SysClock::now();
    std::vector<std::string> due;
    for (const auto& [key, at] : deadlines_) {
      if (at <= now) due.push_back(key);
    }
    for (const auto& key : due) {
      deadlines_.erase(key);
      evict(key);
    }
  }

  void evict(const std::string& key) {
    auto cur = store_.get(key);
    if (!cur) return;
    json pod = json::parse((*cur)->json, nullptr, false);
    if (pod.is_discarded()) return;
    std::string ns = kube::getNamespace(pod), name = kube::getName(pod);
    std::string nowS = kube::rfc3339Now();
    (void)rest_.mutate(*pods_, ns, name, "status", [&](json& p) -> kube::Status {
      json& conds = p["status"]["conditions"];
      if (!conds.is_array()) conds = json::array();
      for (const auto& c : conds) {
        if (c.value("type", "") == "DisruptionTarget") return kube::Status::OK();
      }
      conds.push_back({{"type", "DisruptionTarget"},
                       {"status", "True"},
                       {"reason", "DeletionByTaintManager"},
                       {"message", "Taint manager: deleting due to NoExecute taint"},
                       {"lastProbeTime", nullptr},
                       {"lastTransitionTime", nowS}});
      return kube::Status::OK();
    });
    DeleteOptions d;
    d.preconditionUid = kube::getUid(pod);
    auto r = rest_.remove(*pods_, ns, name, d);
    if (!r && r.error().code != Code::NotFound && r.error().code != Code::Conflict) {
      spdlog::warn("event=taint_eviction_failed pod={}/{} error=\"{}\"", ns, name, r.error().message);
      return;
    }
    spdlog::info("event=pod_evicted pod={}/{} reason=NoExecuteTaint", ns, name);
    recorder_.record(pod, "Normal", "TaintManagerEviction", "Marking for deletion Pod " + ns + "/" + name);
  }

  Store& store_;
  Rest& rest_;
  ResourceInfoPtr pods_;
  EventRecorder recorder_;
  LoopThread loop_;

  // Loop thread only.
  std::map<std::string, std::vector<sched::Taint>> taints_;  // node -> NoExecute taints
  std::map<std::string, std::string> podNode_;               // pod key -> node
  std::map<std::string, std::set<std::string>> podsOn_;     // node -> pod keys
  std::map<std::string, SysClock::time_point> deadlines_;    // pod key -> eviction time
};

}  // namespace

std::unique_ptr<NodeLifecycleController> newTaintEvictionController(Store& store,
                                                                     Registry& registry,
                                                                     Rest& rest) {
  return std::make_unique<TaintEvictionImpl>(store, registry, rest);
}

}  // namespace strait::minicluster
