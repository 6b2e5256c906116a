// WebSocket accept, upgrade relay and streaming GET proxy (see http_upgrade.h).
//
// The relay runs on the server's io_context (the acceptor thread): one async read and one
// async write may be outstanding per TLS stream, and all completion handlers run on that one
// thread, so the two directions never touch a stream concurrently. The connection thread
// only waits for the relay to finish.
#include "kube/http_upgrade.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <chrono>
#include <future>
#include <limits>

namespace strait::kube {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;
using tcp = boost::asio::ip::tcp;
using boost::system::error_code;

namespace detail {
namespace {

// TLS client connection to an upstream, sharing `executor` with the server.
struct Upstream {
  ssl::context ctx{ssl::context::tls_client};
  std::unique_ptr<TlsStream> stream;
};

Result<std::unique_ptr<Upstream>> dial(const net::any_io_executor& executor,
                                              const UpstreamTarget& t) {
  auto up = std::make_unique<Upstream>();
  error_code ec;
  up->ctx.set_verify_mode(ssl::verify_peer, ec);
  up->ctx.add_certificate_authority(net::buffer(t.caPem), ec);
  if (!ec) up->ctx.use_certificate_chain(net::buffer(t.certPem), ec);
  if (!ec) up->ctx.use_private_key(net::buffer(t.keyPem), ssl::context::pem, ec);
  if (ec) return makeError(Code::Internal, "kubelet client TLS setup: " + ec.message());
  up->stream = std::make_unique<TlsStream>(tcp::socket(executor), up->ctx);
  tcp::resolver resolver(executor);
  auto eps = resolver.resolve(t.host, std::to_string(t.port), ec);
  if (!ec) net::connect(up->stream->next_layer(), eps, ec);
  if (ec) {
    return makeError(Code::Unavailable, "error dialing backend: dial tcp " + t.host + ":" +
                                            std::to_string(t.port) + ": " + ec.message());
  }
  up->stream->handshake(ssl::stream_base::client, ec);
  if (ec) {
    return makeError(Code::Unavailable, "error dialing backend: tls handshake with " + t.host +
                                            ":" + std::to_string(t.port) + ": " + ec.message());
  }
  return up;
}

struct Relay : std::enable_shared_from_this<Relay> {
  TlsStream& client;
  std::unique_ptr<Upstream> up;
  std::array<char, 16384> toUp{}, toClient{};
  std::atomic<int> open{2};
  std::promise<void> done;

  Relay(TlsStream& c, std::unique_ptr<Upstream> u) : client(c), up(std::move(u)) {}

  void shutdownBoth() {
    ::shutdown(client.next_layer().native_handle(), SHUT_RDWR);
    ::shutdown(up->stream->next_layer().native_handle(), SHUT_RDWR);
  }

  void finished() {
    shutdownBoth();
    if (--open == 0) done.set_value();
  }

