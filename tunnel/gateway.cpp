// The gateway hosted in the agent: a Device on a TUN interface in a chosen network namespace,
// peers by name with one route each, and the ICMP probe loop.
//
// Namespace: start() does all of its I/O on one thread that joined the namespace
// (tunnel/netns.h): the TUN fd, the UDP socket, the route control socket and the probe socket
// are created there and stay there, and the device's, the UAPI server's and the probe's
// threads are started from it, so they live in the namespace too (a UAPI `listen_port`
// change rebinds inside it). Later route changes use the control socket, from any thread.
//
// Locking: Impl::mu guards the peer table and serializes configuration (device peer, route);
// the Device has its own locks and is called with mu held. The probe thread takes mu only to
// read the targets and to record answers.
#include "tunnel/gateway.h"

#include <net/if.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "base/thread_annotations.h"
#include "tunnel/device.h"
#include "tunnel/icmp_echo.h"
#include "tunnel/netns.h"
#include "tunnel/remap.h"
#include "tunnel/tun.h"
#include "tunnel/uapi.h"

namespace strait::tunnel {

using base::Code;
using base::makeError;

namespace {

// A handshake older than this no longer counts for `up` (REJECT_AFTER_TIME of the protocol).
constexpr std::chrono::seconds kHandshakeFresh{180};
// A peer is up while a probe was answered within this many probe intervals.
constexpr int kProbeIntervalsForUp = 3;

// `address` with its first `from.bits` bits moved from prefix `from` to prefix `to` (same
// length): the host part is kept, as the device's remap does.
IpAddress translate(const IpAddress& address, const IpPrefix& from, const IpPrefix& to) {
  IpAddress out = address;
  for (int bit = 0; bit < from.bits; ++bit) {
    uint8_t mask = static_cast<uint8_t>(0x80 >> (bit % 8));
    out.bytes[bit / 8] =
        static_cast<uint8_t>((out.bytes[bit / 8] & ~mask) | (to.address.bytes[bit / 8] & mask));
  }
  return out;
}

bool overlaps(const IpPrefix& a, const IpPrefix& b) {
  return a.contains(b.address) || b.contains(a.address);
}

// Whether `p`'s address has no bit set past its length.
bool masked(const IpPrefix& p) {
  IpPrefix copy = p;
  for (size_t bit = static_cast<size_t>(p.bits); bit < p.address.size() * 8; ++bit) {
    copy.address.bytes[bit / 8] &= static_cast<uint8_t>(~(0x80 >> (bit % 8)));
  }
  return copy.address == p.address;
}

std::string shortKey(const PublicKey& key) { return keyToBase64(key).substr(0, 8); }

bool sameConfig(const GatewayPeer& a, const GatewayPeer& b) {
  return a.publicKey == b.publicKey && a.endpoint == b.endpoint &&
         a.persistentKeepalive == b.persistentKeepalive && a.cidr == b.cidr &&
         a.seenAs == b.seenAs && a.probeTarget == b.probeTarget;
}

// A peer as the gateway keeps it: what the caller gave and what follows from it here.
struct PeerEntry {
  GatewayPeer config;
  IpPrefix localPrefix;                   // seenAs, or cidr when not remapped
  std::optional<IpAddress> probeAddress;  // probeTarget as seen here
  std::optional<std::chrono::system_clock::time_point> lastProbeAnswer;
  std::optional<std::chrono::microseconds> rtt;
};

// Checks `peer` and derives what the gateway keeps of it; Invalid naming the field.
base::Result<PeerEntry> checkPeer(const std::string& name, const GatewayPeer& peer) {
  auto invalid = [&](const std::string& field, const std::string& what) {
    return makeError(Code::Invalid, "peer \"" + name + "\": " + field + " " + what, field);
  };
  if (name.empty()) return makeError(Code::Invalid, "peer name must not be empty", "name");
  if (std::all_of(peer.publicKey.begin(), peer.publicKey.end(), [](uint8_t b) { return b == 0; })) {
    return invalid("publicKey", "is unset (all zeros)");
  }
  if (peer.cidr.address.family != AF_INET) {
    return invalid("cidr", "\"" + peer.cidr.toString() + "\" must be an IPv4 prefix");
  }
  if (peer.cidr.bits < 1 || peer.cidr.bits > 32) {
    return invalid("cidr", peer.cidr.toString() + " must have a length of 1 to 32 bits");
  }
  if (!masked(peer.cidr)) {
    return invalid("cidr", peer.cidr.toString() + " has bits set past its length");
  }
  PeerEntry e;
  e.config = peer;
  e.localPrefix = peer.cidr;
  if (peer.seenAs) {
    if (peer.seenAs->address.family != AF_INET || !masked(*peer.seenAs)) {
      return invalid("seenAs", "\"" + peer.seenAs->toString() +
                                   "\" must be an IPv4 prefix with no bits set past its length");
    }
    PrefixRemap remap{peer.cidr, *peer.seenAs};
    if (auto st = remap.validate(); !st.ok()) {
      return invalid("seenAs", peer.seenAs->toString() + " cannot remap " + peer.cidr.toString() +
                                   ": " + st.error().message);
    }
    e.localPrefix = *peer.seenAs;
  }
  if (peer.endpoint && (!peer.endpoint->valid() || peer.endpoint->port == 0)) {
    return invalid("endpoint", "\"" + peer.endpoint->toString() + "\" needs an address and a port");
  }
  if (!peer.probeTarget.empty()) {
    auto target = IpAddress::parse(peer.probeTarget);
    if (!target.ok()) {
      return invalid("probeTarget", "\"" + peer.probeTarget + "\": " + target.error().message);
    }
    if (target->family != AF_INET) {
      return invalid("probeTarget", peer.probeTarget + " must be an IPv4 address");
    }
    if (!peer.cidr.contains(*target)) {
      return invalid("probeTarget",
                     peer.probeTarget + " is not inside the peer's cidr " + peer.cidr.toString());
    }
    e.probeAddress = peer.seenAs ? translate(*target, peer.cidr, *peer.seenAs) : *target;
  }
  return e;
}

}  // namespace

struct Gateway::Impl {
  explicit Impl(GatewayOptions o) : options(std::move(o)) {}
  ~Impl();

