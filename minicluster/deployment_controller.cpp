// Deployment controller (upstream pkg/controller/deployment): one ReplicaSet per pod
// template, named <deployment>-<pod-template-hash>; RollingUpdate within maxSurge and
// maxUnavailable, Recreate, proportional scaling of a rollout in flight, revision
// annotations, old ReplicaSets cleaned beyond revisionHistoryLimit, and status with the
// Available and Progressing conditions that `kubectl rollout status` reads.
//
// Each sync reads the deployment and its ReplicaSets from the informers and makes at most
// one kind of step (create/scale new, scale down old), like upstream; the ReplicaSets'
// status changes bring the next sync.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "kube/event.h"
#include "kube/json_access.h"
#include "kube/object.h"
#include "minicluster/controller_context.h"
#include "minicluster/controller_ref.h"
#include "minicluster/deployment_util.h"

namespace strait::minicluster {
namespace {

using kube::boolOf;
using kube::child;
using kube::childArray;
using kube::intOf;
using kube::stringOf;

using json = nlohmann::json;

int64_t specReplicas(const CachedPtr& rs) { return intOf(child(rs->obj(), "spec"), "replicas", 1); }
int64_t statusCount(const CachedPtr& rs, const char* k) { return intOf(child(rs->obj(), "status"), k); }
std::string creation(const CachedPtr& o) { return kube::getCreationTimestamp(o->obj()).value_or(""); }

bool olderFirst(const CachedPtr& a, const CachedPtr& b) {
  if (creation(a) != creation(b)) return creation(a) < creation(b);
  return a->name < b->name;
}

class DeploymentController : public Controller {
 public:
  explicit DeploymentController(ControllerContext& ctx)
      : ctx_(ctx),
        dInfo_(ctx.info("apps", "deployments")),
        rsInfo_(ctx.info("apps", "replicasets")),
        deps_(ctx.informers.informer("apps", "deployments")),
        sets_(ctx.informers.informer("apps", "replicasets")),
        pods_(ctx.informers.informer("", "pods")),
        queue_(controllerQueue("deployment", 2),
               [this](const std::string& key) { return sync(key); }) {
    deps_.addHandlers(enqueueHandlers(queue_));

    InformerHandlers rs;
    rs.onAdd = [this](const CachedPtr& o) { enqueueOwner(*o); };
    rs.onUpdate = [this](const CachedPtr& old, const CachedPtr& o) {
      enqueueOwner(*old);
      enqueueOwner(*o);
    };
    rs.onDelete = [this](const CachedPtr& o) { enqueueOwner(*o); };
    sets_.addHandlers(rs);

    // Recreate waits for the old pods to go: a pod deletion may unblock it.
    InformerHandlers pod;
    pod.onDelete = [this](const CachedPtr& p) {
      auto ref = kube::getControllerOf(*p->head());
      if (!ref || ref->value("kind", "") != "ReplicaSet") return;
      if (auto rs = sets_.get(p->ns, ref->value("name", ""))) enqueueOwner(*rs);
    };
    pods_.addHandlers(pod);
  }

  void start() override { queue_.start(); }
  void stop() override { queue_.stop(); }

 private:
  void enqueueOwner(const CachedObject& rs) {
    auto ref = kube::getControllerOf(rs.obj());
    if (ref) {
      if (ref->value("kind", "") == "Deployment") {
        queue_.add(objectKey(rs.ns, ref->value("name", "")));
      }
      return;
    }
    auto labels = kube::getLabels(rs.obj());
    for (const auto& d : deps_.list(rs.ns)) {
      auto sel = kube::LabelSelector::fromJson(child(d->obj(), "spec").value("selector", json()));
      if (sel && !sel->empty() && sel->matches(labels)) queue_.add(objectKey(d->ns, d->name));
    }
  }

  // The working view of one sync: the deployment and its ReplicaSets, updated in place as
  // this sync writes them.
  struct View {
    CachedPtr d;
    std::string key;
    int64_t replicas = 1;
    CachedPtr newRS;
    std::vector<CachedPtr> oldRSs;
    std::vector<CachedPtr> all() const {
      auto v = oldRSs;
      if (newRS) v.push_back(newRS);
      return v;
    }
  };

