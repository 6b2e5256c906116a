// Pod informer handlers of Pod-owning controllers, see controlled_pods.h.
#include "minicluster/controlled_pods.h"

#include <memory>

#include "kube/json_access.h"
#include "kube/object.h"
#include "kube/selector.h"

namespace strait::minicluster {

using json = nlohmann::json;

std::optional<std::string> controllingOwnerKey(const std::string& ownerKind,
                                               const LocalInformer& owners,
                                               const CachedObject& pod) {
  auto ref = kube::getControllerOf(*pod.head());
  if (!ref || kube::stringOf(*ref, "kind") != ownerKind) return std::nullopt;
  auto owner = owners.get(pod.ns, kube::stringOf(*ref, "name"));
  if (!owner || owner->uid != kube::stringOf(*ref, "uid")) return std::nullopt;
  return objectKey(owner->ns, owner->name);
}

namespace {

struct Handlers {
  std::string kind;
  const LocalInformer& owners;
  kube::WorkerPool& queue;
  Expectations& expectations;

  std::optional<std::string> controllerKey(const CachedObject& pod) const {
    return controllingOwnerKey(kind, owners, pod);
  }

  void podDeleted(const CachedPtr& p) {
    if (auto key = controllerKey(*p)) {
      expectations.deletionObserved(*key, objectKey(p->ns, p->name));
      queue.add(*key);
    }
  }

  // An orphan changed: every owner of its namespace whose selector matches may adopt it.
  void enqueueMatching(const CachedObject& pod) {
    auto labels = kube::getLabels(*pod.head());
    for (const auto& o : owners.list(pod.ns)) {
      auto sel =
          kube::LabelSelector::fromJson(kube::child(o->obj(), "spec").value("selector", json()));
      if (sel && !sel->empty() && sel->matches(labels)) queue.add(objectKey(o->ns, o->name));
    }
  }
};

}  // namespace

InformerHandlers controlledPodHandlers(std::string ownerKind, const LocalInformer& owners,
                                       kube::WorkerPool& queue, Expectations& expectations) {
  auto h = std::make_shared<Handlers>(Handlers{std::move(ownerKind), owners, queue, expectations});
  InformerHandlers pod;
  pod.onAdd = [h](const CachedPtr& p) {
    if (kube::isBeingDeleted(*p->head())) return h->podDeleted(p);
    if (auto key = h->controllerKey(*p)) {
      h->expectations.creationObserved(*key);
      h->queue.add(*key);
    } else {
      h->enqueueMatching(*p);
    }
  };
  pod.onUpdate = [h](const CachedPtr& old, const CachedPtr& cur) {
    if (kube::isBeingDeleted(*cur->head()) && !kube::isBeingDeleted(*old->head())) {
      h->podDeleted(cur);
    }
    auto oldKey = h->controllerKey(*old), curKey = h->controllerKey(*cur);
    if (oldKey && oldKey != curKey) h->queue.add(*oldKey);
    if (curKey) {
      h->queue.add(*curKey);
    } else if (kube::getLabels(*old->head()) != kube::getLabels(*cur->head()) || oldKey) {
      h->enqueueMatching(*cur);
    }
  };
  pod.onDelete = [h](const CachedPtr& p) { h->podDeleted(p); };
  return pod;
}

}  // namespace strait::minicluster
