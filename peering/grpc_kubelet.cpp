// gRPC server and client of the RemoteKubelet service (proto/strait/kubelet.proto).
//
// Streams use the synchronous API: on each side one thread may block in Read() while another
// Write()s, which is what gRPC allows; writes are serialized by a mutex. Cancellation: the
// client polls its `cancelled` predicate on a small watcher thread and cancels the call; the
// server sees ServerContext::IsCancelled().
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/thread_annotations.h"
#include "peering/grpc_auth.h"
#include "peering/grpc_kubelet.h"
#include "peering/grpc_status.h"
#include "proto/strait/kubelet.grpc.pb.h"

namespace strait::peering {
namespace {

using namespace std::chrono_literals;

// --- server -------------------------------------------------------------------------------

template <class Frame>
class ServerStream final : public FrameStream<Frame> {
 public:
  ServerStream(grpc::ServerContext* ctx, grpc::ServerReaderWriter<Frame, Frame>* rw)
      : ctx_(ctx), rw_(rw) {}
  bool read(Frame* frame) override { return rw_->Read(frame); }
  bool write(const Frame& frame) override {
    base::MutexLock lock(writeMu_);
    return rw_->Write(frame);
  }
  void writesDone() override {}
  void cancel() override { ctx_->TryCancel(); }
  bool cancelled() override { return ctx_->IsCancelled(); }
  kube::Status finish() override { return kube::Status::OK(); }

 private:
  grpc::ServerContext* ctx_;
  grpc::ServerReaderWriter<Frame, Frame>* rw_;
  base::Mutex writeMu_;
};

class RemoteKubeletServiceImpl final : public v1::RemoteKubelet::Service {
 public:
  explicit RemoteKubeletServiceImpl(KubeletHandler& h) : h_(h) {}

  grpc::Status Logs(grpc::ServerContext* ctx, const v1::LogsRequest* req,
                    grpc::ServerWriter<v1::LogChunk>* writer) override {
    return grpcauth::authenticated(ctx, "Logs", [&](const Caller& c) {
      return h_.logs(
          c, *req,
          [writer](std::string_view data) {
            v1::LogChunk chunk;
            chunk.set_data(data.data(), data.size());
            return writer->Write(chunk);
          },
          [ctx] { return ctx->IsCancelled(); });
    });
  }

  grpc::Status Exec(grpc::ServerContext* ctx,
                    grpc::ServerReaderWriter<v1::ExecFrame, v1::ExecFrame>* rw) override {
    return grpcauth::authenticated(ctx, "Exec", [&](const Caller& c) {
      ServerStream<v1::ExecFrame> stream(ctx, rw);
      return h_.exec(c, stream);
    });
  }

  grpc::Status Attach(grpc::ServerContext* ctx,
                      grpc::ServerReaderWriter<v1::ExecFrame, v1::ExecFrame>* rw) override {
    return grpcauth::authenticated(ctx, "Attach", [&](const Caller& c) {
      ServerStream<v1::ExecFrame> stream(ctx, rw);
      return h_.attach(c, stream);
    });
  }

  grpc::Status PortForward(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::PortForwardFrame, v1::PortForwardFrame>* rw) override {
    return grpcauth::authenticated(ctx, "PortForward", [&](const Caller& c) {
      ServerStream<v1::PortForwardFrame> stream(ctx, rw);
      return h_.portForward(c, stream);
    });
  }

  grpc::Status ListPods(grpc::ServerContext* ctx, const v1::ListPodsRequest*,
                        v1::ListPodsResponse* resp) override {
    return grpcauth::authenticated(ctx, "ListPods",
                                   [&](const Caller& c) { return h_.listPods(c, resp); });
  }

  grpc::Status StatsSummary(grpc::ServerContext* ctx, const v1::StatsSummaryRequest*,
                            v1::StatsSummaryResponse* resp) override {
    return grpcauth::authenticated(ctx, "StatsSummary",
                                   [&](const Caller& c) { return h_.statsSummary(c, resp); });
  }

