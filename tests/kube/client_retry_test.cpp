// kube::Client's retry policy against a scripted plain-HTTP server on 127.0.0.1:0: which
// requests are retried, Retry-After, and typed errors from Status bodies.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>

#include "kube/client.h"

namespace strait::kube {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Scripted {
  int status;
  std::string headers;  // extra header lines, each ending in \r\n
  std::string body;
};

// Answers each request with the next scripted response (200 {} when the script is empty) and
// records the method and arrival time of each. Keep-alive; one thread per connection.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::deque<Scripted> script) : script_(std::move(script)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(fd_, 16);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { acceptLoop(); });
  }
  ~ScriptedServer() {
    stop_ = true;
    acceptor_.join();
    for (auto& t : conns_) t.join();
    close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::pair<std::string, Clock::time_point>> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void acceptLoop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) conns_.emplace_back([this, c] { serve(c); });
    }
  }
  void serve(int c) {
    std::string buf;
    char tmp[4096];
    while (!stop_) {
      size_t end;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
        pollfd p{c, POLLIN, 0};
        if (stop_) break;
        if (poll(&p, 1, 50) <= 0) continue;
        ssize_t n = read(c, tmp, sizeof tmp);
        if (n <= 0) {
          close(c);
          return;
        }
        buf.append(tmp, static_cast<size_t>(n));
      }
      if (stop_) break;
      std::string head = buf.substr(0, end);
      size_t bodyLen = 0;
      auto cl = head.find("Content-Length: ");
      if (cl == std::string::npos) cl = head.find("content-length: ");
      if (cl != std::string::npos) bodyLen = std::stoul(head.substr(cl + 16));
      while (buf.size() < end + 4 + bodyLen) {
        ssize_t n = read(c, tmp, sizeof tmp);
        if (n <= 0) break;
        buf.append(tmp, static_cast<size_t>(n));
      }
      buf.erase(0, end + 4 + bodyLen);
      Scripted r{200, "", "{}"};
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.emplace_back(head.substr(0, head.find(' ')), Clock::now());
        if (!script_.empty()) {
          r = script_.front();
          script_.pop_front();
        }
      }
      std::string resp = "HTTP/1.1 " + std::to_string(r.status) + " X\r\nContent-Type: " +
                         "application/json\r\nContent-Length: " + std::to_string(r.body.size()) +
                         "\r\n" + r.headers + "\r\n" + r.body;
      if (write(c, resp.data(), resp.size()) < 0) break;
    }
    close(c);
  }

  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> conns_;  // touched by the acceptor thread only, then joined
  std::mutex mu_;
  std::deque<Scripted> script_;
  std::vector<std::pair<std::string, Clock::time_point>> requests_;
};

std::string status(int code, const std::string& reason) {
  return nlohmann::json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                        {"reason", reason}, {"code", code}, {"message", reason + " here"}}
      .dump();
}

std::unique_ptr<Client> clientFor(const ScriptedServer& s) {
  RestConfig cfg;
  cfg.server = s.url();
  cfg.qps = 0;
  cfg.maxRetries = 3;
  auto c = newClient(cfg);
  EXPECT_TRUE(c.ok());
  return std::move(*c);
}

const nlohmann::json kCm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"},
                            {"metadata", {{"name", "x"}}}};

TEST(ClientRetry, GetIsRetriedOn503) {
  ScriptedServer s({{503, "", status(503, "ServiceUnavailable")}, {200, "", R"({"a":1})"}});
  auto r = clientFor(s)->get(resources::kConfigMaps, "default", "x");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["a"], 1);
  EXPECT_EQ(s.requests().size(), 2u);
}

TEST(ClientRetry, PostIsNotRetriedOn503) {
  ScriptedServer s({{503, "", status(503, "ServiceUnavailable")}});
  auto r = clientFor(s)->create(resources::kConfigMaps, "default", kCm);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::Unavailable);
  EXPECT_EQ(s.requests().size(), 1u);
}

TEST(ClientRetry, TooManyRequestsHonoursRetryAfterEvenForPost) {
  ScriptedServer s({{429, "Retry-After: 1\r\n", status(429, "TooManyRequests")}});
  auto r = clientFor(s)->create(resources::kConfigMaps, "default", kCm);
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto req = s.requests();
  ASSERT_EQ(req.size(), 2u);
  EXPECT_EQ(req[0].first, "POST");
  EXPECT_GE(req[1].second - req[0].second, 900ms);
}

TEST(ClientRetry, GivesUpAfterMaxRetriesWithTheLastError) {
  std::deque<Scripted> script;
  for (int i = 0; i < 6; ++i) script.push_back({504, "", status(504, "Timeout")});
  ScriptedServer s(script);
  auto r = clientFor(s)->list(resources::kConfigMaps, "default");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::ServerTimeout);
  EXPECT_EQ(s.requests().size(), 4u);  // the first try and 3 retries
}

TEST(ClientRetry, ClientErrorsAreNotRetried) {
  ScriptedServer s({{404, "", status(404, "NotFound")},
                    {401, "", status(401, "Unauthorized")},
                    {403, "", status(403, "Forbidden")},
                    {409, "", status(409, "AlreadyExists")}});
  auto c = clientFor(s);
  EXPECT_EQ(c->get(resources::kConfigMaps, "default", "x").code(), Code::NotFound);
  EXPECT_EQ(c->get(resources::kConfigMaps, "default", "x").code(), Code::Unauthorized);
  EXPECT_EQ(c->get(resources::kConfigMaps, "default", "x").code(), Code::Forbidden);
  EXPECT_EQ(c->create(resources::kConfigMaps, "default", kCm).code(), Code::AlreadyExists);
  EXPECT_EQ(s.requests().size(), 4u);
}

TEST(ClientRetry, NonJsonSuccessBodyIsAnError) {
  ScriptedServer s({{200, "", "<html>"}});
  auto r = clientFor(s)->get(resources::kConfigMaps, "default", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not JSON"), std::string::npos);
}

TEST(ClientPaths, ResourcePath) {
  EXPECT_EQ(resourcePath(resources::kPods, "ns", "p", "status"),
            "/api/v1/namespaces/ns/pods/p/status");
  EXPECT_EQ(resourcePath(resources::kNodes, "ignored", "n"), "/api/v1/nodes/n");
  EXPECT_EQ(resourcePath(resources::kDeployments, ""), "/apis/apps/v1/deployments");
  EXPECT_EQ(resourcePath(resources::kConfigMaps, "a b", "x/y"),
            "/api/v1/namespaces/a%20b/configmaps/x%2Fy");
}

TEST(ClientConfig, BadServerOrPemIsInvalid) {
  RestConfig cfg;
  cfg.server = "ftp://x";
  EXPECT_EQ(newClient(cfg).code(), Code::Invalid);
  cfg.server = "https://127.0.0.1:1";
  cfg.caPem = "not a pem";
  auto r = newClient(cfg);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("certificate-authority"), std::string::npos);
}

}  // namespace
}  // namespace strait::kube
