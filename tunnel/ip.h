#pragma once
// IP addresses, prefixes and UDP endpoints as value types, with parsing that reports what
// was wrong. IPv4 and IPv6.

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace strait::tunnel {

struct IpAddress {
  int family = 0;                   // AF_INET or AF_INET6; 0 = unset
  std::array<uint8_t, 16> bytes{};  // IPv4 uses the first 4

  size_t size() const { return family == AF_INET ? 4 : 16; }
  bool operator==(const IpAddress&) const = default;
  std::string toString() const;
  static base::Result<IpAddress> parse(const std::string& text);
  static IpAddress v4(uint32_t hostOrder);
};

struct IpPrefix {
  IpAddress address;  // masked to `bits`
  int bits = 0;

  bool operator==(const IpPrefix&) const = default;
  bool contains(const IpAddress& a) const;
  std::string toString() const;
  // "10.0.0.0/8", "fd00::/64"; a bare address means /32 or /128. Host bits are cleared.
  static base::Result<IpPrefix> parse(const std::string& text);
};

// A UDP endpoint (address and port).
struct Endpoint {
  IpAddress address;
  uint16_t port = 0;

  bool valid() const { return address.family != 0; }
  bool operator==(const Endpoint&) const = default;
  std::string toString() const;  // 1.2.3.4:51820, [fd00::1]:51820
  // "host:port" or "[v6]:port"; host names are resolved (getaddrinfo, may block).
  static base::Result<Endpoint> parse(const std::string& text);
  // To a sockaddr for an AF_INET6 dual-stack socket (v4 as v4-mapped).
  sockaddr_in6 toSockaddr6() const;
  static Endpoint fromSockaddr(const sockaddr* sa);
  // Address bytes || port, the identity a cookie is bound to.
  std::string cookieSource() const;
};

}  // namespace strait::tunnel
