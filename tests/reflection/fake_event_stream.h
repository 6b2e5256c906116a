#pragma once
// An in-memory EventStream pair for unit tests of one side of the reflection stream: what
// one end writes the other reads, in order. cancel() on either end (or breakPair()) ends
// both, like a broken connection. Thread-safe.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>

#include "peering/transport.h"

namespace strait::reflection::testing {

struct FakeLink {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<v1::ReflectionEvent> toA, toB;
  bool broken = false;
};

class FakeEventStream : public peering::EventStream {
 public:
  FakeEventStream(std::shared_ptr<FakeLink> link, bool sideA) : link_(std::move(link)), a_(sideA) {}
  ~FakeEventStream() override { cancel(); }
  bool read(v1::ReflectionEvent* e) override {
    std::unique_lock<std::mutex> lock(link_->mu);
    auto& q = a_ ? link_->toA : link_->toB;
    link_->cv.wait(lock, [&] { return link_->broken || !q.empty(); });
    if (link_->broken) return false;
    *e = std::move(q.front());
    q.pop_front();
    return true;
  }
  bool write(const v1::ReflectionEvent& e) override {
    std::lock_guard<std::mutex> lock(link_->mu);
    if (link_->broken) return false;
    (a_ ? link_->toB : link_->toA).push_back(e);
    link_->cv.notify_all();
    return true;
  }
  void cancel() override {
    std::lock_guard<std::mutex> lock(link_->mu);
    link_->broken = true;
    link_->cv.notify_all();
  }
  kube::Status status() override {
    return kube::makeError(kube::Code::Unavailable, "fake link broken");
  }

 private:
  std::shared_ptr<FakeLink> link_;
  bool a_;
};

// A connected pair: first = the dialling side, second = the serving side.
inline std::pair<std::unique_ptr<FakeEventStream>, std::unique_ptr<FakeEventStream>> fakePair() {
  auto link = std::make_shared<FakeLink>();
  return {std::make_unique<FakeEventStream>(link, true),
          std::make_unique<FakeEventStream>(link, false)};
}

}  // namespace strait::reflection::testing
