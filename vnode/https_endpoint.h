#pragma once
// A small HTTPS endpoint for request/response handlers that answer quickly (the admission
// webhooks): TLS 1.2+ with a server certificate, HTTP/1.1 keep-alive, bodies up to 1 MiB (larger
// ones get 413), one thread per connection. It is the shared kube::HttpServer seen through
// a (method, path, body) -> reply function; no client certificates, streaming or upgrades.
//
// Thread-safety: start/stop from one thread; the handler is called concurrently from the
// connection threads and must be thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "kube/status.h"

namespace strait::vnode {

struct HttpsReply {
  int status = 200;
  std::string contentType = "application/json";
  std::string body;
};

// (method, path without query, body) -> reply.
using HttpsHandler =
    std::function<HttpsReply(const std::string& method, const std::string& path,
                             const std::string& body)>;

class HttpsEndpoint {
 public:
  virtual ~HttpsEndpoint() = default;
  // The bound port.
  virtual uint16_t port() const = 0;
  // Stops accepting, closes open connections, joins the threads. Idempotent.
  virtual void stop() = 0;
};

// Binds host:port (0 = any free port) and starts serving. Invalid when the certificate or
// key is unusable, Unavailable when the address cannot be bound.
kube::Result<std::unique_ptr<HttpsEndpoint>> startHttpsEndpoint(const std::string& host,
                                                                uint16_t port,
                                                                const std::string& certChainPem,
                                                                const std::string& keyPem,
                                                                HttpsHandler handler);

}  // namespace strait::vnode
