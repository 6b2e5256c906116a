// The send path: TUN -> (allowed-IPs lookup, remap, encrypt) -> UDP.
//
// One thread (tunLoop) reads up to kBatchSize packets from the TUN descriptor into its own
// buffers, holding Device::Impl::peersMu shared for the batch. For each packet it finds the
// peer by destination, and under that peer's lock only reserves a nonce of the current
// session (or stages the packet when there is none) and fires the timer hooks; the AEAD runs
// outside the lock, in place after a 16-byte header of headroom. The batch then goes out in
// one sendmmsg (GSO when available). Handshake initiations are sent after the batch.
#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/thread_annotations.h"
#include "tunnel/device_impl.h"
#include "tunnel/offload.h"

namespace strait::tunnel {

namespace {

constexpr size_t kSlots = 4 * kBatchSize;  // a TSO super-packet fills up to ~48

// Writes the transport header and encrypts the `length` plaintext bytes at
// buffer+16 in place (padded to 16, not beyond `mtu`). Returns the message size or 0.
size_t sealTransport(const Keypair& kp, uint64_t nonce, uint8_t* buffer, size_t length, int mtu) {
  size_t padded = (length + kPaddingMultiple - 1) / kPaddingMultiple * kPaddingMultiple;
  if (padded > static_cast<size_t>(mtu) && length <= static_cast<size_t>(mtu)) {
    padded = static_cast<size_t>(mtu);
  }
  if (padded < length) padded = length;
  uint8_t* plain = buffer + kMessageTransportHeaderSize;
  std::memset(plain + length, 0, padded - length);
  MessageTransportHeader h{kMessageTransportType, kp.remoteIndex, nonce};
  std::memcpy(buffer, &h, sizeof h);
  if (!aeadSeal(kp.sendKey.data(), nonce, Bytes(plain, padded), Bytes(), plain)) return 0;
  return kMessageTransportHeaderSize + padded + kTagSize;
}

// Destination address of an IP packet; family 0 if it is not a valid IPv4/IPv6 packet.
IpAddress destinationOf(const uint8_t* p, size_t n) {
  IpAddress a;
  if (n >= 20 && (p[0] >> 4) == 4) {
    a.family = AF_INET;
    std::memcpy(a.bytes.data(), p + 16, 4);
  } else if (n >= 40 && (p[0] >> 4) == 6) {
    a.family = AF_INET6;
    std::memcpy(a.bytes.data(), p + 24, 16);
  }
  return a;
}

}  // namespace

// Reserves a nonce of the peer's current session for one packet. Returns the keypair, or
// null after staging the packet when there is no usable session.
static std::shared_ptr<Keypair> reserveNonce(Device::Impl& d, Peer& peer, const uint8_t* packet,
                                             size_t length, SteadyTime now, uint64_t* nonce,
                                             bool* wantHandshake) REQUIRES(peer.mu) {
  std::shared_ptr<Keypair> kp = peer.current;
  if (kp && d.keypairUsableForSend(*kp, now)) {
    *nonce = kp->sendNonce.fetch_add(1, std::memory_order_relaxed);
    if (*nonce < kRejectAfterMessages) {
      if (kp->isInitiator && (now - kp->created >= d.options.timers.rekeyAfterTime ||
                              *nonce >= d.options.timers.rekeyAfterMessages)) {
        *wantHandshake = true;
      }
      return kp;
    }
  }
  if (peer.staged.size() >= kMaxStagedPackets) {
    peer.staged.pop_front();
    AtomicCounters::bump(d.counters.stagedDropped);
  }
  peer.staged.emplace_back(packet, packet + length);
  *wantHandshake = true;
  return nullptr;
}

void Device::Impl::tunLoop() {
  fcntl(tunFd, F_SETFL, fcntl(tunFd, F_GETFL) | O_NONBLOCK);
  // Each slot: 16 bytes of headroom for the transport header, the packet, padding and tag.
  const size_t capacity = static_cast<size_t>(std::max(options.mtu, 1500)) + 64;
  const size_t slotSize = kMessageTransportHeaderSize + capacity + kPaddingMultiple + kTagSize;
  std::vector<std::vector<uint8_t>> slots(kSlots, std::vector<uint8_t>(slotSize));
  std::vector<uint8_t*> plain(kSlots);
  for (size_t i = 0; i < kSlots; ++i) plain[i] = slots[i].data() + kMessageTransportHeaderSize;
  std::vector<uint8_t> superPacket(options.tunVnetHdr ? sizeof(VirtioNetHdr) + 65536 : 0);
  std::vector<size_t> lengths(kSlots);
  std::vector<OutPacket> out;
  std::vector<Peer*> handshakes;
  out.reserve(kSlots);
  pollfd fds[2] = {{tunFd, POLLIN, 0}, {stopFd, POLLIN, 0}};
  while (running.load(std::memory_order_relaxed)) {
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents) break;
    size_t n = 0;
    // Read while a whole super-packet's segments still fit.
    while (kSlots - n >= kBatchSize && n < kBatchSize * 3) {
      if (!options.tunVnetHdr) {
        ssize_t r = read(tunFd, plain[n], capacity);
        if (r <= 0) break;
        lengths[n++] = static_cast<size_t>(r);
        continue;
      }
      ssize_t r = read(tunFd, superPacket.data(), superPacket.size());
      if (r <= static_cast<ssize_t>(sizeof(VirtioNetHdr))) break;
      VirtioNetHdr hdr;
      std::memcpy(&hdr, superPacket.data(), sizeof hdr);
      size_t count = segmentOffloaded(hdr, superPacket.data() + sizeof hdr, r - sizeof hdr,
                                      std::span<uint8_t* const>(plain.data() + n, kSlots - n),
                                      capacity, lengths.data() + n);
      if (count == 0) AtomicCounters::bump(counters.invalid);
      n += count;
    }
    if (n == 0) continue;
    SteadyTime now = std::chrono::steady_clock::now();
    out.clear();
    handshakes.clear();
    std::shared_lock lock(peersMu);
    for (size_t i = 0; i < n; ++i) {
      uint8_t* packet = slots[i].data() + kMessageTransportHeaderSize;
      IpAddress dst = destinationOf(packet, lengths[i]);
      std::optional<Peer*> found = dst.family ? allowedIps.lookup(dst) : std::nullopt;
      if (!found) {
        AtomicCounters::bump(dst.family ? counters.noRoute : counters.invalid);
        continue;
      }
      Peer& peer = **found;
      uint64_t nonce = 0;
      bool wantHandshake = false;
      std::shared_ptr<Keypair> kp;
      Endpoint to;
      {
        base::MutexLock pl(peer.mu);
        if (peer.remap) remapOutbound(*peer.remap, packet, lengths[i]);
        to = peer.endpoint;
        if (!to.valid()) {
          AtomicCounters::bump(counters.noRoute);
          continue;
        }
        kp = reserveNonce(*this, peer, packet, lengths[i], now, &nonce, &wantHandshake);
        if (kp) {
          onDataSent(peer, now);
          onAnyAuthenticatedPacketSent(peer, now);
          onAnyAuthenticatedPacketTraversal(peer, now);
        }
      }
      if (wantHandshake) handshakes.push_back(&peer);
      if (!kp) continue;
      size_t size = sealTransport(*kp, nonce, slots[i].data(), lengths[i], options.mtu);
      if (size == 0) continue;
      out.push_back({slots[i].data(), size, to});
      peer.txBytes.fetch_add(size, std::memory_order_relaxed);
    }
    if (!out.empty()) {
      if (auto sock = currentSocket()) {
        size_t sent = sock->send(out);
        AtomicCounters::bump(counters.txPackets, sent);
      }
    }
    std::sort(handshakes.begin(), handshakes.end());
    handshakes.erase(std::unique(handshakes.begin(), handshakes.end()), handshakes.end());
    for (Peer* p : handshakes) initiateHandshake(*p, false);
  }
}

