// DaemonSet controller (upstream pkg/controller/daemon): for every DaemonSet and every Node,
// decides whether a daemon Pod should run there (daemonset_util.h), creates the missing
// Pods (bound to their node by a matchFields node affinity the scheduler honours), deletes
// daemon Pods on nodes where they may not stay, failed and succeeded ones and surplus
// copies, rolls a template change (old-generation Pods deleted maxUnavailable at a time,
// then recreated), and writes status. No ControllerRevisions: the template generation
// (pod-template-generation label) alone tells old Pods from new.
//
// Each sync reads the DaemonSet, the nodes and the namespace's Pods from the informers;
// expectations (expectations.h) keep it from acting again before its own writes are seen.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

#include "kube/json_access.h"
#include "kube/object.h"
#include "minicluster/controller_context.h"
#include "minicluster/controlled_pods.h"
#include "minicluster/controller_ref.h"
#include "minicluster/daemonset_util.h"
#include "minicluster/expectations.h"
#include "minicluster/pod_util.h"

namespace strait::minicluster {
namespace {

using kube::child;
using kube::intOf;
using kube::stringOf;

using json = nlohmann::json;
constexpr int kBurst = 250;

std::string creationTime(const CachedPtr& p) {
  return kube::getCreationTimestamp(*p->tree()).value_or("");
}

class DaemonSetController : public Controller {
 public:
  explicit DaemonSetController(ControllerContext& ctx)
      : ctx_(ctx),
        podInfo_(ctx.info("", "pods")),
        dsInfo_(ctx.info("apps", "daemonsets")),
        pods_(ctx.informers.informer("", "pods")),
        sets_(ctx.informers.informer("apps", "daemonsets")),
        nodes_(ctx.informers.informer("", "nodes")),
        queue_(controllerQueue("daemonset", 2),
               [this](const std::string& key) { return sync(key); }) {
    sets_.addHandlers(enqueueHandlers(queue_));

    InformerHandlers node;
    node.onAdd = [this](const CachedPtr&) { enqueueAll(); };
    node.onUpdate = [this](const CachedPtr& old, const CachedPtr& cur) {
      if (nodeSchedulingChanged(old->obj(), cur->obj())) enqueueAll();
    };
    node.onDelete = [this](const CachedPtr&) { enqueueAll(); };
    nodes_.addHandlers(node);

    pods_.addHandlers(controlledPodHandlers("DaemonSet", sets_, queue_, expectations_));
  }

  void start() override { queue_.start(); }
  void stop() override { queue_.stop(); }

 private:
  static bool nodeSchedulingChanged(const json& a, const json& b) {
    return kube::getLabels(a) != kube::getLabels(b) || child(a, "spec") != child(b, "spec");
  }

  void enqueueAll() {
    for (const auto& ds : sets_.list()) queue_.add(objectKey(ds->ns, ds->name));
  }

  // The state of one node for one sync.
  struct NodeState {
    DaemonNodeDecision decision;
    bool known = false;               // the Node exists
    std::vector<CachedPtr> pods;      // daemon Pods targeting it, not being deleted
    bool anyDeleting = false;         // a daemon Pod there is terminating
  };

