// Client WebSocket to an API server (see api_websocket.h).
//
// Each WebSocket owns an io_context run by one thread for its life: the handshake is done
// before that thread starts, then every read/write is an asynchronous operation on it
// (wrapWebSocket), so both directions flow at the same time.
#include "kube/api_websocket.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <optional>
#include <thread>

#include "kube/api_error.h"
#include "kube/credentials.h"
#include "kube/http_upgrade.h"
#include "kube/json_parse.h"

namespace strait::kube::detail {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;
using tcp = boost::asio::ip::tcp;
using boost::system::error_code;

// What the WebSocket borrows; destroyed after it (wrapWebSocket's owner): stops the loop
// and joins.
struct Connection {
  net::io_context ioc;
  ssl::context tls{ssl::context::tls_client};
  std::unique_ptr<TlsStream> stream;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::thread thread;

  ~Connection() {
    work.reset();
    ioc.stop();
    if (thread.joinable()) thread.join();
  }
};

// Runs `start(done)` on `conn`'s io_context on this thread for at most `timeout` (then the
// socket is shut down and ec is timed_out).
template <class Start>
void runBounded(Connection& conn, std::chrono::milliseconds timeout, error_code& ec,
                Start&& start) {
  bool finished = false;
  start([&](error_code e, auto&&...) {
    ec = e;
    finished = true;
  });
  conn.ioc.run_for(timeout);
  if (!finished) {
    error_code ignored;
    conn.stream->next_layer().shutdown(tcp::socket::shutdown_both, ignored);
    conn.ioc.restart();
    conn.ioc.run();
    ec = net::error::timed_out;
  }
  conn.ioc.restart();
}

struct HostPort {
  std::string host, port;
};

Result<HostPort> splitServer(const std::string& server, const std::string& what) {
  std::string_view s = server;
  if (s.rfind("https://", 0) != 0) {
    return makeError(Code::Invalid, what + ": server \"" + server + "\" is not an https:// URL");
  }
  s.remove_prefix(8);
  s = s.substr(0, s.find('/'));
  HostPort a;
  if (!s.empty() && s.front() == '[') {
    size_t close = s.find(']');
    if (close == std::string_view::npos) {
      return makeError(Code::Invalid, what + ": bad IPv6 address in server \"" + server + "\"");
    }
    a.host = std::string(s.substr(1, close - 1));
    std::string_view rest = s.substr(close + 1);
    a.port = rest.size() > 1 && rest[0] == ':' ? std::string(rest.substr(1)) : "443";
  } else {
    size_t colon = s.rfind(':');
    a.host = std::string(s.substr(0, colon));
    a.port = colon == std::string_view::npos ? "443" : std::string(s.substr(colon + 1));
  }
  if (a.host.empty()) return makeError(Code::Invalid, what + ": no host in server \"" + server + "\"");
  return a;
}

Error refusal(const websocket::response_type& res, const std::string& what) {
  int code = static_cast<int>(res.result_int());
  auto body = parseJson(res.body());
  if (body && body->is_object() && body->value("kind", "") == "Status") {
    return errorFromStatus(code, *body);
  }
  std::string text = res.body().empty() ? std::string(res.reason()) : res.body();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  Code c = code == 404   ? Code::NotFound
           : code == 403 ? Code::Forbidden
           : code == 401 ? Code::Unauthorized
           : code >= 500 ? Code::Unavailable
                         : Code::BadRequest;
  return makeError(c, what + ": HTTP " + std::to_string(code) + ": " + text);
}

}  // namespace

Result<std::unique_ptr<WebSocket>> openApiWebSocket(const RestConfig& cfg,
                                                    const std::string& target,
                                                    const std::vector<std::string>& protocols,
                                                    const std::string& what) {
  auto addr = splitServer(cfg.server, what);
  if (!addr) return addr.error();
  CredentialSource source(cfg);
  auto creds = source.get();
  if (!creds) return creds.error();

  auto conn = std::make_shared<Connection>();
  error_code ec;
  if (cfg.insecureSkipTlsVerify) {
    conn->tls.set_verify_mode(ssl::verify_none, ec);
  } else {
    conn->tls.set_verify_mode(ssl::verify_peer, ec);
    if (cfg.caPem.empty()) {
      conn->tls.set_default_verify_paths(ec);
    } else {
      conn->tls.add_certificate_authority(net::buffer(cfg.caPem), ec);
    }
  }
  if (!ec && !creds->clientCertPem.empty()) {
    conn->tls.use_certificate_chain(net::buffer(creds->clientCertPem), ec);
    if (!ec) conn->tls.use_private_key(net::buffer(creds->clientKeyPem), ssl::context::pem, ec);
  }
  if (ec) return makeError(Code::Invalid, what + ": TLS setup from " + cfg.source + ": " + ec.message());

  const std::string serverName = cfg.tlsServerName.empty() ? addr->host : cfg.tlsServerName;
  conn->stream = std::make_unique<TlsStream>(conn->ioc, conn->tls);
  if (!cfg.insecureSkipTlsVerify) {
    conn->stream->set_verify_callback(ssl::host_name_verification(serverName));
  }
  SSL_set_tlsext_host_name(conn->stream->native_handle(), serverName.c_str());

  tcp::resolver resolver(conn->ioc);
  auto endpoints = resolver.resolve(addr->host, addr->port, ec);
  if (!ec) net::connect(conn->stream->next_layer(), endpoints, ec);
  if (ec) {
    return makeError(Code::Unavailable,
                     what + ": dial " + addr->host + ":" + addr->port + ": " + ec.message());
  }
  runBounded(*conn, cfg.timeout, ec, [&](auto done) {
    conn->stream->async_handshake(ssl::stream_base::client, done);
  });
  if (ec) {
    return makeError(Code::Unavailable, what + ": TLS handshake with " + addr->host + ":" +
                                            addr->port + ": " + ec.message());
  }

  auto ws = std::make_unique<BeastWs>(*conn->stream);
  std::string offered;
  for (const std::string& p : protocols) offered += (offered.empty() ? "" : ", ") + p;
  std::string token = creds->token;
  std::string agent = cfg.userAgent;
  ws->set_option(websocket::stream_base::decorator([offered, token, agent](websocket::request_type& r) {
    if (!offered.empty()) r.set(http::field::sec_websocket_protocol, offered);
    r.set(http::field::user_agent, agent);
    if (!token.empty()) r.set(http::field::authorization, "Bearer " + token);
  }));
  websocket::response_type res;
  // Asynchronous: Beast's synchronous handshake drops the answer of a refusal.
  runBounded(*conn, cfg.timeout, ec, [&](auto done) {
    ws->async_handshake(res, addr->host + ":" + addr->port, target, done);
  });
  if (ec) {
    if (ec == websocket::error::upgrade_declined) return refusal(res, what);
    return makeError(Code::Unavailable, what + ": WebSocket handshake: " + ec.message());
  }
  std::string protocol(res[http::field::sec_websocket_protocol]);
  if (!protocols.empty() &&
      std::find(protocols.begin(), protocols.end(), protocol) == protocols.end()) {
    return makeError(Code::BadRequest,
                     what + ": the server chose an unsupported subprotocol \"" + protocol + "\"");
  }
  conn->work.emplace(conn->ioc.get_executor());
  conn->thread = std::thread([c = conn.get()] { c->ioc.run(); });
  spdlog::debug("event=api_websocket_open what=\"{}\" protocol={}", what, protocol);
  return wrapWebSocket(std::move(ws), protocol, nullptr, conn);
}

}  // namespace strait::kube::detail