  kube::Status sync(const std::string& key) {
    auto d = deps_.getByKey(key);
    if (!d) return kube::Status::OK();
    const json& spec = child(d->obj(), "spec");
    auto selector = kube::LabelSelector::fromJson(spec.value("selector", json()));
    if (!selector || selector->empty() || selector->matchesNothing()) {
      spdlog::warn("event=deployment_invalid_selector deployment={}", key);
      return kube::Status::OK();
    }
    if (auto f = resolveFenceposts(d->obj()); !f) {
      spdlog::warn("event=deployment_invalid_strategy deployment={} error=\"{}\"", key,
                   f.error().message);
      return kube::Status::OK();
    }
    OwnerInfo owner{"apps/v1", "Deployment", d->name, d->uid, kube::isBeingDeleted(d->obj())};
    auto rsList = claimObjects(ctx_.rest, rsInfo_, owner, *selector, sets_.list(d->ns));
    View v;
    v.d = d;
    v.key = key;
    v.replicas = intOf(spec, "replicas", 1);
    if (owner.deleting) {
      split(v, rsList);
      return syncStatus(v, false);
    }
    const bool recreate = stringOf(child(spec, "strategy"), "type", "RollingUpdate") == "Recreate";
    split(v, rsList);
    if (boolOf(spec, "paused") || isScalingEvent(v)) {
      if (auto s = scale(v); !s) return s;
      if (boolOf(spec, "paused")) return syncStatus(v, false);
      return syncStatus(v, false);
    }
    return recreate ? rolloutRecreate(v) : rolloutRolling(v);
  }

  // Splits the claimed ReplicaSets into the new one (same template) and the old ones.
  void split(View& v, std::vector<CachedPtr> rsList) {
    std::sort(rsList.begin(), rsList.end(), olderFirst);
    const json& tmpl = child(child(v.d->obj(), "spec"), "template");
    for (const auto& rs : rsList) {
      if (!v.newRS && equalIgnoreHash(child(child(rs->obj(), "spec"), "template"), tmpl)) {
        v.newRS = rs;
      } else {
        v.oldRSs.push_back(rs);
      }
    }
  }

  bool isScalingEvent(const View& v) {
    for (const auto& rs : v.all()) {
      if (specReplicas(rs) == 0) continue;
      std::string desired = stringOf(child(child(rs->obj(), "metadata"), "annotations"),
                                     kDesiredReplicasAnnotation);
      if (!desired.empty() && desired != std::to_string(v.replicas)) return true;
    }
    return false;
  }

  // Sets spec.replicas and the desired/max annotations of one ReplicaSet.
  kube::Status scaleRS(View& v, CachedPtr& rs, int64_t size) {
    const std::string desired = std::to_string(v.replicas);
    const std::string maxReplicas = std::to_string(v.replicas + maxSurgeOf(v.d->obj()));
    int64_t before = specReplicas(rs);
    auto r = ctx_.rest.mutate(rsInfo_, rs->ns, rs->name, "", [&](json& obj) {
      obj["spec"]["replicas"] = size;
      kube::setAnnotation(obj, kDesiredReplicasAnnotation, desired);
      kube::setAnnotation(obj, kMaxReplicasAnnotation, maxReplicas);
      return kube::Status::OK();
    });
    if (!r) return r.error();
    sets_.waitFor(rs->ns, rs->name, (*r)->rv, std::chrono::seconds(2));
    if (before != size) {
      spdlog::info("event=replicaset_scaled deployment={} replicaset={} from={} to={}", v.key,
                   rs->name, before, size);
      recordEvent(v, "ScalingReplicaSet",
                  std::string(size > before ? "Scaled up" : "Scaled down") + " replica set " +
                      rs->name + " from " + std::to_string(before) + " to " +
                      std::to_string(size));
    }
    if (auto c = makeCached(*r)) rs = c;
    return kube::Status::OK();
  }

