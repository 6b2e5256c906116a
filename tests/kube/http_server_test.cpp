// Drives the HTTPS server with real clients: curl (as users' tools would) and a small raw
// OpenSSL client for cases curl cannot express (malformed requests, hanging up mid-stream).

#include "kube/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "kube/pki.h"

namespace strait::kube {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Waits until `pred` holds or `timeout` passes; returns the final value of pred.
bool waitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 10s) {
  auto deadline = Clock::now() + timeout;
  while (!pred()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

class FnHandler : public Handler {
 public:
  std::function<void(const HttpRequest&, Responder&)> fn;
  std::atomic<int> calls{0};
  void handle(const HttpRequest& req, Responder& out) override {
    ++calls;
    fn(req, out);
  }
};

struct CurlResult {
  int exitCode = -1;
  std::string output;
};

CurlResult runCommand(const std::string& cmd) {
  CurlResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  int status = ::pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const std::filesystem::path& p, const std::string& data) {
  std::ofstream(p, std::ios::binary) << data;
}

// A minimal blocking TLS client on OpenSSL with read timeouts.
class RawTlsClient {
 public:
  ~RawTlsClient() { close(); }

  bool connect(uint16_t port, const KeyPair& ca, const KeyPair& client) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (!ctx_) return false;
    BIO* b = BIO_new_mem_buf(ca.certPem.data(), static_cast<int>(ca.certPem.size()));
    X509* caCert = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
    BIO_free(b);
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_), caCert);
    X509_free(caCert);
    b = BIO_new_mem_buf(client.certPem.data(), static_cast<int>(client.certPem.size()));
    X509* cert = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
    BIO_free(b);
    b = BIO_new_mem_buf(client.keyPem.data(), static_cast<int>(client.keyPem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(b, nullptr, nullptr, nullptr);
    BIO_free(b);
    SSL_CTX_use_certificate(ctx_, cert);
    SSL_CTX_use_PrivateKey(ctx_, key);
    X509_free(cert);
    EVP_PKEY_free(key);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);

    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return false;
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    SSL_set1_host(ssl_, "127.0.0.1");
    return SSL_connect(ssl_) == 1;
  }

  bool send(std::string_view data) {
    return SSL_write(ssl_, data.data(), static_cast<int>(data.size())) ==
           static_cast<int>(data.size());
  }

  // Reads until `needle` is in received() or the timeout passes or the peer closes.
  bool readUntil(std::string_view needle, std::chrono::milliseconds timeout = 10s) {
    auto deadline = Clock::now() + timeout;
    while (received_.find(needle) == std::string::npos) {
      if (Clock::now() > deadline || closed_) return false;
      readSome(50);
    }
    return true;
  }

  // True once the server closed the connection (within timeout).
  bool waitClosed(std::chrono::milliseconds timeout = 10s) {
    auto deadline = Clock::now() + timeout;
    while (!closed_ && Clock::now() < deadline) readSome(50);
    return closed_;
  }

  void close() {
    if (ssl_) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
    if (ctx_) SSL_CTX_free(ctx_);
    ssl_ = nullptr;
    fd_ = -1;
    ctx_ = nullptr;
  }

  const std::string& received() const { return received_; }

 private:
  void readSome(int pollMs) {
    if (SSL_pending(ssl_) == 0) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, pollMs) <= 0) return;
    }
    char buf[4096];
    int n = SSL_read(ssl_, buf, sizeof(buf));
    if (n > 0) {
      received_.append(buf, static_cast<size_t>(n));
    } else {
      closed_ = true;
    }
  }

  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool closed_ = false;
  std::string received_;
};

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = makeCa("test-ca");
    ASSERT_TRUE(ca.ok()) << ca.error().message;
    ca_ = *ca;
    auto server = issueCert(ca_, "apiserver", {}, {"localhost"}, {"127.0.0.1", "::1"}, true);
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = *server;
    auto client = issueCert(ca_, "alice", {"devs", "admins"}, {}, {}, false);
    ASSERT_TRUE(client.ok());
    client_ = *client;
    auto otherCa = makeCa("other-ca");
    ASSERT_TRUE(otherCa.ok());
    auto stranger = issueCert(*otherCa, "mallory", {"system:masters"}, {}, {}, false);
    ASSERT_TRUE(stranger.ok());
    stranger_ = *stranger;

    std::string tmpl = (std::filesystem::temp_directory_path() / "http_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    writeFile(dir_ / "ca.pem", ca_.certPem);
    writeFile(dir_ / "client.pem", client_.certPem);
    writeFile(dir_ / "client-key.pem", client_.keyPem);
    writeFile(dir_ / "stranger.pem", stranger_.certPem);
    writeFile(dir_ / "stranger-key.pem", stranger_.keyPem);
  }

  void TearDown() override {
    if (http_) http_->stop();
    std::filesystem::remove_all(dir_);
  }

  void startServer(size_t maxBody = 3 * 1024 * 1024, bool requireClientCert = true) {
    HttpServerOptions opts;
    opts.tls.certPem = server_.certPem;
    opts.tls.keyPem = server_.keyPem;
    opts.tls.clientCaPem = requireClientCert ? ca_.certPem : "";
    opts.tls.requireClientCert = requireClientCert;
    opts.maxBodyBytes = maxBody;
    http_ = newHttpServer(opts, handler_);
    auto st = http_->start();
    ASSERT_TRUE(st.ok()) << st.error().message;
    ASSERT_NE(http_->port(), 0);
  }

  std::string url(const std::string& pathAndQuery) const {
    return "'https://127.0.0.1:" + std::to_string(http_->port()) + pathAndQuery + "'";
  }

  // curl with the CA and (by default) alice's client certificate.
  std::string curl(const std::string& certName = "client") const {
    std::string cmd = "curl -sS --max-time 20 --cacert " + (dir_ / "ca.pem").string();
    if (!certName.empty()) {
      cmd += " --cert " + (dir_ / (certName + ".pem")).string() + " --key " +
             (dir_ / (certName + "-key.pem")).string();
    }
    return cmd;
  }

  KeyPair ca_, server_, client_, stranger_;
  std::filesystem::path dir_;
  FnHandler handler_;  // outlives http_
  std::unique_ptr<HttpServer> http_;
};

