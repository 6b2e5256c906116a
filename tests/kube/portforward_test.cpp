// kube/portforward.h against the HTTPS server of kube/http_server.h: a handler calls
// servePortForward with a dialer to 127.0.0.1:PORT, where the test runs a TCP server that
// answers each connection with its bytes upper-cased. The clients speak the three protocols
// byte by byte as kubectl and the Python client do: SPDY/3.1 after "Upgrade: SPDY/3.1",
// SPDY/3.1 inside binary WebSocket messages, and the v4 channel protocol (openPortForward).
#include "kube/portforward.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "fakes/fake_responder.h"
#include "kube/http_server.h"
#include "kube/pki.h"
#include "kube/spdy.h"

namespace strait::kube {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace websocket = boost::beast::websocket;
using tcp = boost::asio::ip::tcp;
using namespace std::chrono_literals;

// Answers every connection with what it receives, upper-cased; closes when the client
// half-closes. Counts connections.
class UpperServer {
 public:
  UpperServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::listen(fd_, 16);
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    accepter_ = std::thread([this] {
      while (true) {
        int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        ++connections_;
        std::lock_guard<std::mutex> l(mu_);
        conns_.push_back(c);
        workers_.emplace_back([c] {
          char buf[4096];
          while (true) {
            ssize_t n = ::recv(c, buf, sizeof(buf), 0);
            if (n <= 0) break;
            for (ssize_t i = 0; i < n; ++i) buf[i] = static_cast<char>(std::toupper(buf[i]));
            if (::send(c, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) break;
          }
          ::shutdown(c, SHUT_RDWR);
        });
      }
    });
  }
  ~UpperServer() {
    ::shutdown(fd_, SHUT_RDWR);
    accepter_.join();
    std::lock_guard<std::mutex> l(mu_);
    for (int c : conns_) ::shutdown(c, SHUT_RDWR);
    for (auto& w : workers_) w.join();
    for (int c : conns_) ::close(c);
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  int connections() const { return connections_.load(); }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<int> connections_{0};
  std::thread accepter_;
  std::mutex mu_;
  std::vector<int> conns_;
  std::vector<std::thread> workers_;
};

// A port nothing listens on.
uint16_t closedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// Dials 127.0.0.1:port, failing with errno's text as a kubelet would.
Result<std::unique_ptr<ByteStream>> dialLocal(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    std::string e = std::strerror(errno);
    ::close(fd);
    return makeError(Code::Unavailable, "dial port " + std::to_string(port) + ": " + e);
  }
  return socketByteStream(fd);
}

class FnHandler : public Handler {
 public:
  std::function<void(const HttpRequest&, Responder&)> fn;
  void handle(const HttpRequest& req, Responder& out) override { fn(req, out); }
};

// One side of a session's bytes for the test client: raw TLS or WebSocket messages.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual void send(const std::string& bytes) = 0;
  // Some bytes; "" at end of stream or error (reads time out after 10 s).
  virtual std::string recv() = 0;
};

// A SPDY/3.1 client over a Transport.
class SpdyClient {
 public:
  explicit SpdyClient(Transport& t) : t_(t) {}
  void send(const spdy::Frame& f) {
    auto bytes = enc_.encode(f);
    ASSERT_TRUE(bytes.ok());
    t_.send(*bytes);
  }
  // The next frame; nullopt at end of stream.
  std::optional<spdy::Frame> next() {
    while (true) {
      auto f = dec_.next();
      EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().message);
      if (!f.ok()) return std::nullopt;
      if (*f) return **f;
      std::string more = t_.recv();
      if (more.empty()) return std::nullopt;
      dec_.feed(more);
    }
  }
  void openPair(uint32_t errorStream, uint32_t dataStream, uint16_t port, const std::string& id) {
    send(spdy::SynStreamFrame{errorStream, 0, 0, 0, 0,
                              {{"streamtype", "error"}, {"port", std::to_string(port)},
                               {"requestid", id}}});
    send(spdy::DataFrame{errorStream, spdy::kFlagFin, {}});  // kubectl closes its side at once
    send(spdy::SynStreamFrame{dataStream, 0, 0, 0, 0,
                              {{"streamtype", "data"}, {"port", std::to_string(port)},
                               {"requestid", id}}});
  }

 private:
  Transport& t_;
  spdy::FrameEncoder enc_;
  spdy::FrameDecoder dec_;
};

