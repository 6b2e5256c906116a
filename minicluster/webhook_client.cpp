// Admission webhook calls over HTTPS: Boost.Beast on boost::asio::ssl, asynchronous
// operations on a private io_context run for at most the timeout, so a silent webhook can
// never hold a write for longer than its timeoutSeconds.
#include "minicluster/webhook_client.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace strait::minicluster {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using boost::system::error_code;

constexpr size_t kMaxReplyBytes = 3 * 1024 * 1024;

bool isIp(const std::string& host) {
  error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

// Connections are kept open between calls, as upstream's HTTP transport keeps them: a Pod
// create through a mutating webhook would otherwise cost a TCP connect, a TLS handshake (and a
// connection thread in the webhook server) each time. One pool per target and TLS setting;
// a connection idle for kIdleFor is closed, and at most kIdlePerTarget wait per target.
constexpr size_t kIdlePerTarget = 16;
constexpr size_t kMaxTargets = 64;
constexpr auto kIdleFor = std::chrono::seconds(30);

// One connection with the I/O context its operations run on (a call runs it for at most its
// timeout). The stream is destroyed before its context.
struct Connection {
  explicit Connection(ssl::context& tls)
      : ioc(std::make_unique<net::io_context>()),
        stream(std::make_unique<ssl::stream<tcp::socket>>(*ioc, tls)) {}
  std::unique_ptr<net::io_context> ioc;
  std::unique_ptr<ssl::stream<tcp::socket>> stream;
  std::chrono::steady_clock::time_point idleSince;
};

struct Target {
  std::shared_ptr<ssl::context> tls;
  std::vector<std::unique_ptr<Connection>> idle;  // most recently used last
};

class ConnectionPool {
 public:
  // The TLS context of `key`, made by `make` the first time (shared by the target's calls).
  kube::Result<std::shared_ptr<ssl::context>> tlsFor(
      const std::string& key,
      const std::function<kube::Result<std::shared_ptr<ssl::context>>()>& make) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = targets_.find(key);
      if (it != targets_.end()) return it->second.tls;
    }
    kube::Result<std::shared_ptr<ssl::context>> tls = make();
    if (!tls.ok()) return tls;
    std::lock_guard<std::mutex> lock(mu_);
    if (targets_.size() >= kMaxTargets && !targets_.count(key)) targets_.clear();
    auto [it, added] = targets_.try_emplace(key);
    if (added) it->second.tls = *tls;
    return it->second.tls;
  }

  // An idle connection to `key`, or null.
  std::unique_ptr<Connection> take(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = targets_.find(key);
    if (it == targets_.end()) return nullptr;
    auto& idle = it->second.idle;
    const auto now = std::chrono::steady_clock::now();
    while (!idle.empty()) {
      std::unique_ptr<Connection> c = std::move(idle.back());
      idle.pop_back();
      if (now - c->idleSince < kIdleFor) return c;
    }
    return nullptr;
  }

  void giveBack(const std::string& key, std::unique_ptr<Connection> c) {
    c->idleSince = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = targets_.find(key);
    if (it == targets_.end() || it->second.idle.size() >= kIdlePerTarget) return;
    it->second.idle.push_back(std::move(c));
  }

 private:
  std::mutex mu_;
  std::map<std::string, Target> targets_;
};

ConnectionPool& pool() {
  static ConnectionPool* p = new ConnectionPool();  // never destroyed: calls may outlive main
  return *p;
}

kube::Result<std::shared_ptr<ssl::context>> makeTls(const WebhookTarget& t) {
  auto tls = std::make_shared<ssl::context>(ssl::context::tls_client);
  tls->set_verify_mode(ssl::verify_peer);
  error_code ec;
  if (t.caPem.empty()) {
    tls->set_default_verify_paths(ec);
  } else {
    tls->add_certificate_authority(net::buffer(t.caPem), ec);
    if (ec) return kube::makeError(kube::Code::Internal, "invalid caBundle: " + ec.message());
  }
  if (!t.clientCertPem.empty()) {
    tls->use_certificate_chain(net::buffer(t.clientCertPem), ec);
    if (!ec) tls->use_private_key(net::buffer(t.clientKeyPem), ssl::context::pem, ec);
    if (ec) {
      return kube::makeError(kube::Code::Internal, "invalid client certificate: " + ec.message());
    }
  }
  return tls;
}

// One exchange's state, kept alive by the handlers that reference it.
struct Exchange {
  http::request<http::string_body> request;
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  std::string failure;  // set on the first error
  bool done = false;
};

enum class Outcome { Done, Failed, TimedOut };