TEST_F(HttpServerTest, GetDecodesPathQueryHeadersAndIdentity) {
  handler_.fn = [](const HttpRequest& req, Responder& out) {
    nlohmann::json j;
    j["method"] = req.method;
    j["path"] = req.path;
    j["target"] = req.target;
    j["query"] = req.query;
    j["selector"] = req.queryParam("labelSelector");
    j["commands"] = req.queryAll("command");
    j["hasEmpty"] = req.hasQuery("empty");
    j["hasFlag"] = req.hasQuery("flag");
    j["hasMissing"] = req.hasQuery("missing");
    j["xTest"] = req.header("x-test");
    j["user"] = req.user;
    j["groups"] = req.groups;
    j["remote"] = req.remoteAddr;
    out.respond({200, {{"Content-Type", "application/json"}}, j.dump()});
  };
  startServer();
  auto r = runCommand(curl() +
                      " -H 'X-Test: Yes' -H 'X-Test: Again' -w '\\n%{http_code} %{http_version}' " +
                      url("/api/v1/namespaces/my%20ns/pods?labelSelector=app%3Dweb%2Ctier+in"
                          "&command=a&command=b+c&empty=&flag"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  size_t nl = r.output.rfind('\n');
  ASSERT_NE(nl, std::string::npos);
  EXPECT_EQ(r.output.substr(nl + 1), "200 1.1");  // curl offered h2; the server chose 1.1
  auto j = nlohmann::json::parse(r.output.substr(0, nl));
  EXPECT_EQ(j["method"], "GET");
  EXPECT_EQ(j["path"], "/api/v1/namespaces/my ns/pods");
  EXPECT_EQ(j["target"].get<std::string>().substr(0, 27), "/api/v1/namespaces/my%20ns/");
  EXPECT_EQ(j["selector"], "app=web,tier in");
  EXPECT_EQ(j["commands"], (std::vector<std::string>{"a", "b c"}));
  EXPECT_EQ(j["query"].size(), 5u);
  EXPECT_EQ(j["query"][3], (std::vector<std::string>{"empty", ""}));
  EXPECT_EQ(j["hasEmpty"], true);
  EXPECT_EQ(j["hasFlag"], true);
  EXPECT_EQ(j["hasMissing"], false);
  EXPECT_EQ(j["xTest"], "Yes, Again");
  EXPECT_EQ(j["user"], "alice");
  EXPECT_EQ(j["groups"], (std::vector<std::string>{"devs", "admins"}));
  EXPECT_EQ(j["remote"].get<std::string>().rfind("127.0.0.1:", 0), 0u);
}

TEST_F(HttpServerTest, MalformedPercentEscapeIs400) {
  handler_.fn = [](const HttpRequest&, Responder& out) { out.respond({200, {}, "ok"}); };
  startServer();
  auto r = runCommand(curl() + " -w '\\n%{http_code}' " + url("/api/v1/pods?x=%zz"));
  EXPECT_EQ(r.output.substr(r.output.rfind('\n') + 1), "400");
  EXPECT_EQ(handler_.calls.load(), 0);
}

TEST_F(HttpServerTest, PostBodyIsEchoed) {
  handler_.fn = [](const HttpRequest& req, Responder& out) {
    out.respond({201, {{"Content-Type", "application/octet-stream"}}, req.method + ":" + req.body});
  };
  startServer();
  std::string body;
  for (int i = 0; i < 100000; ++i) body += static_cast<char>('a' + i % 26);
  body += std::string("\0\x01\xff", 3);
  writeFile(dir_ / "body.bin", body);
  auto r = runCommand(curl() + " -o " + (dir_ / "out.bin").string() +
                      " -w '%{http_code}' -X POST --data-binary @" + (dir_ / "body.bin").string() +
                      " " + url("/echo"));
  ASSERT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.output, "201");
  EXPECT_EQ(readFile(dir_ / "out.bin"), "POST:" + body);
}

TEST_F(HttpServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
  handler_.fn = [](const HttpRequest& req, Responder& out) {
    out.respond({200, {{"Content-Type", "text/plain"}}, req.path + " " + req.remoteAddr + "\n"});
  };
  startServer();
  auto r = runCommand(curl() + " -w '%{num_connects}\\n' " + url("/one") + " " + url("/two"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  // Lines: "/one <addr>", "1", "/two <addr>", "0"
  std::vector<std::string> lines;
  size_t pos = 0;
  for (size_t nl; (nl = r.output.find('\n', pos)) != std::string::npos; pos = nl + 1) {
    lines.push_back(r.output.substr(pos, nl - pos));
  }
  ASSERT_EQ(lines.size(), 4u) << r.output;
  EXPECT_EQ(lines[0].substr(0, 5), "/one ");
  EXPECT_EQ(lines[2].substr(0, 5), "/two ");
  EXPECT_EQ(lines[0].substr(5), lines[2].substr(5));  // same client address and port
  EXPECT_EQ(lines[1], "1");
  EXPECT_EQ(lines[3], "0");  // no new connection for the second request
}

TEST_F(HttpServerTest, ChunkedStreamArrivesIncrementally) {
  std::mutex mu;
  std::condition_variable cv;
  int linesSeen = 0;  // guarded by mu
  std::atomic<bool> handlerWaitedInVain{false};
  handler_.fn = [&](const HttpRequest&, Responder& out) {
    ASSERT_TRUE(out.startStream(200, {{"Content-Type", "application/json"}}));
    for (int i = 1; i <= 3; ++i) {
      std::this_thread::sleep_for(50ms);
      ASSERT_TRUE(out.writeChunk("{\"chunk\":" + std::to_string(i) + "}\n"));
      EXPECT_TRUE(out.writeChunk(""));  // empty writes are no-ops, not the end of the stream
      // The next chunk is written only after the client saw this one: without incremental
      // delivery the client would see nothing and this wait would time out.
      std::unique_lock<std::mutex> lock(mu);
      if (!cv.wait_for(lock, 10s, [&] { return linesSeen >= i; })) handlerWaitedInVain = true;
    }
  };
  startServer();
  FILE* p = ::popen((curl() + " -N -i " + url("/watch")).c_str(), "r");
  ASSERT_NE(p, nullptr);
  char line[1024];
  bool chunkedHeader = false;
  int chunks = 0;
  while (std::fgets(line, sizeof(line), p)) {
    std::string s(line);
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (s.rfind("transfer-encoding: chunked", 0) == 0) chunkedHeader = true;
    if (s.rfind("{\"chunk\":", 0) == 0) {
      ++chunks;
      EXPECT_EQ(s, "{\"chunk\":" + std::to_string(chunks) + "}\n");
      std::lock_guard<std::mutex> lock(mu);
      linesSeen = chunks;
      cv.notify_all();
    }
  }
  EXPECT_EQ(::pclose(p), 0);  // the stream ended cleanly (final zero chunk)
  EXPECT_EQ(chunks, 3);
  EXPECT_TRUE(chunkedHeader);
  EXPECT_FALSE(handlerWaitedInVain.load());
}

TEST_F(HttpServerTest, ClientWithoutCertificateIsRejected) {
  handler_.fn = [](const HttpRequest&, Responder& out) { out.respond({200, {}, "secret"}); };
  startServer();
  auto r = runCommand(curl("") + " " + url("/api") + " 2>/dev/null");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_EQ(r.output.find("secret"), std::string::npos);
  EXPECT_EQ(handler_.calls.load(), 0);
}

TEST_F(HttpServerTest, ClientCertificateFromAnotherCaIsRejected) {
  handler_.fn = [](const HttpRequest&, Responder& out) { out.respond({200, {}, "secret"}); };
  startServer();
  auto r = runCommand(curl("stranger") + " " + url("/api") + " 2>/dev/null");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_EQ(r.output.find("secret"), std::string::npos);
  EXPECT_EQ(handler_.calls.load(), 0);
}

TEST_F(HttpServerTest, WithoutClientAuthUserIsEmpty) {
  handler_.fn = [](const HttpRequest& req, Responder& out) {
    out.respond({200, {}, "user=" + req.user});
  };
  startServer(1024, /*requireClientCert=*/false);
  auto r = runCommand(curl("") + " " + url("/api"));
  ASSERT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.output, "user=");
}

void expectTooLarge(const CurlResult& r) {
  size_t nl = r.output.rfind('\n');
  ASSERT_NE(nl, std::string::npos) << r.output;
  EXPECT_EQ(r.output.substr(nl + 1), "413");
  auto j = nlohmann::json::parse(r.output.substr(0, nl), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  EXPECT_EQ(j["kind"], "Status");
  EXPECT_EQ(j["apiVersion"], "v1");
  EXPECT_EQ(j["status"], "Failure");
  EXPECT_EQ(j["reason"], "RequestEntityTooLarge");
  EXPECT_EQ(j["code"], 413);
  EXPECT_TRUE(j["metadata"].is_object());
  EXPECT_FALSE(j["message"].get<std::string>().empty());
}

TEST_F(HttpServerTest, BodyOverLimitGets413Status) {
  handler_.fn = [](const HttpRequest&, Responder& out) { out.respond({200, {}, "accepted"}); };
  startServer(/*maxBody=*/1024);
  writeFile(dir_ / "big.json", std::string(200 * 1024, 'x'));
  std::string post =
      curl() + " -w '\\n%{http_code}' -X POST --data-binary @" + (dir_ / "big.json").string() + " ";
  // Content-Length over the limit, with and without `Expect: 100-continue`.
  expectTooLarge(runCommand(post + url("/api/v1/configmaps")));
  expectTooLarge(runCommand(post + "-H 'Expect:' " + url("/api/v1/configmaps")));
  // Chunked upload that grows past the limit.
  expectTooLarge(runCommand(post + "-H 'Transfer-Encoding: chunked' " + url("/api/v1/configmaps")));
  EXPECT_EQ(handler_.calls.load(), 0);

  // A body at the limit is fine.
  writeFile(dir_ / "ok.json", std::string(1024, 'x'));
  auto ok = runCommand(curl() + " -X POST --data-binary @" + (dir_ / "ok.json").string() + " " +
                       url("/api/v1/configmaps"));
  EXPECT_EQ(ok.output, "accepted");
}

TEST_F(HttpServerTest, MalformedHttpGets400AndClose) {
  handler_.fn = [](const HttpRequest&, Responder& out) { out.respond({200, {}, "ok"}); };
  startServer();
  RawTlsClient c;
  ASSERT_TRUE(c.connect(http_->port(), ca_, client_));
  ASSERT_TRUE(c.send("GET /api HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n"));
  EXPECT_TRUE(c.waitClosed());
  EXPECT_EQ(c.received().rfind("HTTP/1.1 400", 0), 0u) << c.received();
  EXPECT_EQ(handler_.calls.load(), 0);
}

TEST_F(HttpServerTest, HandlerThatDoesNotAnswerGives500) {
  handler_.fn = [](const HttpRequest&, Responder&) {};
  startServer();
  auto r = runCommand(curl() + " -w '\\n%{http_code}' " + url("/api"));
  EXPECT_EQ(r.output.substr(r.output.rfind('\n') + 1), "500");
}

TEST_F(HttpServerTest, ClientHangUpIsSeenByClientGone) {
  std::atomic<bool> sawGone{false};
  handler_.fn = [&](const HttpRequest&, Responder& out) {
    out.startStream(200, {{"Content-Type", "application/json"}});
    out.writeChunk("first\n");
    if (waitFor([&] { return out.clientGone(); }, 10s)) sawGone = true;
  };
  startServer();
  RawTlsClient c;
  ASSERT_TRUE(c.connect(http_->port(), ca_, client_));
  ASSERT_TRUE(c.send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(c.readUntil("first\n"));
  c.close();
  EXPECT_TRUE(waitFor([&] { return sawGone.load(); }));
}

TEST_F(HttpServerTest, ClientHangUpMakesWriteChunkFail) {
  std::atomic<bool> sawWriteFail{false};
  handler_.fn = [&](const HttpRequest&, Responder& out) {
    out.startStream(200, {});
    auto deadline = Clock::now() + 10s;
    while (Clock::now() < deadline) {
      if (!out.writeChunk("tick\n")) {
        sawWriteFail = true;
        return;
      }
      std::this_thread::sleep_for(10ms);
    }
  };
  startServer();
  RawTlsClient c;
  ASSERT_TRUE(c.connect(http_->port(), ca_, client_));
  ASSERT_TRUE(c.send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(c.readUntil("tick\n"));
  c.close();
  EXPECT_TRUE(waitFor([&] { return sawWriteFail.load(); }));
}

TEST_F(HttpServerTest, StopWhileStreamingReturnsPromptly) {
  std::atomic<bool> handlerDone{false};
  std::atomic<bool> sawEnd{false};
  handler_.fn = [&](const HttpRequest&, Responder& out) {
    out.startStream(200, {});
    // A watch loop: runs until the client or the server goes away (or 30s, as a backstop).
    auto deadline = Clock::now() + 30s;
    while (Clock::now() < deadline) {
      if (!out.writeChunk("event\n") || out.clientGone()) {
        sawEnd = true;
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
    handlerDone = true;
  };
  startServer();
  RawTlsClient c;
  ASSERT_TRUE(c.connect(http_->port(), ca_, client_));
  ASSERT_TRUE(c.send("GET /watch HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(c.readUntil("event\n"));

  // A second, idle keep-alive connection must not hold stop() up either.
  RawTlsClient idle;
  ASSERT_TRUE(idle.connect(http_->port(), ca_, client_));

  auto started = Clock::now();
  http_->stop();
  auto took = Clock::now() - started;
  EXPECT_LT(took, 2s);
  EXPECT_TRUE(handlerDone.load());
  EXPECT_TRUE(sawEnd.load());
  EXPECT_TRUE(c.waitClosed());
  http_->stop();  // idempotent

  // The port is closed afterwards.
  RawTlsClient after;
  EXPECT_FALSE(after.connect(http_->port(), ca_, client_));
}

TEST_F(HttpServerTest, StartFailsOnBadTlsMaterialAndTakenPort) {
  HttpServerOptions bad;
  bad.tls.certPem = "not a cert";
  bad.tls.keyPem = server_.keyPem;
  auto s1 = newHttpServer(bad, handler_);
  auto st = s1->start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("certPem"), std::string::npos);

  startServer();
  HttpServerOptions taken;
  taken.tls.certPem = server_.certPem;
  taken.tls.keyPem = server_.keyPem;
  taken.listenPort = http_->port();
  auto s2 = newHttpServer(taken, handler_);
  EXPECT_FALSE(s2->start().ok());
}

}  // namespace
}  // namespace strait::kube
