// ReplicaSet controller (upstream pkg/controller/replicaset): keeps spec.replicas active
// pods from the template, adopts and releases pods by selector, deletes the pods least
// worth keeping first, and writes status. Expectations keep it from creating or deleting
// again while its own earlier writes have not reached the pod informer yet.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "kube/json_access.h"
#include "kube/object.h"
#include "minicluster/controller_context.h"
#include "minicluster/controlled_pods.h"
#include "minicluster/controller_ref.h"
#include "minicluster/expectations.h"
#include "minicluster/pod_util.h"

namespace strait::minicluster {
namespace {

using kube::child;
using kube::intOf;

using json = nlohmann::json;
constexpr int kBurstReplicas = 500;

class ReplicaSetController : public Controller {
 public:
  explicit ReplicaSetController(ControllerContext& ctx)
      : ctx_(ctx),
        podInfo_(ctx.info("", "pods")),
        rsInfo_(ctx.info("apps", "replicasets")),
        pods_(ctx.informers.informer("", "pods")),
        sets_(ctx.informers.informer("apps", "replicasets")),
        queue_(controllerQueue("replicaset", 2),
               [this](const std::string& key) { return sync(key); }) {
    sets_.addHandlers(enqueueHandlers(queue_));

    pods_.addHandlers(controlledPodHandlers("ReplicaSet", sets_, queue_, expectations_));
  }

  void start() override { queue_.start(); }
  void stop() override { queue_.stop(); }

 private:
  kube::Status sync(const std::string& key) {
    auto rs = sets_.getByKey(key);
    if (!rs) {
      expectations_.forget(key);
      return kube::Status::OK();
    }
    const json& spec = child(rs->obj(), "spec");
    auto selector = kube::LabelSelector::fromJson(spec.value("selector", json()));
    if (!selector || selector->empty()) {
      spdlog::warn("event=replicaset_invalid_selector replicaset={}", key);
      return kube::Status::OK();
    }
    // Expectations before the Pods: the informer caches a Pod before its handler counts the
    // creation, so satisfied expectations mean the list below holds every Pod created; the
    // other order lets a Pod arriving between the reads be counted yet missing, and created
    // again.
    const bool needsManage = expectations_.satisfied(key);
    // Only Pods the selector matches or this ReplicaSet owns can be claimed; the others are
    // passed over before their JSON is parsed.
    std::set<std::string> ownedKeys;
    for (const auto& p : pods_.byIndex(kIndexOwnerUid, rs->uid)) ownedKeys.insert(p->stored->key);
    std::vector<CachedPtr> active;
    for (const auto& p : pods_.list(rs->ns)) {
      if (!selector->matches(p->stored->labels) && !ownedKeys.count(p->stored->key)) continue;
      if (isPodActive(*p->tree())) active.push_back(p);
    }
    OwnerInfo owner{"apps/v1", "ReplicaSet", rs->name, rs->uid, kube::isBeingDeleted(rs->obj())};
    auto owned = claimObjects(ctx_.rest, podInfo_, owner, *selector, active);

    kube::Status result;
    if (needsManage && !owner.deleting) {
      result = manageReplicas(*rs, owner, owned);
    }
    if (auto s = updateStatus(*rs, owned); !s) return s;
    return result;
  }

