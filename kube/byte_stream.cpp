// ByteStream over a socket (see byte_stream.h).
#include "kube/byte_stream.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace strait::kube {
namespace {

// Used from one reader and one writer thread plus close() from any thread. The fd is closed
// only by the destructor, so a reader or writer never sees it reused; close() only shuts the
// socket down.
class SocketByteStream final : public ByteStream {
 public:
  explicit SocketByteStream(int fd) : fd_(fd) {}
  ~SocketByteStream() override {
    close();
    ::close(fd_);
  }

  Result<size_t> read(std::span<char> buf) override {
    if (closed_.load()) return makeError(Code::Unavailable, "connection closed");
    while (true) {
      ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
      if (n >= 0) {
        if (n == 0 && closed_.load()) return makeError(Code::Unavailable, "connection closed");
        return static_cast<size_t>(n);
      }
      if (errno == EINTR) continue;
      return makeError(Code::Unavailable, std::string("read: ") + std::strerror(errno));
    }
  }

  Status write(std::string_view data) override {
    if (closed_.load() || writeClosed_.load()) {
      return makeError(Code::Unavailable, "connection closed for writing");
    }
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return makeError(Code::Unavailable, std::string("write: ") + std::strerror(errno));
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return Status::OK();
  }

  void closeWrite() override {
    if (!writeClosed_.exchange(true)) ::shutdown(fd_, SHUT_WR);
  }

  void close() override {
    if (!closed_.exchange(true)) ::shutdown(fd_, SHUT_RDWR);
  }

 private:
  const int fd_;
  std::atomic<bool> closed_{false};
  std::atomic<bool> writeClosed_{false};
};

}  // namespace

std::unique_ptr<ByteStream> socketByteStream(int fd) {
  return std::make_unique<SocketByteStream>(fd);
}

}  // namespace strait::kube
