#pragma once
// Container probes of the process runtime (private to minicluster/): exec, httpGet and
// tcpSocket, run from inside the Pod's network namespace as a kubelet runs them.

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "minicluster/runtime_process_launch.h"

namespace strait::minicluster {

// Where a probe runs: the container's sandbox and what named ports resolve to.
struct ProbeTarget {
  std::string netnsPath, hostname, workingDir, podIP;
  std::vector<std::pair<std::string, std::string>> env, bindFiles;
  std::vector<BindMount> mounts;  // the container's volumeMounts
  nlohmann::json containerPorts = nlohmann::json::array();
};

// The probe's settings with the kubelet's defaults.
struct ProbeTiming {
  std::chrono::seconds initialDelay{0}, period{10}, timeout{1};
  int successThreshold = 1, failureThreshold = 3;
};
ProbeTiming probeTiming(const nlohmann::json& probe);

// Runs `probe` (a core/v1 Probe) once against `target`: true on success (exec exit 0, HTTP
// 200-399, TCP connect). Blocks up to the probe's timeout; call it off the runtime's loop
// thread (it joins the Pod's network namespace on a thread of its own).
bool runProbe(const nlohmann::json& probe, const ProbeTarget& target);

}  // namespace strait::minicluster
