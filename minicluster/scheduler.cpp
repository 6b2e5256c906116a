// Scheduling loop: one thread keeps a cache of nodes and assigned pods from a store watch,
// pops pending pods from a FIFO, filters a rotating sample of nodes (upstream's adaptive
// percentageOfNodesToScore), scores the feasible ones, binds, and assumes the pod on the node
// at once so the next decision sees it.
#include "minicluster/scheduler.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string_view>
#include <thread>

#include "kube/object.h"
#include "minicluster/binding.h"
#include "minicluster/event_recorder.h"
#include "minicluster/json_scan.h"
#include "minicluster/scheduler_plugins.h"
#include "minicluster/loop_thread.h"
#include "minicluster/watch_gather.h"

namespace strait::minicluster {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using sched::NodeInfo;
using sched::PodInfo;

constexpr const char* kSchedulerName = "default-scheduler";
constexpr auto kUnschedulableFlush = 60s;

std::string fieldOf(const Object& o, const char* f) {
  auto it = o.fields.find(f);
  return it == o.fields.end() ? std::string() : it->second;
}

// A digest of a stored Pod's spec, from its JSON text (the store's compact form, so equal
// specs have equal text); nullopt when the text has no spec.
std::optional<size_t> specDigest(std::string_view podJson) {
  auto spec = jsonMember(podJson, "spec");
  if (!spec) return std::nullopt;
  return std::hash<std::string_view>{}(*spec);
}

// What the event recorder reads of an object (apiVersion, kind, metadata), parsed from its
// stored JSON without the spec and status.
json eventSubject(std::string_view stored) {
  json out = json::object();
  for (const char* member : {"apiVersion", "kind", "metadata"}) {
    auto text = jsonMember(stored, member);
    if (!text) continue;
    json v = json::parse(*text, nullptr, false);
    if (!v.is_discarded()) out[member] = std::move(v);
  }
  return out;
}

// Upstream numFeasibleNodesToFind with the adaptive percentage.
size_t nodesToFind(size_t all) {
  if (all < 100) return all;
  int64_t pct = 50 - static_cast<int64_t>(all) / 125;
  if (pct < 5) pct = 5;
  size_t n = all * static_cast<size_t>(pct) / 100;
  return n < 100 ? 100 : n;
}

bool sameForScheduling(const NodeInfo& a, const NodeInfo& b) {
  if (a.labels != b.labels || a.unschedulable != b.unschedulable || a.allocatable != b.allocatable ||
      a.taints.size() != b.taints.size()) {
    return false;
  }
  for (size_t i = 0; i < a.taints.size(); ++i) {
    if (a.taints[i].key != b.taints[i].key || a.taints[i].value != b.taints[i].value ||
        a.taints[i].effect != b.taints[i].effect) {
      return false;
    }
  }
  return true;
}

class SchedulerImpl : public Scheduler {
 public:
  SchedulerImpl(Store& store, Registry& registry, Rest& rest)
      : store_(store),
        rest_(rest),
        pods_(registry.find("", "v1", "pods")),
        recorder_(rest, registry, kSchedulerName) {}
  ~SchedulerImpl() override { stop(); }

  void start() override { loop_.start([this] { run(); }); }
  void stop() override { loop_.stop(); }
  uint64_t boundCount() const override { return bound_.load(); }

 private:
  struct Assigned {
    std::string node;
    PodInfo info;
  };

  void run() {
    auto nodes = store_.list("/core/nodes/");
    auto pods = store_.list("/core/pods/");
    for (const auto& o : nodes.items) onNode(o, false);
    for (const auto& o : pods.items) onPod(o, false);
    auto w = store_.watch("/core/", nodes.rv);
    if (!w) {
      spdlog::error("event=scheduler_watch_failed error=\"{}\"", w.error().message);
      return;
    }
    spdlog::info("event=scheduler_started nodes={} pending={}", nodes_.size(), queue_.size());
    auto lastFlush = Clock::now();
    while (!loop_.stopping()) {
      auto timeout = queue_.empty() ? 200ms : 0ms;
      auto ev = nextGathered(**w, timeout);
      if ((*w)->ended()) {
        spdlog::warn("event=scheduler_watch_ended action=relist");
        return restart();
      }
      int drained = 0;
      while (ev && drained++ < 10000) {
        handle(**ev);
        ev = (*w)->next(0ms);
      }
      if (ev) handle(**ev);
      // Schedule a batch, then look at events again so the cache stays fresh.
      for (int i = 0; i < 256 && !queue_.empty() && !loop_.stopping(); ++i) scheduleOne();
      if (Clock::now() - lastFlush > kUnschedulableFlush) {
        lastFlush = Clock::now();
        moveAllToActive();
      }
    }
  }

