// Port-forward client over the WebSocket channel protocol (see portforward.h,
// openPortForward): one port, data channel 0, error channel 1.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "kube/api_websocket.h"
#include "kube/client.h"
#include "kube/portforward.h"

namespace strait::kube {
namespace {

constexpr char kDataChannel = 0;
constexpr char kErrorChannel = 1;

// Used by one reader and one writer thread; close() from any thread.
class ChannelPortStream final : public ByteStream {
 public:
  ChannelPortStream(std::unique_ptr<WebSocket> ws, uint16_t port, std::string what)
      : ws_(std::move(ws)), port_(port), what_(std::move(what)) {}
  ~ChannelPortStream() override { close(); }

  Result<size_t> read(std::span<char> buf) override {
    while (at_ >= data_.size()) {
      if (failed_) return *failed_;
      if (eof_) return size_t{0};
      std::string msg;
      if (!ws_->read(msg)) {
        eof_ = true;
        continue;
      }
      if (msg.empty()) continue;
      std::string_view body = std::string_view(msg).substr(1);
      if (msg[0] == kDataChannel) {
        if (!dataPortSeen_) {
          dataPortSeen_ = true;
          if (auto s = checkPort(body); !s) failed_ = s.error();
          continue;
        }
        data_.assign(body);
        at_ = 0;
      } else if (msg[0] == kErrorChannel) {
        if (!errorPortSeen_) {
          errorPortSeen_ = true;
          if (auto s = checkPort(body); !s) failed_ = s.error();
          continue;
        }
        if (!body.empty()) failed_ = makeError(Code::Unavailable, std::string(body));
      }
    }
    size_t n = std::min(buf.size(), data_.size() - at_);
    std::memcpy(buf.data(), data_.data() + at_, n);
    at_ += n;
    return n;
  }

  Status write(std::string_view data) override {
    if (closed_.load()) return makeError(Code::Unavailable, what_ + ": closed");
    std::string msg;
    msg.reserve(data.size() + 1);
    msg += kDataChannel;
    msg += data;
    if (!ws_->write(msg)) return makeError(Code::Unavailable, what_ + ": connection lost");
    return Status::OK();
  }

  void closeWrite() override {}  // the channel protocol has no half-close

  void close() override {
    if (!closed_.exchange(true)) ws_->close();
  }

 private:
  Status checkPort(std::string_view body) const {
    if (body.size() != 2) {
      return makeError(Code::Internal, what_ + ": the first message of a channel is " +
                                           std::to_string(body.size()) + " bytes, not a port");
    }
    uint16_t got = static_cast<uint16_t>(static_cast<unsigned char>(body[0]) |
                                         (static_cast<unsigned char>(body[1]) << 8));
    if (got != port_) {
      return makeError(Code::Internal, what_ + ": the server forwards port " +
                                           std::to_string(got) + ", not " + std::to_string(port_));
    }
    return Status::OK();
  }

  const std::unique_ptr<WebSocket> ws_;
  const uint16_t port_;
  const std::string what_;
  std::atomic<bool> closed_{false};

  // Reader's.
  std::string data_;
  size_t at_ = 0;
  bool dataPortSeen_ = false, errorPortSeen_ = false, eof_ = false;
  std::optional<Error> failed_;
};

}  // namespace

Result<std::unique_ptr<ByteStream>> openPortForward(const RestConfig& cfg, const std::string& ns,
                                                    const std::string& pod, uint16_t port) {
  const std::string what = "portforward " + ns + "/" + pod + ":" + std::to_string(port);
  if (port == 0) return makeError(Code::Invalid, what + ": port must be between 1 and 65535");
  std::string target =
      resourcePath(resources::kPods, ns, pod, "portforward") + "?ports=" + std::to_string(port);
  auto ws = detail::openApiWebSocket(cfg, target, {std::string(kWebSocketChannelProtocolV4)}, what);
  if (!ws) return ws.error();
  return std::unique_ptr<ByteStream>(
      std::make_unique<ChannelPortStream>(std::move(*ws), port, what));
}

}  // namespace strait::kube