void Device::Impl::sendStaged(Peer& peer, bool keepaliveIfEmpty) {
  SteadyTime now = std::chrono::steady_clock::now();
  std::deque<std::vector<uint8_t>> packets;
  std::shared_ptr<Keypair> kp;
  std::vector<uint64_t> nonces;
  Endpoint to;
  {
    base::MutexLock pl(peer.mu);
    if (peer.staged.empty() && keepaliveIfEmpty) peer.staged.emplace_back();
    if (peer.staged.empty()) return;
    kp = peer.current;
    to = peer.endpoint;
    if (!kp || !keypairUsableForSend(*kp, now) || !to.valid()) {
      kp.reset();
    } else {
      packets.swap(peer.staged);
      for (const auto& p : packets) {
        nonces.push_back(kp->sendNonce.fetch_add(1, std::memory_order_relaxed));
        if (!p.empty()) onDataSent(peer, now);
      }
      onAnyAuthenticatedPacketSent(peer, now);
      onAnyAuthenticatedPacketTraversal(peer, now);
    }
  }
  if (!kp) {
    initiateHandshake(peer, false);
    return;
  }
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<OutPacket> out;
  buffers.reserve(packets.size());
  for (size_t i = 0; i < packets.size(); ++i) {
    const auto& p = packets[i];
    if (nonces[i] >= kRejectAfterMessages) continue;
    buffers.emplace_back(kMessageTransportHeaderSize + p.size() + 2 * kPaddingMultiple + kTagSize);
    std::copy(p.begin(), p.end(), buffers.back().begin() + kMessageTransportHeaderSize);
    size_t size = sealTransport(*kp, nonces[i], buffers.back().data(), p.size(), options.mtu);
    if (size == 0) continue;
    out.push_back({buffers.back().data(), size, to});
    peer.txBytes.fetch_add(size, std::memory_order_relaxed);
  }
  if (auto sock = currentSocket(); sock && !out.empty()) {
    AtomicCounters::bump(counters.txPackets, sock->send(out));
  }
}

