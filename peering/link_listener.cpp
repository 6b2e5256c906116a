// Consumer side of the pull-mode link (see link.h). Threads: one accepts on the link port,
// one watches idle standby connections (keepalives, loss), one accepts per forwarder, and
// one per connection being verified or relayed.
#include <poll.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <vector>

#include "base/thread_annotations.h"
#include "peering/link.h"
#include "peering/link_io.h"

namespace strait::peering {

using Clock = std::chrono::steady_clock;
using linkio::Conn;

namespace {

struct Standby {
  std::unique_ptr<Conn> conn;
  Clock::time_point lastSeen;
  Clock::time_point lastPing;
};

struct Forwarder {
  int fd = -1;
  int port = 0;
  std::atomic<bool> stop{false};
  std::thread acceptor;
};

}  // namespace

struct LinkListener::Impl {
  Options opt;
  linkio::Ctx ctx;
  int fd = -1;
  int port = 0;
  std::atomic<bool> stopping{false};
  std::thread acceptor;
  std::thread watcher;
  linkio::ThreadSet workers;
  mutable base::Mutex mu;
  std::condition_variable_any cv;
  // By provider ID.
  std::map<std::string, std::deque<std::unique_ptr<Standby>>> pools GUARDED_BY(mu);
  std::map<std::string, std::unique_ptr<Forwarder>> forwarders GUARDED_BY(mu);
  std::set<Conn*> relaying GUARDED_BY(mu);

