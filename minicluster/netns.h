#pragma once
// The network of one minicluster in the process runtime (private to minicluster/), built with
// iproute2 (`ip`) in network namespaces the cluster creates and owns:
//
//   host ns  ──<marker>h──┐                      (one veth: the API server reaches kubelets
//                          │                       and, via a route per podCIDR, Pod IPs)
//   <marker>-<cluster>-underlay:  bridge br0 joining the host link and every node's uplink
//   <marker>-<cluster>-<node>:    eth0 on the underlay (the Node's InternalIP), bridge cbr0
//                                 (first address of the node's podCIDR) for its Pods, a route
//                                 to every other node's podCIDR via that node's underlay
//                                 address (host-gw), IPv4 forwarding on
//   <marker>-<cluster>-pod-<uid>: eth0 (veth to the node's cbr0) with the podIP, default
//                                 route via the node
//
// Between clusters (two clouds and the internet): each node namespace routes 100.64.0.0/10,
// every underlay, via the host's address on its own underlay; the host forwards between the
// underlay links of the clusters on it (net.ipv4.conf.<marker>h.forwarding=1 on each link,
// not the global ip_forward) and has a route to each node's podCIDR via that node. A Pod's
// connection to another underlay leaves its node masqueraded to the node's address (nft
// table `ip strait-egress` in the node namespace, as a cloud NAT gateway would). Pod and
// Service CIDRs are never routed between clusters: what one cluster offers another is a
// NodePort (or LoadBalancer node port) on its nodes' underlay addresses. An overlay between
// clusters (a WireGuard tunnel) runs on top of this underlay.
//
// The marker is "st" + 6 hex digits of a hash of the cluster name; the underlay is a /24 in
// 100.64.0.0/10 chosen from the same hash (the next free one if taken on this host), so two
// clusters side by side share nothing, not even their pod CIDR. Everything created carries
// the marker, so sweep() finds what a killed minicluster left and nothing else.
//
// Not thread-safe: one owner thread (the process runtime's loop) calls the mutating methods.

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kube/status.h"

namespace strait::minicluster {

// The cluster's Service CIDR (ClusterIPs are allocated from it).
inline constexpr const char* kServiceCidr = "10.96.0.0/12";
// Where every cluster's underlay /24 lies; the node namespaces route it to the host.
inline constexpr const char* kUnderlayCidr = "100.64.0.0/10";
// The nft table (in each node namespace) that masquerades Pods leaving the cluster.
inline constexpr const char* kEgressTable = "strait-egress";

// What the process runtime needs from this machine and lacks ("root", "ip netns", ...);
// empty when it can run. Creates nothing. `needNft` / `needDnsmasq` add the programs that
// ClusterIP Services and cluster DNS use.
std::vector<std::string> missingProcessRuntimePrerequisites(bool needNft, bool needDnsmasq);

struct ProgramOutput {
  int exitCode = -1;  // 128 + signal when killed; -1 when it could not run
  std::string text;   // stdout and stderr, trailing newlines removed
};
// Runs argv (argv[0] searched in PATH, stdin /dev/null) and collects its output. Blocks.
ProgramOutput runProgram(const std::vector<std::string>& argv);

// "st" + 6 lowercase hex digits of a hash of `clusterName`.
std::string networkMarker(const std::string& clusterName);
// The prefix of every namespace of `clusterName`: "<marker>-<cluster, sanitized>-".
std::string namespacePrefix(const std::string& clusterName);

// What sweep() found and removed.
struct SweepReport {
  std::vector<std::string> namespaces, links;
  std::vector<pid_t> processes;
};

// Kills every process inside a namespace of `clusterName`, deletes those namespaces and the
// cluster's host link. Touches nothing without the cluster's marker. Safe when nothing is
// left. Blocks (a few ms per object).
SweepReport sweepClusterNetwork(const std::string& clusterName);

// Runs `fn` on a new thread that has joined the network namespace at `netnsPath` and waits
// for it. Sockets `fn` creates stay in that namespace. False if the namespace cannot be
// entered.
bool runInNetns(const std::string& netnsPath, const std::function<void()>& fn);

// SIGKILLs every process whose network namespace is the one at `netnsPath` (except this
// process) and waits until they are gone (bounded: 2 s). Returns the pids signalled.
std::vector<pid_t> killProcessesInNetns(const std::string& netnsPath);

struct NodeNetwork {
  std::string name;       // Node name
  std::string netns;      // namespace name
  std::string address;    // underlay address = InternalIP
  std::string podCidr;    // "10.244.1.0/24"
  std::string gateway;    // first address of podCidr (on cbr0)
};

class ClusterNetwork {
 public:
  explicit ClusterNetwork(std::string clusterName);
  ClusterNetwork(const ClusterNetwork&) = delete;
  ClusterNetwork& operator=(const ClusterNetwork&) = delete;

  // Creates the underlay namespace, its bridge and the host link, and one namespace per
  // node (name, podCIDR) with routes to the others. On failure everything created so far is
  // removed and the error names the step.
  kube::Status create(const std::vector<std::pair<std::string, std::string>>& nodes);
  // Removes every namespace, link and process of the cluster (sweepClusterNetwork).
  // Idempotent.
  void destroy();

  const std::map<std::string, NodeNetwork>& nodes() const { return nodes_; }
  // The host's address on the underlay ("100.a.b.1"); "" before create().
  std::string hostAddress() const { return underlayPrefix_.empty() ? "" : underlayPrefix_ + "1"; }
  // /run/netns/<ns>
  static std::string netnsPath(const std::string& netns);

  // Creates the namespace of a Pod on `node` with `podIP` (veth to the node's bridge,
  // default route via the node). Returns the namespace name. Replaces a leftover namespace
  // of the same Pod.
  kube::Result<std::string> addPod(const std::string& node, const std::string& podUid,
                                   const std::string& podIP);
  // Kills what still runs in the Pod's namespace and deletes it (its veth goes with it).
  // Idempotent.
  void removePod(const std::string& podUid);
  std::string podNetns(const std::string& podUid) const;

 private:
  std::string cluster_, marker_, prefix_, hostLink_;
  std::string underlayPrefix_;  // "100.a.b."
  std::map<std::string, NodeNetwork> nodes_;
};

}  // namespace strait::minicluster