// What arrived per stream, read until a condition holds.
struct Streams {
  std::map<uint32_t, std::string> data;
  std::set<uint32_t> replied, finished, reset;
  std::vector<uint32_t> pings;
  bool goAway = false;
  bool ended = false;

  // Reads frames until `done()` or the end of the session.
  void readUntil(SpdyClient& c, const std::function<bool()>& done) {
    while (!done()) {
      auto f = c.next();
      if (!f) {
        ended = true;
        return;
      }
      if (auto* d = std::get_if<spdy::DataFrame>(&*f)) {
        EXPECT_TRUE(replied.count(d->streamId)) << "DATA before SYN_REPLY on " << d->streamId;
        data[d->streamId] += d->data;
        if (d->flags & spdy::kFlagFin) finished.insert(d->streamId);
      } else if (auto* r = std::get_if<spdy::SynReplyFrame>(&*f)) {
        replied.insert(r->streamId);
      } else if (auto* rst = std::get_if<spdy::RstStreamFrame>(&*f)) {
        reset.insert(rst->streamId);
      } else if (auto* p = std::get_if<spdy::PingFrame>(&*f)) {
        pings.push_back(p->id);
      } else if (std::holds_alternative<spdy::GoAwayFrame>(*f)) {
        goAway = true;
      }
    }
  }
};

class PortForwardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = makeCa("pf-test-ca");
    ASSERT_TRUE(ca.ok());
    ca_ = *ca;
    auto server = issueCert(ca_, "kubelet", {}, {"localhost"}, {"127.0.0.1"}, true);
    auto client = issueCert(ca_, "apiserver", {}, {}, {}, false);
    ASSERT_TRUE(server.ok() && client.ok());
    client_ = *client;
    handler_.fn = [this](const HttpRequest& req, Responder& out) {
      {
        std::lock_guard<std::mutex> l(mu_);
        seen_ = req;
      }
      ++sessionsStarted_;
      servePortForward(req, out, [this](uint16_t port) {
        ++dials_;
        return dialLocal(port);
      });
      ++sessionsEnded_;
    };
    HttpServerOptions o;
    o.tls = {server->certPem, server->keyPem, ca_.certPem, false};
    server_ = newHttpServer(o, handler_);
    ASSERT_TRUE(server_->start().ok());
  }
  void TearDown() override {
    // Sessions whose client went away end by themselves; stopping the server first would
    // abandon their reads.
    for (int i = 0; i < 100 && sessionsEnded_ != sessionsStarted_; ++i) {
      std::this_thread::sleep_for(20ms);
    }
    server_->stop();
  }

  RestConfig restConfig() const {
    RestConfig cfg;
    cfg.server = "https://127.0.0.1:" + std::to_string(server_->port());
    cfg.caPem = ca_.certPem;
    cfg.clientCertPem = client_.certPem;
    cfg.clientKeyPem = client_.keyPem;
    cfg.timeout = 10s;
    return cfg;
  }

  // A TLS connection to the server (client certificate presented, reads time out).
  struct Tls {
    net::io_context ioc;
    ssl::context ctx{ssl::context::tls_client};
    std::unique_ptr<ssl::stream<tcp::socket>> s;
  };
  std::unique_ptr<Tls> connect() {
    auto t = std::make_unique<Tls>();
    t->ctx.set_verify_mode(ssl::verify_peer);
    t->ctx.add_certificate_authority(net::buffer(ca_.certPem));
    t->ctx.use_certificate_chain(net::buffer(client_.certPem));
    t->ctx.use_private_key(net::buffer(client_.keyPem), ssl::context::pem);
    t->s = std::make_unique<ssl::stream<tcp::socket>>(t->ioc, t->ctx);
    t->s->next_layer().connect(
        tcp::endpoint(net::ip::make_address("127.0.0.1"), server_->port()));
    timeval tv{10, 0};
    ::setsockopt(t->s->next_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    t->s->handshake(ssl::stream_base::client);
    return t;
  }

  KeyPair ca_;
  KeyPair client_;
  FnHandler handler_;
  std::unique_ptr<HttpServer> server_;
  std::atomic<int> dials_{0};
  std::atomic<int> sessionsStarted_{0};
  std::atomic<int> sessionsEnded_{0};
  std::mutex mu_;
  HttpRequest seen_;
};

