#pragma once
// offload_bench --compare: the Liqo-style comparison. One Deployment of N replicas brought to
// all Ready twice in the same run: created directly in a provider-like cluster ("direct":
// 25 simulated nodes, zero start latency), and created in a consumer cluster that has no
// nodes of its own, only the virtual node of a peering with an identical provider cluster
// (real `strait agent`s, `strait peer`, `strait offload namespace`). Prints both times, their
// ratio (aim <= 1.5x) and the offloaded Pods/s (aim >= 300), and the API requests each side's
// server answered per offloaded Pod, by verb and resource (apiserver_request_total from
// --metrics-listen, the benchmark's own polling subtracted), and the CPU seconds and context
// switches of both API servers and both agents during the offloaded run (switches per Pod,
// and the consumer agent's by thread name). With `perfDir` set, `perf record` samples both
// API servers and both agents during each offloaded run into that directory.
//
// Runs in the calling thread; starts and stops its own processes.

#include <string>
#include <vector>

namespace strait::bench {

struct CompareFlags {
  std::string strait;             // the strait binary
  std::vector<int> replicas;      // one Deployment per entry, in order
  int providerNodes = 25;
  int timeoutSeconds = 900;       // per Deployment
  std::string perfDir;            // empty: no perf
  std::string perfEvent;          // perf's -e (e.g. sched:sched_switch); empty: CPU samples
  std::vector<std::string> consumerAgentArgs;  // extra `strait agent` flags (consumer)
  bool json = false;
};

// Returns the process exit code (0: every Deployment reached all Ready on both sides).
int runOffloadCompare(const CompareFlags& f);

}  // namespace strait::bench
