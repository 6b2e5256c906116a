#include "kube/plain_http_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <thread>
#include <utility>

namespace strait::kube {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using boost::system::error_code;

constexpr auto kRequestTimeout = std::chrono::seconds(2);  // for a client to send its head
constexpr auto kWriteTimeout = std::chrono::seconds(5);
constexpr uint32_t kMaxHeaderBytes = 8192;

// One connection: read the request head, answer, close.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const PlainHttpServer::Handler& handler)
      : stream_(std::move(socket)), handler_(handler) {
    parser_.header_limit(kMaxHeaderBytes);
  }

  void run() {
    stream_.expires_after(kRequestTimeout);
    http::async_read_header(
        stream_, buffer_, parser_,
        [self = shared_from_this()](error_code ec, size_t) { self->onRead(ec); });
  }

 private:
  void onRead(error_code ec) {
    // Timed out, or the client went away: nobody to answer.
    if (ec == beast::error::timeout || ec == http::error::end_of_stream ||
        ec == net::error::eof || ec == net::error::connection_reset ||
        ec == net::error::operation_aborted) {
      close();
      return;
    }
    PlainHttpServer::Reply reply;
    bool head = false;
    if (ec) {
      reply = {400, "text/plain; charset=utf-8", "malformed request\n"};
    } else {
      const auto& req = parser_.get();
      head = req.method() == http::verb::head;
      if (req.method() != http::verb::get && !head) {
        reply = {405, "text/plain; charset=utf-8", "only GET and HEAD\n"};
      } else {
        reply = handler_(head ? "HEAD" : "GET", std::string(req.target()));
      }
    }
    res_.result(static_cast<unsigned>(reply.status));
    res_.version(11);
    res_.set(http::field::content_type, reply.contentType);
    res_.keep_alive(false);
    if (head) {
      res_.content_length(reply.body.size());  // what GET would send, without the body
    } else {
      res_.body() = std::move(reply.body);
      res_.prepare_payload();
    }
    stream_.expires_after(kWriteTimeout);
    http::async_write(stream_, res_,
                      [self = shared_from_this()](error_code, size_t) { self->close(); });
  }

  void close() {
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request_parser<http::empty_body> parser_;
  http::response<http::string_body> res_;
  const PlainHttpServer::Handler& handler_;
};

}  // namespace

struct PlainHttpServer::Impl {
  std::string name;
  Handler handler;
  net::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  net::steady_timer retry{ioc};
  uint16_t port = 0;
  std::thread thread;

  void accept() {
    acceptor.async_accept([this](error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      if (ec) {  // e.g. out of file descriptors: try again shortly
        retry.expires_after(std::chrono::milliseconds(50));
        retry.async_wait([this](error_code waitEc) {
          if (!waitEc) accept();
        });
        return;
      }
      std::make_shared<Session>(std::move(socket), handler)->run();
      accept();
    });
  }
};

PlainHttpServer::PlainHttpServer(std::string name, Handler handler)
    : impl_(std::make_unique<Impl>()) {
  impl_->name = std::move(name);
  impl_->handler = std::move(handler);
}

PlainHttpServer::~PlainHttpServer() { stop(); }

uint16_t PlainHttpServer::port() const { return impl_->port; }

Status PlainHttpServer::start(const std::string& host, uint16_t port) {
  std::string where = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                      std::to_string(port);
  auto fail = [&](const std::string& why) {
    return makeError(Code::Unavailable, impl_->name + " " + where + ": " + why);
  };
  error_code ec;
  tcp::resolver resolver(impl_->ioc);
  auto endpoints = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec) return fail(ec.message());
  std::string lastError = "no address";
  tcp::acceptor& acceptor = impl_->acceptor;
  for (const auto& entry : endpoints) {
    error_code bindEc;
    acceptor.open(entry.endpoint().protocol(), bindEc);
    if (!bindEc) acceptor.set_option(net::socket_base::reuse_address(true), bindEc);
    if (!bindEc) acceptor.bind(entry.endpoint(), bindEc);
    if (!bindEc) acceptor.listen(16, bindEc);
    if (!bindEc) break;
    lastError = bindEc == net::error::address_in_use
                    ? "port " + std::to_string(port) + " is already in use"
                    : bindEc.message();
    error_code ignored;
    acceptor.close(ignored);
  }
  if (!acceptor.is_open()) return fail(lastError);
  impl_->port = acceptor.local_endpoint(ec).port();
  impl_->accept();
  impl_->thread = std::thread([impl = impl_.get()] { impl->ioc.run(); });
  return Status();
}

void PlainHttpServer::stop() {
  if (impl_->thread.joinable()) {
    impl_->ioc.stop();
    impl_->thread.join();
  }
  error_code ignored;
  impl_->acceptor.close(ignored);
}

}  // namespace strait::kube
