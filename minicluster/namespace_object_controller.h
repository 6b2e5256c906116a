#pragma once
// A controller that keeps one named object in every active namespace (the shape shared by
// upstream's ServiceAccount controller and root-CA publisher): when a namespace appears, or
// the object is deleted (or, with `revertEdits`, changed), it is created again or brought
// back to the wanted state. Work is keyed by namespace on one work queue. Thread-safety as
// Controller: start()/stop() from the manager; the rest runs on the queue's worker.

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "minicluster/controller_context.h"

namespace strait::minicluster {

struct NamespaceObjectSpec {
  std::string queueName;  // names the work queue in logs
  std::string resource;   // a core resource: "serviceaccounts", "configmaps"
  std::string name;       // the object's name in every namespace
  std::string event;      // log event on create: "serviceaccount_created"
  // The whole object wanted in namespace `ns` (apiVersion, kind, metadata, content).
  std::function<nlohmann::json(const std::string& ns)> build;
  // Whether an existing object is as wanted; when unset, existing is enough.
  std::function<bool(const nlohmann::json& current)> upToDate;
  // Brings an existing object to the wanted state (used when upToDate says no).
  std::function<void(nlohmann::json& obj)> repair;
};

std::unique_ptr<Controller> newNamespaceObjectController(ControllerContext& ctx,
                                                         NamespaceObjectSpec spec);

}  // namespace strait::minicluster
