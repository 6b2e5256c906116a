#include "minicluster/controller_ref.h"

#include <spdlog/spdlog.h>

#include "kube/object.h"

namespace strait::minicluster {

using json = nlohmann::json;

json controllerRef(const OwnerInfo& owner) {
  return {{"apiVersion", owner.apiVersion}, {"kind", owner.kind},   {"name", owner.name},
          {"uid", owner.uid},               {"controller", true}, {"blockOwnerDeletion", true}};
}

std::vector<CachedPtr> claimObjects(Rest& rest, const ResourceInfo& childInfo,
                                    const OwnerInfo& owner, const kube::LabelSelector& selector,
                                    const std::vector<CachedPtr>& candidates) {
  std::vector<CachedPtr> claimed;
  for (const auto& c : candidates) {
    const JsonPtr tree = c->tree();
    auto ctrl = kube::getControllerOf(*tree);
    bool matches = selector.matches(kube::getLabels(*tree));
    bool childDeleting = kube::isBeingDeleted(*tree);
    if (ctrl) {
      if (ctrl->value("uid", "") != owner.uid) continue;
      if (matches) {
        claimed.push_back(c);
        continue;
      }
      if (owner.deleting || childDeleting) continue;
      auto r = rest.mutate(childInfo, c->ns, c->name, "", [&](json& obj) -> kube::Status {
        auto refs = kube::getOwnerReferences(obj);
        std::erase_if(refs, [&](const json& ref) { return ref.value("uid", "") == owner.uid; });
        kube::setOwnerReferences(obj, refs);
        if (refs.empty()) obj["metadata"].erase("ownerReferences");
        return kube::Status::OK();
      });
      if (!r) {
        spdlog::warn("event=release_failed owner={}/{} object={}/{} error=\"{}\"", owner.kind,
                     owner.name, c->ns, c->name, r.error().message);
      } else {
        spdlog::info("event=released owner={}/{} object={}/{}", owner.kind, owner.name, c->ns,
                     c->name);
      }
      continue;
    }
    if (owner.deleting || childDeleting || !matches) continue;
    auto r = rest.mutate(childInfo, c->ns, c->name, "", [&](json& obj) -> kube::Status {
      if (kube::getControllerOf(obj)) {
        return kube::makeError(kube::Code::Conflict, "object already has a controller");
      }
      auto refs = kube::getOwnerReferences(obj);
      refs.push_back(controllerRef(owner));
      kube::setOwnerReferences(obj, refs);
      return kube::Status::OK();
    });
    if (!r) {
      spdlog::warn("event=adopt_failed owner={}/{} object={}/{} error=\"{}\"", owner.kind,
                   owner.name, c->ns, c->name, r.error().message);
      continue;
    }
    spdlog::info("event=adopted owner={}/{} object={}/{}", owner.kind, owner.name, c->ns,
                 c->name);
    if (auto adopted = makeCached(*r)) claimed.push_back(adopted);
  }
  return claimed;
}

}  // namespace strait::minicluster
