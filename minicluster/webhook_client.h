#pragma once
// The HTTPS client the API server uses to call admission webhooks: one POST of a JSON body,
// the server verified against a CA bundle and a host name (or IP), within a deadline.
// Boost.Beast and OpenSSL stay inside webhook_client.cpp.
//
// Connections are kept open for the next call to the same target (HTTP/1.1 keep-alive, as
// upstream's transport): at most 16 idle per target, closed after 30 s unused; a kept
// connection the server closed meanwhile is replaced transparently.
//
// Thread-safe: a connection serves one call at a time, on its own I/O context.

#include <chrono>
#include <string>

#include "kube/status.h"

namespace strait::minicluster {

struct WebhookTarget {
  std::string host;        // where to connect: IP address or DNS name
  uint16_t port = 443;
  std::string path = "/";  // request target, query included
  std::string serverName;  // name (or IP) the certificate must be valid for; "" = host
  std::string caPem;       // trusted CAs; "" = the system's default trust store
  // Client certificate and key presented to the server ("" = none).
  std::string clientCertPem, clientKeyPem;
  // False: the chain is verified against caPem but not the name (as the API server's calls
  // to kubelets, whose serving certificates need not name the address dialled).
  bool verifyName = true;
};

struct WebhookReply {
  int status = 0;
  std::string body;
};

// POSTs `body` (Content-Type: application/json) and returns the reply. Errors (Internal)
// read like upstream's: `Post "https://host:port/path": <what failed>` — connection refused,
// TLS verification failure, context deadline exceeded (timeout), malformed HTTP. Blocks at
// most about `timeout`.
kube::Result<WebhookReply> postWebhook(const WebhookTarget& target, const std::string& body,
                                       std::chrono::milliseconds timeout);

// GETs target.path (Accept: application/json) and returns the reply; errors as postWebhook's
// ("Get ..."). Blocks at most about `timeout`.
kube::Result<WebhookReply> getHttps(const WebhookTarget& target, std::chrono::milliseconds timeout);

}  // namespace strait::minicluster
