// CIDR arithmetic and the remap choice (see network_alloc.h).
#include "peering/network_alloc.h"

#include <arpa/inet.h>

#include <cstring>

namespace strait::peering {
namespace {

using tunnel::IpAddress;
using tunnel::IpPrefix;

uint32_t toHost(const IpAddress& a) {
  uint32_t n = 0;
  std::memcpy(&n, a.bytes.data(), 4);
  return ntohl(n);
}

uint32_t maskOf(int bits) { return bits == 0 ? 0 : ~uint32_t(0) << (32 - bits); }

IpPrefix prefixOf(uint32_t address, int bits) {
  IpPrefix p;
  p.address = IpAddress::v4(address & maskOf(bits));
  p.bits = bits;
  return p;
}

}  // namespace

kube::Result<IpPrefix> parseCidr(const std::string& what, const std::string& text) {
  if (text.find('/') == std::string::npos) {
    return kube::makeError(kube::Code::Invalid,
                           what + ": \"" + text + "\" is not a CIDR (expected e.g. 10.244.0.0/16)");
  }
  base::Result<IpPrefix> p = IpPrefix::parse(text);
  if (!p.ok()) {
    return kube::makeError(kube::Code::Invalid,
                           what + ": \"" + text + "\" is not a CIDR: " + p.error().message);
  }
  if (p->address.family != AF_INET) {
    return kube::makeError(kube::Code::Invalid,
                           what + ": \"" + text + "\" is not IPv4 (the tunnel remaps IPv4 only)");
  }
  if (p->toString() != text) {
    return kube::makeError(kube::Code::Invalid, what + ": \"" + text +
                                                    "\" has host bits set (did you mean " +
                                                    p->toString() + "?)");
  }
  return *p;
}

bool cidrsOverlap(const IpPrefix& a, const IpPrefix& b) {
  if (a.address.family != AF_INET || b.address.family != AF_INET) return false;
  int bits = std::min(a.bits, b.bits);
  return (toHost(a.address) & maskOf(bits)) == (toHost(b.address) & maskOf(bits));
}

kube::Result<IpPrefix> coveringCidr(const std::vector<IpPrefix>& cidrs) {
  if (cidrs.empty()) return kube::makeError(kube::Code::Invalid, "no CIDR to cover");
  uint32_t first = toHost(cidrs[0].address);
  int bits = cidrs[0].bits;
  for (const IpPrefix& c : cidrs) {
    if (c.address.family != AF_INET) {
      return kube::makeError(kube::Code::Invalid, c.toString() + " is not IPv4");
    }
    bits = std::min(bits, c.bits);
    while (bits > 0 && (toHost(c.address) & maskOf(bits)) != (first & maskOf(bits))) --bits;
  }
  return prefixOf(first, bits);
}

std::string firstHostAddress(const IpPrefix& cidr) {
  uint32_t base = toHost(cidr.address);
  return IpAddress::v4(cidr.bits >= 31 ? base : base + 1).toString();
}

std::optional<std::string> translateAddress(const std::string& ip, const IpPrefix& from,
                                            const IpPrefix& to) {
  base::Result<IpAddress> a = IpAddress::parse(ip);
  if (!a.ok() || a->family != AF_INET || from.address.family != AF_INET ||
      to.address.family != AF_INET || from.bits != to.bits || !from.contains(*a)) {
    return std::nullopt;
  }
  uint32_t host = toHost(*a) & ~maskOf(from.bits);
  return IpAddress::v4(toHost(to.address) | host).toString();
}

kube::Result<IpPrefix> chooseSeenAs(const RemapRequest& r) {
  auto isFree = [&r](const IpPrefix& p) {
    for (const IpPrefix& t : r.taken) {
      if (cidrsOverlap(p, t)) return false;
    }
    return true;
  };
  auto inPool = [&r](const IpPrefix& p) {
    return p.bits >= r.pool.bits && cidrsOverlap(p, r.pool);
  };
  if (r.previous && r.previous->bits == r.remote.bits && isFree(*r.previous) &&
      (*r.previous == r.remote || inPool(*r.previous))) {
    return *r.previous;
  }
  if (isFree(r.remote)) return r.remote;
  if (r.remote.bits < r.pool.bits) {
    return kube::makeError(kube::Code::Invalid,
                           "pod CIDR " + r.remote.toString() + " overlaps " +
                               "a CIDR in use here and is larger than the whole remap pool " +
                               r.pool.toString());
  }
  // Candidates of the remote's length inside the pool, lowest first. A taken prefix that
  // covers a candidate skips the whole run it covers.
  const uint64_t step = uint64_t(1) << (32 - r.remote.bits);
  const uint64_t start = toHost(r.pool.address);
  const uint64_t end = start + (uint64_t(1) << (32 - r.pool.bits));
  for (uint64_t a = start; a < end;) {
    IpPrefix candidate = prefixOf(uint32_t(a), r.remote.bits);
    uint64_t next = a + step;
    bool free = true;
    for (const IpPrefix& t : r.taken) {
      if (!cidrsOverlap(candidate, t)) continue;
      free = false;
      if (t.bits < r.remote.bits) {
        next = std::max(next, uint64_t(toHost(t.address) & maskOf(t.bits)) +
                                  (uint64_t(1) << (32 - t.bits)));
      }
    }
    if (free) return candidate;
    a = next;
  }
  return kube::makeError(kube::Code::Conflict,
                         "remap pool " + r.pool.toString() + " exhausted: no free /" +
                             std::to_string(r.remote.bits) + " left for pod CIDR " +
                             r.remote.toString() + ", which overlaps a CIDR in use here");
}

}  // namespace strait::peering
