// Drives the plain-HTTP server with a raw TCP client, so the exact bytes on the wire (and a
// client that sends nothing) can be checked.

#include "kube/plain_http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>

namespace strait::kube {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

int connectTo(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends until it closes the connection (or `timeout` passes).
std::string readAll(int fd, std::chrono::milliseconds timeout = 10s) {
  std::string out;
  auto deadline = Clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Sends `request` as is and returns the whole answer.
std::string roundTrip(uint16_t port, const std::string& request) {
  int fd = connectTo(port);
  if (fd < 0) return "connect failed";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string answer = readAll(fd);
  ::close(fd);
  return answer;
}

std::string get(uint16_t port, const std::string& target, const std::string& method = "GET") {
  return roundTrip(port, method + " " + target + " HTTP/1.1\r\nHost: localhost\r\n\r\n");
}

class PlainHttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status started = server_.start("127.0.0.1", 0);
    ASSERT_TRUE(started.ok()) << started.error().message;
    ASSERT_NE(server_.port(), 0);
  }

  std::string lastMethod() {
    std::lock_guard<std::mutex> lock(mu_);
    return lastMethod_;
  }
  std::string lastTarget() {
    std::lock_guard<std::mutex> lock(mu_);
    return lastTarget_;
  }

  std::atomic<int> calls_{0};
  std::mutex mu_;
  std::string lastMethod_, lastTarget_;
  PlainHttpServer server_{"test listener",
                          [this](const std::string& method, const std::string& target) {
                            ++calls_;
                            {
                              std::lock_guard<std::mutex> lock(mu_);
                              lastMethod_ = method;
                              lastTarget_ = target;
                            }
                            if (target.rfind("/ok", 0) == 0) {
                              return PlainHttpServer::Reply{200, "text/plain; charset=utf-8",
                                                            "all good\n"};
                            }
                            if (target == "/json") {
                              return PlainHttpServer::Reply{503, "application/json", "{}"};
                            }
                            return PlainHttpServer::Reply{404, "text/plain; charset=utf-8",
                                                          "nothing at " + target + "\n"};
                          }};
};

TEST_F(PlainHttpServerTest, GetAnswersWithTheHandlersStatusTypeAndBody) {
  std::string answer = get(server_.port(), "/ok?verbose=1");
  EXPECT_EQ(answer,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Connection: close\r\nContent-Length: 9\r\n\r\nall good\n");
  EXPECT_EQ(lastMethod(), "GET");
  EXPECT_EQ(lastTarget(), "/ok?verbose=1");

  std::string json = get(server_.port(), "/json");
  EXPECT_EQ(json.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << json;
  EXPECT_NE(json.find("Content-Type: application/json\r\n"), std::string::npos) << json;
  EXPECT_EQ(json.substr(json.size() - 2), "{}");
}

TEST_F(PlainHttpServerTest, HeadGetsTheStatusAndHeadersWithoutTheBody) {
  std::string answer = get(server_.port(), "/ok", "HEAD");
  EXPECT_EQ(answer,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Connection: close\r\nContent-Length: 9\r\n\r\n");
  EXPECT_EQ(lastMethod(), "HEAD");
}

TEST_F(PlainHttpServerTest, TheHandlersNotFoundReachesTheClient) {
  std::string answer = get(server_.port(), "/missing");
  EXPECT_EQ(answer.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u) << answer;
  EXPECT_EQ(answer.substr(answer.find("\r\n\r\n") + 4), "nothing at /missing\n");
}

TEST_F(PlainHttpServerTest, OtherMethodsAndGarbageAreRefusedWithoutCallingTheHandler) {
  std::string post = roundTrip(server_.port(),
                              "POST /ok HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_EQ(post.rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0), 0u) << post;
  EXPECT_EQ(post.substr(post.find("\r\n\r\n") + 4), "only GET and HEAD\n");
  std::string garbage = roundTrip(server_.port(), "hello there\r\n\r\n");
  EXPECT_EQ(garbage.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << garbage;
  EXPECT_EQ(garbage.substr(garbage.find("\r\n\r\n") + 4), "malformed request\n");
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(PlainHttpServerTest, AClientThatSendsNothingIsDroppedAfterTheTimeoutAndBlocksNoOne) {
  int silent = connectTo(server_.port());
  ASSERT_GE(silent, 0);
  auto begin = Clock::now();
  // Others are answered meanwhile.
  std::string answer = get(server_.port(), "/ok");
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << answer;
  EXPECT_LT(Clock::now() - begin, 1s);
  // The silent one is closed without an answer after about two seconds.
  std::string nothing = readAll(silent, 10s);
  auto waited = Clock::now() - begin;
  ::close(silent);
  EXPECT_EQ(nothing, "");
  EXPECT_GE(waited, 1500ms);
  EXPECT_LT(waited, 5s);
}

TEST(PlainHttpServerStartTest, AHeldPortIsNamedInTheError) {
  int held = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(held, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(held, 1), 0);
  socklen_t len = sizeof addr;
  ::getsockname(held, reinterpret_cast<sockaddr*>(&addr), &len);
  uint16_t port = ntohs(addr.sin_port);

  PlainHttpServer server("health listener", [](const std::string&, const std::string&) {
    return PlainHttpServer::Reply{};
  });
  Status started = server.start("127.0.0.1", port);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().code, Code::Unavailable);
  EXPECT_EQ(started.error().message, "health listener 127.0.0.1:" + std::to_string(port) +
                                         ": port " + std::to_string(port) +
                                         " is already in use");
  ::close(held);

  // Once the port is free it binds; stop() is idempotent and releases it.
  Status again = server.start("127.0.0.1", port);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(server.port(), port);
  server.stop();
  server.stop();
  EXPECT_EQ(connectTo(port), -1);
}

}  // namespace
}  // namespace strait::kube
