// Provider side of the pull-mode link (see link.h). A manager thread keeps `standby`
// connections dialed (one at a time, with exponential backoff after a failure); each
// connection has its own thread: dial, verify, idle with keepalives, then relay when taken.
#include <poll.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <condition_variable>

#include "base/thread_annotations.h"
#include "peering/link.h"
#include "peering/link_io.h"

namespace strait::peering {

using Clock = std::chrono::steady_clock;
using linkio::Conn;

struct LinkDialer::Impl {
  Options opt;
  linkio::Ctx ctx;
  std::atomic<bool> stopping{false};
  std::atomic<bool> killing{false};  // relaying connections end too
  std::thread manager;
  linkio::ThreadSet conns;
  mutable base::Mutex mu;
  std::condition_variable_any cv;
  int standby GUARDED_BY(mu) = 0;
  int dialing GUARDED_BY(mu) = 0;
  int relayingCount GUARDED_BY(mu) = 0;
  bool lastFailed GUARDED_BY(mu) = false;
  std::string consumerId GUARDED_BY(mu);
  std::string lastError GUARDED_BY(mu);
  std::set<Conn*> open GUARDED_BY(mu);  // idle and relaying, for abort at stop

  void manage();
  void connection();
  // Dial and verify; the connection or the reason it failed.
  kube::Result<std::unique_ptr<Conn>> dial(std::string* consumer);
  // Idles with keepalives; true when taken ("G"), false when lost.
  bool idle(Conn& c);
};

void LinkDialer::Impl::manage() {
  std::chrono::milliseconds backoff = opt.minBackoff;
  base::UniqueLock lock(mu);
  while (!stopping) {
    if (standby + dialing >= opt.standby) {
      cv.wait_for(lock, std::chrono::seconds(1));
      continue;
    }
    ++dialing;
    lock.unlock();
    conns.spawn([this] { connection(); });
    lock.lock();
    while (!stopping && dialing != 0) cv.wait(lock);
    if (lastFailed) {
      cv.wait_for(lock, backoff, [this] { return stopping.load(); });
      backoff = std::min(backoff * 2, opt.maxBackoff);
    } else {
      backoff = opt.minBackoff;
    }
  }
}

kube::Result<std::unique_ptr<Conn>> LinkDialer::Impl::dial(std::string* consumer) {
  std::string error;
  int fd = linkio::connectTo(opt.consumerEndpoint, opt.timing.ioTimeout, &error);
  if (fd < 0) {
    return kube::makeError(kube::Code::Unavailable,
                           "cannot reach the consumer agent at " + opt.consumerEndpoint + ": " + error);
  }
  kube::Result<std::unique_ptr<Conn>> c = linkio::handshake(ctx, fd, false, opt.timing.ioTimeout);
  if (!c.ok()) return c.error();
  kube::Result<linkio::PeerIdentity> peer = linkio::verifyPeer(**c, opt.consumerCaFingerprint);
  if (!peer.ok()) {
    return kube::makeError(kube::Code::Unauthorized, "the agent at " + opt.consumerEndpoint +
                                                         " is not the consumer: " +
                                                         peer.error().message);
  }
  if (!opt.consumerId.empty() && peer->clusterId != opt.consumerId) {
    return kube::makeError(kube::Code::Unauthorized,
                           "the agent at " + opt.consumerEndpoint + " is cluster " +
                               peer->clusterId + ", not the consumer " + opt.consumerId);
  }
  // We accept the consumer; now it decides about us.
  if (!linkio::writeAll(**c, "LINK\n", opt.timing.ioTimeout)) {
    return kube::makeError(kube::Code::Unavailable, "the consumer agent closed the link");
  }
  std::string line;
  if (!linkio::readLine(**c, &line, opt.timing.ioTimeout)) {
    return kube::makeError(kube::Code::Unavailable, "the consumer agent closed the link");
  }
  if (line != "OK") {
    return kube::makeError(kube::Code::Unauthorized,
                           "the consumer agent refused the link: " +
                               (line.rfind("ERR ", 0) == 0 ? line.substr(4) : line));
  }
  *consumer = peer->clusterId;
  return c;
}

bool LinkDialer::Impl::idle(Conn& c) {
  auto lastSeen = Clock::now(), lastPing = lastSeen;
  while (!stopping) {
    if (linkio::waitReadable(c.fd(), std::chrono::milliseconds(200))) {
      char buf[64];
      int n;
      while ((n = linkio::readSome(c, buf, sizeof(buf), std::chrono::milliseconds(0))) != -1) {
        if (n == 0) return false;
        for (int i = 0; i < n; ++i) {
          if (buf[i] == 'G') return i + 1 == n;  // nothing may follow before our answer
          if (buf[i] != 'P') return false;
        }
        lastSeen = Clock::now();
      }
    }
    auto now = Clock::now();
    if (now - lastSeen > opt.timing.lostAfter) return false;
    if (now - lastPing >= opt.timing.keepalive) {
      lastPing = now;
      if (!linkio::writeAll(c, "P", std::chrono::milliseconds(500))) return false;
    }
  }
  return false;
}

void LinkDialer::Impl::connection() {
  std::string consumer;
  kube::Result<std::unique_ptr<Conn>> c = dial(&consumer);
  {
    base::MutexLock lock(mu);
    --dialing;
    lastFailed = !c.ok();
    if (!c.ok()) {
      if (c.error().message != lastError) {
        spdlog::warn("event=link_dial_failed consumer_endpoint={} error=\"{}\"",
                     opt.consumerEndpoint, c.error().message);
      }
      lastError = c.error().message;
    } else {
      if (standby == 0 && relayingCount == 0) {
        spdlog::info("event=link_up consumer={} consumer_endpoint={}", consumer,
                     opt.consumerEndpoint);
      }
      lastError.clear();
      consumerId = consumer;
      ++standby;
      open.insert(c->get());
    }
    cv.notify_all();
  }
  if (!c.ok()) return;
  Conn& conn = **c;
  bool taken = idle(conn);
  int local = -1;
  std::string error;
  if (taken) local = linkio::connectTo(opt.localTarget, opt.timing.ioTimeout, &error);
  {
    base::MutexLock lock(mu);
    --standby;
    if (local >= 0) ++relayingCount;
    if (standby == 0 && !taken && !stopping) {
      spdlog::warn("event=link_down consumer={}", consumerId);
    }
    cv.notify_all();  // the manager dials a replacement
  }
  if (taken && local < 0) {
    spdlog::warn("event=link_relay_failed target={} error=\"{}\"", opt.localTarget, error);
  }
  if (local >= 0) {
    if (linkio::writeAll(conn, "A", opt.timing.ioTimeout)) linkio::splice(conn, local, killing);
    ::close(local);
  }
  base::MutexLock lock(mu);
  if (local >= 0) --relayingCount;
  open.erase(&conn);
  cv.notify_all();
}

LinkDialer::LinkDialer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

LinkDialer::~LinkDialer() { stop(); }

kube::Result<std::unique_ptr<LinkDialer>> LinkDialer::start(Options options) {
  auto impl = std::make_unique<Impl>();
  kube::Result<linkio::Ctx> ctx = linkio::makeContext(false, options.chain);
  if (!ctx.ok()) return ctx.error();
  impl->ctx = *ctx;
  impl->opt = std::move(options);
  Impl* raw = impl.get();
  impl->manager = std::thread([raw] { raw->manage(); });
  return std::unique_ptr<LinkDialer>(new LinkDialer(std::move(impl)));
}

bool LinkDialer::linked() const {
  base::MutexLock lock(impl_->mu);
  return impl_->standby > 0;
}

std::string LinkDialer::consumerId() const {
  base::MutexLock lock(impl_->mu);
  return impl_->consumerId;
}

std::string LinkDialer::lastError() const {
  base::MutexLock lock(impl_->mu);
  return impl_->lastError;
}

void LinkDialer::stop(std::chrono::milliseconds grace) {
  if (!impl_ || impl_->stopping.exchange(true)) return;
  {
    base::UniqueLock lock(impl_->mu);
    impl_->cv.notify_all();
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (impl_->relayingCount != 0) {
      if (impl_->cv.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
    impl_->killing = true;
    for (Conn* c : impl_->open) c->abort();
  }
  if (impl_->manager.joinable()) impl_->manager.join();
  impl_->conns.joinAll();
}

}  // namespace strait::peering
