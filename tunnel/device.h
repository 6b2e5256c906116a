#pragma once
// A WireGuard device: one UDP socket, one TUN-like packet descriptor, a set of peers.
//
// Thread-safe: configuration methods may be called from any thread while the device runs.
// start() launches three threads (TUN reader/encryptor, UDP receiver/decryptor, timers);
// stop() joins them. See send.cpp and receive.cpp for the packet pipelines and locking.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tunnel/config.h"
#include "tunnel/crypto.h"
#include "tunnel/ip.h"
#include "tunnel/messages.h"
#include "tunnel/remap.h"

namespace strait::tunnel {

struct DeviceOptions {
  TimerConfig timers;
  // Handshake messages per second above which the device is "under load" and answers
  // initiations lacking a valid mac2 with a cookie reply instead of a response.
  uint32_t underLoadHandshakesPerSecond = kDefaultUnderLoadHandshakes;
  int mtu = kDefaultMtu;
  std::chrono::milliseconds timerTick{100};
  // Use UDP GSO/GRO when the kernel has them.
  bool udpOffload = true;
  // The TUN descriptor carries virtio_net_hdr with TSO (openTun's TunHandle::vnetHdr):
  // super-packets read are segmented, TCP segments written are coalesced.
  bool tunVnetHdr = false;
};

// What a packet counter in the device counts. All monotonic.
struct DeviceCounters {
  uint64_t txPackets = 0, rxPackets = 0;  // transport data packets sent / accepted
  uint64_t replayed = 0;                  // transport packets refused by the replay window
  uint64_t authFailed = 0;                // transport packets whose tag did not verify
  uint64_t unknownIndex = 0;              // transport/response for no session we know
  uint64_t badMac1 = 0;                   // handshake messages with an invalid mac1
  uint64_t handshakeRefused = 0;          // initiations/responses that did not decrypt,
                                          // replayed timestamps, flood-limited
  uint64_t cookieRepliesSent = 0, cookieRepliesReceived = 0;
  uint64_t handshakesInitiated = 0, handshakesCompleted = 0;
  uint64_t notAllowedSource = 0;  // decrypted packets whose source is not the peer's
  uint64_t noRoute = 0;           // TUN packets with no peer for their destination
  uint64_t stagedDropped = 0;     // packets dropped while waiting for a handshake
  uint64_t invalid = 0;           // datagrams of no known type/size, bad inner packets
};

// Changes to one peer; unset fields stay as they are.
struct PeerUpdate {
  std::optional<SymmetricKey> presharedKey;
  std::optional<Endpoint> endpoint;
  std::optional<uint16_t> persistentKeepalive;
  bool replaceAllowedIps = false;
  std::vector<IpPrefix> addAllowedIps;
  std::optional<std::optional<PrefixRemap>> remap;
};

struct PeerSnapshot {
  PublicKey publicKey{};
  SymmetricKey presharedKey;
  Endpoint endpoint;
  int64_t lastHandshakeSeconds = 0;  // unix time of the last completed handshake; 0 = never
  int64_t lastHandshakeNanoseconds = 0;
  uint64_t rxBytes = 0, txBytes = 0;
  uint16_t persistentKeepalive = 0;
  std::vector<IpPrefix> allowedIps;
  std::optional<PrefixRemap> remap;
};

struct DeviceSnapshot {
  bool hasPrivateKey = false;
  PrivateKey privateKey;
  PublicKey publicKey{};
  uint16_t listenPort = 0;
  std::vector<PeerSnapshot> peers;
};

class Device {
 public:
  // No I/O, no threads.
  explicit Device(DeviceOptions options);
  ~Device();  // stop()s
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Binds the UDP socket (the configured listen port, 0 = any) and starts the threads.
  // `tunFd` is a TUN descriptor (or any datagram fd carrying raw IP packets, e.g. one end
  // of a socketpair in tests); borrowed: it must stay open until stop() returns. Call once.
  base::Status start(int tunFd);
  // Joins the threads and closes the UDP socket. Idempotent.
  void stop();

  // Sets the static private key: recomputes every peer's static-static DH and drops their
  // sessions. Peers whose public key equals ours are removed.
  base::Status setPrivateKey(const PrivateKey& key);
  // Sets the UDP port; rebinds the socket if running (0 = any free port).
  base::Status setListenPort(uint16_t port);
  // The bound port while running, else the configured one.
  uint16_t listenPort() const;
  // Applies a whole configuration: key, port, and replaces every peer.
  base::Status applyConfig(const InterfaceConfig& config);
  // Creates the peer (unless `updateOnly`, then NotFound) and applies `update`.
  base::Status updatePeer(const PublicKey& publicKey, const PeerUpdate& update,
                          bool updateOnly = false);
  // Removes one peer (false if absent) or all peers, wiping their keys.
  bool removePeer(const PublicKey& publicKey);
  void removeAllPeers();

  DeviceSnapshot snapshot() const;
  DeviceCounters counters() const;

  // Handles one UDP datagram as if it had arrived from `source` (the receive path; exposed
  // for the fuzzer and tests). Decrypted packets are written to the TUN fd, replies sent on
  // the UDP socket when one is bound. Call from one thread at a time.
  void handleDatagram(uint8_t* data, size_t length, const Endpoint& source);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace strait::tunnel