// SPDY after a plain HTTP upgrade, as kubectl with KUBECTL_PORT_FORWARD_WEBSOCKETS=false.
class RawTransport : public Transport {
 public:
  RawTransport(ssl::stream<tcp::socket>& s, std::string leftover)
      : s_(s), leftover_(std::move(leftover)) {}
  void send(const std::string& bytes) override { net::write(s_, net::buffer(bytes)); }
  std::string recv() override {
    if (!leftover_.empty()) return std::exchange(leftover_, {});
    char buf[16384];
    boost::system::error_code ec;
    size_t n = s_.read_some(net::buffer(buf), ec);
    return ec ? "" : std::string(buf, n);
  }

 private:
  ssl::stream<tcp::socket>& s_;
  std::string leftover_;
};

// Sends the upgrade request; returns the response head and any bytes after it.
std::pair<std::string, std::string> upgradeSpdy(ssl::stream<tcp::socket>& s,
                                                const std::string& extraHeaders) {
  std::string req =
      "POST /portForward/ns/pod HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\n"
      "Upgrade: SPDY/3.1\r\n" +
      extraHeaders + "Content-Length: 0\r\n\r\n";
  net::write(s, net::buffer(req));
  std::string got;
  char buf[4096];
  while (got.find("\r\n\r\n") == std::string::npos) {
    boost::system::error_code ec;
    size_t n = s.read_some(net::buffer(buf), ec);
    if (ec) break;
    got.append(buf, n);
  }
  size_t end = got.find("\r\n\r\n");
  if (end == std::string::npos) return {got, ""};
  return {got.substr(0, end + 4), got.substr(end + 4)};
}