  void acceptLoop();
  void admit(int fd);
  void refuse(Conn& c, const std::string& providerId, const std::string& reason);
  void watchLoop();
  void forwardLoop(const std::string& providerId, Forwarder* f);
  void relay(const std::string& providerId, int localFd);
  std::unique_ptr<Conn> take(const std::string& providerId);
  void closeForwarder(std::unique_ptr<Forwarder> f);
};

void LinkListener::Impl::acceptLoop() {
  while (!stopping) {
    if (!linkio::waitReadable(fd, std::chrono::milliseconds(200))) continue;
    int c = linkio::acceptOn(fd);
    if (c >= 0) workers.spawn([this, c] { admit(c); });
  }
}

void LinkListener::Impl::refuse(Conn& c, const std::string& providerId,
                                const std::string& reason) {
  spdlog::warn("event=link_refused provider={} reason=\"{}\"", providerId, reason);
  (void)linkio::writeAll(c, "ERR " + reason + "\n", opt.timing.ioTimeout);
  if (opt.onRefused) opt.onRefused(providerId, reason);
}

void LinkListener::Impl::admit(int c) {
  kube::Result<std::unique_ptr<Conn>> conn = linkio::handshake(ctx, c, true, opt.timing.ioTimeout);
  if (!conn.ok()) {
    spdlog::debug("event=link_handshake_failed error=\"{}\"", conn.error().message);
    return;
  }
  // The provider speaks first, once it has verified us (else it just closes).
  std::string hello;
  if (!linkio::readLine(**conn, &hello, opt.timing.ioTimeout) || hello != "LINK") {
    spdlog::debug("event=link_abandoned reason=\"the dialer did not accept this agent\"");
    return;
  }
  std::string claimed = linkio::claimedClusterId(**conn);
  if (claimed.empty()) {
    return refuse(**conn, "unknown", "the certificate names no agent.<cluster-id>.strait");
  }
  kube::Result<std::string> pinned = opt.expectedCa(claimed);
  if (!pinned.ok()) return refuse(**conn, claimed, pinned.error().message);
  kube::Result<linkio::PeerIdentity> peer = linkio::verifyPeer(**conn, *pinned);
  if (!peer.ok()) return refuse(**conn, claimed, peer.error().message);
  if (!linkio::writeAll(**conn, "OK\n", opt.timing.ioTimeout)) return;
  auto s = std::make_unique<Standby>();
  s->conn = std::move(*conn);
  s->lastSeen = s->lastPing = Clock::now();
  base::MutexLock lock(mu);
  if (stopping) return;
  auto& pool = pools[claimed];
  if (pool.empty()) spdlog::info("event=link_up provider={}", claimed);
  pool.push_back(std::move(s));
  cv.notify_all();
}

void LinkListener::Impl::watchLoop() {
  std::vector<pollfd> fds;
  while (!stopping) {
    fds.clear();
    {
      base::MutexLock lock(mu);
      for (auto& [id, pool] : pools) {
        for (auto& s : pool) fds.push_back({s->conn->fd(), POLLIN, 0});
      }
    }
    ::poll(fds.data(), fds.size(), 250);
    auto now = Clock::now();
    base::MutexLock lock(mu);
    for (auto it = pools.begin(); it != pools.end();) {
      auto& [id, pool] = *it;
      bool had = !pool.empty();
      std::deque<std::unique_ptr<Standby>> kept;
      for (auto& s : pool) {
        char buf[64];
        bool alive = true;
        int n;
        while (alive && (n = linkio::readSome(*s->conn, buf, sizeof(buf),
                                              std::chrono::milliseconds(0))) != -1) {
          if (n == 0) alive = false;
          for (int i = 0; i < n; ++i) alive = alive && buf[i] == 'P';
          if (alive) s->lastSeen = now;
        }
        const char* why = alive ? "" : "closed";
        if (alive && now - s->lastSeen > opt.timing.lostAfter) {
          alive = false;
          why = "silent";
        }
        if (alive && now - s->lastPing >= opt.timing.keepalive) {
          s->lastPing = now;
          alive = linkio::writeAll(*s->conn, "P", std::chrono::milliseconds(200));
          if (!alive) why = "write failed";
        }
        if (!alive) spdlog::debug("event=link_standby_dropped provider={} reason={}", id, why);
        if (alive) kept.push_back(std::move(s));
      }
      pool.swap(kept);
      if (had && pool.empty()) spdlog::warn("event=link_down provider={}", id);
      it = pool.empty() ? pools.erase(it) : std::next(it);
    }
  }
}

std::unique_ptr<Conn> LinkListener::Impl::take(const std::string& providerId) {
  base::UniqueLock lock(mu);
  const auto deadline = std::chrono::steady_clock::now() + opt.waitForStandby;
  for (;;) {
    auto it = pools.find(providerId);
    if (stopping || (it != pools.end() && !it->second.empty())) break;
    if (cv.wait_until(lock, deadline) == std::cv_status::timeout) break;
  }
  auto it = pools.find(providerId);
  if (stopping || it == pools.end() || it->second.empty()) return nullptr;
  std::unique_ptr<Conn> c = std::move(it->second.front()->conn);
  it->second.pop_front();
  return c;
}

void LinkListener::Impl::relay(const std::string& providerId, int localFd) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::unique_ptr<Conn> c = take(providerId);
    if (!c) break;
    if (!linkio::writeAll(*c, "G", opt.timing.ioTimeout)) continue;
    // Keepalives may still arrive before the answer.
    char ch = 'P';
    auto deadline = Clock::now() + opt.timing.ioTimeout;
    while (ch == 'P' && Clock::now() < deadline) {
      if (linkio::readSome(*c, &ch, 1, opt.timing.ioTimeout) != 1) ch = 0;
    }
    if (ch != 'A') continue;
    {
      base::MutexLock lock(mu);
      relaying.insert(c.get());
    }
    linkio::splice(*c, localFd, stopping);
    base::MutexLock lock(mu);
    relaying.erase(c.get());
    break;
  }
  ::close(localFd);
}

void LinkListener::Impl::forwardLoop(const std::string& providerId, Forwarder* f) {
  while (!stopping && !f->stop) {
    if (!linkio::waitReadable(f->fd, std::chrono::milliseconds(200))) continue;
    int c = linkio::acceptOn(f->fd);
    if (c >= 0) workers.spawn([this, providerId, c] { relay(providerId, c); });
  }
}

void LinkListener::Impl::closeForwarder(std::unique_ptr<Forwarder> f) {
  f->stop = true;
  if (f->acceptor.joinable()) f->acceptor.join();
  ::close(f->fd);
}

