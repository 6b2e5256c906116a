#pragma once
// A WebSocket to a path of an API server, as a client (private to kube/): dial, TLS with the
// RestConfig's trust and client certificate, bearer token, handshake offering subprotocols.
// Used by the exec/attach and port-forward clients; each WebSocket it opens runs on an
// io_context thread of its own.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kube/http_server.h"
#include "kube/kubeconfig.h"
#include "kube/status.h"

namespace strait::kube::detail {

// Opens a WebSocket to `target` (path and query) on cfg.server offering `protocols` in
// order. Blocks for the handshake (bounded by cfg.timeout). `what` prefixes error messages
// ("portforward default/web"). The server must choose one of `protocols`: the returned
// WebSocket's subprotocol() says which.
// Errors: the server's refusal as its Status (NotFound, BadRequest, Forbidden...),
// Unavailable when unreachable or the TLS handshake fails, Invalid for a bad config.
Result<std::unique_ptr<WebSocket>> openApiWebSocket(const RestConfig& cfg,
                                                    const std::string& target,
                                                    const std::vector<std::string>& protocols,
                                                    const std::string& what);

}  // namespace strait::kube::detail
