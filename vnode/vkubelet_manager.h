#pragma once
// One VirtualKubelet per usable peering: the consumer agent's PeeringObserver
// (peering/observer.h), set by cmd/agent_cmd.cpp. Beside it, the peering's pool nodes
// (pool_nodes.h), started and ended with it. peeringUp starts a virtual kubelet for the
// provider (replacing one left from an earlier peering with it), peeringDown stops it and
// deletes its Node (the peering is over; stop() on agent shutdown keeps the Nodes).
// With a fixed --kubelet-port P, the virtual nodes listen on P, P+1, ... (the lowest port no
// other virtual node of this agent holds; a provider keeps its port while it stays peered);
// with 0 each picks any free port. The Node advertises the port either way.
//
// Thread-safety: peeringUp/peeringDown come from the agent's loop thread; stop() and the
// accessors may be called from any thread.

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "peering/observer.h"
#include "vnode/pool_nodes.h"
#include "vnode/virtual_kubelet.h"

namespace strait::vnode {

// The kubelet port for a new virtual node: `base` when 0 (any free port), else the lowest port
// >= base not in `taken`; 0 when none is left below 65536 (then any free port).
int chooseKubeletPort(int base, const std::set<int>& taken);

class VirtualKubeletManager final : public peering::PeeringObserver {
 public:
  // `local` is borrowed and must outlive the manager. `templ` is copied into every virtual
  // kubelet's options (its `peering` is set per peering).
  VirtualKubeletManager(kube::Client& local, VirtualKubeletOptions templ);
  ~VirtualKubeletManager() override;  // stop()

  void peeringUp(std::shared_ptr<peering::LivePeering> peering) override;
  void peeringDown(const std::string& providerId) override;

  // Stops every virtual kubelet. Idempotent; later peeringUp calls are ignored.
  void stop();
  // Names of the running virtual nodes (pool nodes included), sorted.
  std::vector<std::string> nodeNames() const;

 private:
  kube::Client& local_;
  const VirtualKubeletOptions templ_;
  mutable base::Mutex mu_;
  // By provider ID.
  std::map<std::string, std::unique_ptr<VirtualKubelet>> kubelets_ GUARDED_BY(mu_);
  // By provider ID: the pool nodes of the peering.
  std::map<std::string, std::unique_ptr<PoolNodes>> pools_ GUARDED_BY(mu_);
  // Kubelet port by provider ID, while peered.
  std::map<std::string, int> ports_ GUARDED_BY(mu_);
  bool stopped_ GUARDED_BY(mu_) = false;
};

}  // namespace strait::vnode
