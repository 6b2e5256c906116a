#include "tunnel/udp.h"

#include <fcntl.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

namespace strait::tunnel {

using base::Code;
using base::makeError;

namespace {
constexpr size_t kMaxGsoSegments = 64;
constexpr size_t kMaxGsoBytes = 65000;
constexpr size_t kControlSize = CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint16_t));
}  // namespace

ReceiveBuffers::ReceiveBuffers(size_t count, size_t size) : slots(count) {
  for (auto& s : slots) s.resize(size);
  packets.reserve(count * 4);
}

base::Result<std::shared_ptr<UdpSocket>> UdpSocket::open(uint16_t port, bool offload) {
  std::shared_ptr<UdpSocket> s(new UdpSocket());
  s->fd_ = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s->fd_ >= 0) {
    int off = 0;
    setsockopt(s->fd_, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(port);
    sa.sin6_addr = in6addr_any;
    if (bind(s->fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      int err = errno;
      close(s->fd_);
      s->fd_ = -1;
      if (err != EAFNOSUPPORT && err != EADDRNOTAVAIL) {
        return makeError(Code::Unavailable,
                         "bind UDP port " + std::to_string(port) + ": " + std::strerror(err));
      }
    } else {
      s->family_ = AF_INET6;
    }
  }
  if (s->fd_ < 0) {
    s->fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s->fd_ < 0) return makeError(Code::Unavailable, std::string("socket: ") + strerror(errno));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    if (bind(s->fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      return makeError(Code::Unavailable,
                       "bind UDP port " + std::to_string(port) + ": " + std::strerror(errno));
    }
    s->family_ = AF_INET;
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(s->fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  s->port_ = Endpoint::fromSockaddr(reinterpret_cast<sockaddr*>(&bound)).port;
  int buf = 8 << 20;
  setsockopt(s->fd_, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);
  setsockopt(s->fd_, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf);
  if (offload) {
    int on = 1;
    s->gro_ = setsockopt(s->fd_, SOL_UDP, UDP_GRO, &on, sizeof on) == 0;
    // GSO has no switch: probe that the option is understood.
    int seg = 0;
    s->gso_ = setsockopt(s->fd_, SOL_UDP, UDP_SEGMENT, &seg, sizeof seg) == 0;
  }
  return s;
}

UdpSocket::~UdpSocket() {
  if (fd_ >= 0) close(fd_);
}

size_t UdpSocket::receive(ReceiveBuffers& b) {
  const size_t n = b.slots.size();
  std::vector<mmsghdr> msgs(n);
  std::vector<iovec> iovs(n);
  std::vector<sockaddr_storage> addrs(n);
  std::vector<std::array<uint8_t, kControlSize>> controls(n);
  for (size_t i = 0; i < n; ++i) {
    iovs[i] = {b.slots[i].data(), b.slots[i].size()};
    msgs[i].msg_hdr = {};
    msgs[i].msg_hdr.msg_name = &addrs[i];
    msgs[i].msg_hdr.msg_namelen = sizeof addrs[i];
    msgs[i].msg_hdr.msg_iov = &iovs[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_control = controls[i].data();
    msgs[i].msg_hdr.msg_controllen = kControlSize;
  }
  b.packets.clear();
  int got = recvmmsg(fd_, msgs.data(), static_cast<unsigned>(n), MSG_DONTWAIT, nullptr);
  if (got <= 0) return 0;
  for (int i = 0; i < got; ++i) {
    size_t len = msgs[i].msg_len;
    size_t segment = len;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c)) {
      if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
        int size = 0;
        std::memcpy(&size, CMSG_DATA(c), sizeof size);
        if (size > 0) segment = static_cast<size_t>(size);
      }
    }
    Endpoint from = Endpoint::fromSockaddr(reinterpret_cast<sockaddr*>(&addrs[i]));
    for (size_t off = 0; off < len; off += segment) {
      b.packets.push_back({b.slots[i].data() + off, std::min(segment, len - off), from});
    }
  }
  return b.packets.size();
}

size_t UdpSocket::send(std::span<const OutPacket> packets) {
  // Group runs for GSO: same endpoint, same size except a shorter last one.
  std::vector<mmsghdr> msgs;
  std::vector<iovec> iovs(packets.size());
  std::vector<sockaddr_storage> addrs;
  std::vector<std::array<uint8_t, kControlSize>> controls;
  std::vector<size_t> groupCount;
  msgs.reserve(packets.size());
  addrs.reserve(packets.size());
  controls.reserve(packets.size());
  size_t i = 0;
  while (i < packets.size()) {
    size_t j = i + 1;
    size_t total = packets[i].length;
    if (gso_) {
      while (j < packets.size() && j - i < kMaxGsoSegments && packets[j].to == packets[i].to &&
             packets[j].length <= packets[i].length && packets[j - 1].length == packets[i].length &&
             total + packets[j].length <= kMaxGsoBytes) {
        total += packets[j].length;
        ++j;
      }
    }
    for (size_t k = i; k < j; ++k) {
      iovs[k] = {const_cast<uint8_t*>(packets[k].data), packets[k].length};
    }
    addrs.emplace_back();
    socklen_t alen;
    if (family_ == AF_INET6) {
      sockaddr_in6 sa = packets[i].to.toSockaddr6();
      std::memcpy(&addrs.back(), &sa, sizeof sa);
      alen = sizeof sa;
    } else {
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_port = htons(packets[i].to.port);
      std::memcpy(&sa.sin_addr, packets[i].to.address.bytes.data(), 4);
      std::memcpy(&addrs.back(), &sa, sizeof sa);
      alen = sizeof sa;
    }
    mmsghdr m{};
    m.msg_hdr.msg_name = &addrs.back();
    m.msg_hdr.msg_namelen = alen;
    m.msg_hdr.msg_iov = &iovs[i];
    m.msg_hdr.msg_iovlen = j - i;
    if (j - i > 1) {
      controls.emplace_back();
      m.msg_hdr.msg_control = controls.back().data();
      m.msg_hdr.msg_controllen = CMSG_SPACE(sizeof(uint16_t));
      cmsghdr* c = CMSG_FIRSTHDR(&m.msg_hdr);
      c->cmsg_level = SOL_UDP;
      c->cmsg_type = UDP_SEGMENT;
      c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
      uint16_t seg = static_cast<uint16_t>(packets[i].length);
      std::memcpy(CMSG_DATA(c), &seg, sizeof seg);
    }
    msgs.push_back(m);
    groupCount.push_back(j - i);
    i = j;
  }
  size_t sent = 0, done = 0;
  while (done < msgs.size()) {
    int r = sendmmsg(fd_, msgs.data() + done, static_cast<unsigned>(msgs.size() - done), 0);
    if (r <= 0) {
      if (errno == EINTR) continue;
      if (errno == EIO && gso_ && groupCount[done] > 1) {
        // The path cannot segment: send this group one by one and stop using GSO.
        gso_ = false;
        for (size_t k = 0; k < groupCount[done]; ++k) {
          msghdr one = msgs[done].msg_hdr;
          one.msg_iov = msgs[done].msg_hdr.msg_iov + k;
          one.msg_iovlen = 1;
          one.msg_control = nullptr;
          one.msg_controllen = 0;
          if (sendmsg(fd_, &one, 0) >= 0) ++sent;
        }
      }
      ++done;  // drop the failing message (buffer full, unreachable...)
      continue;
    }
    for (int k = 0; k < r; ++k) sent += groupCount[done + k];
    done += static_cast<size_t>(r);
  }
  return sent;
}

}  // namespace strait::tunnel