  void recordEvent(const View& v, const std::string& reason, const std::string& message) {
    const auto& evInfo = ctx_.info("", "events");
    kube::EventFields fields;
    fields.involvedObject = {{"kind", "Deployment"}, {"apiVersion", "apps/v1"},
                             {"name", v.d->name},    {"namespace", v.d->ns},
                             {"uid", v.d->uid},
                             {"resourceVersion", kube::getResourceVersion(v.d->obj())}};
    fields.reason = reason;
    fields.message = message;
    fields.component = "deployment-controller";
    json ev = kube::makeEvent(fields);
    WriteOptions wo;
    wo.fieldValidation = FieldValidation::Ignore;
    auto r = ctx_.rest.create(evInfo, v.d->ns, ev, wo, nullptr);
    if (!r) spdlog::debug("event=event_record_failed error=\"{}\"", r.error().message);
  }

  // Finds or creates the new ReplicaSet; brings its revision forward; records the
  // deployment's revision annotation.
  kube::Status ensureNewRS(View& v, bool create) {
    int64_t maxOld = 0;
    for (const auto& rs : v.oldRSs) maxOld = std::max(maxOld, revisionOf(rs->obj()));
    const std::string newRevision = std::to_string(maxOld + 1);
    const json& spec = child(v.d->obj(), "spec");
    const std::string desired = std::to_string(v.replicas);
    const std::string maxReplicas = std::to_string(v.replicas + maxSurgeOf(v.d->obj()));
    if (v.newRS) {
      if (revisionOf(v.newRS->obj()) < maxOld + 1 ||
          intOf(child(v.newRS->obj(), "spec"), "minReadySeconds") != intOf(spec, "minReadySeconds")) {
        auto r = ctx_.rest.mutate(rsInfo_, v.newRS->ns, v.newRS->name, "", [&](json& obj) {
          if (revisionOf(obj) < maxOld + 1) kube::setAnnotation(obj, kRevisionAnnotation, newRevision);
          obj["spec"]["minReadySeconds"] = intOf(spec, "minReadySeconds");
          return kube::Status::OK();
        });
        if (!r) return r.error();
        if (auto c = makeCached(*r)) v.newRS = c;
      }
    } else if (create) {
      std::optional<int32_t> collisions;
      const json& st = child(v.d->obj(), "status");
      if (st.contains("collisionCount") && st["collisionCount"].is_number_integer()) {
        collisions = st["collisionCount"].get<int32_t>();
      }
      json tmpl = child(spec, "template");
      const std::string hash = computePodTemplateHash(tmpl, collisions);
      tmpl["metadata"]["labels"][kPodTemplateHashLabel] = hash;
      json selector = spec.value("selector", json::object());
      selector["matchLabels"][kPodTemplateHashLabel] = hash;
      int64_t size = newRSReplicas(v, 0);
      const std::string name = v.d->name + "-" + hash;
      OwnerInfo owner{"apps/v1", "Deployment", v.d->name, v.d->uid, false};
      json rs = {{"apiVersion", "apps/v1"},
                 {"kind", "ReplicaSet"},
                 {"metadata",
                  {{"name", name},
                   {"namespace", v.d->ns},
                   {"labels", tmpl["metadata"]["labels"]},
                   {"annotations",
                    {{kRevisionAnnotation, newRevision},
                     {kDesiredReplicasAnnotation, desired},
                     {kMaxReplicasAnnotation, maxReplicas}}},
                   {"ownerReferences", json::array({controllerRef(owner)})}}},
                 {"spec",
                  {{"replicas", size},
                   {"minReadySeconds", intOf(spec, "minReadySeconds")},
                   {"selector", selector},
                   {"template", tmpl}}}};
      WriteOptions wo;
      wo.fieldValidation = FieldValidation::Ignore;
      auto r = ctx_.rest.create(rsInfo_, v.d->ns, rs, wo, nullptr);
      if (!r && r.error().code == kube::Code::AlreadyExists) {
        auto existing = ctx_.rest.get(rsInfo_, v.d->ns, name);
        if (!existing) return existing.error();
        auto c = makeCached(*existing);
        if (c && kube::isControlledBy(c->obj(), v.d->uid) &&
            equalIgnoreHash(child(child(c->obj(), "spec"), "template"), child(spec, "template"))) {
          v.newRS = c;  // ours, the informer had not seen it yet
        } else {
          // A hash collision: bump collisionCount and try again with a new name.
          auto s = ctx_.rest.mutate(dInfo_, v.d->ns, v.d->name, "status", [&](json& obj) {
            obj["status"]["collisionCount"] = collisions.value_or(0) + 1;
            return kube::Status::OK();
          });
          return kube::makeError(kube::Code::Conflict,
                                 "pod-template-hash collision for replica set " + name);
        }
      } else if (!r) {
        return r.error();
      } else {
        v.newRS = makeCached(*r);
        sets_.waitFor(v.d->ns, name, (*r)->rv, std::chrono::seconds(2));
        spdlog::info("event=replicaset_created deployment={} replicaset={} replicas={}", v.key,
                     name, size);
        recordEvent(v, "ScalingReplicaSet",
                    "Scaled up replica set " + name + " from 0 to " + std::to_string(size));
        auto s = ctx_.rest.mutate(dInfo_, v.d->ns, v.d->name, "status", [&](json& obj) {
          setDeploymentCondition(obj["status"], "Progressing", "True", "NewReplicaSetCreated",
                                 "Created new replica set \"" + name + "\"", kube::rfc3339Now());
          return kube::Status::OK();
        });
        if (s) {
          if (auto c = makeCached(*s)) v.d = c;
        }
      }
    }
    if (v.newRS) {
      std::string rev = std::to_string(revisionOf(v.newRS->obj()));
      if (stringOf(child(child(v.d->obj(), "metadata"), "annotations"), kRevisionAnnotation) != rev) {
        auto r = ctx_.rest.mutate(dInfo_, v.d->ns, v.d->name, "", [&](json& obj) {
          kube::setAnnotation(obj, kRevisionAnnotation, rev);
          return kube::Status::OK();
        });
        if (!r) return r.error();
        if (auto c = makeCached(*r)) v.d = c;
      }
    }
    return kube::Status::OK();
  }

