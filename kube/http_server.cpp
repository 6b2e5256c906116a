// HTTPS/1.1 server for the minicluster API server: Boost.Beast over boost::asio::ssl.
//
// Threads: one acceptor thread runs the io_context with a pending async_accept; every
// accepted connection gets its own thread that does synchronous TLS and HTTP I/O and calls
// the Handler, which may block for minutes (watches). A connection serves requests one after
// another (HTTP/1.1 keep-alive) until the client closes, asks for `Connection: close`, a
// response fails, or the server stops.
//
// stop(): stops the acceptor, then shuts down (::shutdown) the socket of every open
// connection, which makes blocked reads return and writes fail, so handlers see writeChunk()
// false / clientGone() true and return; then joins all threads.
//
// Only HTTP/1.1 is offered (ALPN "http/1.1"); HTTP/2 is never negotiated.

#include "kube/http_server.h"
#include "base/thread_annotations.h"
#include "kube/http_upgrade.h"
#include "kube/pki.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

namespace strait::kube {

// --- HttpRequest accessors ----------------------------------------------------------------------

std::string HttpRequest::queryParam(std::string_view key) const {
  for (const auto& [k, v] : query) {
    if (k == key) return v;
  }
  return {};
}

bool HttpRequest::hasQuery(std::string_view key) const {
  for (const auto& kv : query) {
    if (kv.first == key) return true;
  }
  return false;
}

std::vector<std::string> HttpRequest::queryAll(std::string_view key) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : query) {
    if (k == key) out.push_back(v);
  }
  return out;
}

std::string HttpRequest::header(std::string_view lowerName) const {
  auto it = headers.find(std::string(lowerName));
  return it == headers.end() ? std::string() : it->second;
}

namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using boost::system::error_code;
using TlsStream = ssl::stream<tcp::socket>;
using Clock = std::chrono::steady_clock;

// --- implementation constants --------------------------------------------------------------------

constexpr size_t kHeaderLimit = 64 * 1024;
// How long, and how much, to drain from a client we are closing on after an error answer, so
// the kernel does not reset the connection before the client has read that answer.
constexpr auto kLingerTime = std::chrono::milliseconds(1000);
constexpr size_t kLingerBytes = 8 * 1024 * 1024;

// --- helpers -------------------------------------------------------------------------------------


// A Kubernetes Status object (failure) as JSON.
std::string statusJson(int code, const char* reason, const std::string& message) {
  nlohmann::ordered_json j;
  j["kind"] = "Status";
  j["apiVersion"] = "v1";
  j["metadata"] = nlohmann::ordered_json::object();
  j["status"] = "Failure";
  j["message"] = message;
  j["reason"] = reason;
  j["code"] = code;
  return j.dump();
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes %XX escapes (and '+' as space when asked); nullopt on a malformed escape.
std::optional<std::string> percentDecode(std::string_view in, bool plusIsSpace) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return std::nullopt;
      int hi = hexValue(in[i + 1]);
      int lo = hexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plusIsSpace) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

// Splits "a=1&b=&c" into decoded pairs in order; nullopt on a malformed escape.
std::optional<std::vector<std::pair<std::string, std::string>>> parseQuery(std::string_view q) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!q.empty()) {
    size_t amp = q.find('&');
    std::string_view part = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    if (part.empty()) continue;
    size_t eq = part.find('=');
    auto key = percentDecode(part.substr(0, eq), true);
    auto value = percentDecode(
        eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1), true);
    if (!key || !value) return std::nullopt;
    out.emplace_back(std::move(*key), std::move(*value));
  }
  return out;
}

