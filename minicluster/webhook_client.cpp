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
#include <memory>

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

// One call's state, kept alive by the handlers that reference it.
struct Call {
  Call(net::io_context& ioc, ssl::context& tls) : resolver(ioc), stream(ioc, tls) {}
  tcp::resolver resolver;
  ssl::stream<tcp::socket> stream;
  http::request<http::string_body> request;
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  std::string failure;  // set on the first error
  bool done = false;
};

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

  ssl::context tls(ssl::context::tls_client);
  tls.set_verify_mode(ssl::verify_peer);
  error_code ec;
  if (t.caPem.empty()) {
    tls.set_default_verify_paths(ec);
  } else {
    tls.add_certificate_authority(net::buffer(t.caPem), ec);
    if (ec) return fail("invalid caBundle: " + ec.message());
  }
  if (!t.clientCertPem.empty()) {
    tls.use_certificate_chain(net::buffer(t.clientCertPem), ec);
    if (!ec) tls.use_private_key(net::buffer(t.clientKeyPem), ssl::context::pem, ec);
    if (ec) return fail("invalid client certificate: " + ec.message());
  }

  net::io_context ioc;
  auto call = std::make_shared<Call>(ioc, tls);
  const std::string name = t.serverName.empty() ? t.host : t.serverName;
  SSL* ssl = call->stream.native_handle();
  if (!t.verifyName) {
    if (!isIp(name)) SSL_set_tlsext_host_name(ssl, name.c_str());
  } else if (isIp(name)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl, name.c_str());
    SSL_set1_host(ssl, name.c_str());
  }
  call->request = http::request<http::string_body>(verb, t.path, 11);
  call->request.set(http::field::host, hostPort);
  if (verb != http::verb::get) call->request.set(http::field::content_type, "application/json");
  call->request.set(http::field::accept, "application/json");
  call->request.set(http::field::user_agent, "strait-minicluster/admission");
  if (verb != http::verb::get) {
    call->request.body() = body;
    call->request.prepare_payload();
  }
  call->parser.body_limit(kMaxReplyBytes);

  auto failWith = [call](const std::string& what, const error_code& e) {
    if (call->failure.empty()) call->failure = what + ": " + e.message();
  };
  call->resolver.async_resolve(
      t.host, std::to_string(t.port),
      [call, failWith](const error_code& e, const tcp::resolver::results_type& results) {
        if (e) return failWith("dial tcp: lookup", e);
        net::async_connect(
            call->stream.next_layer(), results,
            [call, failWith](const error_code& e, const tcp::endpoint&) {
              if (e) return failWith("dial tcp", e);
              call->stream.async_handshake(
                  ssl::stream_base::client, [call, failWith](const error_code& e) {
                    if (e) return failWith("tls: handshake", e);
                    http::async_write(
                        call->stream, call->request,
                        [call, failWith](const error_code& e, size_t) {
                          if (e) return failWith("write", e);
                          http::async_read(call->stream, call->buffer, call->parser,
                                           [call, failWith](const error_code& e, size_t) {
                                             if (e) return failWith("read", e);
                                             call->done = true;
                                           });
                        });
                  });
            });
      });
  ioc.run_for(timeout);
  if (!call->done && call->failure.empty()) {
    return fail("context deadline exceeded (Client.Timeout exceeded while awaiting headers)");
  }
  if (!call->done) return fail(call->failure);
  WebhookReply reply;
  reply.status = static_cast<int>(call->parser.get().result_int());
  reply.body = call->parser.get().body();
  error_code ignored;
  call->stream.next_layer().close(ignored);
  return reply;
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
