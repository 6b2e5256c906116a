// rtnetlink through libnl-route-3: a route cache dump to list, RTM_NEWROUTE with
// NLM_F_CREATE|NLM_F_EXCL (new) or NLM_F_REPLACE (re-pointed) to add, RTM_DELROUTE with the
// protocol set (the kernel then deletes only a route of that protocol) to remove.
#include "tunnel/route_table.h"

#include <fcntl.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/route.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

namespace strait::tunnel {
namespace {

using base::Code;
using base::makeError;

std::string nlError(int err) { return nl_geterror(err); }

// An nl_addr owned for the scope.
struct NlAddr {
  nl_addr* p = nullptr;
  explicit NlAddr(nl_addr* a) : p(a) {}
  ~NlAddr() {
    if (p) nl_addr_put(p);
  }
  NlAddr(const NlAddr&) = delete;
  NlAddr& operator=(const NlAddr&) = delete;
};

nl_addr* toNlAddr(const IpAddress& a, int prefixLen) {
  nl_addr* n = nl_addr_build(a.family, a.bytes.data(), a.size());
  if (n) nl_addr_set_prefixlen(n, prefixLen);
  return n;
}

bool fromNlAddr(nl_addr* n, IpAddress& out) {
  if (!n) return false;
  int family = nl_addr_get_family(n);
  size_t len = nl_addr_get_len(n);
  if ((family != AF_INET || len != 4) && (family != AF_INET6 || len != 16)) return false;
  out = IpAddress{};
  out.family = family;
  std::memcpy(out.bytes.data(), nl_addr_get_binary_addr(n), len);
  return true;
}

// A route message for `r` with `protocol`, in the main table. Caller puts it.
rtnl_route* buildRoute(const Route& r, uint8_t protocol) {
  rtnl_route* route = rtnl_route_alloc();
  if (!route) return nullptr;
  rtnl_route_set_family(route, static_cast<uint8_t>(r.destination.address.family));
  rtnl_route_set_table(route, RT_TABLE_MAIN);
  rtnl_route_set_protocol(route, protocol);
  rtnl_route_set_scope(route, RT_SCOPE_UNIVERSE);
  rtnl_route_set_type(route, RTN_UNICAST);
  NlAddr dst(toNlAddr(r.destination.address, r.destination.bits));
  if (!dst.p || rtnl_route_set_dst(route, dst.p) < 0) {
    rtnl_route_put(route);
    return nullptr;
  }
  if (r.gateway.family != 0) {
    rtnl_nexthop* nh = rtnl_route_nh_alloc();
    NlAddr gw(toNlAddr(r.gateway, static_cast<int>(r.gateway.size() * 8)));
    if (!nh || !gw.p) {
      if (nh) rtnl_route_nh_free(nh);
      rtnl_route_put(route);
      return nullptr;
    }
    rtnl_route_nh_set_gateway(nh, gw.p);
    rtnl_route_add_nexthop(route, nh);  // the route owns nh now
  }
  return route;
}

std::string prefixKey(const IpPrefix& p) { return p.toString(); }

}  // namespace

std::string Route::toString() const {
  return destination.toString() + " via " + gateway.toString();
}

base::Result<std::unique_ptr<RouteTable>> RouteTable::open(const std::string& netnsPath,
                                                           uint8_t protocol) {
  // A netlink socket belongs to the namespace it was created in: make it on a short-lived
  // thread that entered the namespace, so no other thread of the caller moves.
  nl_sock* sock = nullptr;
  std::string failure;
  auto make = [&] {
    if (!netnsPath.empty()) {
      int fd = ::open(netnsPath.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        failure = "network namespace " + netnsPath + ": " + std::strerror(errno);
        return;
      }
      int rc = ::setns(fd, CLONE_NEWNET);
      int err = errno;
      ::close(fd);
      if (rc != 0) {
        failure = "entering network namespace " + netnsPath + ": " + std::strerror(err);
        return;
      }
    }
    sock = nl_socket_alloc();
    if (!sock) {
      failure = "allocating a netlink socket: out of memory";
      return;
    }
    int err = nl_connect(sock, NETLINK_ROUTE);
    if (err < 0) {
      failure = "connecting to rtnetlink: " + nlError(err);
      nl_socket_free(sock);
      sock = nullptr;
    }
  };
  if (netnsPath.empty()) {
    make();
  } else {
    std::thread(make).join();
  }
  if (!sock) return makeError(Code::Unavailable, "route table: " + failure);
  return std::unique_ptr<RouteTable>(new RouteTable(sock, protocol));
}

RouteTable::~RouteTable() {
  base::MutexLock l(mu_);
  if (sock_) nl_socket_free(sock_);  // closes the socket
}

base::Result<std::vector<Route>> RouteTable::list() {
  base::MutexLock l(mu_);
  return listLocked();
}

base::Result<std::vector<Route>> RouteTable::listLocked() {
  nl_cache* cache = nullptr;
  int err = rtnl_route_alloc_cache(sock_, AF_UNSPEC, 0, &cache);
  if (err < 0) return makeError(Code::Unavailable, "listing routes: " + nlError(err));
  std::vector<Route> out;
  for (nl_object* o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
    auto* r = reinterpret_cast<rtnl_route*>(o);
    if (rtnl_route_get_table(r) != RT_TABLE_MAIN || rtnl_route_get_protocol(r) != protocol_) {
      continue;
    }
    Route route;
    nl_addr* dst = rtnl_route_get_dst(r);
    if (!fromNlAddr(dst, route.destination.address)) continue;
    route.destination.bits = static_cast<int>(nl_addr_get_prefixlen(dst));
    if (rtnl_route_get_nnexthops(r) > 0) {
      rtnl_nexthop* nh = rtnl_route_nexthop_n(r, 0);
      fromNlAddr(rtnl_route_nh_get_gateway(nh), route.gateway);
    }
    out.push_back(route);
  }
  nl_cache_free(cache);
  std::sort(out.begin(), out.end(), [](const Route& a, const Route& b) {
    if (a.destination.address.family != b.destination.address.family) {
      return a.destination.address.family < b.destination.address.family;
    }
    if (a.destination.address.bytes != b.destination.address.bytes) {
      return a.destination.address.bytes < b.destination.address.bytes;
    }
    return a.destination.bits < b.destination.bits;
  });
  return out;
}

base::Status RouteTable::addLocked(const Route& r, bool exclusive) {
  if (r.destination.address.family != r.gateway.family) {
    return makeError(Code::Invalid, "route " + r.toString() +
                                        ": the gateway's address family differs from the "
                                        "destination's");
  }
  rtnl_route* route = buildRoute(r, protocol_);
  if (!route) return makeError(Code::Internal, "route " + r.toString() + ": out of memory");
  int err = rtnl_route_add(sock_, route, exclusive ? NLM_F_EXCL : NLM_F_REPLACE);
  rtnl_route_put(route);
  if (err == -NLE_EXIST) {
    return makeError(Code::AlreadyExists,
                     "route " + r.toString() +
                         ": the destination already has a route that is not Strait's "
                         "(rtnetlink protocol other than " +
                         std::to_string(protocol_) + "); left alone");
  }
  if (err < 0) return makeError(Code::Unavailable, "adding route " + r.toString() + ": " + nlError(err));
  return {};
}

base::Status RouteTable::removeLocked(const Route& r) {
  rtnl_route* route = buildRoute(r, protocol_);
  if (!route) return makeError(Code::Internal, "route " + r.toString() + ": out of memory");
  int err = rtnl_route_delete(sock_, route, 0);
  rtnl_route_put(route);
  if (err == -NLE_OBJ_NOTFOUND) return {};  // already gone
  if (err < 0) {
    return makeError(Code::Unavailable, "removing route " + r.toString() + ": " + nlError(err));
  }
  return {};
}

base::Result<RouteSyncResult> RouteTable::sync(const std::vector<Route>& wanted) {
  std::map<std::string, const Route*> want;
  for (const Route& r : wanted) {
    if (!want.emplace(prefixKey(r.destination), &r).second) {
      return makeError(Code::Invalid,
                       "routes: destination " + r.destination.toString() + " is given twice");
    }
  }
  base::MutexLock l(mu_);
  base::Result<std::vector<Route>> have = listLocked();
  if (!have) return have.error();
  RouteSyncResult result;
  std::map<std::string, Route> own;
  for (const Route& r : *have) own.emplace(prefixKey(r.destination), r);

  for (const auto& [key, r] : own) {
    if (want.count(key)) continue;
    if (base::Status s = removeLocked(r); !s) {
      result.failed.emplace_back(r, s.error().message);
    } else {
      result.removed.push_back(r);
    }
  }
  for (const Route& r : wanted) {
    auto it = own.find(prefixKey(r.destination));
    if (it != own.end() && it->second.gateway == r.gateway) continue;
    bool exists = it != own.end();
    if (base::Status s = addLocked(r, !exists); !s) {
      result.failed.emplace_back(r, s.error().message);
    } else if (exists) {
      result.changed.push_back(r);
    } else {
      result.added.push_back(r);
    }
  }
  return result;
}

base::Result<std::vector<Route>> RouteTable::removeAll() {
  base::MutexLock l(mu_);
  base::Result<std::vector<Route>> have = listLocked();
  if (!have) return have.error();
  std::vector<Route> removed;
  std::string failures;
  for (const Route& r : *have) {
    if (base::Status s = removeLocked(r); !s) {
      failures += (failures.empty() ? "" : "; ") + s.error().message;
    } else {
      removed.push_back(r);
    }
  }
  if (!failures.empty()) return makeError(Code::Unavailable, failures);
  return removed;
}

}  // namespace strait::tunnel