bool hasLineBreak(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

std::string asn1ToUtf8(const ASN1_STRING* s) {
  unsigned char* utf8 = nullptr;
  int n = ASN1_STRING_to_UTF8(&utf8, s);
  if (n < 0) return {};
  std::string out(reinterpret_cast<const char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return out;
}

// ALPN: pick http/1.1 when the client offers it; otherwise negotiate nothing (plain HTTP/1.1).
int selectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kHttp11, sizeof(kHttp11), in, inlen) ==
      OPENSSL_NPN_NEGOTIATED) {
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

// Half-closes and drains what the client is still sending (bounded), so an error answer sent
// before the request was fully read reaches the client instead of being lost to a TCP reset.
void lingeringClose(int fd) {
  ::shutdown(fd, SHUT_WR);
  auto deadline = Clock::now() + kLingerTime;
  size_t drained = 0;
  char buf[16 * 1024];
  while (drained < kLingerBytes) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) break;
    drained += static_cast<size_t>(n);
  }
}

bool isBenignReadError(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == http::error::partial_message ||
         ec == net::error::eof || ec == ssl::error::stream_truncated ||
         ec == net::error::connection_reset || ec == net::error::broken_pipe ||
         ec == net::error::operation_aborted || ec == net::error::bad_descriptor ||
         ec == net::error::shut_down;
}

class HttpServerImpl;

// One client connection: reads requests, hands them to the Handler and is the Responder for
// them. Used only from its own connection thread, except that the server's stop() may
// ::shutdown() the socket and set the server's stopping flag from another thread.
class Connection final : public Responder {
 public:
  Connection(HttpServerImpl& server, TlsStream& stream, std::string remoteAddr)
      : server_(server), stream_(stream), remoteAddr_(std::move(remoteAddr)) {}

  // Serves the connection until it ends; never throws.
  void run();

  bool respond(HttpResponse r) override;
  bool startStream(int status, std::map<std::string, std::string> headers) override;
  bool writeChunk(std::string_view data) override;
  bool clientGone() override;
  std::unique_ptr<WebSocket> acceptWebSocket(const std::string& subprotocol) override;
  std::unique_ptr<ByteStream> acceptUpgrade(
      const std::string& protocol, const std::map<std::string, std::string>& headers) override;
  Status proxyUpgrade(const UpstreamTarget& upstream) override;

 private:
  enum class ReplyState { None, Responded, Streaming, Failed };

  int fd() { return stream_.lowest_layer().native_handle(); }
  bool stopping() const;
  void readIdentity();
  // Answers a request that never reached the handler (protocol errors); the connection then
  // closes.
  void rejectAndClose(int code, const char* reason, const std::string& message);
  // Serves one parsed request; returns whether the connection may carry another.
  bool serve(http::request<http::string_body>&& msg, Clock::time_point started);
  void finishReply();

  HttpServerImpl& server_;
  TlsStream& stream_;
  std::string remoteAddr_;
  std::string user_;
  std::vector<std::string> groups_;

  // Per-request state.
  ReplyState state_ = ReplyState::None;
  const detail::Request* current_ = nullptr;  // the request being handled
  boost::beast::flat_buffer* readBuffer_ = nullptr;  // bytes read past the current request
  bool keepAlive_ = true;
  bool isHead_ = false;
  int status_ = 0;
};

// The server. Used from several threads: start()/stop() from the owner (serialized by
// lifecycleMu_), onAccept() on the acceptor thread, serveConnection() on connection threads.
class HttpServerImpl final : public HttpServer {
 public:
  HttpServerImpl(HttpServerOptions opts, Handler& handler)
      : opts_(std::move(opts)), handler_(handler) {}
  ~HttpServerImpl() override { stop(); }

  Status start() override;
  uint16_t port() const override { return port_.load(); }
  void stop() override;

  Handler& handler() { return handler_; }
  const HttpServerOptions& options() const { return opts_; }
  bool stopping() const { return stopping_.load(); }

 private:
  Status setUpTls();
  void armAccept();
  void onAccept(const error_code& ec, tcp::socket socket);
  void serveConnection(uint64_t id, tcp::socket socket);
  void joinFinished();

