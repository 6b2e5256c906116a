#pragma once
// Resource limits and usage of the process runtime's containers through cgroups (private to
// minicluster/).
//
// Layout: under this process's own cgroup, a parent named "strait-<marker>-<cluster>"
// (cgroupParentName; the marker of netns.h, so two clusters never share one), a cgroup per
// Pod ("pod<uid>") and in it one per container instance (its name). The mode is chosen once,
// at start:
//   V2    the unified hierarchy has the cpu and memory controllers (cgroup.controllers of our
//         cgroup) and they can be enabled below it: memory.max, cpu.max, cpu.weight,
//         memory.swap.max 0; usage from cpu.stat, memory.current, memory.stat; OOM kills
//         from memory.events.
//   V1    otherwise, when the memory, cpu and cpuacct hierarchies are mounted and the parent
//         can be created in each: memory.limit_in_bytes (+ memsw, swappiness 0),
//         cpu.cfs_quota_us/cfs_period_us, cpu.shares; usage from cpuacct.usage,
//         memory.usage_in_bytes, memory.stat; OOM kills from memory.oom_control.
//   None  neither: no limit is enforced (reason() says why); usage is read from /proc per
//         process (the container's session).
// Limits follow the kubelet: memory limit = limits.memory; CPU quota = limits.cpu x 100 ms
// per 100 ms period; shares = requests.cpu x 1024 (limits.cpu when no request; 2 without
// either), weight = 1 + (shares - 2) x 9999 / 262142.
//
// A container joins its cgroups before it execs: the launcher writes "0" into each
// cgroup.procs file prepareContainer() returns.
//
// Not thread-safe for the mutating calls (the runtime's loop thread); sample*() and
// oomKills() only read files and may run on any thread.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/status.h"

namespace strait::minicluster {

enum class CgroupMode { V2, V1, None };

// Annotation on every process-runtime Node: how resources.limits are enforced there
// (ProcessCgroups::describe(): "cgroup v2", "cgroup v1" or "none: <reason>").
inline constexpr const char* kResourceLimitsAnnotation = "minicluster.strait.io/resource-limits";

// Where this process sits in the cgroup hierarchies, from /proc/self/cgroup and
// /proc/self/mountinfo.
struct CgroupMounts {
  std::string unifiedDir;  // our cgroup in the cgroup2 mount ("" when none)
  // v1 controller ("memory", "cpu", "cpuacct") -> our cgroup's directory in its hierarchy.
  std::map<std::string, std::string> v1Dirs;
  // Where the hierarchies above are mounted (each once).
  std::vector<std::string> mountPoints;
};
// Pure: parses the two files' text.
CgroupMounts parseCgroupMounts(std::string_view procSelfCgroup, std::string_view mountinfo);

// "strait-<marker>-<cluster>": the parent cgroup of a cluster's Pods.
std::string cgroupParentName(const std::string& clusterName);

struct ContainerLimits {
  std::optional<int64_t> memoryBytes;  // limits.memory
  std::optional<int64_t> cpuQuotaUs;   // limits.cpu per cpuPeriodUs
  int64_t cpuPeriodUs = 100000;
  int64_t cpuShares = 2;
  // cgroup v2 cpu.weight for cpuShares.
  int64_t cpuWeight() const;
};
// Pure: the limits of a core/v1 Container (its resources).
ContainerLimits containerLimits(const nlohmann::json& container);

// Cumulative usage of one container instance at one moment.
struct UsageSample {
  std::optional<uint64_t> cpuNs;  // CPU time since the instance started
  std::optional<uint64_t> memoryUsage, workingSet, rss;
};

// Pure: the value of `key` in a "key value" per line file (memory.stat, cpu.stat,
// memory.events, memory.oom_control).
std::optional<uint64_t> statField(std::string_view text, std::string_view key);

// Usage of the processes of session `sid` (a container: its process started a session),
// from /proc: utime+stime (+ reaped children) and resident memory.
UsageSample sampleSession(pid_t sid);

class ProcessCgroups {
 public:
  // Chooses the mode (see the top of this file), creates the parent cgroup(s) and removes what
  // a killed predecessor left in them. Never fails: None carries the reason.
  static std::unique_ptr<ProcessCgroups> open(const std::string& clusterName);

  CgroupMode mode() const { return mode_; }
  // Why limits are not enforced (None); "" otherwise.
  const std::string& reason() const { return reason_; }
  // "cgroup v2", "cgroup v1" or "none: <reason>", for logs and the Node annotation.
  std::string describe() const;

  // Creates the cgroups of a new instance of `container` of Pod `podUid` (replacing the
  // previous instance's) with `limits`. Returns the cgroup.procs files the instance's process
  // must join; empty in None. Error naming the file when a limit cannot be written.
  kube::Result<std::vector<std::string>> prepareContainer(const std::string& podUid,
                                                          const std::string& container,
                                                          const ContainerLimits& limits);
  // Usage of the container's cgroup (nullopt fields when unreadable; all empty in None).
  UsageSample sampleContainer(const std::string& podUid, const std::string& container) const;
  // OOM kills in the container's cgroup since prepareContainer (0 in None).
  uint64_t oomKills(const std::string& podUid, const std::string& container) const;
  // Kills what is left in the Pod's cgroups and removes them. Idempotent.
  void removePod(const std::string& podUid);
  // Kills and removes every cgroup under the parent, and the parent too when `removeParent`.
  // Returns how many cgroups were removed.
  int sweep(bool removeParent);

  // Removes what a cluster named `clusterName` left in any hierarchy (its parent cgroup,
  // looked for down to four levels below each mount point, so a predecessor started from
  // another delegated cgroup is found too): the count removed. open() runs it first; also
  // for `--cleanup`.
  static int sweepCluster(const std::string& clusterName);

 private:
  ProcessCgroups() = default;
  // The parent directory in each hierarchy (one for V2, memory/cpu/cpuacct for V1).
  std::vector<std::string> parents() const;
  std::string dirIn(const std::string& parent, const std::string& podUid,
                    const std::string& container) const;

  CgroupMode mode_ = CgroupMode::None;
  std::string reason_;
  std::string v2Parent_;
  std::string memoryParent_, cpuParent_, cpuacctParent_;
};

}  // namespace strait::minicluster