  void pump(TlsStream& from, TlsStream& to, std::array<char, 16384>& buf) {
    auto self = shared_from_this();
    from.async_read_some(net::buffer(buf), [self, &from, &to, &buf](error_code ec, size_t n) {
      if (ec) return self->finished();
      net::async_write(to, net::buffer(buf.data(), n), [self, &from, &to, &buf](error_code ec2, size_t) {
        if (ec2) return self->finished();
        self->pump(from, to, buf);
      });
    });
  }
};

}  // namespace

std::unique_ptr<WebSocket> acceptWebSocket(TlsStream& stream, const Request& req,
                                           const std::string& subprotocol,
                                           std::function<bool()> stopping) {
  if (!websocket::is_upgrade(req)) return nullptr;
  auto ws = std::make_unique<BeastWs>(stream);
  ws->set_option(websocket::stream_base::decorator([subprotocol](websocket::response_type& r) {
    if (!subprotocol.empty()) r.set(http::field::sec_websocket_protocol, subprotocol);
  }));
  error_code ec;
  ws->accept(req, ec);
  if (ec) {
    spdlog::debug("event=websocket_accept_failed error=\"{}\"", ec.message());
    return nullptr;
  }
  return wrapWebSocket(std::move(ws), subprotocol, std::move(stopping));
}

Status proxyUpgrade(TlsStream& client, const Request& req, const UpstreamTarget& t,
                          const std::function<bool()>& stopping) {
  auto up = dial(client.get_executor(), t);
  if (!up) return up.error();
  TlsStream& u = *(*up)->stream;
  http::request<http::empty_body> fwd;
  fwd.method(req.method());
  fwd.target(t.target);
  fwd.version(11);
  for (const auto& f : req) {
    if (f.name() == http::field::host || f.name() == http::field::authorization ||
        f.name() == http::field::content_length) {
      continue;
    }
    fwd.set(f.name_string(), f.value());
  }
  fwd.set(http::field::host, t.host + ":" + std::to_string(t.port));
  error_code ec;
  http::write(u, fwd, ec);
  if (ec) return makeError(Code::Unavailable, "error sending to kubelet: " + ec.message());
  boost::beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(8 * 1024 * 1024);
  http::read_header(u, buf, parser, ec);
  if (ec) return makeError(Code::Unavailable, "error reading from kubelet: " + ec.message());
  if (parser.get().result() != http::status::switching_protocols) {
    if (!parser.is_done()) http::read(u, buf, parser, ec);
    auto res = parser.release();
    res.keep_alive(false);
    res.prepare_payload();
    http::write(client, res, ec);
    return Status::OK();
  }
  // 101: pass the answer on, then any bytes read past it, then relay.
  auto head = parser.release();
  http::response<http::empty_body> sw(std::move(head.base()));
  http::response_serializer<http::empty_body> sr(sw);
  http::write_header(client, sr, ec);
  if (!ec && buf.size() > 0) net::write(client, buf.data(), ec);
  if (ec) return Status::OK();  // the client went away
  auto relay = std::make_shared<Relay>(client, std::move(*up));
  auto fut = relay->done.get_future();
  net::post(client.get_executor(), [relay] {
    relay->pump(relay->client, *relay->up->stream, relay->toUp);
    relay->pump(*relay->up->stream, relay->client, relay->toClient);
  });
  while (fut.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready) {
    if (stopping()) {
      relay->shutdownBoth();
      break;
    }
  }
  return Status::OK();
}

}  // namespace detail

Status proxyGet(const UpstreamTarget& t, Responder& out,
                      const std::function<void(int, const std::string&)>& onError) {
  net::io_context ioc;
  auto up = detail::dial(ioc.get_executor(), t);
  if (!up) return up.error();
  auto& u = *(*up)->stream;
  http::request<http::empty_body> req{http::verb::get, t.target, 11};
  req.set(http::field::host, t.host + ":" + std::to_string(t.port));
  error_code ec;
  http::write(u, req, ec);
  if (ec) return makeError(Code::Unavailable, "error sending to kubelet: " + ec.message());
  boost::beast::flat_buffer buf;
  http::response_parser<http::buffer_body> p;
  p.body_limit(std::numeric_limits<std::uint64_t>::max());  // boost::none trips a Beast 1.74 bug
  http::read_header(u, buf, p, ec);
  if (ec) return makeError(Code::Unavailable, "error reading from kubelet: " + ec.message());
  int status = static_cast<int>(p.get().result_int());
  if (status < 200 || status > 299) {
    std::string body;
    char part[4096];
    while (!p.is_done() && body.size() < 64 * 1024) {
      p.get().body().data = part;
      p.get().body().size = sizeof(part);
      http::read(u, buf, p, ec);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) break;
      body.append(part, sizeof(part) - p.get().body().size);
    }
    while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
    onError(status, body);
    return Status::OK();
  }
  std::map<std::string, std::string> headers;
  auto ct = p.get()[http::field::content_type];
  headers["Content-Type"] = ct.empty() ? "text/plain" : std::string(ct);
  if (!out.startStream(status, headers)) return Status::OK();
  char chunk[16384];
  while (!p.is_done()) {
    p.get().body().data = chunk;
    p.get().body().size = sizeof(chunk);
    http::read_some(u, buf, p, ec);  // returns as soon as some body arrived (log follow)
    if (ec == http::error::need_buffer) ec = {};
    if (ec) break;
    size_t n = sizeof(chunk) - p.get().body().size;
    if (n > 0 && !out.writeChunk(std::string_view(chunk, n))) break;
  }
  ::shutdown(u.next_layer().native_handle(), SHUT_RDWR);
  return Status::OK();
}

}  // namespace strait::kube
