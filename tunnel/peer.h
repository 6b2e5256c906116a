#pragma once
// Private to tunnel/: a peer's state and its session keypairs.
//
// Locking: Peer::mu guards everything under it. Keypair keys and indexes are immutable
// after construction; sendNonce is atomic; the replay window has its own mutex.

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "base/thread_annotations.h"
#include "tunnel/cookie.h"
#include "tunnel/crypto.h"
#include "tunnel/ip.h"
#include "tunnel/messages.h"
#include "tunnel/noise.h"
#include "tunnel/remap.h"
#include "tunnel/replay.h"

namespace strait::tunnel {

class Peer;

// The transport keys of one session. Wiped (SymmetricKey) when the last holder drops it.
struct Keypair {
  SymmetricKey sendKey;
  SymmetricKey receiveKey;
  std::atomic<uint64_t> sendNonce{0};
  SteadyTime created{};
  bool isInitiator = false;
  uint32_t localIndex = 0;
  uint32_t remoteIndex = 0;
  Peer* peer = nullptr;  // outlives the keypair's presence in the index table

  base::Mutex replayMu;
  ReplayFilter replay GUARDED_BY(replayMu);
};

class Peer {
 public:
  explicit Peer(const PublicKey& key) : publicKey(key) { cookies.init(key); }

  const PublicKey publicKey;
  CookieGenerator cookies;  // own lock
  std::atomic<uint64_t> rxBytes{0}, txBytes{0};
  std::atomic<int64_t> lastHandshakeUnixNanos{0};

  base::Mutex mu;
  Handshake handshake GUARDED_BY(mu);
  std::shared_ptr<Keypair> previous GUARDED_BY(mu), current GUARDED_BY(mu), next GUARDED_BY(mu);
  Endpoint endpoint GUARDED_BY(mu);
  uint16_t persistentKeepalive GUARDED_BY(mu) = 0;  // seconds
  std::optional<PrefixRemap> remap GUARDED_BY(mu);
  std::deque<std::vector<uint8_t>> staged GUARDED_BY(mu);  // plaintext waiting for a session
  // Timers (see timers.cpp): a deadline is armed when set.
  std::optional<SteadyTime> retransmitHandshakeAt GUARDED_BY(mu);
  std::optional<SteadyTime> sendKeepaliveAt GUARDED_BY(mu);
  std::optional<SteadyTime> newHandshakeAt GUARDED_BY(mu);
  std::optional<SteadyTime> zeroKeyMaterialAt GUARDED_BY(mu);
  std::optional<SteadyTime> persistentKeepaliveAt GUARDED_BY(mu);
  bool needAnotherKeepalive GUARDED_BY(mu) = false;
  int handshakeAttempts GUARDED_BY(mu) = 0;
  std::optional<SteadyTime> lastSentHandshake GUARDED_BY(mu);
  std::optional<SteadyTime> lastInitiationConsumed GUARDED_BY(mu);
};

}  // namespace strait::tunnel