  kube::Status manageReplicas(const CachedObject& rs, const OwnerInfo& owner,
                              const std::vector<CachedPtr>& owned) {
    const std::string key = objectKey(rs.ns, rs.name);
    int64_t want = intOf(child(rs.obj(), "spec"), "replicas", 1);
    int64_t diff = static_cast<int64_t>(owned.size()) - want;
    if (diff < 0) {
      int n = static_cast<int>(std::min<int64_t>(-diff, kBurstReplicas));
      expectations_.expectCreations(key, n);
      json pod = podFromTemplate(rs, owner);
      for (int i = 0; i < n; ++i) {
        WriteOptions wo;
        wo.fieldValidation = FieldValidation::Ignore;
        auto r = ctx_.rest.create(podInfo_, rs.ns, pod, wo, nullptr);
        if (!r) {
          for (int j = i; j < n; ++j) expectations_.creationObserved(key);
          spdlog::warn("event=pod_create_failed replicaset={} error=\"{}\"", key,
                       r.error().message);
          return r.error();
        }
      }
      spdlog::info("event=pods_created replicaset={} count={}", key, n);
    } else if (diff > 0) {
      // Ranked on trees parsed once each (and dropped after: the cache keeps no Pod trees).
      std::vector<std::pair<CachedPtr, JsonPtr>> ranked;
      for (const auto& p : owned) ranked.emplace_back(p, p->tree());
      std::sort(ranked.begin(), ranked.end(),
                [](const auto& a, const auto& b) { return deleteBefore(*a.second, *b.second); });
      std::vector<CachedPtr> victims;
      for (auto& [p, tree] : ranked) victims.push_back(p);
      ranked.clear();
      victims.resize(std::min<int64_t>(diff, kBurstReplicas));
      std::set<std::string> keys;
      for (const auto& v : victims) keys.insert(objectKey(v->ns, v->name));
      expectations_.expectDeletions(key, keys);
      for (const auto& v : victims) {
        DeleteOptions d;
        d.preconditionUid = v->uid;
        auto r = ctx_.rest.remove(podInfo_, v->ns, v->name, d);
        if (!r) {
          expectations_.deletionObserved(key, objectKey(v->ns, v->name));
          if (r.error().code != kube::Code::NotFound) return r.error();
        }
      }
      spdlog::info("event=pods_deleted replicaset={} count={}", key, victims.size());
    }
    return kube::Status::OK();
  }

  static json podFromTemplate(const CachedObject& rs, const OwnerInfo& owner) {
    const json& tmpl = child(child(rs.obj(), "spec"), "template");
    json meta = json::object();
    const json& tmeta = child(tmpl, "metadata");
    for (const char* k : {"labels", "annotations", "finalizers"}) {
      if (tmeta.contains(k)) meta[k] = tmeta.at(k);
    }
    meta["generateName"] = rs.name + "-";
    meta["namespace"] = rs.ns;
    meta["ownerReferences"] = json::array({controllerRef(owner)});
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", meta},
            {"spec", child(tmpl, "spec")}};
  }

  kube::Status updateStatus(const CachedObject& rs, const std::vector<CachedPtr>& owned) {
    const json& spec = child(rs.obj(), "spec");
    int64_t minReady = intOf(spec, "minReadySeconds");
    auto tmplLabels = kube::getLabels(child(spec, "template"));
    auto now = std::chrono::system_clock::now();
    int64_t fully = 0, ready = 0, available = 0;
    for (const auto& p : owned) {
      const JsonPtr podTree = p->tree();
      const json& pod = *podTree;
      auto labels = kube::getLabels(pod);
      bool all = std::all_of(tmplLabels.begin(), tmplLabels.end(), [&](const auto& kv) {
        auto it = labels.find(kv.first);
        return it != labels.end() && it->second == kv.second;
      });
      if (all) ++fully;
      if (isPodReady(pod)) ++ready;
      if (isPodAvailable(pod, minReady, now)) ++available;
    }
    int64_t replicas = static_cast<int64_t>(owned.size());
    int64_t generation = kube::getGeneration(rs.obj());
    auto r = ctx_.rest.mutate(rsInfo_, rs.ns, rs.name, "status", [&](json& obj) {
      json& st = obj["status"];
      if (!st.is_object()) st = json::object();
      st["replicas"] = replicas;
      st["fullyLabeledReplicas"] = fully;
      st["readyReplicas"] = ready;
      st["availableReplicas"] = available;
      st["observedGeneration"] = generation;
      // Upstream omits zero counts (omitempty) except replicas.
      for (const char* k : {"fullyLabeledReplicas", "readyReplicas", "availableReplicas"}) {
        if (st[k] == 0) st.erase(k);
      }
      return kube::Status::OK();
    });
    if (!r && r.error().code != kube::Code::NotFound) return r.error();
    if (minReady > 0 && available < ready) {
      queue_.addAfter(objectKey(rs.ns, rs.name), std::chrono::seconds(minReady));
    }
    return kube::Status::OK();
  }

  ControllerContext& ctx_;
  const ResourceInfo& podInfo_;
  const ResourceInfo& rsInfo_;
  LocalInformer& pods_;
  LocalInformer& sets_;
  Expectations expectations_;
  kube::WorkerPool queue_;
};

}  // namespace

std::unique_ptr<Controller> newReplicaSetController(ControllerContext& ctx) {
  return std::make_unique<ReplicaSetController>(ctx);
}

}  // namespace strait::minicluster
