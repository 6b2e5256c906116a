// Full-duplex WebSocket over a Beast stream (see http_upgrade.h, wrapWebSocket).
//
// Beast allows one outstanding read and one outstanding write (or close) per stream when they
// are started from the stream's executor. Each blocking call here posts its asynchronous
// operation to that executor and waits for its completion, so a reader thread and a writer
// thread never touch the TLS stream concurrently: all the stream work happens on the
// io_context's thread. writeMu_ serializes writers (and close), readMu_ readers.
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>

#include "base/thread_annotations.h"
#include "kube/http_upgrade.h"

namespace strait::kube::detail {
namespace {

namespace net = boost::asio;
namespace websocket = boost::beast::websocket;
using boost::system::error_code;
using namespace std::chrono_literals;

class AsyncWebSocket final : public WebSocket {
 public:
  AsyncWebSocket(std::unique_ptr<BeastWs> ws, std::string subprotocol,
                 std::function<bool()> stopping, std::shared_ptr<void> owner)
      : owner_(std::move(owner)),
        ws_(std::move(ws)),
        subprotocol_(std::move(subprotocol)),
        stopping_(std::move(stopping)) {
    websocket::stream_base::timeout t{};
    t.handshake_timeout = 5s;  // bounds the close handshake
    t.idle_timeout = websocket::stream_base::none();
    t.keep_alive_pings = false;
    ws_->set_option(t);
    ws_->binary(true);
    ws_->read_message_max(16 << 20);
  }

  ~AsyncWebSocket() override {
    shutdownSocket();
    // Operations still in flight reference the stream: let them finish (the socket is shut
    // down, so they complete at once when the io_context runs).
    base::UniqueLock lock(inflightMu_);
    const auto deadline = std::chrono::steady_clock::now() + 3s;
    while (inflight_ != 0) {
      if (inflightCv_.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
  }

  bool read(std::string& message) override {
    base::MutexLock lock(readMu_);
    if (broken_.load()) return false;
    auto buf = std::make_shared<boost::beast::flat_buffer>();
    error_code ec;
    bool completed = run(
        [this, buf](auto done) { ws_->async_read(*buf, [done](error_code e, size_t) { done(e); }); },
        ec);
    if (!completed || ec) {
      broken_ = true;
      return false;
    }
    message = boost::beast::buffers_to_string(buf->data());
    return true;
  }

  bool write(std::string_view message) override {
    base::MutexLock lock(writeMu_);
    if (broken_.load() || closeSent_) return false;
    error_code ec;
    bool completed = run(
        [this, message](auto done) {
          ws_->async_write(net::buffer(message.data(), message.size()),
                           [done](error_code e, size_t) { done(e); });
        },
        ec);
    if (!completed || ec) {
      broken_ = true;
      return false;
    }
    return true;
  }

  void close() override {
    base::MutexLock lock(writeMu_);
    if (closeSent_) return;
    closeSent_ = true;
    if (broken_.load()) return;
    error_code ec;
    bool completed = run(
        [this](auto done) {
          ws_->async_close(websocket::close_code::normal, [done](error_code e) { done(e); });
        },
        ec);
    if (!completed || ec) shutdownSocket();
  }

  std::string subprotocol() const override { return subprotocol_; }

 private:
  // Starts `start(done)` on the stream's executor and waits for `done(ec)`. False when the
  // wait was abandoned because stopping_() became true (the socket is then shut down).
  template <class Start>
  bool run(Start&& start, error_code& ec) {
    auto promise = std::make_shared<std::promise<error_code>>();
    std::future<error_code> result = promise->get_future();
    {
      base::MutexLock lock(inflightMu_);
      ++inflight_;
    }
    auto done = [this, promise](error_code e) {
      promise->set_value(e);
      base::MutexLock lock(inflightMu_);
      --inflight_;
      inflightCv_.notify_all();
    };
    net::post(ws_->get_executor(), [start = std::forward<Start>(start), done]() mutable {
      start(done);
    });
    while (result.wait_for(100ms) != std::future_status::ready) {
      if (stopping_ && stopping_()) {
        shutdownSocket();
        broken_ = true;
        return false;
      }
    }
    ec = result.get();
    return true;
  }

  void shutdownSocket() {
    ::shutdown(ws_->next_layer().next_layer().native_handle(), SHUT_RDWR);
  }

  std::shared_ptr<void> owner_;  // declared first: outlives ws_, which borrows from it
  std::unique_ptr<BeastWs> ws_;
  const std::string subprotocol_;
  const std::function<bool()> stopping_;

  base::Mutex readMu_;   // one reader at a time
  base::Mutex writeMu_;  // one writer (write or close) at a time
  bool closeSent_ GUARDED_BY(writeMu_) = false;
  std::atomic<bool> broken_{false};

  base::Mutex inflightMu_;
  std::condition_variable_any inflightCv_;
  int inflight_ GUARDED_BY(inflightMu_) = 0;
};

}  // namespace

std::unique_ptr<WebSocket> wrapWebSocket(std::unique_ptr<BeastWs> ws, std::string subprotocol,
                                         std::function<bool()> stopping,
                                         std::shared_ptr<void> owner) {
  return std::make_unique<AsyncWebSocket>(std::move(ws), std::move(subprotocol),
                                          std::move(stopping), std::move(owner));
}

}  // namespace strait::kube::detail
