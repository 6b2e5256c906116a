#include "e2e/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace strait::e2e {

std::string TcpProxy::start() {
  listenFd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listenFd_ < 0) return std::string("socket: ") + strerror(errno);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (bind(listenFd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      listen(listenFd_, 64) != 0) {
    return std::string("bind/listen: ") + strerror(errno);
  }
  socklen_t len = sizeof a;
  getsockname(listenFd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { acceptLoop(); });
  return {};
}

void TcpProxy::acceptLoop() {
  while (!stopping_) {
    pollfd p{listenFd_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    int c = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    if (cut_) {
      close(c);
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    open_.insert(c);
    pumps_.emplace_back([this, c] { pump(c); });
  }
}

void TcpProxy::pump(int client) {
  int up = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(upstreamPort_.load());
  bool ok = up >= 0 && connect(up, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (ok) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cut_) {
      ok = false;
    } else {
      open_.insert(up);
    }
  }
  char buf[64 * 1024];
  while (ok && !stopping_) {
    pollfd p[2] = {{client, POLLIN, 0}, {up, POLLIN, 0}};
    int n = poll(p, 2, 100);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    bool closed = false;
    for (int i = 0; i < 2 && !closed; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = read(p[i].fd, buf, sizeof buf);
      if (r <= 0) {
        closed = true;
        break;
      }
      bytes_ += static_cast<uint64_t>(r);
      (i == 0 ? bytesToUpstream_ : bytesFromUpstream_) += static_cast<uint64_t>(r);
      int dst = i == 0 ? up : client;
      for (ssize_t off = 0; off < r;) {
        ssize_t w = write(dst, buf + off, static_cast<size_t>(r - off));
        if (w <= 0) {
          closed = true;
          break;
        }
        off += w;
      }
    }
    if (closed) break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (int fd : {client, up}) {
    if (fd >= 0 && open_.erase(fd)) close(fd);
  }
  if (up >= 0 && !ok) close(up);
}

void TcpProxy::cut() {
  cut_ = true;
  std::lock_guard<std::mutex> lock(mu_);
  for (int fd : open_) shutdown(fd, SHUT_RDWR);  // pumps see EOF and close
}

void TcpProxy::resume() { cut_ = false; }

void TcpProxy::stop() {
  if (stopping_.exchange(true)) return;
  cut();
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> pumps;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pumps.swap(pumps_);
  }
  for (auto& t : pumps) t.join();
  if (listenFd_ >= 0) close(listenFd_);
}

}  // namespace strait::e2e