  // Inside the namespace: everything start() creates. On error the destructor undoes it.
  base::Status open();
  void probeLoop();
  bool isUp(const PeerEntry& e, int64_t lastHandshakeUnix,
            std::chrono::system_clock::time_point now) const;

  const GatewayOptions options;
  std::string where;  // "network namespace PATH" for messages
  std::optional<IpAddress> probeSource;

  // Created by open(); fixed afterwards.
  TunHandle tun;
  int controlSocket = -1;  // AF_INET, in the namespace: route ioctls
  std::unique_ptr<Device> device;
  std::unique_ptr<UapiServer> uapi;
  std::unique_ptr<IcmpEcho> echo;
  int stopFd = -1;  // eventfd: ends the probe loop
  std::thread probeThread;

  mutable base::Mutex mu;
  PublicKey publicKey GUARDED_BY(mu){};
  std::map<std::string, PeerEntry> peers GUARDED_BY(mu);
};

base::Status Gateway::Impl::open() {
  const std::string& name = options.interfaceName;
  if (if_nametoindex(name.c_str()) != 0) {
    return makeError(Code::AlreadyExists, "interface " + name + " already exists in the " + where);
  }
  auto handle = openTun(name, options.offload);
  if (!handle.ok()) return handle.error();
  tun = *handle;
  auto configured = configureInterface(name, options.mtu, {}, {});
  if (!configured.ok()) return configured.error();
  controlSocket = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (controlSocket < 0) {
    return makeError(Code::Unavailable, std::string("control socket: ") + std::strerror(errno));
  }

  DeviceOptions deviceOptions;
  deviceOptions.mtu = options.mtu;
  deviceOptions.udpOffload = options.offload;
  deviceOptions.tunVnetHdr = tun.vnetHdr;
  device = std::make_unique<Device>(deviceOptions);
  if (auto st = device->setPrivateKey(options.privateKey); !st.ok()) return st;
  if (auto st = device->setListenPort(options.listenPort); !st.ok()) return st;
  if (auto st = device->start(tun.fd); !st.ok()) {
    return makeError(st.error().code, "start the device: " + st.error().message);
  }
  if (!options.uapiDir.empty()) {
    uapi = std::make_unique<UapiServer>(*device, name, options.uapiDir);
    if (auto st = uapi->start(); !st.ok()) {
      uapi.reset();  // the socket file may be another process's: leave it
      return makeError(st.error().code, "UAPI socket: " + st.error().message);
    }
  }
  if (probeSource) {
    auto opened = IcmpEcho::open(*probeSource);
    if (!opened.ok()) {
      return makeError(opened.error().code, opened.error().message + " (" + where + ")");
    }
    echo = std::move(*opened);
    stopFd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stopFd < 0) return makeError(Code::Unavailable, std::string("eventfd: ") + strerror(errno));
    probeThread = std::thread([this] { probeLoop(); });
  }
  return base::Status::OK();
}

