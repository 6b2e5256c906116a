#include "tunnel/ip.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <charconv>
#include <cstring>

namespace strait::tunnel {

using base::Code;
using base::makeError;

std::string IpAddress::toString() const {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (family == 0 || !inet_ntop(family, bytes.data(), buf, sizeof buf)) return "<none>";
  return buf;
}

base::Result<IpAddress> IpAddress::parse(const std::string& text) {
  IpAddress a;
  if (inet_pton(AF_INET, text.c_str(), a.bytes.data()) == 1) {
    a.family = AF_INET;
    return a;
  }
  if (inet_pton(AF_INET6, text.c_str(), a.bytes.data()) == 1) {
    a.family = AF_INET6;
    return a;
  }
  return makeError(Code::Invalid, "\"" + text + "\" is not an IPv4 or IPv6 address");
}

IpAddress IpAddress::v4(uint32_t hostOrder) {
  IpAddress a;
  a.family = AF_INET;
  uint32_t n = htonl(hostOrder);
  std::memcpy(a.bytes.data(), &n, 4);
  return a;
}

bool IpPrefix::contains(const IpAddress& a) const {
  if (a.family != address.family) return false;
  int full = bits / 8, rest = bits % 8;
  if (std::memcmp(a.bytes.data(), address.bytes.data(), full) != 0) return false;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a.bytes[full] & mask) == (address.bytes[full] & mask);
}

std::string IpPrefix::toString() const { return address.toString() + "/" + std::to_string(bits); }

base::Result<IpPrefix> IpPrefix::parse(const std::string& text) {
  size_t slash = text.find('/');
  auto addr = IpAddress::parse(text.substr(0, slash));
  if (!addr.ok()) return addr.error();
  IpPrefix p;
  p.address = *addr;
  int max = addr->family == AF_INET ? 32 : 128;
  p.bits = max;
  if (slash != std::string::npos) {
    std::string b = text.substr(slash + 1);
    int v = -1;
    auto [ptr, ec] = std::from_chars(b.data(), b.data() + b.size(), v);
    if (b.empty() || ec != std::errc() || ptr != b.data() + b.size() || v < 0 || v > max) {
      return makeError(Code::Invalid,
                       "\"" + text + "\": prefix length must be 0.." + std::to_string(max));
    }
    p.bits = v;
  }
  for (int i = 0; i < 16; ++i) {
    int keep = std::min(8, std::max(0, p.bits - 8 * i));
    p.address.bytes[i] &= static_cast<uint8_t>(keep == 0 ? 0 : 0xff << (8 - keep));
  }
  return p;
}

std::string Endpoint::toString() const {
  if (!valid()) return "(none)";
  if (address.family == AF_INET6) return "[" + address.toString() + "]:" + std::to_string(port);
  return address.toString() + ":" + std::to_string(port);
}

base::Result<Endpoint> Endpoint::parse(const std::string& text) {
  std::string host, portText;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return makeError(Code::Invalid, "endpoint \"" + text + "\": expected [address]:port");
    }
    host = text.substr(1, close - 1);
    portText = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return makeError(Code::Invalid, "endpoint \"" + text + "\": expected host:port");
    }
    host = text.substr(0, colon);
    portText = text.substr(colon + 1);
  }
  int port = -1;
  auto [ptr, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), port);
  if (portText.empty() || ec != std::errc() || ptr != portText.data() + portText.size() ||
      port < 1 || port > 65535) {
    return makeError(Code::Invalid, "endpoint \"" + text + "\": port must be 1..65535");
  }
  Endpoint e;
  e.port = static_cast<uint16_t>(port);
  auto literal = IpAddress::parse(host);
  if (literal.ok()) {
    e.address = *literal;
    return e;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res) {
    return makeError(Code::Invalid, "endpoint \"" + text + "\": cannot resolve \"" + host +
                                        "\": " + gai_strerror(rc));
  }
  Endpoint resolved = fromSockaddr(res->ai_addr);
  freeaddrinfo(res);
  resolved.port = e.port;
  return resolved;
}

sockaddr_in6 Endpoint::toSockaddr6() const {
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_port = htons(port);
  if (address.family == AF_INET) {
    sa.sin6_addr.s6_addr[10] = 0xff;
    sa.sin6_addr.s6_addr[11] = 0xff;
    std::memcpy(&sa.sin6_addr.s6_addr[12], address.bytes.data(), 4);
  } else {
    std::memcpy(&sa.sin6_addr, address.bytes.data(), 16);
  }
  return sa;
}

Endpoint Endpoint::fromSockaddr(const sockaddr* sa) {
  Endpoint e;
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    e.address.family = AF_INET;
    std::memcpy(e.address.bytes.data(), &in->sin_addr, 4);
    e.port = ntohs(in->sin_port);
  } else if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    e.port = ntohs(in6->sin6_port);
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
      e.address.family = AF_INET;
      std::memcpy(e.address.bytes.data(), &in6->sin6_addr.s6_addr[12], 4);
    } else {
      e.address.family = AF_INET6;
      std::memcpy(e.address.bytes.data(), &in6->sin6_addr, 16);
    }
  }
  return e;
}

std::string Endpoint::cookieSource() const {
  std::string s(reinterpret_cast<const char*>(address.bytes.data()), address.size());
  s.push_back(static_cast<char>(port >> 8));
  s.push_back(static_cast<char>(port & 0xff));
  return s;
}

}  // namespace strait::tunnel