  const HttpServerOptions opts_;
  Handler& handler_;
  // Declared before everything that holds sockets: destroyed last.
  net::io_context ioc_;
  std::unique_ptr<ssl::context> tls_;
  std::unique_ptr<tcp::acceptor> acceptor_;
  std::thread acceptThread_;
  std::atomic<uint16_t> port_{0};
  std::atomic<bool> stopping_{false};

  base::Mutex lifecycleMu_;  // also serializes start() and stop()
  bool started_ GUARDED_BY(lifecycleMu_) = false;
  bool stopped_ GUARDED_BY(lifecycleMu_) = false;

  struct ConnEntry {
    int fd = -1;  // -1 once the connection thread is about to close the socket
    std::thread thread;
  };
  base::Mutex mu_;
  std::map<uint64_t, ConnEntry> conns_ GUARDED_BY(mu_);
  // Connection threads that have ended and await join.
  std::vector<uint64_t> finished_ GUARDED_BY(mu_);
  uint64_t nextId_ GUARDED_BY(mu_) = 0;
};

// --- Connection ----------------------------------------------------------------------------------

bool Connection::stopping() const { return server_.stopping(); }

void Connection::readIdentity() {
  SSL* ssl = stream_.native_handle();
  X509* peer = SSL_get0_peer_certificate(ssl);
  if (!peer || SSL_get_verify_result(ssl) != X509_V_OK) return;
  X509_NAME* name = X509_get_subject_name(peer);
  int cn = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
  if (cn >= 0) user_ = asn1ToUtf8(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, cn)));
  for (int i = X509_NAME_get_index_by_NID(name, NID_organizationName, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(name, NID_organizationName, i)) {
    groups_.push_back(asn1ToUtf8(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i))));
  }
}

void Connection::run() {
  int one = 1;
  ::setsockopt(fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // chunks go out at once
  ::setsockopt(fd(), SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));  // notice vanished peers

  error_code ec;
  stream_.handshake(ssl::stream_base::server, ec);
  if (ec) {
    spdlog::debug("http tls handshake failed remote={} error=\"{}\"", remoteAddr_, ec.message());
    return;
  }
  readIdentity();

  boost::beast::flat_buffer buffer;
  readBuffer_ = &buffer;
  while (!stopping()) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kHeaderLimit);
    parser.body_limit(server_.options().maxBodyBytes);

    http::read_header(stream_, buffer, parser, ec);
    Clock::time_point started = Clock::now();
    if (!ec && boost::beast::iequals(parser.get()[http::field::expect], "100-continue") &&
        !parser.is_done()) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      net::write(stream_, net::buffer(kContinue.data(), kContinue.size()), ec);
      if (ec) return;
    }
    if (!ec && !parser.is_done()) http::read(stream_, buffer, parser, ec);

    if (ec == http::error::body_limit) {
      rejectAndClose(413, "RequestEntityTooLarge",
                     "request body exceeds the limit of " +
                         std::to_string(server_.options().maxBodyBytes) + " bytes");
      return;
    }
    if (ec == http::error::header_limit) {
      rejectAndClose(431, "BadRequest", "request headers too large");
      return;
    }
    if (ec) {
      // Parse errors get an answer; I/O errors and a client hanging up just end the connection.
      bool parseError = ec.category() == http::make_error_code(http::error::bad_target).category();
      if (parseError && !isBenignReadError(ec)) {
        rejectAndClose(400, "BadRequest", "malformed HTTP request: " + ec.message());
      }
      return;
    }
    if (!serve(parser.release(), started)) return;
  }
}

void Connection::rejectAndClose(int code, const char* reason, const std::string& message) {
  keepAlive_ = false;
  isHead_ = false;
  state_ = ReplyState::None;
  HttpResponse r;
  r.status = code;
  r.headers["Content-Type"] = "application/json";
  r.body = statusJson(code, reason, message);
  respond(std::move(r));
  spdlog::debug("http rejected remote={} status={} message=\"{}\"", remoteAddr_, code, message);
  lingeringClose(fd());
}

