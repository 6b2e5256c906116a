#pragma once
// The minicluster's scheduler: places pods whose spec.schedulerName is "default-scheduler"
// (pods naming another scheduler are left alone) with the plugins of scheduler_plugins.h,
// binds them through pods/binding semantics, and reports unschedulable pods as upstream does
// (PodScheduled=False reason Unschedulable with the FitError message, a FailedScheduling
// Event). Unschedulable pods are retried when the cluster changes (a node added or changed,
// a pod deleted or finished) and at least every minute.
//
// Thread-safe. The constructor does no I/O; start() launches one thread, stop() joins it.

#include <cstdint>
#include <memory>

#include "minicluster/registry.h"
#include "minicluster/rest.h"
#include "minicluster/store.h"

namespace strait::minicluster {

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual void start() = 0;
  // Idempotent.
  virtual void stop() = 0;
  // Pods bound so far (for benchmarks and tests). Any thread.
  virtual uint64_t boundCount() const = 0;
};

std::unique_ptr<Scheduler> newScheduler(Store& store, Registry& registry, Rest& rest);

}  // namespace strait::minicluster
