// Timers of the WireGuard whitepaper (section 6), as deadlines on each peer checked by one
// timer thread every `timerTick`. The hooks below are called with Peer::mu held, by the
// send and receive paths, at the moments their names say.
#include <spdlog/spdlog.h>

#include "base/thread_annotations.h"
#include "tunnel/device_impl.h"

namespace strait::tunnel {

namespace {
// REKEY_TIMEOUT plus up to 333 ms of jitter (scaled like the timeout in test mode).
std::chrono::milliseconds rekeyTimeoutWithJitter(const TimerConfig& t) {
  uint16_t r = 0;
  randomBytes(MutableBytes(reinterpret_cast<uint8_t*>(&r), sizeof r));
  auto maxJitter = std::max<int64_t>(1, t.rekeyTimeout.count() / 15);  // 333 ms of 5 s
  return t.rekeyTimeout + std::chrono::milliseconds(r % maxJitter);
}
}  // namespace

// Call after sending a transport packet carrying data.
void Device::Impl::onDataSent(Peer& peer, SteadyTime now) {
  if (!peer.newHandshakeAt) {
    peer.newHandshakeAt = now + options.timers.keepaliveTimeout + options.timers.rekeyTimeout;
  }
}

// Call after receiving a transport packet carrying data.
void Device::Impl::onDataReceived(Peer& peer, SteadyTime now) {
  if (!peer.sendKeepaliveAt) {
    peer.sendKeepaliveAt = now + options.timers.keepaliveTimeout;
  } else {
    peer.needAnotherKeepalive = true;
  }
}

// Call after sending any authenticated packet (handshake, data or keepalive).
void Device::Impl::onAnyAuthenticatedPacketSent(Peer& peer, SteadyTime) {
  peer.sendKeepaliveAt.reset();
}

// Call after receiving any authenticated packet.
void Device::Impl::onAnyAuthenticatedPacketReceived(Peer& peer, SteadyTime) {
  peer.newHandshakeAt.reset();
}

// Call after sending or receiving any authenticated packet.
void Device::Impl::onAnyAuthenticatedPacketTraversal(Peer& peer, SteadyTime now) {
  if (peer.persistentKeepalive > 0) {
    peer.persistentKeepaliveAt = now + std::chrono::seconds(peer.persistentKeepalive);
  }
}

// Call after sending a handshake initiation.
void Device::Impl::onHandshakeInitiated(Peer& peer, SteadyTime now) {
  peer.retransmitHandshakeAt = now + rekeyTimeoutWithJitter(options.timers);
}

// Call after a handshake completes (initiator: response consumed; responder: first
// transport packet under the new session).
void Device::Impl::onHandshakeComplete(Peer& peer, SteadyTime now) {
  peer.retransmitHandshakeAt.reset();
  peer.handshakeAttempts = 0;
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  peer.lastHandshakeUnixNanos = int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Call after deriving a new session keypair.
void Device::Impl::onSessionDerived(Peer& peer, SteadyTime now) {
  peer.zeroKeyMaterialAt = now + 3 * options.timers.rejectAfterTime;
}

void Device::Impl::timerLoop() {
  while (running.load()) {
    {
      std::unique_lock lock(timerMu);
      timerCv.wait_for(lock, options.timerTick, [this] { return !running.load(); });
    }
    if (!running.load()) break;
    SteadyTime now = std::chrono::steady_clock::now();
    std::shared_lock lock(peersMu);
    for (auto& [key, peer] : peers) tickPeer(*peer, now);
  }
}

void Device::Impl::tickPeer(Peer& peer, SteadyTime now) {
  enum class Action { None, Retry, Keepalive, NewHandshake };
  std::vector<Action> actions;
  const TimerConfig& t = options.timers;
  {
    base::MutexLock pl(peer.mu);
    auto due = [&](std::optional<SteadyTime>& at) {
      if (at && *at <= now) {
        at.reset();
        return true;
      }
      return false;
    };
    if (due(peer.retransmitHandshakeAt)) {
      int maxAttempts = static_cast<int>(t.rekeyAttemptTime / t.rekeyTimeout);
      if (peer.handshakeAttempts >= maxAttempts) {
        spdlog::info("event=handshake_gave_up peer={} attempts={}",
                     keyToBase64(peer.publicKey).substr(0, 8), peer.handshakeAttempts + 1);
        AtomicCounters::bump(counters.stagedDropped, peer.staged.size());
        peer.staged.clear();
        if (!peer.zeroKeyMaterialAt) peer.zeroKeyMaterialAt = now + 3 * t.rejectAfterTime;
      } else {
        ++peer.handshakeAttempts;
        actions.push_back(Action::Retry);
      }
    }
    if (due(peer.sendKeepaliveAt)) {
      actions.push_back(Action::Keepalive);
      if (peer.needAnotherKeepalive) {
        peer.needAnotherKeepalive = false;
        peer.sendKeepaliveAt = now + t.keepaliveTimeout;
      }
    }
    if (due(peer.newHandshakeAt)) {
      spdlog::debug("event=no_reply_new_handshake peer={}",
                    keyToBase64(peer.publicKey).substr(0, 8));
      actions.push_back(Action::NewHandshake);
    }
    if (due(peer.zeroKeyMaterialAt)) {
      spdlog::info("event=keys_zeroed peer={}", keyToBase64(peer.publicKey).substr(0, 8));
      wipePeerSessions(peer);
    }
    if (due(peer.persistentKeepaliveAt)) actions.push_back(Action::Keepalive);
  }
  for (Action a : actions) {
    switch (a) {
      case Action::Retry:
        initiateHandshake(peer, true);
        break;
      case Action::Keepalive:
        sendKeepalive(peer);
        break;
      case Action::NewHandshake:
        initiateHandshake(peer, false);
        break;
      case Action::None:
        break;
    }
  }
}

}  // namespace strait::tunnel
