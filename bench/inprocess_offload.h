#pragma once
// offload_bench --in-process: the consumer's PodReflector and the provider's ProviderApplier
// wired in the benchmark process (as tests/e2e/vnode_pod_offload_test.cpp does), with no
// agents and no gRPC stream between them. It measures the reflection logic against the two
// real API servers; the agent pipeline is measured by the default mode.
//
// Not thread-safe: create and destroy from one thread. Reflector headers stay in the .cpp.

#include <memory>
#include <string>

namespace strait::bench {

class InProcessOffload {
 public:
  // Starts informers (local Pods on `virtualNode`, remote Pods of `consumerId`) and a
  // reflector with `workers` pod workers. nullptr with *error when a client cannot be made
  // or an informer does not sync within 60 s.
  static std::unique_ptr<InProcessOffload> start(const std::string& consumerKubeconfig,
                                                 const std::string& providerKubeconfig,
                                                 const std::string& consumerId,
                                                 const std::string& virtualNode, int workers,
                                                 std::string* error);
  virtual ~InProcessOffload() = default;
};

}  // namespace strait::bench
