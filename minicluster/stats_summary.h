#pragma once
// The kubelet's stats Summary (stats/v1alpha1, what GET /stats/summary returns) built from
// cumulative usage samples (private to minicluster/):
//   {"node": {"nodeName", "startTime", "cpu": {...}, "memory": {...}},
//    "pods": [{"podRef": {"name", "namespace", "uid"}, "startTime",
//              "containers": [{"name", "startTime", "cpu", "memory"}], "cpu", "memory"}]}
// cpu = {"time", "usageNanoCores", "usageCoreNanoSeconds"}; memory = {"time", "usageBytes",
// "workingSetBytes", "rssBytes"}. A field is left out when it is not known (no invented
// zeros). usageNanoCores is a rate between two samples of the same container instance (as
// cAdvisor computes it), so it appears only once an earlier sample exists. Pod figures are
// the sums of their containers', the node's the sums of its Pods'.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/thread_annotations.h"
#include "minicluster/runtime_process_cgroup.h"

namespace strait::minicluster {

struct ContainerStats {
  std::string name;
  std::string instance;  // identifies the running instance (rates never span two)
  std::chrono::system_clock::time_point startTime;
  UsageSample usage;
};

struct PodStats {
  std::string ns, name, uid;
  std::chrono::system_clock::time_point startTime;
  std::vector<ContainerStats> containers;  // running containers only
};

// Remembers cumulative CPU samples per container instance to turn them into rates.
// Thread-safe.
class CpuRateTracker {
 public:
  explicit CpuRateTracker(std::chrono::milliseconds minInterval = std::chrono::milliseconds(500))
      : minInterval_(minInterval) {}
  // True when `instance` has a sample at least minInterval older than `now`.
  bool hasBaseline(const std::string& instance, std::chrono::steady_clock::time_point now) const;
  // Records (now, cpuNs) and returns the CPU rate in nanocores against the newest earlier
  // sample at least minInterval old; nullopt when there is none (or the counter went back).
  std::optional<uint64_t> rate(const std::string& instance,
                               std::chrono::steady_clock::time_point now, uint64_t cpuNs);
  // Forgets instances not sampled since `before`.
  void forgetOlderThan(std::chrono::steady_clock::time_point before);

 private:
  struct Sample {
    std::chrono::steady_clock::time_point at;
    uint64_t cpuNs = 0;
  };
  struct History {
    std::optional<Sample> older, newer;
  };
  const std::chrono::milliseconds minInterval_;
  mutable base::Mutex mu_;
  std::map<std::string, History> history_ GUARDED_BY(mu_);
};

// The Summary of node `nodeName` (started at `nodeStart`) with `pods`, sampled at
// (`now`, `steadyNow`); rates from `rates`. Pure apart from the tracker.
nlohmann::json buildStatsSummary(const std::string& nodeName,
                                 std::chrono::system_clock::time_point nodeStart,
                                 const std::vector<PodStats>& pods,
                                 std::chrono::system_clock::time_point now,
                                 std::chrono::steady_clock::time_point steadyNow,
                                 CpuRateTracker& rates);

}  // namespace strait::minicluster
