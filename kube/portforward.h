#pragma once
// Port-forward (the pods/portforward subresource), the server side a kubelet runs and a
// client that opens one forwarded connection through an API server.
//
// Protocols accepted by servePortForward (all three are what kubectl 1.32 and the Python
// client send to an API server, which passes them on to the kubelet):
//   1. Plain HTTP upgrade "Upgrade: SPDY/3.1" with "X-Stream-Protocol-Version:
//      portforward.k8s.io" (kubectl with KUBECTL_PORT_FORWARD_WEBSOCKETS=false, and older
//      kubectl). The connection then carries SPDY/3.1 frames (kube/spdy.h). Per forwarded
//      connection the client opens two SPDY streams carrying the headers
//      `streamtype` ("error" or "data"), `port` and `requestid` (the pair shares it); the
//      server dials the port once both arrived, relays the data stream both ways and, if the
//      dial or the relay fails, writes a message on the error stream.
//   2. WebSocket with subprotocol "SPDY/3.1+portforward.k8s.io" (kubectl 1.31+ by default):
//      the same SPDY/3.1 session, its bytes carried as the payload of binary WebSocket
//      messages.
//   3. WebSocket with subprotocol "v4.channel.k8s.io" (also accepted: "portforward.k8s.io"
//      and no subprotocol) and query `ports=P1,P2` or repeated `port=`/`ports=`: the
//      channel protocol of the Python client. Port i (0-based) gets data channel 2i and error
//      channel 2i+1; the first message the server sends on each channel is the port as two
//      little-endian bytes, and every message starts with its channel byte. One dial per
//      port, made when the session opens.
// Anything else is answered 400 with a plain-text explanation.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "kube/byte_stream.h"
#include "kube/http_server.h"
#include "kube/kubeconfig.h"
#include "kube/status.h"

namespace strait::kube {

inline constexpr std::string_view kPortForwardProtocolV1 = "portforward.k8s.io";
inline constexpr std::string_view kSpdyProtocol = "SPDY/3.1";
// WebSocket subprotocol under which a SPDY/3.1 port-forward session is tunnelled.
inline constexpr std::string_view kWebSocketSpdyPortForwardProtocol =
    "SPDY/3.1+portforward.k8s.io";
inline constexpr std::string_view kWebSocketChannelProtocolV4 = "v4.channel.k8s.io";

// Opens a connection to `port` of the Pod being forwarded to. Called once per forwarded
// connection, from the session's threads, possibly concurrently; may block (a dial). On
// failure its message is what the user sees (kubectl prints it after "an error occurred
// forwarding LOCAL -> PORT:"), e.g. "failed to connect to localhost:8080 inside namespace
// ...: connection refused". The stream it returns is owned by the session and closed when
// the forwarded connection ends.
using PortDialer = std::function<Result<std::unique_ptr<ByteStream>>(uint16_t port)>;

// Serves one port-forward request (any of the three protocols above) on `out`, calling
// `dial` per forwarded connection. Blocks until the session ends: the client closed it,
// the connection failed, or the server is stopping. Answers 400 itself when the request
// is not a port-forward upgrade it understands (no error is returned: the answer is sent).
// `dial` must stay callable until servePortForward returns; it is never called after.
// Thread-safe; may run concurrently for different requests.
void servePortForward(const HttpRequest& req, Responder& out, PortDialer dial);

// Client: opens one forwarded connection to `port` of Pod `ns`/`pod` through the API server
// of `cfg` (a WebSocket v4.channel.k8s.io to
// /api/v1/namespaces/NS/pods/POD/portforward?ports=PORT, with the RestConfig's
// credentials). Blocks for the handshake (bounded by cfg.timeout). The returned stream
// carries the bytes to and from the Pod's port; read() returns an error carrying the
// kubelet's message if the dial inside the Pod failed, and 0 (end of stream) once the Pod
// side closed. closeWrite() cannot be expressed in this protocol and is a no-op: the Pod
// side sees end of stream only on close().
// Errors: the API server's refusal as its Status (NotFound, Forbidden...), Unavailable when
// unreachable, Invalid for a bad config or port 0. Thread-safe (no shared state).
Result<std::unique_ptr<ByteStream>> openPortForward(const RestConfig& cfg, const std::string& ns,
                                                    const std::string& pod, uint16_t port);

}  // namespace strait::kube