Gateway::Impl::~Impl() {
  if (probeThread.joinable()) {
    uint64_t one = 1;
    (void)!write(stopFd, &one, sizeof one);
    probeThread.join();
  }
  if (stopFd >= 0) close(stopFd);
  echo.reset();
  if (uapi) uapi->stop();  // removes the socket file
  uapi.reset();
  if (device) device->stop();
  device.reset();
  if (controlSocket >= 0) close(controlSocket);
  // The interface is not persistent: closing its last descriptor deletes it and its routes.
  if (tun.fd >= 0) close(tun.fd);
}

void Gateway::Impl::probeLoop() {
  using Clock = std::chrono::steady_clock;
  struct Outstanding {
    std::string peer;
    IpAddress target;
    Clock::time_point sent;
  };
  std::map<uint16_t, Outstanding> outstanding;
  uint16_t sequence = 0;
  const auto interval = std::max(options.probeInterval, std::chrono::milliseconds(1));
  Clock::time_point nextSend = Clock::now();
  for (;;) {
    Clock::time_point now = Clock::now();
    if (now >= nextSend) {
      std::vector<std::pair<std::string, IpAddress>> targets;
      {
        base::MutexLock lock(mu);
        for (const auto& [name, e] : peers) {
          if (e.probeAddress) targets.emplace_back(name, *e.probeAddress);
        }
      }
      for (const auto& [name, target] : targets) {
        uint16_t seq = ++sequence;
        outstanding[seq] = Outstanding{name, target, now};
        // The first request waits in the device for a handshake; a refused send (no route
        // yet, buffer full) is only a lost probe.
        if (auto st = echo->send(target, seq); !st.ok()) {
          spdlog::debug("event=probe_send_failed peer={} error=\"{}\"", name, st.error().message);
        }
      }
      // Requests unanswered for as long as `up` looks back are lost.
      for (auto it = outstanding.begin(); it != outstanding.end();) {
        it = now - it->second.sent > interval * kProbeIntervalsForUp ? outstanding.erase(it)
                                                                     : std::next(it);
      }
      nextSend += interval;
      if (nextSend < now) nextSend = now + interval;
    }
    pollfd fds[2] = {{stopFd, POLLIN, 0}, {echo->fd(), POLLIN, 0}};
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(nextSend - Clock::now());
    int timeout = static_cast<int>(std::max<int64_t>(0, wait.count()) + 1);
    if (::poll(fds, 2, timeout) < 0 && errno != EINTR) return;
    if (fds[0].revents & POLLIN) return;
    if (!(fds[1].revents & POLLIN)) continue;
    while (auto reply = echo->receive()) {
      auto it = outstanding.find(reply->sequence);
      if (it == outstanding.end() || !(it->second.target == reply->from)) continue;
      auto rtt =
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - it->second.sent);
      {
        base::MutexLock lock(mu);
        auto peer = peers.find(it->second.peer);
        if (peer != peers.end() && peer->second.probeAddress == it->second.target) {
          peer->second.lastProbeAnswer = std::chrono::system_clock::now();
          peer->second.rtt = rtt;
        }
      }
      outstanding.erase(it);
    }
  }
}

bool Gateway::Impl::isUp(const PeerEntry& e, int64_t lastHandshakeUnix,
                         std::chrono::system_clock::time_point now) const {
  if (lastHandshakeUnix == 0) return false;
  auto handshake = std::chrono::system_clock::time_point(std::chrono::seconds(lastHandshakeUnix));
  if (now - handshake >= kHandshakeFresh) return false;
  if (!probeSource || !e.probeAddress) return true;  // probes off: the handshake alone
  return e.lastProbeAnswer &&
         now - *e.lastProbeAnswer <= options.probeInterval * kProbeIntervalsForUp;
}

