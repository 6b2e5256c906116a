#pragma once
// The one background thread of a minicluster controller (scheduler, garbage collector, node
// lifecycle, taint eviction): start() runs `body` on a new thread unless one runs already;
// stop() raises the flag the body polls through stopping() and joins the thread.
// Thread-safety: start() and stop() from the owner's thread; stopping() from any thread.
// Owners call stop() in their own destructor, before the state the body uses is destroyed.

#include <atomic>
#include <functional>
#include <thread>

namespace strait::minicluster {

class LoopThread {
 public:
  LoopThread() = default;
  LoopThread(const LoopThread&) = delete;
  LoopThread& operator=(const LoopThread&) = delete;
  ~LoopThread() { stop(); }

  void start(std::function<void()> body) {
    if (thread_.joinable()) return;
    stopping_ = false;
    thread_ = std::thread(std::move(body));
  }
  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }
  bool stopping() const { return stopping_.load(); }

 private:
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace strait::minicluster
