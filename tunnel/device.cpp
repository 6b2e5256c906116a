// Device lifecycle, configuration, the receiver-index table and session installation.
#include "tunnel/device.h"

#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <ctime>

#include "base/thread_annotations.h"
#include "tunnel/device_impl.h"

namespace strait::tunnel {

using base::Code;
using base::makeError;

Device::Device(DeviceOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Device::~Device() {
  stop();
  std::unique_lock lock(impl_->peersMu);
  impl_->peers.clear();
}

base::Status Device::start(int tunFd) {
  Impl& d = *impl_;
  if (d.running.load()) return makeError(Code::Conflict, "device already started");
  auto sock = UdpSocket::open(d.configuredPort.load(), d.options.udpOffload);
  if (!sock.ok()) return sock.error();
  {
    base::MutexLock lock(d.socketMu);
    d.socket = *sock;
  }
  d.tunFd = tunFd;
  d.stopFd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  d.rebindFd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  {
    // Peers with a persistent keepalive speak first (which starts a handshake).
    std::shared_lock lock(d.peersMu);
    SteadyTime now = std::chrono::steady_clock::now();
    for (auto& [key, peer] : d.peers) {
      base::MutexLock pl(peer->mu);
      if (peer->persistentKeepalive > 0) peer->persistentKeepaliveAt = now;
    }
  }
  d.running = true;
  spdlog::info("event=device_start listen_port={} gro={} gso={}", (*sock)->port(), (*sock)->gro(),
               (*sock)->gso());
  d.tunThread = std::thread([&d] { d.tunLoop(); });
  d.udpThread = std::thread([&d] { d.udpLoop(); });
  d.timerThread = std::thread([&d] { d.timerLoop(); });
  return base::Status::OK();
}

void Device::stop() {
  Impl& d = *impl_;
  if (!d.running.exchange(false)) return;
  uint64_t one = 1;
  (void)!write(d.stopFd, &one, sizeof one);
  d.timerCv.notify_all();
  for (std::thread* t : {&d.tunThread, &d.udpThread, &d.timerThread}) {
    if (t->joinable()) t->join();
  }
  close(d.stopFd);
  close(d.rebindFd);
  d.stopFd = d.rebindFd = -1;
  base::MutexLock lock(d.socketMu);
  d.socket.reset();
  spdlog::info("event=device_stop");
}

base::Status Device::setPrivateKey(const PrivateKey& key) {
  Impl& d = *impl_;
  auto pub = publicKeyOf(key);
  if (!pub) return makeError(Code::Invalid, "private key refused by X25519");
  std::unique_lock lock(d.peersMu);
  d.identity.privateKey = key;
  d.identity.publicKey = *pub;
  d.identity.set = true;
  d.cookieChecker.init(*pub);
  if (auto it = d.peers.find(*pub); it != d.peers.end()) d.removePeerLocked(it);
  for (auto& [k, peer] : d.peers) {
    base::MutexLock pl(peer->mu);
    d.wipePeerSessions(*peer);
    peer->handshake.setRemoteStatic(d.identity, peer->publicKey);
  }
  return base::Status::OK();
}

base::Status Device::setListenPort(uint16_t port) {
  Impl& d = *impl_;
  d.configuredPort = port;
  if (!d.running.load()) return base::Status::OK();
  std::shared_ptr<UdpSocket> old = d.currentSocket();
  if (old && port != 0 && old->port() == port) return base::Status::OK();
  {
    // Release the old port first so that the new bind may reuse it.
    base::MutexLock lock(d.socketMu);
    d.socket.reset();
  }
  old.reset();
  auto sock = UdpSocket::open(port, d.options.udpOffload);
  if (!sock.ok()) return sock.error();
  {
    base::MutexLock lock(d.socketMu);
    d.socket = *sock;
  }
  uint64_t one = 1;
  (void)!write(d.rebindFd, &one, sizeof one);
  spdlog::info("event=listen_port_changed port={}", (*sock)->port());
  return base::Status::OK();
}

uint16_t Device::listenPort() const {
  auto s = impl_->currentSocket();
  return s ? s->port() : impl_->configuredPort.load();
}

base::Status Device::applyConfig(const InterfaceConfig& config) {
  if (auto st = setPrivateKey(config.privateKey); !st.ok()) return st;
  if (auto st = setListenPort(config.listenPort); !st.ok()) return st;
  removeAllPeers();
  for (const PeerConfig& p : config.peers) {
    PeerUpdate u;
    u.presharedKey = p.presharedKey;
    u.endpoint = p.endpoint;
    u.persistentKeepalive = p.persistentKeepalive;
    u.replaceAllowedIps = true;
    u.addAllowedIps = p.allowedIps;
    u.remap = p.remap;
    if (auto st = updatePeer(p.publicKey, u); !st.ok()) return st;
  }
  return base::Status::OK();
}

base::Status Device::updatePeer(const PublicKey& publicKey, const PeerUpdate& update,
                                bool updateOnly) {
  Impl& d = *impl_;
  std::unique_lock lock(d.peersMu);
  if (d.identity.set && publicKey == d.identity.publicKey) {
    return makeError(Code::Invalid, "peer " + keyToBase64(publicKey) + " is this device's own key");
  }
  auto it = d.peers.find(publicKey);
  if (it == d.peers.end()) {
    if (updateOnly) return makeError(Code::NotFound, "no peer " + keyToBase64(publicKey));
    auto peer = std::make_unique<Peer>(publicKey);
    {
      base::MutexLock pl(peer->mu);  // not shared yet: the lock is for the analysis
      peer->handshake.setRemoteStatic(d.identity, publicKey);
    }
    it = d.peers.emplace(publicKey, std::move(peer)).first;
    spdlog::info("event=peer_added peer={}", keyToBase64(publicKey).substr(0, 8));
  }
  Peer& peer = *it->second;
  SteadyTime now = std::chrono::steady_clock::now();
  base::MutexLock pl(peer.mu);
  if (update.presharedKey) peer.handshake.presharedKey = *update.presharedKey;
  if (update.endpoint) peer.endpoint = *update.endpoint;
  if (update.persistentKeepalive) {
    bool wasOff = peer.persistentKeepalive == 0;
    peer.persistentKeepalive = *update.persistentKeepalive;
    // Like wireguard-go: turning it on sends a keepalive soon.
    if (wasOff && peer.persistentKeepalive > 0 && d.running.load()) {
      peer.persistentKeepaliveAt = now;
    }
  }
  if (update.remap) peer.remap = *update.remap;
  if (update.replaceAllowedIps) d.allowedIps.removeValue(&peer);
  for (const IpPrefix& p : update.addAllowedIps) d.allowedIps.insert(p, &peer);
  return base::Status::OK();
}

bool Device::removePeer(const PublicKey& publicKey) {
  Impl& d = *impl_;
  std::unique_lock lock(d.peersMu);
  auto it = d.peers.find(publicKey);
  if (it == d.peers.end()) return false;
  d.removePeerLocked(it);
  return true;
}

void Device::removeAllPeers() {
  Impl& d = *impl_;
  std::unique_lock lock(d.peersMu);
  while (!d.peers.empty()) d.removePeerLocked(d.peers.begin());
}

void Device::Impl::removePeerLocked(std::map<PublicKey, std::unique_ptr<Peer>>::iterator it) {
  Peer& peer = *it->second;
  {
    base::MutexLock pl(peer.mu);
    wipePeerSessions(peer);
  }
  allowedIps.removeValue(&peer);
  spdlog::info("event=peer_removed peer={}", keyToBase64(peer.publicKey).substr(0, 8));
  peers.erase(it);
}

void Device::Impl::wipePeerSessions(Peer& peer) {
  for (auto* kp : {&peer.previous, &peer.current, &peer.next}) {
    if (*kp) unregisterIndex((*kp)->localIndex);
    kp->reset();
  }
  if (peer.handshake.localIndex != 0) unregisterIndex(peer.handshake.localIndex);
  peer.handshake.clear();
  peer.staged.clear();
  peer.retransmitHandshakeAt.reset();
  peer.sendKeepaliveAt.reset();
  peer.newHandshakeAt.reset();
  peer.zeroKeyMaterialAt.reset();
  peer.handshakeAttempts = 0;
}

DeviceSnapshot Device::snapshot() const {
  Impl& d = *impl_;
  DeviceSnapshot s;
  s.listenPort = listenPort();
  std::shared_lock lock(d.peersMu);
  s.hasPrivateKey = d.identity.set;
  s.privateKey = d.identity.privateKey;
  s.publicKey = d.identity.publicKey;
  for (const auto& [key, peer] : d.peers) {
    PeerSnapshot p;
    p.publicKey = key;
    p.rxBytes = peer->rxBytes.load();
    p.txBytes = peer->txBytes.load();
    int64_t ns = peer->lastHandshakeUnixNanos.load();
    p.lastHandshakeSeconds = ns / 1'000'000'000;
    p.lastHandshakeNanoseconds = ns % 1'000'000'000;
    p.allowedIps = d.allowedIps.prefixesOf(peer.get());
    base::MutexLock pl(peer->mu);
    p.presharedKey = peer->handshake.presharedKey;
    p.endpoint = peer->endpoint;
    p.persistentKeepalive = peer->persistentKeepalive;
    p.remap = peer->remap;
    s.peers.push_back(std::move(p));
  }
  return s;
}

DeviceCounters Device::counters() const {
  const AtomicCounters& c = impl_->counters;
  DeviceCounters o;
  o.txPackets = c.txPackets.load();
  o.rxPackets = c.rxPackets.load();
  o.replayed = c.replayed.load();
  o.authFailed = c.authFailed.load();
  o.unknownIndex = c.unknownIndex.load();
  o.badMac1 = c.badMac1.load();
  o.handshakeRefused = c.handshakeRefused.load();
  o.cookieRepliesSent = c.cookieRepliesSent.load();
  o.cookieRepliesReceived = c.cookieRepliesReceived.load();
  o.handshakesInitiated = c.handshakesInitiated.load();
  o.handshakesCompleted = c.handshakesCompleted.load();
  o.notAllowedSource = c.notAllowedSource.load();
  o.noRoute = c.noRoute.load();
  o.stagedDropped = c.stagedDropped.load();
  o.invalid = c.invalid.load();
  return o;
}

void Device::handleDatagram(uint8_t* data, size_t length, const Endpoint& source) {
  Impl& d = *impl_;
  std::shared_lock lock(d.peersMu);
  size_t n = d.receiveDatagram(data, length, source, std::chrono::steady_clock::now());
  if (n > 0) {
    TunPacket p{data + kMessageTransportHeaderSize, n};
    std::vector<uint8_t> scratch;
    d.writeTun(std::span<const TunPacket>(&p, 1), scratch);
  }
}

// ---- receiver-index table ----

uint32_t Device::Impl::registerHandshakeIndex(Peer* peer) {
  base::MutexLock lock(indexMu);
  for (;;) {
    uint32_t index = 0;
    randomBytes(MutableBytes(reinterpret_cast<uint8_t*>(&index), sizeof index));
    if (index == 0 || indexTable.count(index)) continue;
    indexTable[index] = IndexEntry{peer, nullptr};
    return index;
  }
}

void Device::Impl::bindKeypairIndex(const std::shared_ptr<Keypair>& kp) {
  base::MutexLock lock(indexMu);
  indexTable[kp->localIndex] = IndexEntry{kp->peer, kp};
}

void Device::Impl::unregisterIndex(uint32_t index) {
  base::MutexLock lock(indexMu);
  indexTable.erase(index);
}

std::optional<Device::Impl::IndexEntry> Device::Impl::lookupIndex(uint32_t index) {
  base::MutexLock lock(indexMu);
  auto it = indexTable.find(index);
  if (it == indexTable.end()) return std::nullopt;
  return it->second;
}

std::shared_ptr<Keypair> Device::Impl::installKeypair(Peer& peer, SessionKeys&& keys,
                                                      SteadyTime now) {
  auto kp = std::make_shared<Keypair>();
  kp->sendKey = keys.send;
  kp->receiveKey = keys.receive;
  kp->created = now;
  kp->isInitiator = keys.isInitiator;
  kp->localIndex = keys.localIndex;
  kp->remoteIndex = keys.remoteIndex;
  kp->peer = &peer;
  bindKeypairIndex(kp);
  if (keys.isInitiator) {
    // The old next (never confirmed) or the old current becomes previous.
    std::shared_ptr<Keypair> old = peer.next ? peer.next : peer.current;
    if (peer.next && peer.current) unregisterIndex(peer.current->localIndex);
    if (peer.previous && peer.previous != old) unregisterIndex(peer.previous->localIndex);
    peer.previous = old;
    peer.next.reset();
    peer.current = kp;
  } else {
    // As wireguard-go: the unconfirmed next replaces the old next and the old previous.
    if (peer.next) unregisterIndex(peer.next->localIndex);
    if (peer.previous) unregisterIndex(peer.previous->localIndex);
    peer.previous.reset();
    peer.next = kp;
  }
  onSessionDerived(peer, now);
  return kp;
}

bool Device::Impl::keypairUsableForSend(const Keypair& kp, SteadyTime now) const {
  return now - kp.created < options.timers.rejectAfterTime &&
         kp.sendNonce.load(std::memory_order_relaxed) < kRejectAfterMessages;
}

}  // namespace strait::tunnel
