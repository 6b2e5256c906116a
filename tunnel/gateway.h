#pragma once
// A tunnel gateway hosted inside a long-running process (the agent): one WireGuard Device on
// a TUN interface that lives in a chosen network namespace (the gateway node's), one peer per
// remote cluster keyed by a name the caller chooses, a route per peer for the peer's CIDR as
// seen here through the TUN, and a reachability probe (ICMP echo through the tunnel) that
// measures the round-trip time. The UAPI socket makes `wg show <interface>` work against it.
//
// Remapping: a peer whose real CIDR overlaps something local is given `seenAs`, a prefix of
// the same length; the device translates destinations on the way out and sources on the way
// in (tunnel/remap.h), and the peer's allowed IPs and the route use `seenAs`.
//
// Knows nothing of Kubernetes. Thread-safe: every method may be called from any thread.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tunnel/crypto.h"
#include "tunnel/ip.h"
#include "tunnel/messages.h"

namespace strait::tunnel {

struct GatewayOptions {
  // The network namespace the TUN interface, its routes, the UDP socket and the probe socket
  // are created in: a path such as /run/netns/NAME or /proc/PID/ns/net. Empty: the calling
  // process's own namespace.
  std::string netnsPath;
  std::string interfaceName = "strait0";
  uint16_t listenPort = 51840;  // UDP; 0 = any free port
  // Directory of the UAPI socket <uapiDir>/<interfaceName>.sock; empty: no UAPI socket.
  std::string uapiDir = "/var/run/wireguard";
  PrivateKey privateKey;  // the caller stores it (a Secret); never logged
  int mtu = kDefaultMtu;
  // An IPv4 address of this namespace (the gateway node's address inside the local pod CIDR)
  // that probes are sent from and that the remote gateway's probes reach. Empty: no probes,
  // and a peer is never reported answering.
  std::string probeSource;
  std::chrono::milliseconds probeInterval{1000};
  bool offload = true;  // UDP GSO/GRO and TUN offloads when the kernel has them
};

struct GatewayPeer {
  PublicKey publicKey{};
  // Where the peer's gateway listens. Unset: wait for the peer to reach us first (it is
  // behind NAT and keeps the tunnel open with its keepalive).
  std::optional<Endpoint> endpoint;
  uint16_t persistentKeepalive = 0;  // seconds; 0 = off
  IpPrefix cidr;                     // the peer's real (pod) CIDR
  std::optional<IpPrefix> seenAs;    // how `cidr` appears here when it is remapped
  // The peer's probe address (real, inside `cidr`); empty: this peer is not probed.
  std::string probeTarget;
};

struct GatewayPeerStatus {
  int64_t lastHandshakeUnix = 0;  // seconds; 0 = never
  uint64_t rxBytes = 0, txBytes = 0;
  // The last probe answer and its round-trip time; unset when no probe was ever answered.
  std::optional<std::chrono::system_clock::time_point> lastProbeAnswer;
  std::optional<std::chrono::microseconds> rtt;
  // Up: a handshake younger than 180 s and a probe answered within the last three probe
  // intervals (or, with probes off, the handshake alone).
  bool up = false;
};

class Gateway {
 public:
  // Creates the TUN interface in the namespace (MTU, link up), binds the UDP port, starts
  // the device, the UAPI socket and the probe loop. Error (naming what failed) if any step
  // fails; nothing is left behind then.
  static base::Result<std::unique_ptr<Gateway>> start(GatewayOptions options);
  // Stops everything and removes the interface (with its routes) and the UAPI socket.
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  PublicKey publicKey() const;
  uint16_t listenPort() const;  // the bound port
  // Creates or changes peer `name`: key, endpoint, keepalive, remap, allowed IPs and route.
  // A changed public key replaces the old peer. Error on an invalid CIDR, remap or probe
  // address, or a CIDR already given to another peer.
  base::Status upsertPeer(const std::string& name, const GatewayPeer& peer);
  // Removes the peer and its route. False if there was none.
  bool removePeer(const std::string& name);
  std::vector<std::string> peerNames() const;
  std::optional<GatewayPeerStatus> peerStatus(const std::string& name) const;
  // Key rotation: every peer's session is renegotiated with the new key.
  base::Status setPrivateKey(const PrivateKey& key);

  struct Impl;

 private:
  explicit Gateway(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strait::tunnel
