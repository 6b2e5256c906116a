#pragma once
// CIDR arithmetic and the remap choice of the tunnel negotiation (pure; no cluster needed).
//
// Each side of a peering sees the other's pod CIDR either as it is or, when it collides with
// something this side already uses (its own pod CIDR, its service CIDR, the CIDR it sees
// another peering under), under a free prefix of the same length taken from the remap pool
// (`strait agent --remap-pool`, 10.240.0.0/12 by default). The choice is stable: a stored
// choice that is still free is kept, so offloaded Pods keep the IPs the consumer reported.
//
// IPv4 only (the tunnel's remapping is IPv4). Thread-safe (pure).

#include <optional>
#include <string>
#include <vector>

#include "kube/status.h"
#include "tunnel/ip.h"

namespace strait::peering {

// An IPv4 CIDR ("10.244.0.0/16"). Invalid naming `what` and the text when it is not one or
// has host bits set ("10.244.1.0/16": a typo more often than a choice).
kube::Result<tunnel::IpPrefix> parseCidr(const std::string& what, const std::string& text);

// True when the two prefixes share at least one address.
bool cidrsOverlap(const tunnel::IpPrefix& a, const tunnel::IpPrefix& b);

// The smallest prefix holding every one of `cidrs` (IPv4). Invalid when `cidrs` is empty.
kube::Result<tunnel::IpPrefix> coveringCidr(const std::vector<tunnel::IpPrefix>& cidrs);

// The first host address of `cidr` ("10.244.1.0/24" -> "10.244.1.1"); the address itself for
// a /31 or /32.
std::string firstHostAddress(const tunnel::IpPrefix& cidr);

// `ip` with the prefix `from` replaced by `to` (same length; the host part kept) when `from`
// contains it; nullopt when it does not (or `ip` is not an IPv4 address).
std::optional<std::string> translateAddress(const std::string& ip, const tunnel::IpPrefix& from,
                                            const tunnel::IpPrefix& to);

struct RemapRequest {
  tunnel::IpPrefix remote;             // the other side's real pod CIDR
  std::vector<tunnel::IpPrefix> taken;  // what this side already uses (pod, service, others)
  tunnel::IpPrefix pool;               // --remap-pool
  std::optional<tunnel::IpPrefix> previous;  // the stored choice for this peering
};

// How to see `remote` here:
//  - `previous` when it is still usable: the same length as `remote`, free of every `taken`,
//    and (when it is not `remote` itself) inside the pool;
//  - else `remote` itself when it overlaps none of `taken`;
//  - else the first prefix of the same length inside the pool that overlaps none of `taken`
//    (lowest address first).
// Errors, each naming the cause: Invalid when `remote` is larger than the pool; Conflict
// ("remap pool ... exhausted") when no prefix of the pool is free.
kube::Result<tunnel::IpPrefix> chooseSeenAs(const RemapRequest& r);

}  // namespace strait::peering
