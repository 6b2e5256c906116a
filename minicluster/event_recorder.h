#pragma once
// Writes core/v1 Events for the minicluster's in-process components (scheduler, simulated
// kubelets, node lifecycle controller), as client-go's event recorder does: one Event per
// (object, reason, message), whose count and lastTimestamp grow when it repeats.
//
// Thread-safe.

#include <map>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "base/thread_annotations.h"
#include "minicluster/registry.h"
#include "minicluster/rest.h"

namespace strait::minicluster {

class EventRecorder {
 public:
  // `component` is source.component / reportingComponent ("default-scheduler", "kubelet").
  EventRecorder(Rest& rest, Registry& registry, std::string component);

  // Records an event about `object` (a full object: kind, apiVersion, metadata used).
  // `type` is "Normal" or "Warning". `host` goes to source.host when non-empty. Failures are
  // logged, never returned: events are best effort, as upstream.
  void record(const nlohmann::json& object, const std::string& type, const std::string& reason,
              const std::string& message, const std::string& host = {});

 private:
  Rest& rest_;
  ResourceInfoPtr events_;
  std::string component_;

  base::Mutex mu_;
  // Key (uid/reason/message) -> event name, for counting.
  std::map<std::string, std::string> seen_ GUARDED_BY(mu_);
};

}  // namespace strait::minicluster
