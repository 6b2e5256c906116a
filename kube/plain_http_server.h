#pragma once
// A small plain-HTTP/1.1 server (no TLS) for probes and simple answers: GET and HEAD only,
// one request per connection (Connection: close), one background thread. Requests go to a
// Handler on that thread, one at a time, so a handler should answer quickly (a few seconds
// at most). A client that has not sent its whole request head within two seconds is dropped.
// Other methods are answered 405 and unparsable requests 400 without calling the handler;
// HEAD gets the GET answer's status and headers without its body.
//
// The Beast/Asio headers stay inside plain_http_server.cpp.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "kube/status.h"

namespace strait::kube {

class PlainHttpServer {
 public:
  struct Reply {
    int status = 200;
    std::string contentType = "text/plain; charset=utf-8";
    std::string body;
  };
  // `method` is "GET" or "HEAD"; `target` the raw request target (path and query).
  using Handler = std::function<Reply(const std::string& method, const std::string& target)>;

  // `name` starts the errors of start(), e.g. "health listener".
  PlainHttpServer(std::string name, Handler handler);
  ~PlainHttpServer();  // stop()
  PlainHttpServer(const PlainHttpServer&) = delete;
  PlainHttpServer& operator=(const PlainHttpServer&) = delete;

  // Binds `host`:`port` (0: any free port) and serves on a background thread. Unavailable
  // "<name> <host>:<port>: port N is already in use" (or the system's reason) when it cannot
  // be bound. Call once.
  Status start(const std::string& host, uint16_t port);
  // The bound port (after a successful start()).
  uint16_t port() const;
  // Stops serving and joins the thread. Idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strait::kube
