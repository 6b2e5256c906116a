#pragma once
// HTTPS server (Boost.Beast + OpenSSL) shared by the minicluster's API server and kubelet API
// and the virtual node's kubelet API. Requires client certificates signed by a configured CA
// when asked to; requests are handed to a Handler on
// a per-connection thread, so a handler may block (watches stream for minutes).
//
// The Beast/Asio headers stay inside http_server.cpp; this interface is all other files see.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kube/byte_stream.h"
#include "kube/status.h"

namespace strait::kube {

struct HttpRequest {
  std::string method;   // "GET", "POST", ...
  std::string target;   // raw request target, e.g. "/api/v1/pods?limit=500"
  std::string path;     // percent-decoded path without query
  // Query parameters, percent-decoded, in order; a key may repeat (command=a&command=b).
  std::vector<std::pair<std::string, std::string>> query;
  // Header names lower-cased. Repeated headers are joined with ", ".
  std::map<std::string, std::string> headers;
  std::string body;
  // Authenticated client identity from the verified client certificate: CN is the user
  // name, O entries the groups. Empty user when no certificate was presented.
  std::string user;
  std::vector<std::string> groups;
  std::string remoteAddr;

  // First value of a query parameter, or "" (use hasQuery to tell absent from empty).
  std::string queryParam(std::string_view key) const;
  bool hasQuery(std::string_view key) const;
  std::vector<std::string> queryAll(std::string_view key) const;
  std::string header(std::string_view lowerName) const;
};

struct HttpResponse {
  int status = 200;
  std::map<std::string, std::string> headers;  // Content-Type etc.
  std::string body;
};

// A WebSocket (RFC 6455): server side taken over from an HTTP upgrade request, or client
// side (kube/exec_client.h). Full duplex: one thread may block in read() while another
// calls write() or close() (at most one reader and one writer at a time).
class WebSocket {
 public:
  virtual ~WebSocket() = default;
  // Next message (binary or text) into `message`. Blocks. False when the peer closed the
  // WebSocket, close() was called, the connection failed or the server is stopping.
  virtual bool read(std::string& message) = 0;
  // Sends one binary message. False when the connection failed.
  virtual bool write(std::string_view message) = 0;
  // Sends a normal close and waits (bounded by the peer, at most a few seconds) for its
  // answer; a read() blocked meanwhile then returns false. Idempotent.
  virtual void close() = 0;
  // The subprotocol agreed in the handshake ("" if none).
  virtual std::string subprotocol() const { return {}; }
};

// Where proxyUpgrade()/proxyGet() send a request: an HTTPS server that requires a client
// certificate (a kubelet), reached with `certPem`/`keyPem` and verified against `caPem`.
struct UpstreamTarget {
  std::string host;
  uint16_t port = 0;
  std::string target;  // path and query, e.g. "/exec/default/web/c?command=echo&output=1"
  std::string caPem, certPem, keyPem;
};

// How a handler answers. Exactly one of respond(), startStream(), acceptWebSocket(),
// acceptUpgrade() or proxyUpgrade() per request.
class Responder {
 public:
  virtual ~Responder() = default;
  // Sends a complete response. Returns false if the client is gone.
  virtual bool respond(HttpResponse r) = 0;
  // Starts a chunked streaming response (watch, log follow). Then call writeChunk() any
  // number of times; the stream ends when the handler returns. Returns false if the client
  // is gone.
  virtual bool startStream(int status, std::map<std::string, std::string> headers) = 0;
  // Sends one chunk and flushes it. False once the client has gone away.
  virtual bool writeChunk(std::string_view data) = 0;
  // True once the peer closed the connection (checked without blocking).
  virtual bool clientGone() = 0;
  // Completes a WebSocket upgrade of the current request, naming `subprotocol` in the 101
  // answer. Null (and the connection is closed) when the request is not a valid WebSocket
  // upgrade. The connection carries no more HTTP requests afterwards.
  // The default (responders without a connection, e.g. test fakes) refuses.
  virtual std::unique_ptr<WebSocket> acceptWebSocket(const std::string& subprotocol) {
    (void)subprotocol;
    return nullptr;
  }
  // Completes a plain HTTP/1.1 protocol switch of the current request (one that asked
  // "Upgrade: `protocol`", e.g. SPDY/3.1): answers 101 Switching Protocols with
  // "Connection: Upgrade", "Upgrade: `protocol`" and `headers`, then hands the connection
  // over as a byte stream (bytes the client sent after its request come first). Null (and
  // the connection is closed) when the request did not ask for `protocol`. The connection
  // carries no more HTTP requests afterwards; the stream must be destroyed before the
  // handler returns. The default (responders without a connection) refuses.
  virtual std::unique_ptr<ByteStream> acceptUpgrade(
      const std::string& protocol, const std::map<std::string, std::string>& headers) {
    (void)protocol;
    (void)headers;
    return nullptr;
  }
  // Forwards the current upgrade request (method, headers, with `upstream.target` as its
  // target) to `upstream`; if it answers 101, that answer goes to the client and bytes are
  // relayed both ways until either side closes; any other answer is passed back as is.
  // Blocks until done. Error (nothing sent) when the upstream cannot be reached.
  // The default refuses with Unavailable.
  virtual Status proxyUpgrade(const UpstreamTarget& upstream) {
    return makeError(Code::Unavailable,
                           "this connection cannot be upgraded to " + upstream.host);
  }
};

// GETs `upstream` and streams a 2xx answer (status, Content-Type, body as it arrives) to
// `out`; any other answer is read whole and handed to `onError(status, body)` instead.
// Blocks until the upstream body ends or the client goes away. Error (nothing sent) when
// the upstream cannot be reached.
Status proxyGet(const UpstreamTarget& upstream, Responder& out,
                      const std::function<void(int status, const std::string& body)>& onError);

class Handler {
 public:
  virtual ~Handler() = default;
  // Handles one request; may block. Called concurrently from connection threads.
  virtual void handle(const HttpRequest& req, Responder& out) = 0;
};

struct TlsConfig {
  std::string certPem;      // server certificate chain
  std::string keyPem;       // server private key
  std::string clientCaPem;  // CA that signs client certificates; empty = no client auth
  bool requireClientCert = false;
};

struct HttpServerOptions {
  std::string listenHost = "127.0.0.1";
  uint16_t listenPort = 0;  // 0 = pick a free port
  TlsConfig tls;
  size_t maxBodyBytes = 3 * 1024 * 1024;  // larger bodies get 413 with a Status body
};

class HttpServer {
 public:
  virtual ~HttpServer() = default;
  // Binds and starts accepting on background threads. Fails if the address is taken or the
  // TLS material is invalid (the message says which).
  virtual Status start() = 0;
  // The bound port (after start()).
  virtual uint16_t port() const = 0;
  // Stops accepting and closes open connections; waits for handler threads. Idempotent.
  virtual void stop() = 0;
};

// `handler` must outlive the server.
std::unique_ptr<HttpServer> newHttpServer(HttpServerOptions opts, Handler& handler);

}  // namespace strait::kube
