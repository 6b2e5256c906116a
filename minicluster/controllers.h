#pragma once
// Control loops the API server itself runs (kube-controller-manager's part that the
// foundation needs): the garbage collector (ownerReferences with Background, Foreground and
// Orphan propagation) and the namespace controller (empties a terminating namespace, then
// finalizes it).
//
// Thread-safe; start() launches one background thread, stop() joins it.

#include <memory>

#include "minicluster/registry.h"
#include "minicluster/rest.h"
#include "minicluster/store.h"

namespace strait::minicluster {

class Controllers {
 public:
  virtual ~Controllers() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
};

std::unique_ptr<Controllers> newControllers(Store& store, Registry& registry, Rest& rest);

}  // namespace strait::minicluster
