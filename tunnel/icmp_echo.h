#pragma once
// Private to tunnel/: ICMP echo requests and their replies over IPv4, for the gateway's
// reachability probe. The socket is a ping socket (SOCK_DGRAM, IPPROTO_ICMP) when the
// namespace's net.ipv4.ping_group_range admits this process, else a raw ICMP socket (needs
// CAP_NET_RAW) that only lets echo replies through; either way it is bound to the source
// address, so requests leave from it and the remote kernel's replies come back to it.
//
// Not thread-safe: one thread sends and receives (the gateway's probe loop).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "base/status.h"
#include "tunnel/ip.h"

namespace strait::tunnel {

class IcmpEcho {
 public:
  // Opens the socket in the calling thread's network namespace and binds it to `source`
  // (IPv4). Error naming the address when it is not one of the namespace's (bind fails) or
  // no ICMP socket may be opened.
  static base::Result<std::unique_ptr<IcmpEcho>> open(const IpAddress& source);
  ~IcmpEcho();
  IcmpEcho(const IcmpEcho&) = delete;
  IcmpEcho& operator=(const IcmpEcho&) = delete;

  // Sends one echo request with `sequence` to `target` (IPv4). Does not block.
  base::Status send(const IpAddress& target, uint16_t sequence);

  struct Reply {
    IpAddress from;
    uint16_t sequence = 0;
  };
  // The next echo reply to one of this socket's requests already queued, or nullopt. Does not
  // block; other ICMP messages are skipped.
  std::optional<Reply> receive();
  // For poll(): readable when a reply may be queued.
  int fd() const { return fd_; }
  bool raw() const { return raw_; }

 private:
  IcmpEcho(int fd, bool raw, uint16_t identifier) : fd_(fd), raw_(raw), identifier_(identifier) {}
  int fd_;
  bool raw_;
  uint16_t identifier_;  // raw sockets: ours to choose; ping sockets: the kernel's
};

}  // namespace strait::tunnel