// Sends the request on `c` (dialled first when `dial`) and reads the reply, running c's
// context for at most `timeout`.
Outcome exchange(Connection& c, bool dial, const WebhookTarget& t, Exchange& x,
                 std::chrono::milliseconds timeout) {
  auto failWith = [&x](const std::string& what, const error_code& e) {
    if (x.failure.empty()) x.failure = what + ": " + e.message();
  };
  auto sendAndRead = [&c, &x, failWith] {
    http::async_write(*c.stream, x.request, [&c, &x, failWith](const error_code& e, size_t) {
      if (e) return failWith("write", e);
      http::async_read(*c.stream, x.buffer, x.parser,
                       [&x, failWith](const error_code& e, size_t) {
                         if (e) return failWith("read", e);
                         x.done = true;
                       });
    });
  };
  tcp::resolver resolver(*c.ioc);
  if (dial) {
    const std::string name = t.serverName.empty() ? t.host : t.serverName;
    SSL* ssl = c.stream->native_handle();
    if (!t.verifyName) {
      if (!isIp(name)) SSL_set_tlsext_host_name(ssl, name.c_str());
    } else if (isIp(name)) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
    } else {
      SSL_set_tlsext_host_name(ssl, name.c_str());
      SSL_set1_host(ssl, name.c_str());
    }
    resolver.async_resolve(
        t.host, std::to_string(t.port),
        [&c, failWith, sendAndRead](const error_code& e,
                                    const tcp::resolver::results_type& results) {
          if (e) return failWith("dial tcp: lookup", e);
          net::async_connect(
              c.stream->next_layer(), results,
              [&c, failWith, sendAndRead](const error_code& e, const tcp::endpoint&) {
                if (e) return failWith("dial tcp", e);
                c.stream->async_handshake(ssl::stream_base::client,
                                          [failWith, sendAndRead](const error_code& e) {
                                            if (e) return failWith("tls: handshake", e);
                                            sendAndRead();
                                          });
              });
        });
  } else {
    sendAndRead();
  }
  c.ioc->restart();
  c.ioc->run_for(timeout);
  if (x.done) return Outcome::Done;
  return x.failure.empty() ? Outcome::TimedOut : Outcome::Failed;
}

kube::Result<WebhookReply> request(http::verb verb, const WebhookTarget& t, const std::string& body,
                                   std::chrono::milliseconds timeout) {
  const std::string hostPort =
      (t.host.find(':') != std::string::npos ? "[" + t.host + "]" : t.host) + ":" +
      std::to_string(t.port);
  const std::string url = "https://" + hostPort + t.path;
  const std::string method = verb == http::verb::get ? "Get" : "Post";
  auto fail = [&](const std::string& what) {
    return kube::makeError(kube::Code::Internal, method + " \"" + url + "\": " + what);
  };

  const std::string key = hostPort + '\n' + t.serverName + '\n' + (t.verifyName ? "1" : "0") +
                          '\n' + t.caPem + '\n' + t.clientCertPem + '\n' + t.clientKeyPem;
  kube::Result<std::shared_ptr<ssl::context>> tls = pool().tlsFor(key, [&] { return makeTls(t); });
  if (!tls.ok()) return fail(tls.error().message);

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_ptr<Connection> conn = pool().take(key);
  // A kept connection the server has closed meanwhile fails before any reply byte: then the
  // request goes once more on a new connection, within the same deadline.
  for (int attempt = 0;; ++attempt) {
    const bool dial = conn == nullptr;
    if (dial) conn = std::make_unique<Connection>(**tls);
    Exchange x;
    x.request = http::request<http::string_body>(verb, t.path, 11);
    x.request.set(http::field::host, hostPort);
    if (verb != http::verb::get) x.request.set(http::field::content_type, "application/json");
    x.request.set(http::field::accept, "application/json");
    x.request.set(http::field::user_agent, "strait-minicluster/admission");
    if (verb != http::verb::get) {
      x.request.body() = body;
      x.request.prepare_payload();
    }
    x.parser.body_limit(kMaxReplyBytes);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    const Outcome o = exchange(*conn, dial, t, x, std::max(left, std::chrono::milliseconds(1)));
    if (o == Outcome::Done) {
      WebhookReply reply;
      reply.status = static_cast<int>(x.parser.get().result_int());
      reply.body = std::move(x.parser.get().body());
      if (x.parser.get().keep_alive()) pool().giveBack(key, std::move(conn));
      return reply;
    }
    if (o == Outcome::Failed && !dial && !x.parser.got_some() && attempt == 0) {
      conn.reset();
      continue;
    }
    if (o == Outcome::TimedOut) {
      return fail("context deadline exceeded (Client.Timeout exceeded while awaiting headers)");
    }
    return fail(x.failure);
  }
}

}  // namespace

kube::Result<WebhookReply> postWebhook(const WebhookTarget& t, const std::string& body,
                                       std::chrono::milliseconds timeout) {
  return request(http::verb::post, t, body, timeout);
}

kube::Result<WebhookReply> getHttps(const WebhookTarget& t, std::chrono::milliseconds timeout) {
  return request(http::verb::get, t, "", timeout);
}

}  // namespace strait::minicluster
