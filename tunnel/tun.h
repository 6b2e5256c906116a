#pragma once
// The TUN device: opening /dev/net/tun and configuring the interface (MTU, IPv4 addresses,
// link up, IPv4 routes) with ioctls, as wg-quick would with `ip`. Needs CAP_NET_ADMIN.

#include <string>
#include <vector>

#include "base/status.h"
#include "tunnel/ip.h"

namespace strait::tunnel {

struct TunHandle {
  int fd = -1;           // owned by the caller
  bool vnetHdr = false;  // packets carry a virtio_net_hdr and TSO/checksum offloads are on
};

// Creates (or attaches to) TUN interface `name` (IFF_TUN | IFF_NO_PI). With `offload`, asks
// for IFF_VNET_HDR with checksum and TCP segmentation offloads, falling back to a plain TUN
// when the kernel refuses them.
base::Result<TunHandle> openTun(const std::string& name, bool offload);

// Sets the MTU, adds the IPv4 addresses, brings the link up and routes `routes` (IPv4)
// through it. IPv6 entries are skipped and named in the returned warnings.
base::Result<std::vector<std::string>> configureInterface(const std::string& name, int mtu,
                                                          const std::vector<IpPrefix>& addresses,
                                                          const std::vector<IpPrefix>& routes);

// Adds or deletes the IPv4 route `prefix` through interface `name` (SIOCADDRT / SIOCDELRT)
// on `controlSocket`, any AF_INET socket: the route is changed in the network namespace the
// socket was created in, whichever thread calls. Adding a route that exists and deleting one
// that does not succeed. Invalid for an IPv6 prefix; Unavailable (with the errno text) when
// the kernel refuses.
base::Status addInterfaceRoute(int controlSocket, const std::string& name, const IpPrefix& prefix);
base::Status deleteInterfaceRoute(int controlSocket, const std::string& name,
                                  const IpPrefix& prefix);

}  // namespace strait::tunnel