  // Upstream NewRSNewReplicas: how big the new ReplicaSet may be now.
  int64_t newRSReplicas(const View& v, int64_t newSize) {
    const json& strategy = child(child(v.d->obj(), "spec"), "strategy");
    if (stringOf(strategy, "type", "RollingUpdate") != "RollingUpdate") return v.replicas;
    int64_t current = newSize;
    for (const auto& rs : v.oldRSs) current += specReplicas(rs);
    int64_t maxTotal = v.replicas + maxSurgeOf(v.d->obj());
    if (current >= maxTotal) return newSize;
    int64_t up = std::min(maxTotal - current, v.replicas - newSize);
    return newSize + std::max<int64_t>(up, 0);
  }

  kube::Status rolloutRolling(View& v) {
    if (auto s = ensureNewRS(v, true); !s) return s;
    // Scale up the new ReplicaSet.
    if (v.newRS) {
      int64_t cur = specReplicas(v.newRS);
      int64_t want = cur > v.replicas ? v.replicas : newRSReplicas(v, cur);
      if (want != cur) {
        if (auto s = scaleRS(v, v.newRS, want); !s) return s;
        return syncStatus(v, true);
      }
    }
    // Scale down old ReplicaSets within maxUnavailable.
    if (auto scaled = reconcileOld(v); !scaled) {
      return scaled.error();
    } else if (*scaled) {
      return syncStatus(v, true);
    }
    if (complete(v)) cleanup(v);
    return syncStatus(v, true);
  }

