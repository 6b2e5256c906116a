// kube::openExec against the HTTPS server of kube/http_server.h playing the API server's
// pods/exec: the request it makes (path, query, credentials, offered subprotocols), v5 and
// the v4 fallback, refusals as Status errors, and full-duplex WebSockets on both ends (a
// reply written while the other side is blocked reading).
#include "kube/exec_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

#include "kube/http_server.h"
#include "kube/pki.h"

namespace strait::kube {
namespace {

using namespace std::chrono_literals;

class FnHandler : public Handler {
 public:
  std::function<void(const HttpRequest&, Responder&)> fn;
  void handle(const HttpRequest& req, Responder& out) override { fn(req, out); }
};

class ExecClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = makeCa("exec-test-ca");
    ASSERT_TRUE(ca.ok());
    ca_ = *ca;
    auto server = issueCert(ca_, "apiserver", {}, {"localhost"}, {"127.0.0.1"}, true);
    auto client = issueCert(ca_, "alice", {"devs"}, {}, {}, false);
    ASSERT_TRUE(server.ok() && client.ok());
    HttpServerOptions o;
    o.tls = {server->certPem, server->keyPem, ca_.certPem, false};
    server_ = newHttpServer(o, handler_);
    ASSERT_TRUE(server_->start().ok());
    cfg_.server = "https://127.0.0.1:" + std::to_string(server_->port());
    cfg_.caPem = ca_.certPem;
    cfg_.clientCertPem = client->certPem;
    cfg_.clientKeyPem = client->keyPem;
    cfg_.timeout = 10s;
  }
  void TearDown() override { server_->stop(); }

  KeyPair ca_;
  FnHandler handler_;
  std::unique_ptr<HttpServer> server_;
  RestConfig cfg_;
};

ExecRequest catRequest() {
  ExecRequest r;
  r.ns = "web";
  r.pod = "p 1";
  r.container = "app";
  r.command = {"sh", "-c", "cat; exit 2"};
  r.stdin = true;
  return r;
}

TEST_F(ExecClientTest, V5FullDuplexEchoWithCredentialsAndQuery) {
  std::mutex mu;
  HttpRequest seen;
  handler_.fn = [&](const HttpRequest& req, Responder& out) {
    {
      std::lock_guard<std::mutex> lock(mu);
      seen = req;
    }
    auto ws = out.acceptWebSocket("v5.channel.k8s.io");
    ASSERT_TRUE(ws);
    // Echo stdin to stdout as it comes, until the client closes stdin; then the status.
    std::string msg;
    while (ws->read(msg)) {
      if (msg.size() >= 2 && msg[0] == '\xff' && msg[1] == '\0') break;
      if (!msg.empty() && msg[0] == '\0') ws->write("\x01" + msg.substr(1));
    }
    ws->write(std::string("\x03") + R"({"status":"Failure","reason":"NonZeroExitCode"})");
    ws->close();
  };
  auto ws = openExec(cfg_, catRequest());
  ASSERT_TRUE(ws.ok()) << ws.error().message;
  EXPECT_EQ((*ws)->subprotocol(), "v5.channel.k8s.io");

  // A reader blocked on its own thread while this thread writes: full duplex.
  std::promise<std::vector<std::string>> got;
  std::thread reader([&] {
    std::vector<std::string> msgs;
    std::string m;
    while ((*ws)->read(m)) msgs.push_back(m);
    got.set_value(msgs);
  });
  ASSERT_TRUE((*ws)->write(std::string("\0hello ", 7)));
  ASSERT_TRUE((*ws)->write(std::string("\0world", 6)));
  ASSERT_TRUE((*ws)->write(std::string("\xff\x00", 2)));
  auto fut = got.get_future();
  ASSERT_EQ(fut.wait_for(20s), std::future_status::ready);
  reader.join();
  std::vector<std::string> msgs = fut.get();
  ASSERT_EQ(msgs.size(), 3u);
  EXPECT_EQ(msgs[0], "\x01hello ");
  EXPECT_EQ(msgs[1], "\x01world");
  EXPECT_EQ(msgs[2][0], '\x03');
  EXPECT_NE(msgs[2].find("NonZeroExitCode"), std::string::npos);

  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen.path, "/api/v1/namespaces/web/pods/p 1/exec");
  EXPECT_EQ(seen.queryAll("command"), (std::vector<std::string>{"sh", "-c", "cat; exit 2"}));
  EXPECT_EQ(seen.queryParam("container"), "app");
  EXPECT_EQ(seen.queryParam("stdin"), "true");
  EXPECT_EQ(seen.queryParam("tty"), "");
  EXPECT_EQ(seen.user, "alice");
  EXPECT_NE(seen.header("sec-websocket-protocol").find("v5.channel.k8s.io"), std::string::npos);
  EXPECT_NE(seen.header("sec-websocket-protocol").find("v4.channel.k8s.io"), std::string::npos);
}