bool Connection::serve(http::request<http::string_body>&& msg, Clock::time_point started) {
  HttpRequest req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  req.user = user_;
  req.groups = groups_;
  req.remoteAddr = remoteAddr_;

  state_ = ReplyState::None;
  status_ = 0;
  keepAlive_ = msg.keep_alive() && !stopping();
  isHead_ = msg.method() == http::verb::head;

  std::string_view target = req.target;
  size_t qmark = target.find('?');
  auto path = percentDecode(target.substr(0, qmark), false);
  auto query = qmark == std::string_view::npos
                   ? std::optional<std::vector<std::pair<std::string, std::string>>>(std::in_place)
                   : parseQuery(target.substr(qmark + 1));
  if (!path || !query || path->empty() || (*path)[0] != '/') {
    rejectAndClose(400, "BadRequest", "malformed request target");
    return false;
  }
  req.path = std::move(*path);
  req.query = std::move(*query);

  for (const auto& field : msg) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    boost::beast::string_view value = field.value();
    auto [it, inserted] = req.headers.try_emplace(std::move(name), value.data(), value.size());
    if (!inserted) {
      it->second += ", ";
      it->second.append(value.data(), value.size());
    }
  }
  // Upgrade requests (exec/attach/port-forward websockets, h2c) are served as plain requests
  // for now; the connection closes afterwards since the client expected a protocol switch.
  bool upgradeAsked = msg.find(http::field::upgrade) != msg.end();
  req.body = std::move(msg.body());

  current_ = &msg;
  try {
    server_.handler().handle(req, *this);
  } catch (const std::exception& e) {
    spdlog::error("http handler threw method={} path={} error=\"{}\"", req.method, req.path,
                  e.what());
    if (state_ == ReplyState::Streaming) state_ = ReplyState::Failed;  // cut the stream short
  } catch (...) {
    spdlog::error("http handler threw method={} path={}", req.method, req.path);
    if (state_ == ReplyState::Streaming) state_ = ReplyState::Failed;
  }
  if (state_ == ReplyState::None) {
    keepAlive_ = false;
    HttpResponse r;
    r.status = 500;
    r.headers["Content-Type"] = "application/json";
    r.body = statusJson(500, "InternalError", "the server did not answer the request");
    respond(std::move(r));
  }
  finishReply();

  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  spdlog::debug("http method={} path={} status={} duration_ms={} user={} remote={}", req.method,
                req.path, status_, ms.count(), req.user, remoteAddr_);
  return keepAlive_ && state_ != ReplyState::Failed && !upgradeAsked && !stopping();
}

std::unique_ptr<WebSocket> Connection::acceptWebSocket(const std::string& subprotocol) {
  if (state_ != ReplyState::None || !current_) return nullptr;
  keepAlive_ = false;
  auto ws = detail::acceptWebSocket(stream_, *current_, subprotocol, [this] { return stopping(); });
  state_ = ws ? ReplyState::Responded : ReplyState::Failed;
  status_ = ws ? 101 : 400;
  return ws;
}

std::unique_ptr<ByteStream> Connection::acceptUpgrade(
    const std::string& protocol, const std::map<std::string, std::string>& headers) {
  if (state_ != ReplyState::None || !current_) return nullptr;
  keepAlive_ = false;
  std::string asked(current_->base()[http::field::upgrade]);
  for (char& c : asked) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string want = protocol;
  for (char& c : want) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (want.empty() || asked.find(want) == std::string::npos) {
    state_ = ReplyState::Failed;
    status_ = 400;
    return nullptr;
  }
  std::string head = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " +
                     protocol + "\r\n";
  for (const auto& [k, v] : headers) head += k + ": " + v + "\r\n";
  head += "\r\n";
  error_code ec;
  net::write(stream_, net::buffer(head), ec);
  if (ec) {
    state_ = ReplyState::Failed;
    status_ = 101;
    return nullptr;
  }
  state_ = ReplyState::Responded;
  status_ = 101;
  std::string leftover;
  if (readBuffer_ && readBuffer_->size() > 0) {
    leftover = boost::beast::buffers_to_string(readBuffer_->data());
    readBuffer_->consume(readBuffer_->size());
  }
  return detail::wrapTlsByteStream(stream_, std::move(leftover), [this] { return stopping(); });
}

