#pragma once
// Cluster DNS for the process runtime (private to minicluster/): Debian's dnsmasq, run in the
// first node's network namespace on that node's address, answers
// `<service>.<namespace>.svc.cluster.local` with the Service's ClusterIP (a headless
// Service's name with its ready endpoints' addresses) and nothing outside cluster.local. It
// is fed from the store: a hosts file rewritten on every Service/EndpointSlice change, then
// SIGHUP. The `kube-dns` Service in kube-system (ClusterIP 10.96.0.10, port 53 UDP and TCP)
// and its EndpointSlice point at it, so Pods reach it through the Service rules.
//
// Thread-safe: start()/stop() from the owner; one thread of its own follows the store.

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/status.h"
#include "minicluster/registry.h"
#include "minicluster/rest.h"
#include "minicluster/store.h"

namespace strait::minicluster {

inline constexpr const char* kClusterDnsIP = "10.96.0.10";
inline constexpr const char* kClusterDomain = "cluster.local";

// The dnsmasq hosts file for `services` and `slices` (lines "IP NAME"). Pure.
std::string buildDnsHosts(const std::vector<nlohmann::json>& services,
                          const std::vector<nlohmann::json>& slices);

// The resolv.conf a kubelet writes for a ClusterFirst Pod of namespace `ns`.
std::string podResolvConf(const std::string& ns);

struct ClusterDnsOptions {
  std::string netnsPath;  // where dnsmasq runs (a node's namespace)
  std::string address;    // the address it listens on (that node's InternalIP)
  std::string dir;        // its hosts file, pid file and log go here
};

class ClusterDns {
 public:
  virtual ~ClusterDns() = default;
  // Writes the kube-dns Service and EndpointSlice, starts dnsmasq and follows the store.
  // Error when dnsmasq cannot start or the objects cannot be written.
  virtual kube::Status start() = 0;
  // Stops following and dnsmasq. Idempotent.
  virtual void stop() = 0;
};

std::unique_ptr<ClusterDns> newClusterDns(Store& store, Registry& registry, Rest& rest,
                                          ClusterDnsOptions opts);

}  // namespace strait::minicluster
