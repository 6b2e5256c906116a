// HTTPS endpoint (see https_endpoint.h): Boost.Beast over boost::asio::ssl, synchronous.
//
// Threads: the acceptor thread blocks in accept(); each connection gets a thread doing the
// TLS handshake and a read-handle-write loop. stop() ::shutdown()s the listening socket and
// every open connection's socket (blocked accept/read calls return), then joins.
#include "vnode/https_endpoint.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <map>
#include <mutex>
#include <thread>

namespace strait::vnode {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

constexpr size_t kMaxBody = 1 << 20;

class Endpoint final : public HttpsEndpoint {
 public:
  explicit Endpoint(HttpsHandler handler)
      : tls_(ssl::context::tls_server), acceptor_(ioc_), handler_(std::move(handler)) {}
  ~Endpoint() override { stop(); }

  kube::Status start(const std::string& host, uint16_t port, const std::string& cert,
                     const std::string& key) {
    boost::system::error_code ec;
    tls_.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                     ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    tls_.use_certificate_chain(net::buffer(cert), ec);
    if (!ec) tls_.use_private_key(net::buffer(key), ssl::context::pem, ec);
    if (ec) {
      return kube::makeError(kube::Code::Invalid, "https endpoint: certificate or key: " + ec.message());
    }
    net::ip::address addr = net::ip::make_address(host, ec);
    if (ec) return kube::makeError(kube::Code::Invalid, "https endpoint: bad host \"" + host + "\"");
    tcp::endpoint ep(addr, port);
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return kube::makeError(kube::Code::Unavailable, "https endpoint: cannot listen on " + host +
                                                          ":" + std::to_string(port) + ": " +
                                                          ec.message());
    }
    port_ = acceptor_.local_endpoint().port();
    acceptThread_ = std::thread([this] { acceptLoop(); });
    return kube::Status::OK();
  }

  uint16_t port() const override { return port_; }

  void stop() override {
    std::map<int, std::thread> threads;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_) return;
      stopping_ = true;
      if (acceptor_.is_open()) ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
      for (const auto& [id, fd] : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    if (acceptThread_.joinable()) acceptThread_.join();
    {
      std::lock_guard<std::mutex> l(mu_);
      threads.swap(threads_);
    }
    for (auto& [id, t] : threads) {
      if (t.joinable()) t.join();
    }
    boost::system::error_code ec;
    acceptor_.close(ec);
  }

 private:
  void acceptLoop() {
    while (true) {
      tcp::socket sock(ioc_);
      boost::system::error_code ec;
      acceptor_.accept(sock, ec);
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_) return;
      if (ec) continue;
      const int id = nextId_++;
      fds_[id] = sock.native_handle();
      threads_[id] = std::thread([this, id, s = std::move(sock)]() mutable { serve(id, std::move(s)); });
      // Reap finished connections' threads.
      for (auto it = finished_.begin(); it != finished_.end(); it = finished_.erase(it)) {
        auto t = threads_.find(*it);
        if (t != threads_.end()) {
          t->second.join();
          threads_.erase(t);
        }
      }
    }
  }

  void serve(int id, tcp::socket sock) {
    ssl::stream<tcp::socket> stream(std::move(sock), tls_);
    boost::system::error_code ec;
    stream.handshake(ssl::stream_base::server, ec);
    while (!ec) {
      boost::beast::flat_buffer buf;
      http::request_parser<http::string_body> parser;
      parser.body_limit(kMaxBody);
      http::read(stream, buf, parser, ec);
      if (ec) break;
      const auto& req = parser.get();
      std::string target(req.target());
      std::string path = target.substr(0, target.find('?'));
      HttpsReply reply = handler_(std::string(req.method_string()), path, req.body());
      http::response<http::string_body> res(static_cast<http::status>(reply.status), req.version());
      res.set(http::field::content_type, reply.contentType);
      res.keep_alive(req.keep_alive());
      res.body() = std::move(reply.body);
      res.prepare_payload();
      http::write(stream, res, ec);
      if (!req.keep_alive()) break;
    }
    stream.shutdown(ec);
    std::lock_guard<std::mutex> l(mu_);
    fds_.erase(id);
    if (!stopping_) finished_.push_back(id);
  }

  net::io_context ioc_;
  ssl::context tls_;
  tcp::acceptor acceptor_;
  const HttpsHandler handler_;
  uint16_t port_ = 0;
  std::thread acceptThread_;
  std::mutex mu_;  // guards the fields below
  bool stopping_ = false;
  int nextId_ = 0;
  std::map<int, int> fds_;               // open connections' sockets by id
  std::map<int, std::thread> threads_;  // connection threads by id
  std::vector<int> finished_;           // ids whose thread has returned (joined on next accept)
};

}  // namespace

kube::Result<std::unique_ptr<HttpsEndpoint>> startHttpsEndpoint(const std::string& host,
                                                                uint16_t port,
                                                                const std::string& certChainPem,
                                                                const std::string& keyPem,
                                                                HttpsHandler handler) {
  auto ep = std::make_unique<Endpoint>(std::move(handler));
  if (kube::Status s = ep->start(host, port, certChainPem, keyPem); !s.ok()) return s.error();
  return std::unique_ptr<HttpsEndpoint>(std::move(ep));
}

}  // namespace strait::vnode