LinkListener::LinkListener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

LinkListener::~LinkListener() { stop(); }

kube::Result<std::unique_ptr<LinkListener>> LinkListener::start(Options options) {
  if (!options.expectedCa) {
    return kube::makeError(kube::Code::Invalid, "link listener: expectedCa is required");
  }
  auto impl = std::make_unique<Impl>();
  kube::Result<linkio::Ctx> ctx = linkio::makeContext(true, options.chain);
  if (!ctx.ok()) return ctx.error();
  impl->ctx = *ctx;
  std::string error;
  impl->fd = linkio::listenOn(options.listen, &impl->port, &error);
  if (impl->fd < 0) {
    return kube::makeError(kube::Code::Unavailable,
                           "link listener cannot listen on " + options.listen + ": " + error);
  }
  impl->opt = std::move(options);
  Impl* raw = impl.get();
  impl->acceptor = std::thread([raw] { raw->acceptLoop(); });
  impl->watcher = std::thread([raw] { raw->watchLoop(); });
  return std::unique_ptr<LinkListener>(new LinkListener(std::move(impl)));
}

int LinkListener::port() const { return impl_->port; }

kube::Result<std::string> LinkListener::forwardEndpoint(const std::string& providerId) {
  base::MutexLock lock(impl_->mu);
  auto it = impl_->forwarders.find(providerId);
  if (it == impl_->forwarders.end()) {
    auto f = std::make_unique<Forwarder>();
    std::string error;
    f->fd = linkio::listenOn(impl_->opt.forwardHost + ":0", &f->port, &error);
    if (f->fd < 0) {
      return kube::makeError(kube::Code::Unavailable, "link forwarder: " + error);
    }
    Impl* impl = impl_.get();
    Forwarder* raw = f.get();
    f->acceptor = std::thread([impl, providerId, raw] { impl->forwardLoop(providerId, raw); });
    it = impl_->forwarders.emplace(providerId, std::move(f)).first;
  }
  return impl_->opt.forwardHost + ":" + std::to_string(it->second->port);
}

bool LinkListener::linked(const std::string& providerId) const {
  base::MutexLock lock(impl_->mu);
  auto it = impl_->pools.find(providerId);
  return it != impl_->pools.end() && !it->second.empty();
}

void LinkListener::retain(const std::set<std::string>& providerIds) {
  std::vector<std::unique_ptr<Forwarder>> dropped;
  {
    base::MutexLock lock(impl_->mu);
    for (auto it = impl_->forwarders.begin(); it != impl_->forwarders.end();) {
      if (providerIds.count(it->first)) {
        ++it;
      } else {
        dropped.push_back(std::move(it->second));
        it = impl_->forwarders.erase(it);
      }
    }
    for (auto it = impl_->pools.begin(); it != impl_->pools.end();) {
      if (providerIds.count(it->first)) {
        ++it;
      } else {
        spdlog::info("event=link_closed provider={} reason=no_pull_peering", it->first);
        it = impl_->pools.erase(it);
      }
    }
  }
  for (auto& f : dropped) impl_->closeForwarder(std::move(f));
}

void LinkListener::stop() {
  if (!impl_ || impl_->stopping.exchange(true)) return;
  {
    base::MutexLock lock(impl_->mu);
    for (Conn* c : impl_->relaying) c->abort();
    impl_->cv.notify_all();
  }
  if (impl_->acceptor.joinable()) impl_->acceptor.join();
  if (impl_->watcher.joinable()) impl_->watcher.join();
  std::map<std::string, std::unique_ptr<Forwarder>> forwarders;
  {
    base::MutexLock lock(impl_->mu);
    forwarders.swap(impl_->forwarders);
  }
  for (auto& [id, f] : forwarders) impl_->closeForwarder(std::move(f));
  impl_->workers.joinAll();
  base::MutexLock lock(impl_->mu);
  impl_->pools.clear();
  ::close(impl_->fd);
}

}  // namespace strait::peering