void Device::Impl::sendKeepalive(Peer& peer) { sendStaged(peer, true); }

void Device::Impl::initiateHandshake(Peer& peer, bool isRetry) {
  SteadyTime now = std::chrono::steady_clock::now();
  MessageInitiation msg{};
  Endpoint to;
  {
    base::MutexLock pl(peer.mu);
    if (!isRetry) {
      if (peer.lastSentHandshake && now - *peer.lastSentHandshake < options.timers.rekeyTimeout) {
        return;
      }
      peer.handshakeAttempts = 0;
    }
    if (!peer.endpoint.valid() || !identity.set) return;
    peer.lastSentHandshake = now;
    if (peer.handshake.localIndex != 0) unregisterIndex(peer.handshake.localIndex);
    uint32_t index = registerHandshakeIndex(&peer);
    if (!createInitiation(identity, peer.handshake, index, tai64nNow(), msg)) {
      unregisterIndex(index);
      peer.handshake.clear();
      return;
    }
    peer.cookies.addMacs(MutableBytes(reinterpret_cast<uint8_t*>(&msg), sizeof msg), now);
    onHandshakeInitiated(peer, now);
    onAnyAuthenticatedPacketSent(peer, now);
    onAnyAuthenticatedPacketTraversal(peer, now);
    to = peer.endpoint;
  }
  AtomicCounters::bump(counters.handshakesInitiated);
  peer.txBytes.fetch_add(sizeof msg, std::memory_order_relaxed);
  spdlog::debug("event=handshake_initiation peer={} endpoint={} retry={}",
                keyToBase64(peer.publicKey).substr(0, 8), to.toString(), isRetry);
  sendRaw(to, reinterpret_cast<const uint8_t*>(&msg), sizeof msg);
}

void Device::Impl::sendRaw(const Endpoint& to, const uint8_t* data, size_t length) {
  if (auto sock = currentSocket()) {
    OutPacket p{data, length, to};
    sock->send(std::span<const OutPacket>(&p, 1));
  }
}

}  // namespace strait::tunnel
