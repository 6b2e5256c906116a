#pragma once
// Private to kube/: one TLS identity's HTTP connections to the API server (cpprestsdk
// http_client; the headers stay in transport.cpp). Two http_clients: one for ordinary
// requests (RestConfig::timeout per I/O operation) and one for long streams (watch, logs).
// Both keep connections alive and reuse them. Thread-safe.

#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>

#include "kube/kubeconfig.h"
#include "kube/status.h"

namespace strait::kube {

struct HttpResult {
  int status = 0;
  std::string body;
  std::string retryAfter;  // Retry-After header, "" when absent
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Checks the PEM material (Invalid naming the field) and builds the clients; no I/O.
  static Result<std::shared_ptr<Transport>> make(const RestConfig& cfg, const std::string& certPem,
                                                 const std::string& keyPem);
  // The client certificate this transport presents ("" for none).
  virtual const std::string& certPem() const = 0;
  // One request; the whole body is read. Unavailable (with the cause) for transport errors
  // (refused, reset, TLS failure), ServerTimeout when an I/O operation timed out.
  virtual Result<HttpResult> send(const std::string& method, const std::string& pathAndQuery,
                                  const std::string& body, const std::string& contentType,
                                  const std::string& token) = 0;
  // A GET whose 200 body is handed to onChunk as it arrives. A non-200 answer becomes the
  // error of its Status body. Returns when the body ends (OK), onChunk returns an error (that
  // error), `stop` is requested (OK), or the connection fails (Unavailable).
  virtual Status stream(const std::string& pathAndQuery, const std::string& token,
                        std::stop_token stop,
                        const std::function<Status(std::string_view)>& onChunk) = 0;
};

}  // namespace strait::kube
