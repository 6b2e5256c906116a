#include "tunnel/tun.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <net/route.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace strait::tunnel {

using base::Code;
using base::makeError;

namespace {
base::Result<int> openTunFd(const std::string& name, short flags) {
  int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return makeError(Code::Unavailable, std::string("open /dev/net/tun: ") + strerror(errno));
  }
  ifreq ifr{};
  ifr.ifr_flags = flags;
  std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
  if (ioctl(fd, TUNSETIFF, &ifr) != 0) {
    int err = errno;
    close(fd);
    return makeError(Code::Unavailable, "TUNSETIFF " + name + ": " + strerror(err));
  }
  return fd;
}
}  // namespace

base::Result<TunHandle> openTun(const std::string& name, bool offload) {
  if (name.empty() || name.size() >= IFNAMSIZ) {
    return makeError(Code::Invalid, "interface name \"" + name + "\" must be 1..15 characters");
  }
  if (offload) {
    auto fd = openTunFd(name, IFF_TUN | IFF_NO_PI | IFF_VNET_HDR);
    if (fd.ok()) {
      unsigned int features = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6;
      if (ioctl(*fd, TUNSETOFFLOAD, features) == 0) return TunHandle{*fd, true};
      close(*fd);
    }
  }
  auto fd = openTunFd(name, IFF_TUN | IFF_NO_PI);
  if (!fd.ok()) return fd.error();
  return TunHandle{*fd, false};
}

namespace {

base::Status ioctlOn(int sock, unsigned long request, void* arg, const std::string& what) {
  if (ioctl(sock, request, arg) != 0) {
    return makeError(Code::Unavailable, what + ": " + strerror(errno));
  }
  return base::Status::OK();
}

sockaddr_in v4Sockaddr(const uint8_t* bytes) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  std::memcpy(&sa.sin_addr, bytes, 4);
  return sa;
}

sockaddr_in v4Mask(int bits) {
  uint32_t m = bits == 0 ? 0 : htonl(~uint32_t(0) << (32 - bits));
  return v4Sockaddr(reinterpret_cast<const uint8_t*>(&m));
}

}  // namespace

base::Result<std::vector<std::string>> configureInterface(const std::string& name, int mtu,
                                                          const std::vector<IpPrefix>& addresses,
                                                          const std::vector<IpPrefix>& routes) {
  std::vector<std::string> warnings;
  int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return makeError(Code::Unavailable, std::string("socket: ") + strerror(errno));
  auto fail = [&](const base::Status& st) {
    close(sock);
    return st.error();
  };
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
  ifr.ifr_mtu = mtu;
  if (auto st = ioctlOn(sock, SIOCSIFMTU, &ifr, "set MTU of " + name); !st.ok()) return fail(st);

  // The first IPv4 address with SIOCSIFADDR; further ones as aliases name:N.
  int alias = 0;
  for (const IpPrefix& a : addresses) {
    if (a.address.family != AF_INET) {
      warnings.push_back("address " + a.toString() + " skipped: IPv6 addresses not configured");
      continue;
    }
    ifreq r{};
    std::string label = alias == 0 ? name : name + ":" + std::to_string(alias);
    if (label.size() >= IFNAMSIZ) {
      warnings.push_back("address " + a.toString() + " skipped: alias name too long");
      continue;
    }
    std::strncpy(r.ifr_name, label.c_str(), IFNAMSIZ - 1);
    sockaddr_in sa = v4Sockaddr(a.address.bytes.data());
    std::memcpy(&r.ifr_addr, &sa, sizeof sa);
    if (auto st = ioctlOn(sock, SIOCSIFADDR, &r, "add address " + a.toString()); !st.ok()) {
      return fail(st);
    }
    sockaddr_in m = v4Mask(a.bits);
    std::memcpy(&r.ifr_netmask, &m, sizeof m);
    if (auto st = ioctlOn(sock, SIOCSIFNETMASK, &r, "set netmask " + a.toString()); !st.ok()) {
      return fail(st);
    }
    ++alias;
  }

  ifreq flags{};
  std::strncpy(flags.ifr_name, name.c_str(), IFNAMSIZ - 1);
  if (auto st = ioctlOn(sock, SIOCGIFFLAGS, &flags, "get flags of " + name); !st.ok()) {
    return fail(st);
  }
  flags.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (auto st = ioctlOn(sock, SIOCSIFFLAGS, &flags, "bring up " + name); !st.ok()) {
    return fail(st);
  }

  for (const IpPrefix& p : routes) {
    if (p.address.family != AF_INET) {
      warnings.push_back("route " + p.toString() + " skipped: IPv6 routes not configured");
      continue;
    }
    if (auto st = addInterfaceRoute(sock, name, p); !st.ok()) return fail(st);
  }
  close(sock);
  return warnings;
}

namespace {
base::Status changeRoute(int controlSocket, unsigned long request, const std::string& name,
                         const IpPrefix& prefix) {
  const char* verb = request == SIOCADDRT ? "add" : "delete";
  if (prefix.address.family != AF_INET) {
    return makeError(Code::Invalid, std::string(verb) + " route " + prefix.toString() + " dev " +
                                        name + ": only IPv4 routes are configured");
  }
  rtentry rt{};
  sockaddr_in dst = v4Sockaddr(prefix.address.bytes.data());
  sockaddr_in mask = v4Mask(prefix.bits);
  std::memcpy(&rt.rt_dst, &dst, sizeof dst);
  std::memcpy(&rt.rt_genmask, &mask, sizeof mask);
  rt.rt_flags = RTF_UP | (prefix.bits == 32 ? RTF_HOST : 0);
  std::string dev = name;
  rt.rt_dev = dev.data();
  if (ioctl(controlSocket, request, &rt) != 0) {
    int err = errno;
    if (request == SIOCADDRT && err == EEXIST) return base::Status::OK();
    if (request == SIOCDELRT && err == ESRCH) return base::Status::OK();
    return makeError(Code::Unavailable, std::string(verb) + " route " + prefix.toString() +
                                            " dev " + name + ": " + strerror(err));
  }
  return base::Status::OK();
}
}  // namespace

base::Status addInterfaceRoute(int controlSocket, const std::string& name, const IpPrefix& prefix) {
  return changeRoute(controlSocket, SIOCADDRT, name, prefix);
}

base::Status deleteInterfaceRoute(int controlSocket, const std::string& name,
                                  const IpPrefix& prefix) {
  return changeRoute(controlSocket, SIOCDELRT, name, prefix);
}

}  // namespace strait::tunnel