base::Result<std::unique_ptr<Gateway>> Gateway::start(GatewayOptions options) {
  const std::string& name = options.interfaceName;
  if (name.empty() || name.size() >= IFNAMSIZ || name.find('/') != std::string::npos ||
      name.find_first_of(" \t\n:") != std::string::npos || name == "." || name == "..") {
    return makeError(Code::Invalid,
                     "interface name \"" + name +
                         "\" must be 1 to 15 characters without '/', ':' "
                         "or spaces",
                     "interfaceName");
  }
  if (options.mtu < 576 || options.mtu > 65535) {
    return makeError(Code::Invalid, "mtu " + std::to_string(options.mtu) + " must be 576 to 65535",
                     "mtu");
  }
  auto publicKey = publicKeyOf(options.privateKey);
  if (options.privateKey.isZero() || !publicKey) {
    return makeError(Code::Invalid, "private key is unset or refused by X25519", "privateKey");
  }
  std::optional<IpAddress> probeSource;
  if (!options.probeSource.empty()) {
    auto source = IpAddress::parse(options.probeSource);
    if (!source.ok() || source->family != AF_INET) {
      return makeError(Code::Invalid,
                       "probe source \"" + options.probeSource + "\" must be an IPv4 address",
                       "probeSource");
    }
    probeSource = *source;
    if (options.probeInterval.count() <= 0) {
      return makeError(Code::Invalid, "probe interval must be positive", "probeInterval");
    }
  }

  auto impl = std::make_unique<Impl>(std::move(options));
  impl->where = impl->options.netnsPath.empty() ? std::string("agent's network namespace")
                                                : "network namespace " + impl->options.netnsPath;
  impl->probeSource = probeSource;
  {
    base::MutexLock lock(impl->mu);
    impl->publicKey = *publicKey;
  }
  base::Status opened = runInNetns(impl->options.netnsPath, [&] { return impl->open(); });
  if (!opened.ok()) {
    base::Error e = opened.error();
    spdlog::error("event=gateway_start_failed interface={} netns={} error=\"{}\"",
                  impl->options.interfaceName, impl->options.netnsPath, e.message);
    return e;  // ~Impl removes what open() created
  }
  spdlog::info(
      "event=gateway_up interface={} netns={} listen_port={} tun_offload={} probe_source={} "
      "probe_socket={}",
      impl->options.interfaceName, impl->options.netnsPath, impl->device->listenPort(),
      impl->tun.vnetHdr, impl->options.probeSource,
      !impl->echo         ? "none"
      : impl->echo->raw() ? "raw"
                          : "ping");
  return std::unique_ptr<Gateway>(new Gateway(std::move(impl)));
}