Status Connection::proxyUpgrade(const UpstreamTarget& upstream) {
  if (state_ != ReplyState::None || !current_) {
    return makeError(Code::Internal, "proxyUpgrade after a reply was started");
  }
  auto s = detail::proxyUpgrade(stream_, *current_, upstream, [this] { return stopping(); });
  if (s) {
    keepAlive_ = false;
    state_ = ReplyState::Responded;
    status_ = 101;
  }
  return s;
}

void Connection::finishReply() {
  if (state_ != ReplyState::Streaming) return;
  error_code ec;
  net::write(stream_, http::make_chunk_last(), ec);
  state_ = ec ? ReplyState::Failed : ReplyState::Responded;
}

template <class Message>
void setHeaders(Message& m, const std::map<std::string, std::string>& headers) {
  for (const auto& [name, value] : headers) {
    if (name.empty() || hasLineBreak(name) || hasLineBreak(value)) {
      spdlog::warn("http dropping invalid response header name=\"{}\"", name);
      continue;
    }
    m.set(name, value);
  }
}

bool Connection::respond(HttpResponse r) {
  if (state_ != ReplyState::None) {
    spdlog::error("http respond() called twice or after startStream()");
    return false;
  }
  status_ = r.status;
  http::response<http::string_body> res;
  res.version(11);
  res.result(static_cast<unsigned>(r.status));
  setHeaders(res, r.headers);
  res.keep_alive(keepAlive_);
  bool noBody = (r.status >= 100 && r.status < 200) || r.status == 204 || r.status == 304;
  if (noBody) {
    r.body.clear();
  }
  if (isHead_) {
    res.content_length(r.body.size());
  } else {
    res.body() = std::move(r.body);
    if (!noBody) res.prepare_payload();
  }
  error_code ec;
  http::write(stream_, res, ec);
  state_ = ec ? ReplyState::Failed : ReplyState::Responded;
  return !ec;
}

bool Connection::startStream(int status, std::map<std::string, std::string> headers) {
  if (state_ != ReplyState::None) {
    spdlog::error("http startStream() called after a response was started");
    return false;
  }
  status_ = status;
  http::response<http::empty_body> res;
  res.version(11);
  res.result(static_cast<unsigned>(status));
  setHeaders(res, headers);
  res.keep_alive(keepAlive_);
  res.chunked(true);
  http::response_serializer<http::empty_body> sr(res);
  error_code ec;
  http::write_header(stream_, sr, ec);
  state_ = ec ? ReplyState::Failed : ReplyState::Streaming;
  return !ec;
}

bool Connection::writeChunk(std::string_view data) {
  if (state_ != ReplyState::Streaming) return false;
  if (stopping()) {
    state_ = ReplyState::Failed;
    return false;
  }
  if (data.empty()) return true;  // an empty chunk would end the stream
  error_code ec;
  net::write(stream_, http::make_chunk(net::const_buffer(data.data(), data.size())), ec);
  if (ec) state_ = ReplyState::Failed;
  return !ec;
}

bool Connection::clientGone() {
  if (state_ == ReplyState::Failed || stopping()) return true;
  pollfd p{fd(), POLLRDHUP, 0};
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) {
    return true;
  }
  return false;
}

// --- HttpServerImpl ------------------------------------------------------------------------------