  void restart() {
    nodes_.clear();
    assigned_.clear();
    queue_.clear();
    queued_.clear();
    unschedulable_.clear();
    unschedulableSpec_.clear();
    if (!loop_.stopping()) run();
  }

  void handle(const Event& ev) {
    const std::string& key = ev.object->key;
    if (key.rfind("/core/pods/", 0) == 0) {
      if (ev.type == EventType::Deleted) {
        forgetPod(key);
      } else {
        onPod(ev.object, true);
      }
    } else if (key.rfind("/core/nodes/", 0) == 0) {
      if (ev.type == EventType::Deleted) {
        nodes_.erase(fieldOf(*ev.object, "metadata.name"));
        rebuildOrder();
      } else {
        onNode(ev.object, true);
      }
    }
  }

  void onNode(const ObjectPtr& o, bool live) {
    json obj = json::parse(o->json, nullptr, false);
    if (obj.is_discarded()) return;
    NodeInfo n = sched::parseNode(obj);
    auto it = nodes_.find(n.name);
    if (it == nodes_.end()) {
      nodes_.emplace(n.name, std::move(n));
      rebuildOrder();
      if (live) moveAllToActive();
      return;
    }
    bool same = sameForScheduling(it->second, n);
    n.requested = std::move(it->second.requested);
    n.podCount = it->second.podCount;
    n.podLabels = std::move(it->second.podLabels);
    it->second = std::move(n);
    if (!same && live) moveAllToActive();
  }

  void rebuildOrder() {
    order_.clear();
    for (auto& [name, n] : nodes_) order_.push_back(name);
  }

  void onPod(const ObjectPtr& o, bool live) {
    const std::string node = fieldOf(*o, "spec.nodeName");
    const std::string phase = fieldOf(*o, "status.phase");
    const bool terminal = phase == "Succeeded" || phase == "Failed";
    if (!node.empty()) {
      dequeue(o->key);
      auto it = assigned_.find(o->key);
      if (terminal) {
        if (it != assigned_.end()) {
          forgetPod(o->key);
          if (live) moveAllToActive();
        }
        return;
      }
      if (it != assigned_.end() && it->second.node == node) return;
      json obj = json::parse(o->json, nullptr, false);
      if (obj.is_discarded()) return;
      auto info = sched::parsePod(obj);
      if (!info) return;
      if (it != assigned_.end()) forgetPod(o->key);
      auto n = nodes_.find(node);
      if (n != nodes_.end()) sched::addPod(n->second, *info);
      assigned_[o->key] = Assigned{node, std::move(*info)};
      return;
    }
    if (fieldOf(*o, "spec.schedulerName") != kSchedulerName || terminal) return;
    if (unschedulable_.count(o->key)) {
      // As upstream: an update of the Pod's spec (a toleration added, say) may make it
      // schedulable, so it leaves the unschedulable set; status writes do not.
      auto spec = unschedulableSpec_.find(o->key);
      if (!live || spec == unschedulableSpec_.end()) return;
      std::optional<size_t> digest = specDigest(o->json);
      if (!digest || spec->second == *digest) return;
      unschedulable_.erase(o->key);
      unschedulableSpec_.erase(spec);
    }
    if (queued_.count(o->key)) return;
    if (o->json.find("\"deletionTimestamp\"") != std::string::npos) return;
    queued_.insert(o->key);
    queue_.push_back(o->key);
  }

  void forgetPod(const std::string& key) {
    dequeue(key);
    unschedulable_.erase(key);
    unschedulableSpec_.erase(key);
    auto it = assigned_.find(key);
    if (it == assigned_.end()) return;
    auto n = nodes_.find(it->second.node);
    if (n != nodes_.end()) sched::removePod(n->second, it->second.info);
    assigned_.erase(it);
    moveAllToActive();
  }

  void dequeue(const std::string& key) { queued_.erase(key); }

  void moveAllToActive() {
    for (const auto& key : unschedulable_) {
      if (queued_.insert(key).second) queue_.push_back(key);
    }
    unschedulable_.clear();
    unschedulableSpec_.clear();
  }

