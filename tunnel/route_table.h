#pragma once
// The routes one owner keeps in a network namespace's main routing table, through rtnetlink
// (Debian's libnl-route-3). Every route it adds carries the rtnetlink protocol number of the
// owner (kStraitRouteProtocol for Strait), so it lists, changes and removes exactly its own
// routes and never touches one somebody else added, even for the same destination.
//
// Used by `strait fabric` to send the remote clusters' CIDRs to the gateway node. Knows
// nothing of Kubernetes.
//
// Thread-safe: every method may be called from any thread (one netlink socket, one mutex).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/thread_annotations.h"
#include "tunnel/ip.h"

struct nl_sock;

namespace strait::tunnel {

// The rtnetlink protocol (`ip route ... proto 199`) that marks Strait's routes. Values up to
// 200 are free for routing daemons in iproute2's rt_protos; 199 is unassigned.
inline constexpr uint8_t kStraitRouteProtocol = 199;

// One route: destination prefix via a gateway address of the same family.
struct Route {
  IpPrefix destination;
  IpAddress gateway;

  bool operator==(const Route&) const = default;
  std::string toString() const;  // "10.240.0.0/16 via 100.64.17.2"
};

// What RouteTable::sync did.
struct RouteSyncResult {
  std::vector<Route> added;    // new routes
  std::vector<Route> changed;  // own routes whose gateway changed (the new route)
  std::vector<Route> removed;  // own routes no longer wanted
  // Wanted routes that could not be installed, with why (a foreign route for the same
  // destination, an unreachable gateway, ...). The rest of the set is applied anyway.
  std::vector<std::pair<Route, std::string>> failed;

  bool changedAnything() const { return !added.empty() || !changed.empty() || !removed.empty(); }
};

class RouteTable {
 public:
  // Opens a rtnetlink socket in the network namespace at `netnsPath` (/run/netns/NAME,
  // /proc/PID/ns/net; empty: the caller's own). The socket stays in that namespace for the
  // table's life whatever namespace later callers run in. Error names the path or the
  // netlink step that failed.
  static base::Result<std::unique_ptr<RouteTable>> open(const std::string& netnsPath,
                                                        uint8_t protocol = kStraitRouteProtocol);
  ~RouteTable();
  RouteTable(const RouteTable&) = delete;
  RouteTable& operator=(const RouteTable&) = delete;

  uint8_t protocol() const { return protocol_; }

  // The own routes (this protocol, main table, IPv4 and IPv6), sorted by destination.
  base::Result<std::vector<Route>> list();
  // Makes the own routes exactly `wanted`: adds the missing ones, re-points own routes whose
  // gateway differs, removes own routes not wanted. A destination held by a route of another
  // protocol is left alone and reported in `failed`. Error only when the table cannot be
  // read or `wanted` names one destination twice; per-route failures do not stop the rest.
  base::Result<RouteSyncResult> sync(const std::vector<Route>& wanted);
  // Removes every own route; returns the removed ones. Error if the table cannot be read or
  // a route cannot be removed (the others are still removed).
  base::Result<std::vector<Route>> removeAll();

 private:
  RouteTable(nl_sock* sock, uint8_t protocol) : sock_(sock), protocol_(protocol) {}
  base::Result<std::vector<Route>> listLocked() REQUIRES(mu_);
  // NLM_F_EXCL when `exclusive` (a new destination), NLM_F_REPLACE otherwise.
  base::Status addLocked(const Route& r, bool exclusive) REQUIRES(mu_);
  base::Status removeLocked(const Route& r) REQUIRES(mu_);

  base::Mutex mu_;
  nl_sock* sock_ GUARDED_BY(mu_);
  const uint8_t protocol_;
};

}  // namespace strait::tunnel
