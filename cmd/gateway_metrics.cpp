#include "cmd/gateway_metrics.h"

#include <map>
#include <string>

#include "tunnel/crypto.h"
#include "tunnel/device.h"

namespace strait::cmd {
namespace {

// Brings `c` up to `total` (the device's own monotonic count).
void advance(const metrics::Counter& c, uint64_t total) {
  const double now = static_cast<double>(total);
  if (now > c.value()) c.inc(now - c.value());
}

}  // namespace

void addGatewayMetrics(metrics::Registry& r, const tunnel::Device& device) {
  r.onCollect([&r, &device] {
    const tunnel::DeviceSnapshot snap = device.snapshot();
    r.gauge("strait_tunnel_peers", "Peers configured on the tunnel")
        .set(static_cast<double>(snap.peers.size()));
    for (const tunnel::PeerSnapshot& p : snap.peers) {
      const metrics::Labels peer{{"peer", tunnel::keyToBase64(p.publicKey)}};
      advance(r.counter("strait_tunnel_received_bytes_total",
                        "Bytes received from the peer (WireGuard's rx_bytes)", peer),
              p.rxBytes);
      advance(r.counter("strait_tunnel_sent_bytes_total",
                        "Bytes sent to the peer (WireGuard's tx_bytes)", peer),
              p.txBytes);
      r.gauge("strait_tunnel_last_handshake_timestamp_seconds",
              "Unix time of the last completed handshake with the peer; 0 = never "
              "(handshake age: time() minus this)",
              peer)
          .set(static_cast<double>(p.lastHandshakeSeconds) +
               static_cast<double>(p.lastHandshakeNanoseconds) / 1e9);
    }
    const tunnel::DeviceCounters c = device.counters();
    for (const auto& [name, help, value] : {
             std::tuple{"strait_tunnel_sent_packets_total", "Transport data packets sent",
                        c.txPackets},
             std::tuple{"strait_tunnel_received_packets_total", "Transport data packets accepted",
                        c.rxPackets},
             std::tuple{"strait_tunnel_handshakes_initiated_total", "Handshakes initiated",
                        c.handshakesInitiated},
             std::tuple{"strait_tunnel_handshakes_completed_total", "Handshakes completed",
                        c.handshakesCompleted},
             std::tuple{"strait_tunnel_auth_failed_packets_total",
                        "Transport packets whose authentication tag did not verify", c.authFailed},
             std::tuple{"strait_tunnel_replayed_packets_total",
                        "Transport packets refused by the replay window", c.replayed},
             std::tuple{"strait_tunnel_no_route_packets_total",
                        "Packets from the TUN device with no peer for their destination",
                        c.noRoute},
         }) {
      advance(r.counter(name, help), value);
    }
  });
}

}  // namespace strait::cmd
