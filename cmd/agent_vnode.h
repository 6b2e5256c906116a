#pragma once
// The consumer half of `strait agent` that lives above peering/: the virtual kubelets (one
// per peering, told by the agent's PeeringObserver hook) and the toleration webhook. Split
// from agent_cmd.cpp so that file stays the plain composition root.

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "kube/client.h"
#include "kube/pki.h"
#include "peering/observer.h"

namespace strait::vnode {
class VirtualKubeletManager;
class WebhookServer;
}  // namespace strait::vnode

namespace strait::cmd {

struct VnodeFlags {
  std::string taintEffect = "NoExecute";
  std::string streamGrace = "40s";
  int kubeletPort = 10250;
  std::string nodeAddress = "127.0.0.1";
  std::string webhookListen = "127.0.0.1:0";
  std::string webhookHost;
  std::string webhookService;  // NAMESPACE/NAME: register clientConfig.service, not a URL
  bool noWebhook = false;
  bool noVirtualNodes = false;
  int podWorkers = 32;  // Pods reflected at once per virtual node (each waits on the stream)
  // The agent's --kube-qps/--kube-burst (set by agent_cmd.cpp, not flags of their own).
  double kubeQps = 1000;
  int kubeBurst = 2000;
};

// Registers the --vnode-*, --kubelet-port and --webhook-* flags on the agent command.
void addVnodeFlags(CLI::App* agent, VnodeFlags& f);

// Owns the consumer-side runtime. Not thread-safe: created, started and stopped by main.
class VnodeRuntime {
 public:
  // Validates the flags (Invalid naming the flag) and connects a client; starts nothing.
  static kube::Result<std::unique_ptr<VnodeRuntime>> create(const VnodeFlags& f,
                                                            const std::string& kubeconfig);
  ~VnodeRuntime();
  // For AgentConfig.consumer.observer (valid while this object lives).
  peering::PeeringObserver* observer();
  // Starts the webhook with a serving certificate from `ca` (after the agent started).
  kube::Status startWebhook(const kube::KeyPair& ca);
  // Stops the virtual kubelets and the webhook. Idempotent.
  void stop();

 private:
  VnodeRuntime() = default;
  VnodeFlags flags_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<vnode::VirtualKubeletManager> manager_;
  std::unique_ptr<vnode::WebhookServer> webhook_;
};

}  // namespace strait::cmd
