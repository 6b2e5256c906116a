#pragma once
// Configuration of the minicluster's simulated data plane: the node pools whose kubelets the
// minicluster simulates, the cluster pod CIDR they split, pod start latency, and the
// settings of the scheduler and node lifecycle controller. Value types plus pure parsing
// helpers (node-pool YAML, CIDR splitting); unit-testable without a server.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/quantity.h"
#include "kube/status.h"

namespace strait::minicluster {

// A group of identical simulated nodes named "<namePrefix>-<i>" (i from 0).
struct NodePool {
  std::string namePrefix = "node";
  int count = 0;
  // Capacity (= allocatable): cpu, memory, pods, ephemeral-storage and extended resources
  // such as nvidia.com/gpu.
  std::map<std::string, kube::Quantity> capacity;
  std::map<std::string, std::string> labels;
  nlohmann::json taints = nlohmann::json::array();  // core/v1 Taint objects
};

// What runs a node's Pods: the simulation (nothing runs; scale tests, no root needed) or real
// processes in network namespaces (runtime_process.h; root).
enum class RuntimeKind { Simulated, Process };

struct SimulationOptions {
  std::vector<NodePool> pools;               // empty = no simulated nodes
  RuntimeKind runtime = RuntimeKind::Simulated;
  std::string podCidr = "10.244.0.0/16";     // split into one /24 (or smaller) per node
  int nodeCidrMaskSize = 24;
  std::chrono::milliseconds podStartLatency{500};
  std::chrono::milliseconds leaseRenewInterval{10000};
  std::chrono::milliseconds nodeStatusInterval{60000};
  bool runScheduler = true;
  std::chrono::milliseconds nodeMonitorGracePeriod{40000};
  std::chrono::milliseconds nodeMonitorPeriod{1000};
  int64_t defaultTolerationSeconds = 300;
  // Process runtime: image reference -> host binary its containers run (runtime_process.h).
  std::map<std::string, std::string> localImages;
};

// The pool of `--nodes N --node-cpu C --node-memory M --node-pods P` (prefix "node").
// Error (Invalid) naming the flag whose value does not parse.
kube::Result<NodePool> poolFromFlags(int count, const std::string& cpu, const std::string& memory,
                                     const std::string& pods, const std::string& ephemeral);

// Parses a node-pools file:
//   pools:
//   - name: gpu            # name prefix; nodes gpu-0, gpu-1...
//     count: 2
//     capacity: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "4"}
//     labels: {accelerator: a100}
//     taints: [{key: gpu, value: "true", effect: NoSchedule}]
// Missing cpu/memory/pods/ephemeral-storage default to 4, 8Gi, 110, 100Gi. Error (Invalid)
// naming `source`, the pool index and the field.
kube::Result<std::vector<NodePool>> parseNodePools(const std::string& yamlText,
                                                   const std::string& source);

// Splits `cidr` (IPv4 "a.b.c.d/len") into `count` consecutive subnets of /maskSize, in order.
// Error (Invalid) when the CIDR is malformed or too small for `count` subnets.
kube::Result<std::vector<std::string>> splitPodCidr(const std::string& cidr, int maskSize,
                                                    int count);

// Parses "500ms", "2s", "1m", "1h" (Go duration subset: one or more number+unit groups).
kube::Result<std::chrono::milliseconds> parseDuration(const std::string& text);

}  // namespace strait::minicluster