  kube::Status sync(const std::string& key) {
    auto ds = sets_.getByKey(key);
    if (!ds) {
      expectations_.forget(key);
      return kube::Status::OK();
    }
    auto selector = kube::LabelSelector::fromJson(child(ds->obj(), "spec").value("selector", json()));
    if (!selector || selector->empty()) {
      spdlog::warn("event=daemonset_invalid_selector daemonset={}", key);
      return kube::Status::OK();
    }
    // Expectations first, the Pods after (upstream's order): the informer files a Pod in its
    // cache before its handler counts the creation, so expectations found satisfied here
    // mean the list below holds every Pod this controller created. Read the other way round,
    // Pods that arrive between the two reads are counted but missing from the list, and the
    // sync creates them again.
    const bool needsManage = expectations_.satisfied(key);
    // Terminating Pods too: a node whose daemon Pod is terminating gets no new one yet.
    auto candidates = pods_.list(ds->ns);
    OwnerInfo owner{"apps/v1", "DaemonSet", ds->name, ds->uid, kube::isBeingDeleted(ds->obj())};
    auto owned = claimObjects(ctx_.rest, podInfo_, owner, *selector, candidates);

    std::map<std::string, NodeState> nodes;
    for (const auto& n : nodes_.list()) {
      auto& st = nodes[n->name];
      st.known = true;
      st.decision = nodeShouldRunDaemonPod(n->obj(), ds->obj());
    }
    std::vector<CachedPtr> orphanedOnNoNode;
    for (const auto& p : owned) {
      const JsonPtr podTree = p->tree();
      auto target = daemonPodTargetNode(*podTree);
      if (!target) {
        orphanedOnNoNode.push_back(p);
        continue;
      }
      auto& st = nodes[*target];
      if (kube::isBeingDeleted(*podTree)) {
        st.anyDeleting = true;
      } else {
        st.pods.push_back(p);
      }
    }
    for (auto& [name, st] : nodes) {
      std::sort(st.pods.begin(), st.pods.end(), [](const CachedPtr& a, const CachedPtr& b) {
        return creationTime(a) < creationTime(b);
      });
    }

    kube::Status result;
    if (needsManage && !owner.deleting) {
      result = manage(*ds, owner, nodes, orphanedOnNoNode);
    }
    if (auto s = updateStatus(*ds, nodes); !s) return s;
    return result;
  }

  kube::Status manage(const CachedObject& ds, const OwnerInfo& owner,
                      const std::map<std::string, NodeState>& nodes,
                      const std::vector<CachedPtr>& noNode) {
    const std::string key = objectKey(ds.ns, ds.name);
    std::vector<std::string> create;
    std::vector<CachedPtr> remove = noNode;
    for (const auto& [name, st] : nodes) {
      const auto& d = st.decision;
      if (d.shouldRun && st.pods.empty() && !st.anyDeleting && st.known) {
        create.push_back(name);
      } else if (!d.shouldContinueRunning || !st.known) {
        remove.insert(remove.end(), st.pods.begin(), st.pods.end());
      } else {
        // Failed or succeeded daemon Pods are replaced; of several running, the oldest stays.
        bool keptOne = false;
        for (const auto& p : st.pods) {
          if (!isPodActive(*p->tree()) || keptOne) {
            remove.push_back(p);
          } else {
            keptOne = true;
          }
        }
      }
    }
    if (create.empty() && remove.empty()) remove = rollingUpdateVictims(ds, nodes);
    if (create.size() > kBurst) create.resize(kBurst);
    if (remove.size() > kBurst) remove.resize(kBurst);

    if (!remove.empty()) {
      std::set<std::string> keys;
      for (const auto& v : remove) keys.insert(objectKey(v->ns, v->name));
      expectations_.expectDeletions(key, keys);
      for (const auto& v : remove) {
        DeleteOptions d;
        d.preconditionUid = v->uid;
        auto r = ctx_.rest.remove(podInfo_, v->ns, v->name, d);
        if (!r) {
          expectations_.deletionObserved(key, objectKey(v->ns, v->name));
          if (r.error().code != kube::Code::NotFound) return r.error();
        }
      }
      spdlog::info("event=daemon_pods_deleted daemonset={} count={}", key, remove.size());
    }
    if (!create.empty()) {
      expectations_.expectCreations(key, static_cast<int>(create.size()));
      json ref = controllerRef(owner);
      for (size_t i = 0; i < create.size(); ++i) {
        WriteOptions wo;
        wo.fieldValidation = FieldValidation::Ignore;
        auto r = ctx_.rest.create(podInfo_, ds.ns, newDaemonPod(ds.obj(), create[i], ref), wo,
                                  nullptr);
        if (!r) {
          for (size_t j = i; j < create.size(); ++j) expectations_.creationObserved(key);
          if (benignCreateError(r.error().code)) return kube::Status::OK();
          spdlog::warn("event=daemon_pod_create_failed daemonset={} node={} error=\"{}\"", key,
                       create[i], r.error().message);
          return r.error();
        }
      }
      spdlog::info("event=daemon_pods_created daemonset={} count={}", key, create.size());
    }
    return kube::Status::OK();
  }