 private:
  KubeletHandler& h_;
};

// --- client -------------------------------------------------------------------------------

// Cancels `ctx` once `cancelled()` turns true; stops polling when destroyed.
class CancelWatcher {
 public:
  CancelWatcher(grpc::ClientContext& ctx, const std::function<bool()>& cancelled) {
    if (!cancelled) return;
    thread_ = std::thread([this, &ctx, cancelled] {
      base::UniqueLock lock(mu_);
      while (!done_) {
        const auto deadline = std::chrono::steady_clock::now() + 200ms;
        while (!done_) {
          if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) break;
        }
        if (done_) break;
        if (cancelled()) {
          fired_ = true;
          ctx.TryCancel();
          break;
        }
      }
    });
  }
  ~CancelWatcher() {
    {
      base::MutexLock lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  bool fired() {
    base::MutexLock lock(mu_);
    return fired_;
  }

 private:
  base::Mutex mu_;
  std::condition_variable_any cv_;
  bool done_ GUARDED_BY(mu_) = false;
  bool fired_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// `open` starts the call on the stream's context: for example the generated client's Exec(ctx).
template <class Frame>
class ClientStream final : public FrameStream<Frame> {
 public:
  template <class Open>
  explicit ClientStream(Open&& open) : rw_(open(&ctx_)) {}
  ~ClientStream() override {
    if (finished_) return;
    ctx_.TryCancel();
    grpc::Status s = rw_->Finish();
    (void)s;
  }
  bool read(Frame* frame) override { return rw_->Read(frame); }
  bool write(const Frame& frame) override {
    base::MutexLock lock(writeMu_);
    return !writesDone_ && rw_->Write(frame);
  }
  void writesDone() override {
    base::MutexLock lock(writeMu_);
    if (writesDone_) return;
    writesDone_ = true;
    rw_->WritesDone();
  }
  void cancel() override { ctx_.TryCancel(); }
  bool cancelled() override { return false; }
  kube::Status finish() override {
    if (finished_) return kube::Status::OK();
    finished_ = true;
    return fromGrpc(rw_->Finish());
  }

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<Frame, Frame>> rw_;
  base::Mutex writeMu_;  // also serializes writes
  bool writesDone_ GUARDED_BY(writeMu_) = false;
  bool finished_ = false;  // finish() called (by the reading thread)
};

class GrpcKubeletClient final : public KubeletClient {
 public:
  explicit GrpcKubeletClient(std::shared_ptr<grpc::Channel> channel)
      : stub_(v1::RemoteKubelet::NewStub(channel)) {}

  kube::Status logs(const v1::LogsRequest& req,
                    const std::function<bool(std::string_view)>& onData,
                    const std::function<bool()>& cancelled) override {
    grpc::ClientContext ctx;
    bool stoppedByCaller = false;
    grpc::Status status;
    {
      CancelWatcher watcher(ctx, cancelled);
      std::unique_ptr<grpc::ClientReader<v1::LogChunk>> reader = stub_->Logs(&ctx, req);
      v1::LogChunk chunk;
      while (reader->Read(&chunk)) {
        if (!onData(chunk.data())) {
          stoppedByCaller = true;
          ctx.TryCancel();
          break;
        }
      }
      status = reader->Finish();
      stoppedByCaller = stoppedByCaller || watcher.fired();
    }
    if (stoppedByCaller) return kube::Status::OK();
    return fromGrpc(status);
  }

  kube::Result<std::unique_ptr<ExecStream>> exec() override {
    return std::unique_ptr<ExecStream>(std::make_unique<ClientStream<v1::ExecFrame>>(
        [this](grpc::ClientContext* ctx) { return stub_->Exec(ctx); }));
  }

  kube::Result<std::unique_ptr<ExecStream>> attach() override {
    return std::unique_ptr<ExecStream>(std::make_unique<ClientStream<v1::ExecFrame>>(
        [this](grpc::ClientContext* ctx) { return stub_->Attach(ctx); }));
  }

  kube::Result<std::unique_ptr<PortForwardStream>> portForward() override {
    return std::unique_ptr<PortForwardStream>(
        std::make_unique<ClientStream<v1::PortForwardFrame>>(
            [this](grpc::ClientContext* ctx) { return stub_->PortForward(ctx); }));
  }

  kube::Status listPods(v1::ListPodsResponse* resp, std::chrono::milliseconds timeout) override {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + timeout);
    return fromGrpc(stub_->ListPods(&ctx, v1::ListPodsRequest(), resp));
  }

  kube::Status statsSummary(v1::StatsSummaryResponse* resp,
                            std::chrono::milliseconds timeout) override {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + timeout);
    return fromGrpc(stub_->StatsSummary(&ctx, v1::StatsSummaryRequest(), resp));
  }

 private:
  std::unique_ptr<v1::RemoteKubelet::Stub> stub_;
};

}  // namespace

std::unique_ptr<grpc::Service> newRemoteKubeletService(KubeletHandler& handler) {
  return std::make_unique<RemoteKubeletServiceImpl>(handler);
}

std::unique_ptr<KubeletClient> newKubeletClient(std::shared_ptr<grpc::Channel> channel) {
  return std::make_unique<GrpcKubeletClient>(std::move(channel));
}

}  // namespace strait::peering
