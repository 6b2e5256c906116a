#pragma once
// Controller references (upstream pkg/controller/controller_ref_manager.go): which objects
// an owner (ReplicaSet, Deployment) controls, adopting orphans that match its selector and
// releasing owned objects that no longer match. Writes go through Rest::mutate.
// Thread-safe as Rest is; no state of its own.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/selector.h"
#include "minicluster/local_informer.h"
#include "minicluster/rest.h"

namespace strait::minicluster {

struct OwnerInfo {
  std::string apiVersion;  // "apps/v1"
  std::string kind;        // "ReplicaSet"
  std::string name;
  std::string uid;
  bool deleting = false;   // owner has a deletionTimestamp: adopt and release nothing
};

// The ownerReference an owner puts on the objects it creates: controller and
// blockOwnerDeletion true.
nlohmann::json controllerRef(const OwnerInfo& owner);

// Returns the candidates this owner controls after claiming: already owned and matching
// (kept), orphans that match (adopted: ownerReference added), owned but not matching
// (released: ownerReference removed, not returned). Objects being deleted are neither
// adopted nor released. A failed adoption or release is logged and the object skipped;
// the caller's next sync tries again.
std::vector<CachedPtr> claimObjects(Rest& rest, const ResourceInfo& childInfo,
                                    const OwnerInfo& owner, const kube::LabelSelector& selector,
                                    const std::vector<CachedPtr>& candidates);

}  // namespace strait::minicluster