Gateway::Gateway(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Gateway::~Gateway() {
  std::string name = impl_->options.interfaceName;
  impl_.reset();
  spdlog::info("event=gateway_down interface={}", name);
}

PublicKey Gateway::publicKey() const {
  base::MutexLock lock(impl_->mu);
  return impl_->publicKey;
}

uint16_t Gateway::listenPort() const { return impl_->device->listenPort(); }

base::Status Gateway::upsertPeer(const std::string& name, const GatewayPeer& peer) {
  Impl& g = *impl_;
  auto checked = checkPeer(name, peer);
  if (!checked.ok()) return checked.error();
  PeerEntry entry = std::move(*checked);
  base::MutexLock lock(g.mu);
  if (peer.publicKey == g.publicKey) {
    return makeError(Code::Invalid, "peer \"" + name + "\": publicKey is this gateway's own key",
                     "publicKey");
  }
  for (const auto& [other, e] : g.peers) {
    if (other == name) continue;
    if (e.config.publicKey == peer.publicKey) {
      return makeError(Code::Conflict,
                       "peer \"" + name + "\": publicKey " + shortKey(peer.publicKey) +
                           "... already belongs to peer \"" + other + "\"",
                       "publicKey");
    }
    if (overlaps(e.localPrefix, entry.localPrefix)) {
      return makeError(Code::Conflict,
                       "peer \"" + name + "\": " + entry.localPrefix.toString() +
                           " (its cidr as seen here) overlaps " + e.localPrefix.toString() +
                           " of peer \"" + other + "\"",
                       peer.seenAs ? "seenAs" : "cidr");
    }
  }
  if (g.probeSource && entry.localPrefix.contains(*g.probeSource)) {
    return makeError(Code::Invalid,
                     "peer \"" + name + "\": " + entry.localPrefix.toString() +
                         " (its cidr as seen here) contains this gateway's probe "
                         "source " +
                         g.options.probeSource + ": give the peer a seenAs prefix",
                     peer.seenAs ? "seenAs" : "cidr");
  }

  auto existing = g.peers.find(name);
  const PeerEntry* old = existing == g.peers.end() ? nullptr : &existing->second;
  bool routeIsNew = !old || !(old->localPrefix == entry.localPrefix);
  if (routeIsNew) {
    if (auto st = addInterfaceRoute(g.controlSocket, g.options.interfaceName, entry.localPrefix);
        !st.ok()) {
      return makeError(st.error().code, "peer \"" + name + "\": " + st.error().message);
    }
  }
  bool keyChanged = old && old->config.publicKey != peer.publicKey;
  if (keyChanged) g.device->removePeer(old->config.publicKey);
  PeerUpdate update;
  update.endpoint = peer.endpoint;
  update.persistentKeepalive = peer.persistentKeepalive;
  update.replaceAllowedIps = true;
  update.addAllowedIps = {entry.localPrefix};
  update.remap =
      peer.seenAs ? std::optional<PrefixRemap>(PrefixRemap{peer.cidr, *peer.seenAs}) : std::nullopt;
  if (auto st = g.device->updatePeer(peer.publicKey, update); !st.ok()) {
    if (routeIsNew) {
      (void)deleteInterfaceRoute(g.controlSocket, g.options.interfaceName, entry.localPrefix);
    }
    return makeError(st.error().code, "peer \"" + name + "\": " + st.error().message);
  }
  if (old && routeIsNew) {
    if (auto st = deleteInterfaceRoute(g.controlSocket, g.options.interfaceName, old->localPrefix);
        !st.ok()) {
      spdlog::warn("event=route_delete_failed peer={} error=\"{}\"", name, st.error().message);
    }
  }
  if (old && !keyChanged && old->probeAddress == entry.probeAddress) {
    entry.lastProbeAnswer = old->lastProbeAnswer;
    entry.rtt = old->rtt;
  }
  // Callers re-assert their peers periodically: only a change is worth an info line.
  spdlog::log(old && sameConfig(old->config, peer) ? spdlog::level::debug : spdlog::level::info,
              "event=gateway_peer_set peer={} key={} cidr={} seen_as={} endpoint={} keepalive={} "
              "probe={}",
              name, shortKey(peer.publicKey), peer.cidr.toString(), entry.localPrefix.toString(),
              peer.endpoint ? peer.endpoint->toString() : "-", peer.persistentKeepalive,
              entry.probeAddress ? entry.probeAddress->toString() : "-");
  g.peers[name] = std::move(entry);
  return base::Status::OK();
}

bool Gateway::removePeer(const std::string& name) {
  Impl& g = *impl_;
  base::MutexLock lock(g.mu);
  auto it = g.peers.find(name);
  if (it == g.peers.end()) return false;
  g.device->removePeer(it->second.config.publicKey);
  if (auto st =
          deleteInterfaceRoute(g.controlSocket, g.options.interfaceName, it->second.localPrefix);
      !st.ok()) {
    spdlog::warn("event=route_delete_failed peer={} error=\"{}\"", name, st.error().message);
  }
  spdlog::info("event=gateway_peer_removed peer={}", name);
  g.peers.erase(it);
  return true;
}

std::vector<std::string> Gateway::peerNames() const {
  base::MutexLock lock(impl_->mu);
  std::vector<std::string> names;
  for (const auto& [name, e] : impl_->peers) names.push_back(name);
  return names;
}

std::optional<GatewayPeerStatus> Gateway::peerStatus(const std::string& name) const {
  Impl& g = *impl_;
  DeviceSnapshot snapshot = g.device->snapshot();
  base::MutexLock lock(g.mu);
  auto it = g.peers.find(name);
  if (it == g.peers.end()) return std::nullopt;
  GatewayPeerStatus s;
  for (const PeerSnapshot& p : snapshot.peers) {
    if (p.publicKey != it->second.config.publicKey) continue;
    s.lastHandshakeUnix = p.lastHandshakeSeconds;
    s.rxBytes = p.rxBytes;
    s.txBytes = p.txBytes;
  }
  s.lastProbeAnswer = it->second.lastProbeAnswer;
  s.rtt = it->second.rtt;
  s.up = g.isUp(it->second, s.lastHandshakeUnix, std::chrono::system_clock::now());
  return s;
}

base::Status Gateway::setPrivateKey(const PrivateKey& key) {
  Impl& g = *impl_;
  auto publicKey = publicKeyOf(key);
  if (key.isZero() || !publicKey) {
    return makeError(Code::Invalid, "private key is unset or refused by X25519", "privateKey");
  }
  base::MutexLock lock(g.mu);
  for (const auto& [name, e] : g.peers) {
    if (e.config.publicKey == *publicKey) {
      return makeError(Code::Conflict,
                       "the new private key's public key is peer \"" + name + "\"'s", "privateKey");
    }
  }
  if (auto st = g.device->setPrivateKey(key); !st.ok()) return st;
  g.publicKey = *publicKey;
  spdlog::info("event=gateway_key_rotated public_key={}", shortKey(*publicKey));
  return base::Status::OK();
}

}  // namespace strait::tunnel
