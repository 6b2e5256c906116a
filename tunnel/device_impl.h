#pragma once
// Private to tunnel/: the state behind Device and the functions of the send, receive and
// timer pipelines (send.cpp, receive.cpp, timers.cpp).
//
// Locking, outermost first:
//   peersMu (shared_mutex) - peers, allowedIps, identity. The packet paths and the timer
//       thread hold it shared for a whole batch, so a Peer* they hold stays valid;
//       configuration holds it exclusively.
//   Peer::mu - one peer's handshake, keypairs, endpoint, timers, staged packets.
//   indexMu - the receiver-index table.
//   socketMu - the current UDP socket pointer (swapped on a port change).
// Counters are relaxed atomics.

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "base/thread_annotations.h"
#include "tunnel/allowed_ips.h"
#include "tunnel/cookie.h"
#include "tunnel/device.h"
#include "tunnel/noise.h"
#include "tunnel/offload.h"
#include "tunnel/peer.h"
#include "tunnel/udp.h"

namespace strait::tunnel {

struct AtomicCounters {
  std::atomic<uint64_t> txPackets{0}, rxPackets{0}, replayed{0}, authFailed{0}, unknownIndex{0},
      badMac1{0}, handshakeRefused{0}, cookieRepliesSent{0}, cookieRepliesReceived{0},
      handshakesInitiated{0}, handshakesCompleted{0}, notAllowedSource{0}, noRoute{0},
      stagedDropped{0}, invalid{0};
  static void bump(std::atomic<uint64_t>& c, uint64_t n = 1) {
    c.fetch_add(n, std::memory_order_relaxed);
  }
};

// An encrypted transport message built in place: header (16) + ciphertext + tag.
struct Sealed {
  std::vector<uint8_t> bytes;
};

struct Device::Impl {
  explicit Impl(DeviceOptions o) : options(std::move(o)) {}

  const DeviceOptions options;
  AtomicCounters counters;
  CookieChecker cookieChecker;  // own lock

  mutable std::shared_mutex peersMu;
  // ---- guarded by peersMu ----
  StaticIdentity identity;
  std::map<PublicKey, std::unique_ptr<Peer>> peers;
  AllowedIps<Peer*> allowedIps;

  struct IndexEntry {
    Peer* peer = nullptr;
    std::shared_ptr<Keypair> keypair;  // null while the index names a pending handshake
  };
  base::Mutex indexMu;
  std::unordered_map<uint32_t, IndexEntry> indexTable GUARDED_BY(indexMu);

  mutable base::Mutex socketMu;
  std::shared_ptr<UdpSocket> socket GUARDED_BY(socketMu);
  std::atomic<uint16_t> configuredPort{0};

  int tunFd = -1;
  int stopFd = -1;    // eventfd: wakes the TUN and UDP loops on stop()
  int rebindFd = -1;  // eventfd: the UDP loop re-reads `socket`
  std::atomic<bool> running{false};
  std::thread tunThread, udpThread, timerThread;
  std::mutex timerMu;
  std::condition_variable timerCv;

  // Handshake load estimate, receive path only.
  SteadyTime loadWindowStart{};
  uint32_t loadCount = 0;

  std::shared_ptr<UdpSocket> currentSocket() const {
    base::MutexLock lock(socketMu);
    return socket;
  }

  // ---- index table (indexMu taken inside) ----
  uint32_t registerHandshakeIndex(Peer* peer);
  void bindKeypairIndex(const std::shared_ptr<Keypair>& kp);
  void unregisterIndex(uint32_t index);
  std::optional<IndexEntry> lookupIndex(uint32_t index);

  // ---- peers (peersMu held exclusively unless noted) ----
  void wipePeerSessions(Peer& peer) REQUIRES(peer.mu);
  void removePeerLocked(std::map<PublicKey, std::unique_ptr<Peer>>::iterator it);

  // ---- send path (send.cpp; peersMu held shared) ----
  void tunLoop();
  // Encrypts `plain` (length bytes at out+16) for the peer's current session into `out`;
  // returns the message length, or 0 when the packet must wait for a handshake (it is
  // then staged).
  size_t sealForPeer(Peer& peer, uint8_t* buffer, size_t length, SteadyTime now,
                     bool* wantHandshake) REQUIRES(peer.mu);
  // Sends the packets staged on `peer` (after a handshake) or a keepalive if
  // `keepaliveIfEmpty`. Takes Peer::mu.
  void sendStaged(Peer& peer, bool keepaliveIfEmpty) EXCLUDES(peer.mu);
  void sendKeepalive(Peer& peer);
  // Sends a handshake initiation unless one went out less than REKEY_TIMEOUT ago (ignored
  // when `isRetry`). Takes Peer::mu.
  void initiateHandshake(Peer& peer, bool isRetry) EXCLUDES(peer.mu);
  void sendRaw(const Endpoint& to, const uint8_t* data, size_t length);

  // ---- receive path (receive.cpp; peersMu held shared) ----
  void udpLoop();
  // Returns the decrypted packet's length at data+16 to write to the TUN, or 0.
  size_t receiveDatagram(uint8_t* data, size_t length, const Endpoint& source, SteadyTime now);
  bool underLoad(SteadyTime now);
  void handleInitiation(uint8_t* data, size_t length, const Endpoint& source, SteadyTime now);
  void handleResponse(uint8_t* data, size_t length, const Endpoint& source, SteadyTime now);
  void handleCookieReply(uint8_t* data, size_t length, SteadyTime now);
  size_t handleTransport(uint8_t* data, size_t length, const Endpoint& source, SteadyTime now);
  // Writes decrypted packets to the TUN (coalesced when it has offloads).
  void writeTun(std::span<const TunPacket> packets, std::vector<uint8_t>& scratch);

  // ---- timers (timers.cpp) ----
  void timerLoop();
  void tickPeer(Peer& peer, SteadyTime now);  // peersMu shared
  // Hooks; Peer::mu held. "Call after ..." notes in timers.cpp.
  void onDataSent(Peer& peer, SteadyTime now) REQUIRES(peer.mu);
  void onDataReceived(Peer& peer, SteadyTime now) REQUIRES(peer.mu);
  void onAnyAuthenticatedPacketSent(Peer& peer, SteadyTime now) REQUIRES(peer.mu);
  void onAnyAuthenticatedPacketReceived(Peer& peer, SteadyTime now) REQUIRES(peer.mu);
  void onAnyAuthenticatedPacketTraversal(Peer& peer, SteadyTime now) REQUIRES(peer.mu);
  void onHandshakeInitiated(Peer& peer, SteadyTime now) REQUIRES(peer.mu);
  void onHandshakeComplete(Peer& peer, SteadyTime now) REQUIRES(peer.mu);
  void onSessionDerived(Peer& peer, SteadyTime now) REQUIRES(peer.mu);
  // Installs a new session keypair (initiator: current at once; responder: next, until
  // the first packet from the initiator confirms it).
  std::shared_ptr<Keypair> installKeypair(Peer& peer, SessionKeys&& keys, SteadyTime now)
      REQUIRES(peer.mu);
  bool keypairUsableForSend(const Keypair& kp, SteadyTime now) const;
};

}  // namespace strait::tunnel
