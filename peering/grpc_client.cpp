// gRPC client for a remote agent: TLS pinned to the remote cluster's CA, the server name
// checked against agentServerName(id), and a client certificate for every call but Join.
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/credentials.h>

#include <atomic>
#include <functional>
#include <mutex>

#include "base/thread_annotations.h"
#include "peering/grpc_compression.h"
#include "peering/grpc_kubelet.h"
#include "peering/grpc_status.h"
#include "peering/transport.h"
#include "proto/strait/peering.grpc.pb.h"

namespace strait::peering {
namespace {

// The client end of Reflection.Stream: one reader thread, writes serialized here. The
// final status is collected (Finish) by the reader once Read fails, or by the destructor.
class ClientEventStream final : public EventStream {
 public:
  // Owns its channel: each stream dials afresh, so a channel left in a bad state by a
  // partition (failed handshakes, long reconnect backoff) never delays the next stream.
  explicit ClientEventStream(std::shared_ptr<grpc::Channel> channel)
      : channel_(std::move(channel)), stub_(v1::Reflection::NewStub(channel_)) {
    // Pods as JSON shrink to about a third with gzip; gRPC negotiates it (grpc-encoding), so
    // a peer without it gets the messages uncompressed.
    ctx_.set_compression_algorithm(GRPC_COMPRESS_GZIP);
    rw_ = stub_->Stream(&ctx_);
  }
  ~ClientEventStream() override {
    cancel();
    v1::ReflectionEvent ignored;
    while (read(&ignored)) {
    }
  }
  bool read(v1::ReflectionEvent* e) override {
    if (rw_->Read(e)) return true;
    base::MutexLock lock(mu_);
    if (!finished_) {
      grpc::Status st = rw_->Finish();
      finished_ = true;
      if (st.error_code() == grpc::StatusCode::CANCELLED) {
        status_ = kube::makeError(kube::Code::Unavailable, "reflection stream cancelled");
      } else {
        status_ = fromGrpc(st);
      }
    }
    return false;
  }
  bool write(const v1::ReflectionEvent& e) override {
    base::MutexLock lock(writeMu_);
    if (cancelled_.load()) return false;
    return rw_->Write(e, reflectionWriteOptions(e));
  }
  void cancel() override {
    cancelled_ = true;
    ctx_.TryCancel();
  }
  kube::Status status() override {
    base::MutexLock lock(mu_);
    return status_;
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Reflection::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::ReflectionEvent, v1::ReflectionEvent>> rw_;
  base::Mutex writeMu_;
  std::atomic<bool> cancelled_{false};
  base::Mutex mu_;
  bool finished_ GUARDED_BY(mu_) = false;
  kube::Status status_ GUARDED_BY(mu_) = kube::Status::OK();
};

class GrpcClient final : public RpcClient {
 public:
  GrpcClient(std::shared_ptr<grpc::Channel> channel, std::function<std::shared_ptr<grpc::Channel>()> dial)
      : peering_(v1::Peering::NewStub(channel)),
        dial_(std::move(dial)),
        kubelet_(newKubeletClient(channel)) {}

  kube::Status join(const v1::JoinRequest& req, v1::JoinResponse* resp,
                    std::chrono::milliseconds timeout) override {
    return call(*peering_, &v1::Peering::Stub::Join, req, resp, timeout);
  }
  kube::Status renewCertificate(const v1::RenewRequest& req, v1::RenewResponse* resp,
                    std::chrono::milliseconds timeout) override {
    return call(*peering_, &v1::Peering::Stub::RenewCertificate, req, resp, timeout);
  }
  kube::Status heartbeat(const v1::HeartbeatRequest& req, v1::HeartbeatResponse* resp,
                    std::chrono::milliseconds timeout) override {
    return call(*peering_, &v1::Peering::Stub::Heartbeat, req, resp, timeout);
  }
  kube::Status unpeer(const v1::UnpeerRequest& req, v1::UnpeerResponse* resp,
                    std::chrono::milliseconds timeout) override {
    return call(*peering_, &v1::Peering::Stub::Unpeer, req, resp, timeout);
  }
  kube::Status network(const v1::NetworkRequest& req, v1::NetworkResponse* resp,
                       std::chrono::milliseconds timeout) override {
    return call(*peering_, &v1::Peering::Stub::Network, req, resp, timeout);
  }
  kube::Result<std::unique_ptr<EventStream>> openStream() override {
    std::shared_ptr<grpc::Channel> channel = dial_();
    if (!channel) return kube::makeError(kube::Code::Internal, "gRPC client: no channel");
    return std::unique_ptr<EventStream>(std::make_unique<ClientEventStream>(std::move(channel)));
  }
  std::shared_ptr<KubeletClient> kubelet() override { return kubelet_; }

 private:
  // One unary call with a deadline; the gRPC status becomes a kube::Status.
  template <class Stub, class Req, class Resp>
  static kube::Status call(Stub& stub,
                           grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                           const Req& req, Resp* resp, std::chrono::milliseconds timeout) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + timeout);
    return fromGrpc((stub.*method)(&ctx, req, resp));
  }
  std::unique_ptr<v1::Peering::Stub> peering_;
  std::function<std::shared_ptr<grpc::Channel>()> dial_;  // a new channel, same settings
  std::shared_ptr<KubeletClient> kubelet_;
};

}  // namespace

kube::Status RpcClient::network(const v1::NetworkRequest&, v1::NetworkResponse*,
                                std::chrono::milliseconds) {
  return kube::makeError(kube::Code::MethodNotAllowed, "this client cannot negotiate tunnels");
}

kube::Result<std::unique_ptr<RpcClient>> makeRpcClient(const ClientConfig& config) {
  if (config.endpoint.empty() || config.serverCaPem.empty() || config.serverName.empty()) {
    return kube::makeError(kube::Code::Invalid,
                           "gRPC client: endpoint, server CA and server name required");
  }
  grpc::SslCredentialsOptions opts;
  opts.pem_root_certs = config.serverCaPem;
  opts.pem_private_key = config.clientCert.keyPem;
  opts.pem_cert_chain = config.clientCert.certPem;
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride(config.serverName);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  // gRPC core uses this as the minimum time a connection attempt may take (its
  // MIN_CONNECT_TIMEOUT), not as a backoff: 100 ms aborted TLS handshakes on a loaded
  // machine and through pull mode's relay ("timed out before receiving SETTINGS frame").
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 5000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // A unique channel per client: a renewed certificate must not reuse an old subchannel.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(16 << 20);  // reflection stream replies carry whole objects
  auto dial = [endpoint = config.endpoint, creds = grpc::SslCredentials(opts), args] {
    return grpc::CreateCustomChannel(endpoint, creds, args);
  };
  std::shared_ptr<grpc::Channel> channel = dial();
  if (!channel) return kube::makeError(kube::Code::Internal, "gRPC client: no channel");
  return std::unique_ptr<RpcClient>(std::make_unique<GrpcClient>(std::move(channel), dial));
}

}  // namespace strait::peering