  kube::Result<bool> reconcileOld(View& v) {
    int64_t oldPods = 0;
    for (const auto& rs : v.oldRSs) oldPods += specReplicas(rs);
    if (oldPods == 0) return false;
    int64_t allPods = oldPods + (v.newRS ? specReplicas(v.newRS) : 0);
    int64_t minAvailable = v.replicas - maxUnavailableOf(v.d->obj());
    int64_t newUnavailable =
        v.newRS ? specReplicas(v.newRS) - statusCount(v.newRS, "availableReplicas") : 0;
    int64_t maxScaledDown = allPods - minAvailable - newUnavailable;
    if (maxScaledDown <= 0) return false;
    bool scaled = false;
    std::sort(v.oldRSs.begin(), v.oldRSs.end(), olderFirst);
    // First the old ReplicaSets' unhealthy replicas.
    int64_t cleaned = 0;
    for (auto& rs : v.oldRSs) {
      if (cleaned >= maxScaledDown) break;
      int64_t size = specReplicas(rs);
      int64_t unhealthy = size - statusCount(rs, "availableReplicas");
      if (size == 0 || unhealthy <= 0) continue;
      int64_t down = std::min(maxScaledDown - cleaned, unhealthy);
      if (auto s = scaleRS(v, rs, size - down); !s) return s.error();
      cleaned += down;
      scaled = true;
    }
    // Then available replicas above minAvailable.
    int64_t available = 0;
    for (const auto& rs : v.all()) available += statusCount(rs, "availableReplicas");
    if (available <= minAvailable) return scaled;
    int64_t total = std::min(available - minAvailable, maxScaledDown - cleaned);
    for (auto& rs : v.oldRSs) {
      if (total <= 0) break;
      int64_t size = specReplicas(rs);
      if (size == 0) continue;
      int64_t down = std::min(size, total);
      if (auto s = scaleRS(v, rs, size - down); !s) return s.error();
      total -= down;
      scaled = true;
    }
    return scaled;
  }

  kube::Status rolloutRecreate(View& v) {
    if (auto s = ensureNewRS(v, false); !s) return s;
    bool scaledDown = false;
    for (auto& rs : v.oldRSs) {
      if (specReplicas(rs) == 0) continue;
      if (auto s = scaleRS(v, rs, 0); !s) return s;
      scaledDown = true;
    }
    if (scaledDown) return syncStatus(v, true);
    for (const auto& rs : v.oldRSs) {
      if (statusCount(rs, "replicas") > 0) return syncStatus(v, true);
      for (const auto& p : pods_.byIndex(kIndexOwnerUid, rs->uid)) {
        std::string phase = stringOf(child(*p->tree(), "status"), "phase");
        if (phase != "Succeeded" && phase != "Failed") return syncStatus(v, true);
      }
    }
    if (!v.newRS) {
      if (auto s = ensureNewRS(v, true); !s) return s;
    }
    if (v.newRS && specReplicas(v.newRS) != v.replicas) {
      if (auto s = scaleRS(v, v.newRS, v.replicas); !s) return s;
    }
    if (complete(v)) cleanup(v);
    return syncStatus(v, true);
  }

  // Scaling while no template changed (kubectl scale): the only active ReplicaSet takes the
  // new size; during a rollout the change is spread proportionally (upstream scale()).
  kube::Status scale(View& v) {
    std::vector<CachedPtr*> active;
    if (v.newRS && specReplicas(v.newRS) > 0) active.push_back(&v.newRS);
    for (auto& rs : v.oldRSs) {
      if (specReplicas(rs) > 0) active.push_back(&rs);
    }
    if (active.size() <= 1) {
      CachedPtr* target = active.empty() ? nullptr : active.front();
      if (!target) {
        if (v.newRS) {
          target = &v.newRS;
        } else if (!v.oldRSs.empty()) {
          target = &*std::max_element(v.oldRSs.begin(), v.oldRSs.end(), olderFirst);
        }
      }
      if (!target) return kube::Status::OK();
      return scaleRS(v, *target, v.replicas);
    }
    int64_t allowed = v.replicas > 0 ? v.replicas + maxSurgeOf(v.d->obj()) : 0;
    int64_t current = 0;
    for (auto* rs : active) current += specReplicas(*rs);
    int64_t toAdd = allowed - current;
    // Larger first when growing, smaller first when shrinking; newer first on ties.
    std::sort(active.begin(), active.end(), [&](CachedPtr* a, CachedPtr* b) {
      int64_t sa = specReplicas(*a), sb = specReplicas(*b);
      if (sa != sb) return toAdd > 0 ? sa > sb : sa < sb;
      return toAdd > 0 ? olderFirst(*b, *a) : olderFirst(*a, *b);
    });
    std::vector<int64_t> sizes;
    int64_t added = 0;
    for (auto* rs : active) {
      int64_t size = specReplicas(*rs);
      int64_t part = 0;
      if (toAdd != 0 && added != toAdd) {
        std::string maxAnn = stringOf(child(child((*rs)->obj(), "metadata"), "annotations"),
                                      kMaxReplicasAnnotation);
        int64_t annotated = maxAnn.empty() ? intOf(child(v.d->obj(), "status"), "replicas")
                                           : std::atoll(maxAnn.c_str());
        int64_t fraction = -size;
        if (v.replicas > 0 && annotated > 0) {
          double scaled = static_cast<double>(size) * static_cast<double>(allowed) /
                          static_cast<double>(annotated);
          fraction = static_cast<int64_t>(std::llround(scaled)) - size;
        }
        int64_t left = toAdd - added;
        part = toAdd > 0 ? std::min(fraction, left) : std::max(fraction, left);
      }
      added += part;
      sizes.push_back(size + part);
    }
    if (!sizes.empty() && added != toAdd) sizes[0] = std::max<int64_t>(0, sizes[0] + toAdd - added);
    for (size_t i = 0; i < active.size(); ++i) {
      if (auto s = scaleRS(v, *active[i], sizes[i]); !s) return s;
    }
    return kube::Status::OK();
  }