Status HttpServerImpl::setUpTls() {
  const TlsConfig& cfg = opts_.tls;
  if (cfg.certPem.empty() || cfg.keyPem.empty()) {
    return makeError(Code::Invalid,
                           "http server: tls.certPem and tls.keyPem are required");
  }
  if (cfg.requireClientCert && cfg.clientCaPem.empty()) {
    return makeError(Code::Invalid,
                           "http server: tls.requireClientCert needs tls.clientCaPem");
  }
  try {
    tls_ = std::make_unique<ssl::context>(ssl::context::tls_server);
  } catch (const std::exception& e) {
    return makeError(Code::Internal,
                           std::string("http server: creating TLS context: ") + e.what());
  }
  SSL_CTX* ctx = tls_->native_handle();
  ERR_clear_error();
  error_code ec;
  tls_->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                        ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                        ssl::context::single_dh_use,
                    ec);
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  tls_->use_certificate_chain(net::buffer(cfg.certPem), ec);
  if (ec) {
    return makeError(Code::Invalid, "http server: invalid tls.certPem: " +
                                                    ec.message() + " " + opensslErrors());
  }
  tls_->use_private_key(net::buffer(cfg.keyPem), ssl::context::pem, ec);
  if (ec || SSL_CTX_check_private_key(ctx) != 1) {
    return makeError(Code::Invalid,
                           "http server: invalid tls.keyPem or it does not match tls.certPem: " +
                               (ec ? ec.message() : std::string()) + " " + opensslErrors());
  }
  if (!cfg.clientCaPem.empty()) {
    tls_->add_certificate_authority(net::buffer(cfg.clientCaPem), ec);
    if (ec) {
      return makeError(Code::Invalid, "http server: invalid tls.clientCaPem: " +
                                                      ec.message() + " " + opensslErrors());
    }
    // Name the acceptable CAs in the CertificateRequest so clients pick the right cert.
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(
        BIO_new_mem_buf(cfg.clientCaPem.data(), static_cast<int>(cfg.clientCaPem.size())),
        &BIO_free);
    while (X509* ca = bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr) {
      SSL_CTX_add_client_CA(ctx, ca);
      X509_free(ca);
    }
    ERR_clear_error();  // the loop ends on a "no start line" error
    ssl::verify_mode mode = ssl::verify_peer;
    if (cfg.requireClientCert) mode |= ssl::verify_fail_if_no_peer_cert;
    tls_->set_verify_mode(mode, ec);
    // Needed for session resumption when client certificates are verified.
    static const unsigned char kSessionContext[] = "strait-minicluster";
    SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof(kSessionContext) - 1);
  }
  SSL_CTX_set_alpn_select_cb(ctx, selectAlpn, nullptr);
  return Status::OK();
}

Status HttpServerImpl::start() {
  base::MutexLock lifecycle(lifecycleMu_);
  if (started_) return makeError(Code::Internal, "http server: already started");
  if (Status s = setUpTls(); !s.ok()) return s;

  error_code ec;
  std::string host = opts_.listenHost == "localhost" ? "127.0.0.1" : opts_.listenHost;
  net::ip::address addr = net::ip::make_address(host, ec);
  if (ec) {
    return makeError(Code::Invalid, "http server: listenHost \"" + opts_.listenHost +
                                                    "\" is not an IP address");
  }
  tcp::endpoint endpoint(addr, opts_.listenPort);
  auto acceptor = std::make_unique<tcp::acceptor>(ioc_);
  auto fail = [&](const char* step) {
    return makeError(Code::Unavailable,
                           "http server: " + std::string(step) + " " + opts_.listenHost + ":" +
                               std::to_string(opts_.listenPort) + ": " + ec.message());
  };
  if (acceptor->open(endpoint.protocol(), ec); ec) return fail("opening");
  if (acceptor->set_option(net::socket_base::reuse_address(true), ec); ec)
    return fail("configuring");
  if (acceptor->bind(endpoint, ec); ec) return fail("binding");
  if (acceptor->listen(net::socket_base::max_listen_connections, ec); ec)
    return fail("listening on");
  port_ = acceptor->local_endpoint(ec).port();
  if (ec) return fail("reading address of");
  acceptor_ = std::move(acceptor);

  armAccept();
  try {
    acceptThread_ = std::thread([this] { ioc_.run(); });
  } catch (const std::exception& e) {
    acceptor_->close(ec);
    return makeError(Code::Internal,
                           std::string("http server: starting acceptor thread: ") + e.what());
  }
  started_ = true;
  spdlog::info("http server listening address={}:{} client_auth={}", host, port_.load(),
               opts_.tls.requireClientCert ? "required" : "optional");
  return Status::OK();
}

