#pragma once
// ClusterIP Services for the process runtime (private to minicluster/), as kube-proxy's
// nftables mode does them: in every node's network namespace one table `ip strait-services`
// DNATs each Service's ClusterIP:port to one of its ready endpoints (from EndpointSlices),
// chosen at random per connection (numgen random + a verdict map); connections DNATed to a
// Pod on the same node's bridge are masqueraded so that the reply comes back through the
// node. NodePorts (type NodePort/LoadBalancer) answer on every node's addresses, and the
// connections that come from outside the cluster's pod CIDR are masqueraded, so replies find
// their way back through the node that DNATed them. The table is built from the store's Services and EndpointSlices and replaced
// atomically (`nft -f`, through `ip netns exec`) within ~100 ms of a change.
//
// Thread-safe: start()/stop() from the owner; one thread of its own applies the rules.

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/status.h"
#include "minicluster/store.h"

namespace strait::minicluster {

// The nft script (a whole-table replacement) for `services` (core/v1 Service objects) and
// `slices` (discovery/v1 EndpointSlice objects). Services without a ClusterIP (headless,
// ExternalName) are skipped; endpoints whose condition ready is false are not used.
// `podBridge` is the node's Pod bridge, `podCidr` the cluster's. Pure.
std::string buildServiceRules(const std::vector<nlohmann::json>& services,
                              const std::vector<nlohmann::json>& slices,
                              const std::string& podBridge, const std::string& podCidr);

class ServiceProxy {
 public:
  virtual ~ServiceProxy() = default;
  // Applies the current rules to every namespace, then follows changes on a thread. Error
  // when the first apply fails (the message is nft's).
  virtual kube::Status start() = 0;
  // Stops following and deletes the table from every namespace. Idempotent.
  virtual void stop() = 0;
};

// `nodeNetns`: names of the node namespaces (ip netns). `store` must outlive the result.
std::unique_ptr<ServiceProxy> newServiceProxy(Store& store, std::vector<std::string> nodeNetns,
                                              std::string podCidr, std::string podBridge = "cbr0");

}  // namespace strait::minicluster
