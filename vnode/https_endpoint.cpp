// HTTPS endpoint (see https_endpoint.h), served by the shared kube::HttpServer: TLS with the
// server certificate, no client authentication, bodies up to 1 MiB (larger ones get 413),
// one thread per connection.
#include "vnode/https_endpoint.h"

#include <utility>

#include "kube/http_server.h"

namespace strait::vnode {
namespace {

constexpr size_t kMaxBody = 1 << 20;

class Endpoint final : public HttpsEndpoint, private kube::Handler {
 public:
  explicit Endpoint(HttpsHandler handler) : handler_(std::move(handler)) {}
  ~Endpoint() override { stop(); }

  kube::Status start(const std::string& host, uint16_t port, const std::string& cert,
                     const std::string& key) {
    kube::HttpServerOptions opts;
    opts.listenHost = host;
    opts.listenPort = port;
    opts.tls.certPem = cert;
    opts.tls.keyPem = key;
    opts.maxBodyBytes = kMaxBody;
    server_ = kube::newHttpServer(std::move(opts), *this);
    return server_->start();
  }

  uint16_t port() const override { return server_ ? server_->port() : 0; }

  void stop() override {
    if (server_) server_->stop();
  }

 private:
  void handle(const kube::HttpRequest& req, kube::Responder& out) override {
    HttpsReply reply = handler_(req.method, req.path, req.body);
    kube::HttpResponse res;
    res.status = reply.status;
    res.headers["Content-Type"] = reply.contentType;
    res.body = std::move(reply.body);
    out.respond(std::move(res));
  }

  const HttpsHandler handler_;
  std::unique_ptr<kube::HttpServer> server_;
};

}  // namespace

kube::Result<std::unique_ptr<HttpsEndpoint>> startHttpsEndpoint(const std::string& host,
                                                                uint16_t port,
                                                                const std::string& certChainPem,
                                                                const std::string& keyPem,
                                                                HttpsHandler handler) {
  auto ep = std::make_unique<Endpoint>(std::move(handler));
  if (auto s = ep->start(host, port, certChainPem, keyPem); !s) return s.error();
  return std::unique_ptr<HttpsEndpoint>(std::move(ep));
}

}  // namespace strait::vnode