  bool complete(const View& v) {
    if (!v.newRS) return false;
    int64_t total = 0;
    for (const auto& rs : v.all()) total += statusCount(rs, "replicas");
    return statusCount(v.newRS, "replicas") == v.replicas && total == v.replicas &&
           statusCount(v.newRS, "availableReplicas") == v.replicas;
  }

  // Deletes old, empty ReplicaSets beyond spec.revisionHistoryLimit (oldest revision first).
  void cleanup(View& v) {
    int64_t limit = intOf(child(v.d->obj(), "spec"), "revisionHistoryLimit", 10);
    std::vector<CachedPtr> alive;
    for (const auto& rs : v.oldRSs) {
      if (!kube::isBeingDeleted(rs->obj())) alive.push_back(rs);
    }
    int64_t diff = static_cast<int64_t>(alive.size()) - limit;
    if (diff <= 0) return;
    std::sort(alive.begin(), alive.end(), [](const CachedPtr& a, const CachedPtr& b) {
      return revisionOf(a->obj()) < revisionOf(b->obj());
    });
    for (const auto& rs : alive) {
      if (diff <= 0) break;
      if (specReplicas(rs) != 0 || statusCount(rs, "replicas") != 0 ||
          statusCount(rs, "observedGeneration") != kube::getGeneration(rs->obj())) {
        continue;
      }
      DeleteOptions d;
      d.preconditionUid = rs->uid;
      auto r = ctx_.rest.remove(rsInfo_, rs->ns, rs->name, d);
      if (r || r.error().code == kube::Code::NotFound) --diff;
      spdlog::info("event=old_replicaset_deleted deployment={} replicaset={}", v.key, rs->name);
    }
  }