  void scheduleOne() {
    std::string key = queue_.front();
    queue_.pop_front();
    if (!queued_.erase(key)) return;  // removed meanwhile
    auto cur = store_.get(key);
    if (!cur) return;
    const Object& o = **cur;
    if (!fieldOf(o, "spec.nodeName").empty()) return;
    json pod = json::parse(o.json, nullptr, false);
    if (pod.is_discarded() || kube::isBeingDeleted(pod)) return;
    auto info = sched::parsePod(pod);
    if (!info) {
      markUnschedulable(key, o, pod, "0/" + std::to_string(nodes_.size()) +
                                      " nodes are available: " + info.error().message + ".");
      return;
    }
    if (nodes_.empty()) {
      markUnschedulable(key, o, pod, "no nodes available to schedule pods");
      return;
    }
    std::vector<const NodeInfo*> all;
    sched::SpreadState spread;
    if (!info->spread.empty()) {
      for (const auto& [name, n] : nodes_) all.push_back(&n);
      spread = sched::prepareTopologySpread(*info, all);
    }
    const size_t total = order_.size();
    const size_t want = nodesToFind(total);
    std::vector<const NodeInfo*> feasible;
    std::vector<sched::FilterStatus> failed;
    size_t visited = 0;
    for (; visited < total && feasible.size() < want; ++visited) {
      const NodeInfo& n = nodes_.at(order_[(nextStart_ + visited) % total]);
      auto st = sched::runFilters(*info, n, spread);
      if (st.fits) {
        feasible.push_back(&n);
      } else {
        failed.push_back(std::move(st));
      }
    }
    nextStart_ = (nextStart_ + visited) % total;
    if (feasible.empty()) {
      markUnschedulable(key, o, pod, sched::fitErrorMessage(total, failed));
      return;
    }
    auto scores = sched::scoreNodes(*info, feasible, spread);
    size_t best = 0, ties = 1;
    for (size_t i = 1; i < feasible.size(); ++i) {
      if (scores[i] > scores[best]) {
        best = i;
        ties = 1;
      } else if (scores[i] == scores[best] && rng_() % ++ties == 0) {
        best = i;  // reservoir sampling among equal scores, as upstream
      }
    }
    const std::string nodeName = feasible[best]->name;
    auto r = bindPod(rest_, *pods_, info->ns, info->name, nodeName, info->uid);
    if (!r) {
      spdlog::debug("event=bind_failed pod={}/{} node={} error=\"{}\"", info->ns, info->name,
                    nodeName, r.error().message);
      return;
    }
    ++bound_;
    sched::addPod(nodes_.at(nodeName), *info);
    assigned_[key] = Assigned{nodeName, std::move(*info)};
    json bound = eventSubject((*r)->json);
    recorder_.record(bound, "Normal", "Scheduled",
                     "Successfully assigned " + kube::getNamespace(bound) + "/" +
                         kube::getName(bound) + " to " + nodeName);
  }

  // `stored` is the version `pod` was parsed from.
  void markUnschedulable(const std::string& key, const Object& stored, const json& pod,
                         const std::string& message) {
    unschedulable_.insert(key);
    unschedulableSpec_[key] = specDigest(stored.json).value_or(0);
    std::string ns = kube::getNamespace(pod), name = kube::getName(pod);
    bool changed = false;
    auto r = rest_.mutate(*pods_, ns, name, "status", [&](json& p) -> kube::Status {
      json& conds = p["status"]["conditions"];
      if (!conds.is_array()) conds = json::array();
      json cond = {{"type", "PodScheduled"},
                   {"status", "False"},
                   {"reason", "Unschedulable"},
                   {"message", message},
                   {"lastProbeTime", nullptr},
                   {"lastTransitionTime", kube::rfc3339Now()}};
      for (auto& c : conds) {
        if (c.value("type", "") != "PodScheduled") continue;
        if (c.value("status", "") == "False" && c.value("reason", "") == "Unschedulable" &&
            c.value("message", "") == message) {
          return kube::Status::OK();
        }
        if (c.value("status", "") == "False") cond["lastTransitionTime"] = c["lastTransitionTime"];
        c = cond;
        changed = true;
        return kube::Status::OK();
      }
      conds.push_back(cond);
      changed = true;
      return kube::Status::OK();
    });
    if (!r) return;
    spdlog::debug("event=pod_unschedulable pod={}/{} message=\"{}\"", ns, name, message);
    recorder_.record(eventSubject((*r)->json), "Warning", "FailedScheduling", message);
    (void)changed;
  }

  Store& store_;
  Rest& rest_;
  ResourceInfoPtr pods_;
  EventRecorder recorder_;
  LoopThread loop_;
  std::atomic<uint64_t> bound_{0};

  // State below is touched only by the scheduling thread.
  std::map<std::string, NodeInfo> nodes_;
  std::vector<std::string> order_;
  size_t nextStart_ = 0;
  std::map<std::string, Assigned> assigned_;  // pod key -> node
  std::deque<std::string> queue_;
  std::set<std::string> queued_;
  std::set<std::string> unschedulable_;
  // A digest of the spec when found unschedulable (a digest, not the spec: it is kept per Pod).
  std::map<std::string, size_t> unschedulableSpec_;
  std::mt19937 rng_{std::random_device{}()};
};

}  // namespace

std::unique_ptr<Scheduler> newScheduler(Store& store, Registry& registry, Rest& rest) {
  return std::make_unique<SchedulerImpl>(store, registry, rest);
}

}  // namespace strait::minicluster
