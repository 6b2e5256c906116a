// A kube::ByteStream over one RemoteKubelet PortForward call (see port_forward_relay.h).
// read() is the call's only reader; write() and closeWrite() are serialized by the call's own
// write lock; close() cancels the call, which makes a blocked read() return.
#include "vnode/port_forward_relay.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>

#include "base/thread_annotations.h"

namespace strait::vnode {
namespace {

// Bytes per frame: well under gRPC's 4 MiB message limit.
constexpr size_t kFrameBytes = 64 * 1024;

class RemotePortStream final : public kube::ByteStream {
 public:
  explicit RemotePortStream(std::unique_ptr<peering::PortForwardStream> call)
      : call_(std::move(call)) {}
  ~RemotePortStream() override { close(); }

  kube::Result<size_t> read(std::span<char> buf) override {
    // Reader thread only: pending_, eof_, error_.
    while (pending_.empty()) {
      if (eof_) return size_t{0};
      if (error_) return *error_;
      if (closed_) return kube::makeError(kube::Code::Unavailable, "port-forward: stream closed");
      v1::PortForwardFrame f;
      if (!call_->read(&f)) {
        kube::Status end = call_->finish();
        if (closed_) {
          error_ = kube::makeError(kube::Code::Unavailable, "port-forward: stream closed");
        } else if (!end.ok()) {
          error_ = end.error();
        } else {
          eof_ = true;
        }
        continue;
      }
      if (f.has_data()) {
        pending_ = f.data();
        offset_ = 0;
      } else if (f.has_close_write()) {
        eof_ = true;
      } else if (f.has_error()) {
        error_ = kube::makeError(kube::Code::Unavailable, f.error());
      }
    }
    size_t n = std::min(buf.size(), pending_.size() - offset_);
    std::memcpy(buf.data(), pending_.data() + offset_, n);
    offset_ += n;
    if (offset_ == pending_.size()) pending_.clear();
    return n;
  }

  kube::Status write(std::string_view data) override {
    if (closed_ || writeClosed_) {
      return kube::makeError(kube::Code::Unavailable, "port-forward: stream closed for writing");
    }
    while (!data.empty()) {
      v1::PortForwardFrame f;
      const size_t n = std::min(data.size(), kFrameBytes);
      f.set_data(data.data(), n);
      if (!call_->write(f)) {
        return kube::makeError(kube::Code::Unavailable, "port-forward: the provider went away");
      }
      data.remove_prefix(n);
    }
    return kube::Status::OK();
  }

  void closeWrite() override {
    if (writeClosed_.exchange(true) || closed_) return;
    v1::PortForwardFrame f;
    f.set_close_write(true);
    call_->write(f);
    call_->writesDone();
  }

  void close() override {
    if (closed_.exchange(true)) return;
    call_->cancel();
  }

 private:
  std::unique_ptr<peering::PortForwardStream> call_;
  std::atomic<bool> closed_{false}, writeClosed_{false};
  // Reader thread only.
  std::string pending_;
  size_t offset_ = 0;
  bool eof_ = false;
  std::optional<kube::Error> error_;
};

}  // namespace

kube::Result<std::unique_ptr<kube::ByteStream>> dialRemotePort(peering::KubeletClient& provider,
                                                               const std::string& ns,
                                                               const std::string& pod,
                                                               uint16_t port) {
  auto opened = provider.portForward();
  if (!opened) return opened.error();
  std::unique_ptr<peering::PortForwardStream> call = std::move(*opened);
  v1::PortForwardFrame start;
  start.mutable_start()->set_namespace_(ns);
  start.mutable_start()->set_pod(pod);
  start.mutable_start()->set_port(port);
  call->write(start);
  v1::PortForwardFrame first;
  if (!call->read(&first)) {
    kube::Status end = call->finish();
    if (!end.ok()) return end.error();
    return kube::makeError(kube::Code::Unavailable,
                           "port-forward: the provider ended the call before opening it");
  }
  if (!first.has_opened()) {
    return kube::makeError(kube::Code::Unavailable,
                           "port-forward: the provider answered without opening the connection");
  }
  spdlog::info("event=port_forward pod={}/{} port={}", ns, pod, port);
  return std::unique_ptr<kube::ByteStream>(std::make_unique<RemotePortStream>(std::move(call)));
}

}  // namespace strait::vnode