TEST_F(PortForwardTest, SpdyUpgradeRelaysTwoConcurrentConnections) {
  UpperServer pod;
  auto tls = connect();
  auto [head, rest] = upgradeSpdy(*tls->s, "X-Stream-Protocol-Version: portforward.k8s.io\r\n");
  ASSERT_EQ(head.rfind("HTTP/1.1 101", 0), 0u) << head;
  EXPECT_NE(head.find("Upgrade: SPDY/3.1"), std::string::npos) << head;
  EXPECT_NE(head.find("X-Stream-Protocol-Version: portforward.k8s.io"), std::string::npos) << head;
  RawTransport t(*tls->s, rest);
  SpdyClient c(t);
  c.openPair(1, 3, pod.port(), "0");
  c.openPair(5, 7, pod.port(), "1");
  c.send(spdy::DataFrame{3, 0, "hello "});
  c.send(spdy::DataFrame{7, 0, "other "});
  c.send(spdy::DataFrame{3, 0, "world"});
  Streams s;
  s.readUntil(c, [&] { return s.data[3] == "HELLO WORLD" && s.data[7] == "OTHER "; });
  EXPECT_EQ(s.data[3], "HELLO WORLD");
  EXPECT_EQ(s.data[7], "OTHER ");
  EXPECT_EQ(s.replied, (std::set<uint32_t>{1, 3, 5, 7}));
  EXPECT_EQ(pod.connections(), 2);
  // The client finishes sending on 3: the Pod side sees end of stream and closes, which
  // ends the data stream and the (empty) error stream of that connection only.
  c.send(spdy::DataFrame{3, spdy::kFlagFin, {}});
  s.readUntil(c, [&] { return s.finished.count(3) && s.finished.count(1); });
  EXPECT_TRUE(s.data[1].empty()) << s.data[1];
  EXPECT_FALSE(s.finished.count(7));
  c.send(spdy::DataFrame{7, 0, "still here"});
  s.readUntil(c, [&] { return s.data[7] == "OTHER STILL HERE"; });
  EXPECT_EQ(s.data[7], "OTHER STILL HERE");
  // Closing the connection ends the session.
  tls->s->next_layer().shutdown(tcp::socket::shutdown_both);
  for (int i = 0; i < 100 && sessionsEnded_ == 0; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(sessionsEnded_, 1);
}

TEST_F(PortForwardTest, SpdyDialFailureIsWrittenOnTheErrorStream) {
  auto tls = connect();
  auto [head, rest] = upgradeSpdy(*tls->s, "X-Stream-Protocol-Version: portforward.k8s.io\r\n");
  ASSERT_EQ(head.rfind("HTTP/1.1 101", 0), 0u) << head;
  RawTransport t(*tls->s, rest);
  SpdyClient c(t);
  uint16_t port = closedPort();
  c.openPair(1, 3, port, "0");
  Streams s;
  s.readUntil(c, [&] { return s.finished.count(1) && s.finished.count(3); });
  EXPECT_EQ(s.data[1], "dial port " + std::to_string(port) + ": Connection refused");
  EXPECT_TRUE(s.data[3].empty());
}

TEST_F(PortForwardTest, SpdyClientResetEndsTheErrorStream) {
  // kubectl resets the data stream when its local connection ends, then waits for the end
  // of the error stream.
  UpperServer pod;
  auto tls = connect();
  auto [head, rest] = upgradeSpdy(*tls->s, "");
  ASSERT_EQ(head.rfind("HTTP/1.1 101", 0), 0u) << head;
  RawTransport t(*tls->s, rest);
  SpdyClient c(t);
  c.openPair(1, 3, pod.port(), "7");
  c.send(spdy::DataFrame{3, 0, "x"});
  Streams s;
  s.readUntil(c, [&] { return s.data[3] == "X"; });
  c.send(spdy::RstStreamFrame{3, static_cast<uint32_t>(spdy::RstStatus::Cancel)});
  s.readUntil(c, [&] { return s.finished.count(1) > 0; });
  EXPECT_TRUE(s.finished.count(1));
  EXPECT_FALSE(s.finished.count(3));  // nothing more is sent on a reset stream
}

TEST_F(PortForwardTest, SpdyPingsAreEchoedAndBadStreamsRefused) {
  auto tls = connect();
  auto [head, rest] = upgradeSpdy(*tls->s, "X-Stream-Protocol-Version: portforward.k8s.io\r\n");
  ASSERT_EQ(head.rfind("HTTP/1.1 101", 0), 0u) << head;
  RawTransport t(*tls->s, rest);
  SpdyClient c(t);
  c.send(spdy::SettingsFrame{0, {{0, spdy::kSettingInitialWindowSize, 1 << 20}}});
  c.send(spdy::PingFrame{1});
  c.send(spdy::SynStreamFrame{1, 0, 0, 0, 0, {{"streamtype", "data"}}});  // no port
  c.send(spdy::SynStreamFrame{3, 0, 0, 0, 0, {{"streamtype", "bogus"}, {"port", "80"}}});
  c.send(spdy::SynStreamFrame{5, 0, 0, 0, 0, {{"streamtype", "data"}, {"port", "0"}}});
  c.send(spdy::PingFrame{3});
  Streams s;
  s.readUntil(c, [&] { return s.pings.size() == 2 && s.reset.size() == 3; });
  EXPECT_EQ(s.pings, (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(s.reset, (std::set<uint32_t>{1, 3, 5}));
  EXPECT_TRUE(s.replied.empty());
  EXPECT_EQ(dials_, 0);
}

TEST_F(PortForwardTest, MalformedSpdyEndsTheSessionWithGoAway) {
  auto tls = connect();
  auto [head, rest] = upgradeSpdy(*tls->s, "");
  ASSERT_EQ(head.rfind("HTTP/1.1 101", 0), 0u) << head;
  RawTransport t(*tls->s, rest);
  SpdyClient c(t);
  // A control frame of SPDY version 2.
  t.send(std::string("\x80\x02\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01", 12));
  Streams s;
  s.readUntil(c, [&] { return s.goAway; });
  EXPECT_TRUE(s.goAway);
  s.readUntil(c, [] { return false; });
  EXPECT_TRUE(s.ended);
}

TEST_F(PortForwardTest, SpdyUpgradeWithAnotherProtocolVersionIsRefused) {
  auto tls = connect();
  auto [head, rest] = upgradeSpdy(*tls->s, "X-Stream-Protocol-Version: channel.k8s.io\r\n");
  EXPECT_EQ(head.rfind("HTTP/1.1 400", 0), 0u) << head;
}

// SPDY inside binary WebSocket messages, as kubectl 1.31+ sends by default.
class WsTransport : public Transport {
 public:
  explicit WsTransport(websocket::stream<ssl::stream<tcp::socket>&>& ws) : ws_(ws) {}
  void send(const std::string& bytes) override {
    ws_.binary(true);
    ws_.write(net::buffer(bytes));
  }
  std::string recv() override {
    boost::beast::flat_buffer b;
    boost::system::error_code ec;
    ws_.read(b, ec);
    if (ec) return "";
    return boost::beast::buffers_to_string(b.data());
  }

 private:
  websocket::stream<ssl::stream<tcp::socket>&>& ws_;
};

TEST_F(PortForwardTest, SpdyTunnelledInWebSocketRelays) {
  UpperServer pod;
  auto tls = connect();
  websocket::stream<ssl::stream<tcp::socket>&> ws(*tls->s);
  ws.set_option(websocket::stream_base::decorator([](websocket::request_type& r) {
    r.set(boost::beast::http::field::sec_websocket_protocol, "SPDY/3.1+portforward.k8s.io");
  }));
  websocket::response_type res;
  ws.handshake(res, "localhost", "/portForward/ns/pod");
  EXPECT_EQ(res[boost::beast::http::field::sec_websocket_protocol], "SPDY/3.1+portforward.k8s.io");
  WsTransport t(ws);
  SpdyClient c(t);
  c.openPair(1, 3, pod.port(), "0");
  c.openPair(5, 7, pod.port(), "1");
  c.send(spdy::DataFrame{3, 0, "abc"});
  c.send(spdy::DataFrame{7, 0, "def"});
  Streams s;
  s.readUntil(c, [&] { return s.data[3] == "ABC" && s.data[7] == "DEF"; });
  EXPECT_EQ(s.data[3], "ABC");
  EXPECT_EQ(s.data[7], "DEF");
  // A refused dial reaches the error stream here too.
  uint16_t closed = closedPort();
  c.openPair(9, 11, closed, "2");
  s.readUntil(c, [&] { return s.finished.count(9) > 0; });
  EXPECT_NE(s.data[9].find("Connection refused"), std::string::npos) << s.data[9];
}

TEST_F(PortForwardTest, ChannelProtocolThroughOpenPortForward) {
  UpperServer pod;
  auto stream = openPortForward(restConfig(), "web", "p1", pod.port());
  ASSERT_TRUE(stream.ok()) << stream.error().message;
  {
    std::lock_guard<std::mutex> l(mu_);
    EXPECT_EQ(seen_.path, "/api/v1/namespaces/web/pods/p1/portforward");
    EXPECT_EQ(seen_.queryParam("ports"), std::to_string(pod.port()));
    EXPECT_EQ(seen_.header("sec-websocket-protocol"), "v4.channel.k8s.io");
    EXPECT_EQ(seen_.user, "apiserver");
  }
  ASSERT_TRUE((*stream)->write("ping").ok());
  std::string got;
  char buf[64];
  while (got.size() < 4) {
    auto n = (*stream)->read(buf);
    ASSERT_TRUE(n.ok()) << n.error().message;
    ASSERT_GT(*n, 0u);
    got.append(buf, *n);
  }
  EXPECT_EQ(got, "PING");
  ASSERT_TRUE((*stream)->write("again").ok());
  got.clear();
  while (got.size() < 5) {
    auto n = (*stream)->read(buf);
    ASSERT_TRUE(n.ok() && *n > 0);
    got.append(buf, *n);
  }
  EXPECT_EQ(got, "AGAIN");
  (*stream)->close();
  for (int i = 0; i < 100 && sessionsEnded_ == 0; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(sessionsEnded_, 1);
}

TEST_F(PortForwardTest, ChannelProtocolDialFailureIsAReadError) {
  uint16_t port = closedPort();
  auto stream = openPortForward(restConfig(), "web", "p1", port);
  ASSERT_TRUE(stream.ok()) << stream.error().message;
  char buf[64];
  auto n = (*stream)->read(buf);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().message, "dial port " + std::to_string(port) + ": Connection refused");
}

TEST_F(PortForwardTest, ChannelProtocolWithSeveralPorts) {
  UpperServer a, b;
  auto tls = connect();
  websocket::stream<ssl::stream<tcp::socket>&> ws(*tls->s);
  ws.set_option(websocket::stream_base::decorator([](websocket::request_type& r) {
    r.set(boost::beast::http::field::sec_websocket_protocol, "v4.channel.k8s.io");
  }));
  websocket::response_type res;
  ws.handshake(res, "localhost",
               "/portForward/ns/pod?port=" + std::to_string(a.port()) + "&port=" +
                   std::to_string(b.port()));
  ws.binary(true);
  // First, each channel's port, little-endian.
  std::map<int, std::string> first;
  for (int i = 0; i < 4; ++i) {
    boost::beast::flat_buffer buf;
    ws.read(buf);
    std::string m = boost::beast::buffers_to_string(buf.data());
    ASSERT_EQ(m.size(), 3u);
    first[m[0]] = m.substr(1);
  }
  auto le = [](uint16_t p) { return std::string{static_cast<char>(p & 0xff), static_cast<char>(p >> 8)}; };
  EXPECT_EQ(first[0], le(a.port()));
  EXPECT_EQ(first[1], le(a.port()));
  EXPECT_EQ(first[2], le(b.port()));
  EXPECT_EQ(first[3], le(b.port()));
  ws.write(net::buffer(std::string("\x02") + "to b"));
  ws.write(net::buffer(std::string("\x00", 1) + "to a"));
  std::map<int, std::string> got;
  while (got[0] != "TO A" || got[2] != "TO B") {
    boost::beast::flat_buffer buf;
    ws.read(buf);
    std::string m = boost::beast::buffers_to_string(buf.data());
    ASSERT_FALSE(m.empty());
    got[m[0]] += m.substr(1);
  }
  EXPECT_EQ(got[1], "");
  EXPECT_EQ(got[3], "");
}

TEST(PortForwardRequestTest, RequestsThatAreNotAPortForwardUpgradeGet400) {
  auto neverDial = [](uint16_t) -> Result<std::unique_ptr<ByteStream>> {
    ADD_FAILURE() << "dialed";
    return makeError(Code::Internal, "no");
  };
  {
    testing::FakeResponder out;
    HttpRequest req;
    req.method = "POST";
    servePortForward(req, out, neverDial);
    EXPECT_EQ(out.status(), 400);
    EXPECT_NE(out.body().find("Upgrade: SPDY/3.1"), std::string::npos) << out.body();
  }
  {
    testing::FakeResponder out;
    HttpRequest req;
    req.method = "GET";
    req.headers["upgrade"] = "websocket";
    req.headers["sec-websocket-protocol"] = "v4.channel.k8s.io";
    servePortForward(req, out, neverDial);  // no port
    EXPECT_EQ(out.status(), 400);
    EXPECT_NE(out.body().find("\"port\" is required"), std::string::npos) << out.body();
  }
  {
    testing::FakeResponder out;
    HttpRequest req;
    req.method = "GET";
    req.headers["upgrade"] = "websocket";
    req.headers["sec-websocket-protocol"] = "v4.channel.k8s.io";
    req.query = {{"ports", "80,x"}};
    servePortForward(req, out, neverDial);
    EXPECT_EQ(out.status(), 400);
    EXPECT_NE(out.body().find("\"x\""), std::string::npos) << out.body();
  }
  {
    testing::FakeResponder out;
    HttpRequest req;
    req.method = "GET";
    req.headers["upgrade"] = "websocket";
    req.headers["sec-websocket-protocol"] = "v5.channel.k8s.io";
    req.query = {{"ports", "80"}};
    servePortForward(req, out, neverDial);
    EXPECT_EQ(out.status(), 400);
    EXPECT_NE(out.body().find("v5.channel.k8s.io"), std::string::npos) << out.body();
  }
}

TEST(PortForwardRequestTest, OpenPortForwardRefusesPortZero) {
  RestConfig cfg;
  cfg.server = "https://127.0.0.1:1";
  auto s = openPortForward(cfg, "ns", "pod", 0);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Code::Invalid);
}

}  // namespace
}  // namespace strait::kube
