#pragma once
// Private to vnode/: the dialer of `/portForward/{ns}/{pod}` on the virtual kubelet API. The
// port-forward session itself (SPDY/3.1, its WebSocket tunnel, or the v4 channel protocol) is
// served by kube::servePortForward; each forwarded connection it asks for becomes one
// RemoteKubelet PortForward call to the provider agent (proto/strait/kubelet.proto), which
// opens the connection to the remote Pod's port through its own API server.

#include <cstdint>
#include <memory>
#include <string>

#include "kube/byte_stream.h"
#include "peering/kubelet_transport.h"

namespace strait::vnode {

// Opens one forwarded connection to `port` of the consumer's Pod `ns`/`pod`: starts a
// PortForward call and waits for the provider's `opened`. The stream reads the Pod's bytes
// (0 once the Pod side closed; an error carrying the provider's message when the connection
// inside the Pod failed) and writes to it. Errors: the provider's refusal (NotFound for a
// Pod that is not the caller's, Forbidden...), Unavailable when it cannot be reached.
// `provider` must outlive the stream. Blocks for the call's setup. Thread-safe.
kube::Result<std::unique_ptr<kube::ByteStream>> dialRemotePort(peering::KubeletClient& provider,
                                                               const std::string& ns,
                                                               const std::string& pod,
                                                               uint16_t port);

}  // namespace strait::vnode
