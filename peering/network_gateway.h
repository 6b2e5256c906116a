#pragma once
// The real gateway behind NetworkController's GatewayPort: tunnel::Gateway (a TUN interface
// in the gateway node's network namespace, hosted in the agent). Kept apart from network.h so
// that code (and tests) using only the negotiation does not need a TUN device.

#include <memory>

#include "kube/status.h"
#include "peering/network.h"
#include "tunnel/gateway.h"

namespace strait::peering {

// Starts the gateway (tunnel::Gateway::start: the TUN interface, UDP port, UAPI socket and
// probe loop) and wraps it. Error (Unavailable) naming what failed; nothing is left behind
// then. The result is thread-safe, as the gateway is.
kube::Result<std::unique_ptr<GatewayPort>> startTunnelGateway(tunnel::GatewayOptions options);

}  // namespace strait::peering