  // Old-generation Pods to delete now (upstream rollingUpdate with maxSurge 0): unavailable
  // old Pods always, available ones while fewer than maxUnavailable nodes are unavailable.
  std::vector<CachedPtr> rollingUpdateVictims(const CachedObject& ds,
                                              const std::map<std::string, NodeState>& nodes) {
    const json& strategy = child(child(ds.obj(), "spec"), "updateStrategy");
    if (stringOf(strategy, "type", "RollingUpdate") != "RollingUpdate") return {};
    int64_t generation = daemonSetTemplateGeneration(ds.obj());
    int64_t minReady = intOf(child(ds.obj(), "spec"), "minReadySeconds");
    auto now = std::chrono::system_clock::now();
    int64_t desired = 0;
    for (const auto& [name, st] : nodes) desired += st.decision.shouldRun ? 1 : 0;
    int64_t maxUnavailable = daemonSetMaxUnavailable(ds.obj(), desired);
    int64_t unavailable = 0;
    std::vector<CachedPtr> victims, candidates;
    for (const auto& [name, st] : nodes) {
      if (st.pods.empty()) {
        if (st.anyDeleting) ++unavailable;
        continue;
      }
      const CachedPtr& p = st.pods.front();
      const JsonPtr podTree = p->tree();
      bool available = isPodAvailable(*podTree, minReady, now);
      if (isDaemonPodUpdated(*podTree, generation)) {
        if (!available) ++unavailable;
      } else if (!available) {
        victims.push_back(p);
      } else {
        candidates.push_back(p);
      }
    }
    int64_t budget = std::max<int64_t>(0, maxUnavailable - unavailable);
    for (size_t i = 0; i < candidates.size() && static_cast<int64_t>(i) < budget; ++i) {
      victims.push_back(candidates[i]);
    }
    if (!victims.empty()) {
      spdlog::info("event=daemonset_rolling daemonset={}/{} generation={} deleting={}", ds.ns,
                   ds.name, generation, victims.size());
    }
    return victims;
  }

  kube::Status updateStatus(const CachedObject& ds, const std::map<std::string, NodeState>& nodes) {
    int64_t generation = daemonSetTemplateGeneration(ds.obj());
    int64_t minReady = intOf(child(ds.obj(), "spec"), "minReadySeconds");
    auto now = std::chrono::system_clock::now();
    int64_t desired = 0, current = 0, misscheduled = 0, ready = 0, available = 0, updated = 0;
    for (const auto& [name, st] : nodes) {
      bool scheduled = !st.pods.empty();
      if (!st.decision.shouldRun) {
        if (scheduled) ++misscheduled;
        continue;
      }
      ++desired;
      if (!scheduled) continue;
      ++current;
      const JsonPtr podTree = st.pods.front()->tree();
      const json& pod = *podTree;
      if (isPodReady(pod)) ++ready;
      if (isPodAvailable(pod, minReady, now)) ++available;
      if (isDaemonPodUpdated(pod, generation)) ++updated;
    }
    int64_t observed = kube::getGeneration(ds.obj());
    auto r = ctx_.rest.mutate(dsInfo_, ds.ns, ds.name, "status", [&](json& obj) {
      json& st = obj["status"];
      if (!st.is_object()) st = json::object();
      st["desiredNumberScheduled"] = desired;
      st["currentNumberScheduled"] = current;
      st["numberMisscheduled"] = misscheduled;
      st["numberReady"] = ready;
      st["observedGeneration"] = observed;
      // Upstream omits these when zero (omitempty).
      auto setOrErase = [&](const char* k, int64_t v) {
        if (v == 0) {
          st.erase(k);
        } else {
          st[k] = v;
        }
      };
      setOrErase("updatedNumberScheduled", updated);
      setOrErase("numberAvailable", available);
      setOrErase("numberUnavailable", desired - available);
      return kube::Status::OK();
    });
    if (!r && r.error().code != kube::Code::NotFound) return r.error();
    if (minReady > 0 && available < ready) {
      queue_.addAfter(objectKey(ds.ns, ds.name), std::chrono::seconds(minReady));
    }
    return kube::Status::OK();
  }

  ControllerContext& ctx_;
  const ResourceInfo& podInfo_;
  const ResourceInfo& dsInfo_;
  LocalInformer& pods_;
  LocalInformer& sets_;
  LocalInformer& nodes_;
  Expectations expectations_;
  kube::WorkerPool queue_;
};

}  // namespace

std::unique_ptr<Controller> newDaemonSetController(ControllerContext& ctx) {
  return std::make_unique<DaemonSetController>(ctx);
}

}  // namespace strait::minicluster
