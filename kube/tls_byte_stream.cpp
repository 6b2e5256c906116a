// A ByteStream over the TLS stream of an upgraded server connection (see http_upgrade.h,
// wrapTlsByteStream).
//
// Asio allows one outstanding read and one outstanding write per TLS stream when both are
// started from the stream's executor. As in websocket.cpp, each blocking call posts its
// asynchronous operation to that executor and waits for its completion, so a reader and a
// writer thread never touch the stream concurrently. readMu_ serializes readers, writeMu_
// writers.
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>

#include "base/thread_annotations.h"
#include "kube/http_upgrade.h"

namespace strait::kube::detail {
namespace {

namespace net = boost::asio;
using boost::system::error_code;
using namespace std::chrono_literals;

class TlsByteStream final : public ByteStream {
 public:
  TlsByteStream(TlsStream& stream, std::string leftover, std::function<bool()> stopping)
      : stream_(stream), stopping_(std::move(stopping)), leftover_(std::move(leftover)) {}

  ~TlsByteStream() override {
    close();
    base::UniqueLock lock(inflightMu_);
    const auto deadline = std::chrono::steady_clock::now() + 3s;
    while (inflight_ != 0) {
      if (inflightCv_.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
  }

  Result<size_t> read(std::span<char> buf) override {
    base::MutexLock lock(readMu_);
    if (leftoverAt_ < leftover_.size()) {
      size_t n = std::min(buf.size(), leftover_.size() - leftoverAt_);
      std::memcpy(buf.data(), leftover_.data() + leftoverAt_, n);
      leftoverAt_ += n;
      return n;
    }
    if (eof_) return size_t{0};
    if (closed_.load()) return makeError(Code::Unavailable, "connection closed");
    // The operation reads into its own buffer: if the wait is abandoned (server stopping)
    // it may still complete later, and must not touch the caller's memory then.
    auto got = std::make_shared<std::string>(buf.size(), '\0');
    auto n = std::make_shared<size_t>(0);
    error_code ec;
    bool completed = run(
        [this, got, n](auto done) {
          stream_.async_read_some(net::buffer(got->data(), got->size()),
                                  [done, got, n](error_code e, size_t count) {
                                    *n = count;
                                    done(e);
                                  });
        },
        ec);
    if (!completed) return makeError(Code::Unavailable, "server stopping");
    if (ec == net::error::eof || ec == net::ssl::error::stream_truncated) {
      eof_ = true;
      return size_t{0};
    }
    if (ec) return makeError(Code::Unavailable, "read: " + ec.message());
    std::memcpy(buf.data(), got->data(), *n);
    return *n;
  }

  Status write(std::string_view data) override {
    base::MutexLock lock(writeMu_);
    if (closed_.load() || writeClosed_) return makeError(Code::Unavailable, "connection closed");
    auto bytes = std::make_shared<std::string>(data);  // outlives an abandoned wait
    error_code ec;
    bool completed = run(
        [this, bytes](auto done) {
          net::async_write(stream_, net::buffer(*bytes),
                           [done, bytes](error_code e, size_t) { done(e); });
        },
        ec);
    if (!completed) return makeError(Code::Unavailable, "server stopping");
    if (ec) return makeError(Code::Unavailable, "write: " + ec.message());
    return Status::OK();
  }

  void closeWrite() override {
    base::MutexLock lock(writeMu_);
    if (writeClosed_) return;
    writeClosed_ = true;
    ::shutdown(fd(), SHUT_WR);
  }

  void close() override {
    if (!closed_.exchange(true)) ::shutdown(fd(), SHUT_RDWR);
  }

 private:
  int fd() { return stream_.next_layer().native_handle(); }

  // Starts `start(done)` on the stream's executor and waits for `done(ec)`. False when the
  // wait was abandoned because stopping_() became true (the socket is then shut down; the
  // destructor waits, bounded, for the operation).
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
    net::post(stream_.get_executor(),
              [start = std::forward<Start>(start), done]() mutable { start(done); });
    while (result.wait_for(100ms) != std::future_status::ready) {
      if (stopping_ && stopping_()) {
        close();  // the operation completes, if the io_context still runs; not waited for
        return false;
      }
    }
    ec = result.get();
    return true;
  }

  TlsStream& stream_;
  const std::function<bool()> stopping_;
  std::atomic<bool> closed_{false};

  base::Mutex readMu_;  // one reader at a time; guards the fields below
  std::string leftover_ GUARDED_BY(readMu_);
  size_t leftoverAt_ GUARDED_BY(readMu_) = 0;
  bool eof_ GUARDED_BY(readMu_) = false;

  base::Mutex writeMu_;  // one writer at a time
  bool writeClosed_ GUARDED_BY(writeMu_) = false;

  base::Mutex inflightMu_;
  std::condition_variable_any inflightCv_;
  int inflight_ GUARDED_BY(inflightMu_) = 0;
};

}  // namespace

std::unique_ptr<ByteStream> wrapTlsByteStream(TlsStream& stream, std::string leftover,
                                              std::function<bool()> stopping) {
  return std::make_unique<TlsByteStream>(stream, std::move(leftover), std::move(stopping));
}

}  // namespace strait::kube::detail
