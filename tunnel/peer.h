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

  std::mutex replayMu;
  ReplayFilter replay;  // guarded by replayMu
};

class Peer {
 public:
  explicit Peer(const PublicKey& key) : publicKey(key) { cookies.init(key); }

  const PublicKey publicKey;
  CookieGenerator cookies;  // own lock
  std::atomic<uint64_t> rxBytes{0}, txBytes{0};
  std::atomic<int64_t> lastHandshakeUnixNanos{0};

  std::mutex mu;
  // ---- guarded by mu ----
  Handshake handshake;
  std::shared_ptr<Keypair> previous, current, next;
  Endpoint endpoint;
  uint16_t persistentKeepalive = 0;  // seconds
  std::optional<PrefixRemap> remap;
  std::deque<std::vector<uint8_t>> staged;  // plaintext waiting for a session
  // Timers (see timers.cpp): a deadline is armed when set.
  std::optional<SteadyTime> retransmitHandshakeAt, sendKeepaliveAt, newHandshakeAt,
      zeroKeyMaterialAt, persistentKeepaliveAt;
  bool needAnotherKeepalive = false;
  int handshakeAttempts = 0;
  std::optional<SteadyTime> lastSentHandshake;
  std::optional<SteadyTime> lastInitiationConsumed;
};

}  // namespace strait::tunnel
