#pragma once
// pods/binding semantics shared by the HTTP handler and the in-process scheduler: assigns an
// unassigned, not-deleting pod to a node and sets PodScheduled=True.
//
// Thread-safe (a Rest read-modify-write).

#include <string>

#include "minicluster/registry.h"
#include "minicluster/rest.h"

namespace strait::minicluster {

// Binds pod ns/name to `node`. Conflict when the pod is already assigned or being deleted,
// NotFound when it is gone; `expectedUid` (if non-empty) must match the pod's uid.
Result<ObjectPtr> bindPod(Rest& rest, const ResourceInfo& pods, const std::string& ns,
                          const std::string& name, const std::string& node,
                          const std::string& expectedUid = {});

}  // namespace strait::minicluster