void HttpServerImpl::armAccept() {
  acceptor_->async_accept(
      [this](const error_code& ec, tcp::socket socket) { onAccept(ec, std::move(socket)); });
}

void HttpServerImpl::onAccept(const error_code& ec, tcp::socket socket) {
  if (stopping()) return;
  if (ec) {
    if (ec == net::error::operation_aborted) return;
    spdlog::warn("http accept failed error=\"{}\"", ec.message());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // e.g. out of descriptors
    armAccept();
    return;
  }
  joinFinished();
  {
    base::MutexLock lock(mu_);
    uint64_t id = nextId_++;
    ConnEntry& entry = conns_[id];
    entry.fd = socket.native_handle();
    try {
      entry.thread = std::thread(
          [this, id, s = std::move(socket)]() mutable { serveConnection(id, std::move(s)); });
    } catch (const std::exception& e) {
      spdlog::error("http cannot start connection thread error=\"{}\"", e.what());
      conns_.erase(id);  // the socket closes with the lambda
    }
  }
  armAccept();
}

void HttpServerImpl::serveConnection(uint64_t id, tcp::socket socket) {
  {
    error_code ec;
    tcp::endpoint peer = socket.remote_endpoint(ec);
    std::string remote;
    if (!ec) {
      remote = peer.address().is_v6() ? "[" + peer.address().to_string() + "]"
                                      : peer.address().to_string();
      remote += ":" + std::to_string(peer.port());
    }
    TlsStream stream(std::move(socket), *tls_);
    try {
      Connection conn(*this, stream, std::move(remote));
      conn.run();
    } catch (const std::exception& e) {
      spdlog::error("http connection failed error=\"{}\"", e.what());
    }
    // Unregister before the socket closes, so stop() never shuts down a reused descriptor.
    base::MutexLock lock(mu_);
    conns_[id].fd = -1;
  }
  base::MutexLock lock(mu_);
  finished_.push_back(id);
}

void HttpServerImpl::joinFinished() {
  std::vector<std::thread> done;
  {
    base::MutexLock lock(mu_);
    for (uint64_t id : finished_) {
      auto it = conns_.find(id);
      if (it == conns_.end()) continue;
      done.push_back(std::move(it->second.thread));
      conns_.erase(it);
    }
    finished_.clear();
  }
  for (std::thread& t : done) {
    if (t.joinable()) t.join();
  }
}

void HttpServerImpl::stop() {
  base::MutexLock lifecycle(lifecycleMu_);
  if (!started_ || stopped_) return;
  stopped_ = true;
  stopping_ = true;
  ioc_.stop();
  if (acceptThread_.joinable()) acceptThread_.join();
  error_code ec;
  acceptor_->close(ec);

  std::vector<std::thread> threads;
  {
    base::MutexLock lock(mu_);
    for (auto& [id, entry] : conns_) {
      if (entry.fd >= 0) ::shutdown(entry.fd, SHUT_RDWR);
      threads.push_back(std::move(entry.thread));
    }
  }
  for (std::thread& t : threads) {
    if (t.joinable()) t.join();
  }
  base::MutexLock lock(mu_);
  conns_.clear();
  finished_.clear();
  spdlog::info("http server stopped port={}", port_.load());
}

}  // namespace

std::unique_ptr<HttpServer> newHttpServer(HttpServerOptions opts, Handler& handler) {
  return std::make_unique<HttpServerImpl>(std::move(opts), handler);
}

}  // namespace strait::kube