TEST_F(ExecClientTest, FallsBackToV4AndSendsTheBearerToken) {
  std::atomic<bool> sawToken{false};
  handler_.fn = [&](const HttpRequest& req, Responder& out) {
    sawToken = req.header("authorization") == "Bearer s3cret";
    auto ws = out.acceptWebSocket("v4.channel.k8s.io");
    ASSERT_TRUE(ws);
    ws->write("\x01out");
    ws->write(std::string("\x03") + R"({"status":"Success"})");
    ws->close();
  };
  cfg_.bearerToken = "s3cret";
  auto ws = openExec(cfg_, catRequest());
  ASSERT_TRUE(ws.ok()) << ws.error().message;
  EXPECT_EQ((*ws)->subprotocol(), "v4.channel.k8s.io");
  std::string m;
  ASSERT_TRUE((*ws)->read(m));
  EXPECT_EQ(m, "\x01out");
  ASSERT_TRUE((*ws)->read(m));
  EXPECT_EQ(m[0], '\x03');
  EXPECT_FALSE((*ws)->read(m));
  EXPECT_TRUE(sawToken);
}

TEST_F(ExecClientTest, RefusalIsTheServersStatus) {
  handler_.fn = [&](const HttpRequest&, Responder& out) {
    HttpResponse r;
    r.status = 404;
    r.headers["Content-Type"] = "application/json";
    r.body = R"({"kind":"Status","apiVersion":"v1","status":"Failure",)"
             R"("message":"pods \"p 1\" not found","reason":"NotFound","code":404})";
    out.respond(std::move(r));
  };
  auto ws = openExec(cfg_, catRequest());
  ASSERT_FALSE(ws.ok());
  EXPECT_EQ(ws.error().code, Code::NotFound);
  EXPECT_EQ(ws.error().message, "pods \"p 1\" not found");
}

TEST_F(ExecClientTest, UnreachableAndUntrustedServersAreErrorsNotHangs) {
  handler_.fn = [](const HttpRequest&, Responder& out) { out.respond({}); };
  RestConfig wrongCa = cfg_;
  auto other = makeCa("another-ca");
  ASSERT_TRUE(other.ok());
  wrongCa.caPem = other->certPem;
  auto untrusted = openExec(wrongCa, catRequest());
  ASSERT_FALSE(untrusted.ok());
  EXPECT_EQ(untrusted.error().code, Code::Unavailable);

  RestConfig bad = cfg_;
  bad.server = "http://127.0.0.1:1";
  auto notHttps = openExec(bad, catRequest());
  ASSERT_FALSE(notHttps.ok());
  EXPECT_EQ(notHttps.error().code, Code::Invalid);

  server_->stop();
  auto closed = openExec(cfg_, catRequest());
  ASSERT_FALSE(closed.ok());
  EXPECT_EQ(closed.error().code, Code::Unavailable);
}

}  // namespace
}  // namespace strait::kube
