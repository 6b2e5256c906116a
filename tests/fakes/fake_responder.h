#pragma once
// A Responder that records what a Handler answered, for in-process API tests (no sockets).
// Thread-safe: a watch handler writes from its thread while the test reads.

#include <condition_variable>
#include <mutex>
#include <string>

#include "kube/http_server.h"

namespace strait::testing {

class FakeResponder : public kube::Responder {
 public:
  bool respond(kube::HttpResponse r) override {
    std::lock_guard<std::mutex> l(mu_);
    status_ = r.status;
    headers_ = r.headers;
    body_ = r.body;
    cv_.notify_all();
    return true;
  }
  bool startStream(int status, std::map<std::string, std::string> headers) override {
    std::lock_guard<std::mutex> l(mu_);
    status_ = status;
    headers_ = std::move(headers);
    cv_.notify_all();
    return true;
  }
  bool writeChunk(std::string_view data) override {
    std::lock_guard<std::mutex> l(mu_);
    body_ += data;
    cv_.notify_all();
    return !gone_;
  }
  bool clientGone() override {
    std::lock_guard<std::mutex> l(mu_);
    return gone_;
  }
  // Simulates the client hanging up: the handler's next write or check sees it.
  void hangUp() {
    std::lock_guard<std::mutex> l(mu_);
    gone_ = true;
  }
  int status() {
    std::lock_guard<std::mutex> l(mu_);
    return status_;
  }
  std::string body() {
    std::lock_guard<std::mutex> l(mu_);
    return body_;
  }
  std::string header(const std::string& name) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = headers_.find(name);
    return it == headers_.end() ? "" : it->second;
  }
  // Waits until the body contains `needle` or the timeout passes.
  bool waitFor(const std::string& needle, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, timeout, [&] { return body_.find(needle) != std::string::npos; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int status_ = 0;
  std::map<std::string, std::string> headers_;
  std::string body_;
  bool gone_ = false;
};

}  // namespace strait::testing
