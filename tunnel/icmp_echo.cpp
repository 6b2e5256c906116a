#include "tunnel/icmp_echo.h"

#include <arpa/inet.h>
#include <linux/icmp.h>
#include <netinet/ip.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tunnel/crypto.h"
#include "tunnel/remap.h"

namespace strait::tunnel {

using base::Code;
using base::makeError;

namespace {

// RFC 792 echo request / reply: type, code, checksum, identifier, sequence number.
constexpr uint8_t kEchoReply = 0;
constexpr uint8_t kEchoRequest = 8;
constexpr size_t kEchoHeaderSize = 8;
constexpr size_t kPayloadSize = 16;

sockaddr_in v4Sockaddr(const IpAddress& a) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  std::memcpy(&sa.sin_addr, a.bytes.data(), 4);
  return sa;
}

}  // namespace

base::Result<std::unique_ptr<IcmpEcho>> IcmpEcho::open(const IpAddress& source) {
  if (source.family != AF_INET) {
    return makeError(Code::Invalid, "probe source " + source.toString() + " must be IPv4");
  }
  bool raw = false;
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_ICMP);
  if (fd < 0) {
    int dgramErr = errno;
    fd = ::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_ICMP);
    if (fd < 0) {
      return makeError(Code::Unavailable, std::string("ICMP socket: ping socket: ") +
                                              std::strerror(dgramErr) +
                                              ", raw socket: " + std::strerror(errno));
    }
    raw = true;
    // Only echo replies reach the socket, not every ICMP message of the namespace.
    icmp_filter filter{};
    filter.data = ~(1U << kEchoReply);
    if (::setsockopt(fd, SOL_RAW, ICMP_FILTER, &filter, sizeof filter) != 0) {
      int err = errno;
      ::close(fd);
      return makeError(Code::Unavailable, std::string("ICMP_FILTER: ") + std::strerror(err));
    }
  }
  sockaddr_in sa = v4Sockaddr(source);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    int err = errno;
    ::close(fd);
    return makeError(Code::Invalid, "probe source " + source.toString() +
                                        " is not an address of the gateway's namespace: bind: " +
                                        std::strerror(err));
  }
  uint16_t identifier = 0;
  if (raw) {
    randomBytes(MutableBytes(reinterpret_cast<uint8_t*>(&identifier), sizeof identifier));
  } else {
    sockaddr_in bound{};
    socklen_t len = sizeof bound;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
      identifier = ntohs(bound.sin_port);
    }
  }
  return std::unique_ptr<IcmpEcho>(new IcmpEcho(fd, raw, identifier));
}

IcmpEcho::~IcmpEcho() { ::close(fd_); }

base::Status IcmpEcho::send(const IpAddress& target, uint16_t sequence) {
  if (target.family != AF_INET) {
    return makeError(Code::Invalid, "probe target " + target.toString() + " must be IPv4");
  }
  uint8_t packet[kEchoHeaderSize + kPayloadSize] = {};
  packet[0] = kEchoRequest;
  uint16_t id = htons(identifier_), seq = htons(sequence);
  std::memcpy(packet + 4, &id, 2);
  std::memcpy(packet + 6, &seq, 2);
  std::memcpy(packet + kEchoHeaderSize, "strait-gateway\0\0", kPayloadSize);
  // Ping sockets fill in the checksum (and the identifier); raw ones send what they get.
  uint16_t sum = htons(internetChecksum(packet, sizeof packet));
  std::memcpy(packet + 2, &sum, 2);
  sockaddr_in to = v4Sockaddr(target);
  if (::sendto(fd_, packet, sizeof packet, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&to),
               sizeof to) < 0) {
    return makeError(Code::Unavailable,
                     "echo request to " + target.toString() + ": " + std::strerror(errno));
  }
  return base::Status::OK();
}

std::optional<IcmpEcho::Reply> IcmpEcho::receive() {
  uint8_t buffer[1500];
  for (;;) {
    sockaddr_in from{};
    socklen_t fromLen = sizeof from;
    ssize_t n = ::recvfrom(fd_, buffer, sizeof buffer, MSG_DONTWAIT,
                           reinterpret_cast<sockaddr*>(&from), &fromLen);
    if (n < 0) return std::nullopt;  // EAGAIN: nothing more queued
    const uint8_t* icmp = buffer;
    size_t length = static_cast<size_t>(n);
    if (raw_) {
      // Raw sockets see the IPv4 header first.
      if (length < 20) continue;
      size_t headerLength = static_cast<size_t>(buffer[0] & 0x0f) * 4;
      if (headerLength < 20 || length < headerLength) continue;
      icmp += headerLength;
      length -= headerLength;
    }
    if (length < kEchoHeaderSize || icmp[0] != kEchoReply) continue;
    uint16_t id = 0, seq = 0;
    std::memcpy(&id, icmp + 4, 2);
    std::memcpy(&seq, icmp + 6, 2);
    if (raw_ && ntohs(id) != identifier_) continue;  // another raw socket's request
    Reply r;
    r.from.family = AF_INET;
    std::memcpy(r.from.bytes.data(), &from.sin_addr, 4);
    r.sequence = ntohs(seq);
    return r;
  }
}

}  // namespace strait::tunnel