  // Writes status from the ReplicaSets (upstream calculateStatus + syncRolloutStatus).
  kube::Status syncStatus(View& v, bool rollout) {
    int64_t replicas = 0, ready = 0, available = 0, totalSpec = 0;
    for (const auto& rs : v.all()) {
      replicas += statusCount(rs, "replicas");
      ready += statusCount(rs, "readyReplicas");
      available += statusCount(rs, "availableReplicas");
      totalSpec += specReplicas(rs);
    }
    int64_t updated = v.newRS ? statusCount(v.newRS, "replicas") : 0;
    int64_t unavailable = std::max<int64_t>(totalSpec - available, 0);
    const int64_t generation = kube::getGeneration(v.d->obj());
    const int64_t minAvailable = v.replicas - maxUnavailableOf(v.d->obj());
    const json& spec = child(v.d->obj(), "spec");
    const bool hasDeadline = spec.contains("progressDeadlineSeconds");
    const int64_t deadline = intOf(spec, "progressDeadlineSeconds", 600);
    const std::string rsName = v.newRS ? v.newRS->name : "";
    std::optional<std::chrono::seconds> recheck;
    auto r = ctx_.rest.mutate(dInfo_, v.d->ns, v.d->name, "status", [&](json& obj) {
      json& st = obj["status"];
      if (!st.is_object()) st = json::object();
      const json before = st;
      st["observedGeneration"] = generation;
      st["replicas"] = replicas;
      st["updatedReplicas"] = updated;
      st["readyReplicas"] = ready;
      st["availableReplicas"] = available;
      st["unavailableReplicas"] = unavailable;
      for (const char* k : {"replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                            "unavailableReplicas"}) {
        if (st[k] == 0) st.erase(k);
      }
      const std::string now = kube::rfc3339Now();
      if (available >= minAvailable) {
        setDeploymentCondition(st, "Available", "True", "MinimumReplicasAvailable",
                               "Deployment has minimum availability.", now);
      } else {
        setDeploymentCondition(st, "Available", "False", "MinimumReplicasUnavailable",
                               "Deployment does not have minimum availability.", now);
      }
      if (!rollout || !hasDeadline || !v.newRS || boolOf(spec, "paused")) {
        return kube::Status::OK();
      }
      const json* prog = findCondition(st, "Progressing");
      bool isComplete = updated == v.replicas && replicas == v.replicas &&
                        available == v.replicas;
      bool progressed = intOf(before, "updatedReplicas") < updated ||
                        intOf(before, "replicas") > replicas ||
                        intOf(before, "readyReplicas") < ready ||
                        intOf(before, "availableReplicas") < available;
      if (isComplete) {
        setDeploymentCondition(st, "Progressing", "True", "NewReplicaSetAvailable",
                               "ReplicaSet \"" + rsName + "\" has successfully progressed.", now);
      } else if (progressed || !prog) {
        json lastTransition = now;
        if (prog && stringOf(*prog, "status") == "True") {
          lastTransition = prog->value("lastTransitionTime", json(now));
        }
        json kept = json::array();
        for (const auto& c : childArray(st, "conditions")) {
          if (stringOf(c, "type") != "Progressing") kept.push_back(c);
        }
        kept.push_back({{"type", "Progressing"},
                        {"status", "True"},
                        {"reason", "ReplicaSetUpdated"},
                        {"message", "ReplicaSet \"" + rsName + "\" is progressing."},
                        {"lastUpdateTime", now},
                        {"lastTransitionTime", lastTransition}});
        st["conditions"] = kept;
        recheck = std::chrono::seconds(deadline);
      } else if (prog && stringOf(*prog, "reason") != "NewReplicaSetAvailable" &&
                 stringOf(*prog, "reason") != "ProgressDeadlineExceeded") {
        auto last = kube::parseRfc3339(stringOf(*prog, "lastUpdateTime"));
        auto due = last ? *last + std::chrono::seconds(deadline)
                        : std::chrono::system_clock::now();
        if (due <= std::chrono::system_clock::now()) {
          setDeploymentCondition(st, "Progressing", "False", "ProgressDeadlineExceeded",
                                 "ReplicaSet \"" + rsName + "\" has timed out progressing.", now);
        } else {
          recheck = std::chrono::duration_cast<std::chrono::seconds>(
                        due - std::chrono::system_clock::now()) +
                    std::chrono::seconds(1);
        }
      }
      return kube::Status::OK();
    });
    if (recheck) queue_.addAfter(v.key, *recheck);
    if (!r && r.error().code != kube::Code::NotFound) return r.error();
    return kube::Status::OK();
  }

  ControllerContext& ctx_;
  const ResourceInfo& dInfo_;
  const ResourceInfo& rsInfo_;
  LocalInformer& deps_;
  LocalInformer& sets_;
  LocalInformer& pods_;
  kube::WorkerPool queue_;
};

}  // namespace

std::unique_ptr<Controller> newDeploymentController(ControllerContext& ctx) {
  return std::make_unique<DeploymentController>(ctx);
}

}  // namespace strait::minicluster
