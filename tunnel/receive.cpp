// The receive path: UDP -> (type dispatch, handshake / cookie / decrypt, replay window,
// allowed-IPs source check, remap) -> TUN.
//
// One thread (udpLoop) reads batches with recvmmsg (GRO segments split), holding
// Device::Impl::peersMu shared for the batch. Transport packets are decrypted in place
// outside any peer lock (the keypair is held by shared_ptr); the replay window is checked
// after the tag verifies, under the keypair's own mutex; then, under the peer's lock, the
// session rotation, endpoint (roaming) and timer hooks. Handshake messages are handled
// inline; above `underLoadHandshakesPerSecond` an initiation or response without a valid
// mac2 gets a cookie reply instead.
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

#include "base/thread_annotations.h"
#include "tunnel/device_impl.h"
#include "tunnel/offload.h"

namespace strait::tunnel {

void Device::Impl::udpLoop() {
  ReceiveBuffers buffers(kBatchSize);
  std::vector<TunPacket> pending;
  std::vector<uint8_t> scratch;
  std::shared_ptr<UdpSocket> sock = currentSocket();
  while (running.load(std::memory_order_relaxed)) {
    pollfd fds[3] = {
        {sock ? sock->fd() : -1, POLLIN, 0}, {stopFd, POLLIN, 0}, {rebindFd, POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) continue;
    if (fds[1].revents) break;
    if (fds[2].revents) {
      uint64_t v;
      (void)!read(rebindFd, &v, sizeof v);
      sock = currentSocket();
      continue;
    }
    if (!sock) continue;
    size_t n = sock->receive(buffers);
    if (n == 0) continue;
    SteadyTime now = std::chrono::steady_clock::now();
    std::shared_lock lock(peersMu);
    pending.clear();
    for (InPacket& p : buffers.packets) {
      size_t plain = receiveDatagram(p.data, p.length, p.from, now);
      if (plain > 0) pending.push_back({p.data + kMessageTransportHeaderSize, plain});
    }
    writeTun(pending, scratch);
  }
}

void Device::Impl::writeTun(std::span<const TunPacket> packets, std::vector<uint8_t>& scratch) {
  if (!options.tunVnetHdr) {
    for (const TunPacket& p : packets) {
      if (write(tunFd, p.data, p.length) < 0) AtomicCounters::bump(counters.invalid);
    }
    return;
  }
  coalesceForTun(packets, scratch, [&](const VirtioNetHdr& h, const uint8_t* d, size_t n) {
    iovec iov[2] = {{const_cast<VirtioNetHdr*>(&h), sizeof h}, {const_cast<uint8_t*>(d), n}};
    if (writev(tunFd, iov, 2) < 0) AtomicCounters::bump(counters.invalid);
  });
}

size_t Device::Impl::receiveDatagram(uint8_t* data, size_t length, const Endpoint& source,
                                     SteadyTime now) {
  if (length < 4) {
    AtomicCounters::bump(counters.invalid);
    return 0;
  }
  uint32_t type;
  std::memcpy(&type, data, 4);
  if (type == kMessageTransportType && length >= kMessageTransportMinSize) {
    return handleTransport(data, length, source, now);
  }
  if (type == kMessageInitiationType && length == sizeof(MessageInitiation)) {
    handleInitiation(data, length, source, now);
  } else if (type == kMessageResponseType && length == sizeof(MessageResponse)) {
    handleResponse(data, length, source, now);
  } else if (type == kMessageCookieReplyType && length == sizeof(MessageCookieReply)) {
    handleCookieReply(data, length, now);
  } else {
    AtomicCounters::bump(counters.invalid);
  }
  return 0;
}

bool Device::Impl::underLoad(SteadyTime now) {
  if (now - loadWindowStart >= std::chrono::seconds(1)) {
    loadWindowStart = now;
    loadCount = 0;
  }
  return ++loadCount > options.underLoadHandshakesPerSecond;
}

namespace {
// Checks mac1 and, under load, mac2; sends a cookie reply when mac2 is missing. Returns
// true when the message may be processed.
bool admitHandshake(Device::Impl& d, uint8_t* data, size_t length, uint32_t sender,
                    const Endpoint& source, SteadyTime now) {
  Bytes msg(data, length);
  if (!d.cookieChecker.checkMac1(msg)) {
    AtomicCounters::bump(d.counters.badMac1);
    return false;
  }
  if (!d.underLoad(now)) return true;
  std::string src = source.cookieSource();
  Bytes srcBytes(reinterpret_cast<const uint8_t*>(src.data()), src.size());
  if (d.cookieChecker.checkMac2(msg, srcBytes, now)) return true;
  MessageCookieReply reply = d.cookieChecker.createReply(msg, sender, srcBytes, now);
  d.sendRaw(source, reinterpret_cast<const uint8_t*>(&reply), sizeof reply);
  AtomicCounters::bump(d.counters.cookieRepliesSent);
  return false;
}
}  // namespace

void Device::Impl::handleInitiation(uint8_t* data, size_t length, const Endpoint& source,
                                    SteadyTime now) {
  MessageInitiation msg;
  std::memcpy(&msg, data, sizeof msg);
  if (!admitHandshake(*this, data, length, msg.sender, source, now)) return;
  std::optional<ConsumedInitiation> in = consumeInitiation(identity, msg);
  if (!in) {
    AtomicCounters::bump(counters.handshakeRefused);
    return;
  }
  auto it = peers.find(in->peerStatic);
  if (it == peers.end()) {
    AtomicCounters::bump(counters.handshakeRefused);
    return;
  }
  Peer& peer = *it->second;
  MessageResponse resp{};
  {
    base::MutexLock pl(peer.mu);
    if (peer.lastInitiationConsumed &&
        now - *peer.lastInitiationConsumed < kHandshakeInitationRate) {
      AtomicCounters::bump(counters.handshakeRefused);
      return;
    }
    uint32_t ourPendingIndex = peer.handshake.localIndex;
    if (!acceptInitiation(peer.handshake, std::move(*in))) {
      AtomicCounters::bump(counters.handshakeRefused);
      return;
    }
    if (ourPendingIndex != 0) unregisterIndex(ourPendingIndex);  // their initiation wins
    peer.lastInitiationConsumed = now;
    peer.endpoint = source;
    uint32_t index = registerHandshakeIndex(&peer);
    if (!createResponse(peer.handshake, index, resp)) {
      unregisterIndex(index);
      peer.handshake.clear();
      return;
    }
    peer.cookies.addMacs(MutableBytes(reinterpret_cast<uint8_t*>(&resp), sizeof resp), now);
    std::optional<SessionKeys> keys = beginSession(peer.handshake);
    if (!keys) {
      unregisterIndex(index);
      return;
    }
    installKeypair(peer, std::move(*keys), now);
    onAnyAuthenticatedPacketReceived(peer, now);
    onAnyAuthenticatedPacketSent(peer, now);
    onAnyAuthenticatedPacketTraversal(peer, now);
  }
  peer.rxBytes.fetch_add(length, std::memory_order_relaxed);
  peer.txBytes.fetch_add(sizeof resp, std::memory_order_relaxed);
  spdlog::debug("event=handshake_response_sent peer={} endpoint={}",
                keyToBase64(peer.publicKey).substr(0, 8), source.toString());
  sendRaw(source, reinterpret_cast<const uint8_t*>(&resp), sizeof resp);
}

void Device::Impl::handleResponse(uint8_t* data, size_t length, const Endpoint& source,
                                  SteadyTime now) {
  MessageResponse msg;
  std::memcpy(&msg, data, sizeof msg);
  if (!admitHandshake(*this, data, length, msg.sender, source, now)) return;
  std::optional<IndexEntry> entry = lookupIndex(msg.receiver);
  if (!entry || entry->keypair) {
    AtomicCounters::bump(counters.unknownIndex);
    return;
  }
  Peer& peer = *entry->peer;
  {
    base::MutexLock pl(peer.mu);
    if (!consumeResponse(identity, peer.handshake, msg)) {
      AtomicCounters::bump(counters.handshakeRefused);
      return;
    }
    std::optional<SessionKeys> keys = beginSession(peer.handshake);
    if (!keys) return;
    installKeypair(peer, std::move(*keys), now);
    peer.endpoint = source;
    onHandshakeComplete(peer, now);
    onAnyAuthenticatedPacketReceived(peer, now);
    onAnyAuthenticatedPacketTraversal(peer, now);
  }
  AtomicCounters::bump(counters.handshakesCompleted);
  peer.rxBytes.fetch_add(length, std::memory_order_relaxed);
  spdlog::info("event=handshake_complete role=initiator peer={} endpoint={}",
               keyToBase64(peer.publicKey).substr(0, 8), source.toString());
  // Confirm the session to the responder: staged data, or else a keepalive.
  sendStaged(peer, true);
}

void Device::Impl::handleCookieReply(uint8_t* data, size_t length, SteadyTime now) {
  MessageCookieReply msg;
  std::memcpy(&msg, data, sizeof msg);
  std::optional<IndexEntry> entry = lookupIndex(msg.receiver);
  if (!entry) {
    AtomicCounters::bump(counters.unknownIndex);
    return;
  }
  if (entry->peer->cookies.consumeReply(msg, now)) {
    AtomicCounters::bump(counters.cookieRepliesReceived);
  } else {
    AtomicCounters::bump(counters.handshakeRefused);
  }
}

namespace {
// Length of the IP packet at `p` (from its header) if it fits in `n`; 0 if invalid.
size_t ipPacketLength(const uint8_t* p, size_t n, IpAddress* source) {
  if (n >= 20 && (p[0] >> 4) == 4) {
    size_t total = size_t(p[2]) << 8 | p[3];
    if (total < 20 || total > n) return 0;
    source->family = AF_INET;
    std::memcpy(source->bytes.data(), p + 12, 4);
    return total;
  }
  if (n >= 40 && (p[0] >> 4) == 6) {
    size_t total = 40 + (size_t(p[4]) << 8 | p[5]);
    if (total > n) return 0;
    source->family = AF_INET6;
    std::memcpy(source->bytes.data(), p + 8, 16);
    return total;
  }
  return 0;
}
}  // namespace

size_t Device::Impl::handleTransport(uint8_t* data, size_t length, const Endpoint& source,
                                     SteadyTime now) {
  MessageTransportHeader h;
  std::memcpy(&h, data, sizeof h);
  std::optional<IndexEntry> entry = lookupIndex(h.receiver);
  if (!entry || !entry->keypair) {
    AtomicCounters::bump(counters.unknownIndex);
    return 0;
  }
  Keypair& kp = *entry->keypair;
  if (now - kp.created >= options.timers.rejectAfterTime || h.counter >= kRejectAfterMessages) {
    AtomicCounters::bump(counters.unknownIndex);
    return 0;
  }
  uint8_t* body = data + kMessageTransportHeaderSize;
  size_t bodyLen = length - kMessageTransportHeaderSize;
  if (!aeadOpen(kp.receiveKey.data(), h.counter, Bytes(body, bodyLen), Bytes(), body)) {
    AtomicCounters::bump(counters.authFailed);
    return 0;
  }
  {
    base::MutexLock rl(kp.replayMu);
    if (!kp.replay.validate(h.counter, kRejectAfterMessages)) {
      AtomicCounters::bump(counters.replayed);
      return 0;
    }
  }
  size_t plainLen = bodyLen - kTagSize;
  Peer& peer = *kp.peer;
  peer.rxBytes.fetch_add(length, std::memory_order_relaxed);
  bool confirmed = false;
  bool wantHandshake = false;
  std::optional<PrefixRemap> remap;
  {
    base::MutexLock pl(peer.mu);
    if (peer.next == entry->keypair) {
      // First packet under the session we answered: it is confirmed.
      if (peer.previous) unregisterIndex(peer.previous->localIndex);
      peer.previous = peer.current;
      peer.current = peer.next;
      peer.next.reset();
      onHandshakeComplete(peer, now);
      confirmed = true;
    }
    peer.endpoint = source;  // roaming: follow the newest authenticated source
    onAnyAuthenticatedPacketReceived(peer, now);
    onAnyAuthenticatedPacketTraversal(peer, now);
    const TimerConfig& t = options.timers;
    if (peer.current && peer.current->isInitiator &&
        now - peer.current->created >= t.rejectAfterTime - t.keepaliveTimeout - t.rekeyTimeout) {
      wantHandshake = true;
    }
    if (plainLen > 0) onDataReceived(peer, now);
    remap = peer.remap;
  }
  if (confirmed) {
    AtomicCounters::bump(counters.handshakesCompleted);
    spdlog::info("event=handshake_complete role=responder peer={} endpoint={}",
                 keyToBase64(peer.publicKey).substr(0, 8), source.toString());
    sendStaged(peer, false);
  }
  if (wantHandshake) initiateHandshake(peer, false);
  if (plainLen == 0) return 0;  // keepalive
  IpAddress src;
  size_t ipLen = ipPacketLength(body, plainLen, &src);
  if (ipLen == 0) {
    AtomicCounters::bump(counters.invalid);
    return 0;
  }
  if (remap && remapInbound(*remap, body, ipLen)) std::memcpy(src.bytes.data(), body + 12, 4);
  std::optional<Peer*> owner = allowedIps.lookup(src);
  if (!owner || *owner != &peer) {
    AtomicCounters::bump(counters.notAllowedSource);
    return 0;
  }
  AtomicCounters::bump(counters.rxPackets);
  return ipLen;
}

}  // namespace strait::tunnel
