// gRPC server for the Peering and Reflection services (sync API, gRPC's thread pool).
//
// Authentication happens in two layers: the TLS handshake verifies any client certificate
// against the cluster CA (a certificate from another CA never gets a connection), and each
// method except Join refuses a call that presented no certificate. The verified CommonName
// becomes Caller::clusterId; authorization (is this peering active, is this namespace the
// caller's) is the handler's job.
#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "base/thread_annotations.h"
#include "peering/grpc_auth.h"
#include "peering/grpc_compression.h"
#include "peering/grpc_kubelet.h"
#include "peering/grpc_status.h"
#include "peering/transport.h"
#include "proto/strait/peering.grpc.pb.h"

namespace strait::peering {
namespace {

using grpcauth::authenticated;
using grpcauth::callerOf;
using grpcauth::guarded;

// The server end of Reflection.Stream. gRPC allows one reader and one writer at a time on a
// sync stream; writes are serialized here, reads are the handler's one reader thread.
class ServerEventStream final : public EventStream {
 public:
  ServerEventStream(grpc::ServerContext* ctx,
                    grpc::ServerReaderWriter<v1::ReflectionEvent, v1::ReflectionEvent>* rw)
      : ctx_(ctx), rw_(rw) {}
  bool read(v1::ReflectionEvent* e) override {
    if (cancelled_.load()) return false;
    return rw_->Read(e);
  }
  bool write(const v1::ReflectionEvent& e) override {
    base::MutexLock lock(writeMu_);
    if (cancelled_.load()) return false;
    return rw_->Write(e, reflectionWriteOptions(e));
  }
  void cancel() override {
    cancelled_ = true;
    ctx_->TryCancel();
  }

 private:
  grpc::ServerContext* ctx_;
  grpc::ServerReaderWriter<v1::ReflectionEvent, v1::ReflectionEvent>* rw_;
  base::Mutex writeMu_;
  std::atomic<bool> cancelled_{false};
};

class PeeringServiceImpl final : public v1::Peering::Service {
 public:
  explicit PeeringServiceImpl(PeeringHandler& h) : h_(h) {}
  grpc::Status Join(grpc::ServerContext* ctx, const v1::JoinRequest* req,
                    v1::JoinResponse* resp) override {
    return guarded("Join", [&] { return h_.join(callerOf(ctx), *req, resp); });
  }
  grpc::Status RenewCertificate(grpc::ServerContext* ctx, const v1::RenewRequest* req,
                                v1::RenewResponse* resp) override {
    return authenticated(ctx, "RenewCertificate",
                         [&](const Caller& c) { return h_.renewCertificate(c, *req, resp); });
  }
  grpc::Status Heartbeat(grpc::ServerContext* ctx, const v1::HeartbeatRequest* req,
                         v1::HeartbeatResponse* resp) override {
    return authenticated(ctx, "Heartbeat",
                         [&](const Caller& c) { return h_.heartbeat(c, *req, resp); });
  }
  grpc::Status Unpeer(grpc::ServerContext* ctx, const v1::UnpeerRequest* req,
                      v1::UnpeerResponse* resp) override {
    return authenticated(ctx, "Unpeer", [&](const Caller& c) { return h_.unpeer(c, *req, resp); });
  }
  grpc::Status Network(grpc::ServerContext* ctx, const v1::NetworkRequest* req,
                       v1::NetworkResponse* resp) override {
    return authenticated(ctx, "Network",
                         [&](const Caller& c) { return h_.network(c, *req, resp); });
  }

 private:
  PeeringHandler& h_;
};

class ReflectionServiceImpl final : public v1::Reflection::Service {
 public:
  explicit ReflectionServiceImpl(PeeringHandler& h) : h_(h) {}
  grpc::Status Stream(grpc::ServerContext* ctx,
                      grpc::ServerReaderWriter<v1::ReflectionEvent, v1::ReflectionEvent>* rw) override {
    return authenticated(ctx, "Stream", [&](const Caller& c) {
      // Messages to the consumer gzip-compressed when it accepts gzip (see grpc_client.cpp).
      ctx->set_compression_algorithm(GRPC_COMPRESS_GZIP);
      ServerEventStream s(ctx, rw);
      spdlog::info("event=stream_opened consumer={} peer={}", c.clusterId, c.address);
      kube::Status st = h_.stream(c, s);
      spdlog::info("event=stream_closed consumer={} status=\"{}\"", c.clusterId,
                   st.ok() ? std::string("ok") : st.error().message);
      return st;
    });
  }

 private:
  PeeringHandler& h_;
};

// Why HOST:PORT `listen` cannot be bound, found by binding a plain socket to it the way gRPC
// would (after gRPC failed); "" when that bind succeeds or the address does not resolve.
std::string whyCannotBind(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return {};
  std::string host = listen.substr(0, colon);
  std::string port = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res) != 0) {
    return {};
  }
  std::string why;
  for (addrinfo* a = res; a && why.empty(); a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0) {
      why = errno == EADDRINUSE
                ? "port " + port + " is already in use (another process listens on it)"
                : std::string(std::strerror(errno));
    }
    ::close(fd);
  }
  freeaddrinfo(res);
  return why;
}

class GrpcServer final : public RpcServer {
 public:
  explicit GrpcServer(PeeringHandler& h) : peering_(h), reflection_(h) {}
  ~GrpcServer() override { shutdown(std::chrono::milliseconds(0)); }

  kube::Status start(const ServerConfig& config) {
    grpc::SslServerCredentialsOptions opts(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
    opts.pem_root_certs = config.clientCaPem;
    opts.pem_key_cert_pairs.push_back({config.serverCert.keyPem, config.serverCert.certPem});
    grpc::ServerBuilder builder;
    // gRPC sets SO_REUSEPORT by default: a second server on a taken port would bind too and
    // take a share of the connections meant for the first. A taken port is an error instead.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.AddListeningPort(config.listen, grpc::SslServerCredentials(opts), &port_);
    builder.RegisterService(&peering_);
    builder.RegisterService(&reflection_);
    if (config.kubelet) {
      kubelet_ = newRemoteKubeletService(*config.kubelet);
      builder.RegisterService(kubelet_.get());
    }
    builder.SetMaxReceiveMessageSize(16 << 20);
    base::MutexLock lock(mu_);
    server_ = builder.BuildAndStart();
    if (!server_ || port_ == 0) {
      server_.reset();
      std::string why = whyCannotBind(config.listen);
      return kube::makeError(kube::Code::Unavailable,
                             "gRPC server could not listen on " + config.listen +
                                 (why.empty() ? std::string() : ": " + why));
    }
    return kube::Status::OK();
  }
  int port() const override { return port_; }
  void shutdown(std::chrono::milliseconds grace) override {
    base::MutexLock lock(mu_);
    if (server_) {
      server_->Shutdown(std::chrono::system_clock::now() + grace);
      server_->Wait();
      server_.reset();
    }
  }

 private:
  PeeringServiceImpl peering_;
  ReflectionServiceImpl reflection_;
  std::unique_ptr<grpc::Service> kubelet_;
  int port_ = 0;
  base::Mutex mu_;
  std::unique_ptr<grpc::Server> server_ GUARDED_BY(mu_);
};

}  // namespace

kube::Status PeeringHandler::stream(const Caller&, EventStream&) {
  return kube::makeError(kube::Code::MethodNotAllowed,
                         "this agent does not serve the reflection stream");
}

kube::Status PeeringHandler::network(const Caller&, const v1::NetworkRequest&,
                                     v1::NetworkResponse*) {
  return kube::makeError(kube::Code::MethodNotAllowed,
                         "this agent does not negotiate tunnels");
}

kube::Result<std::unique_ptr<RpcServer>> startRpcServer(const ServerConfig& config,
                                                        PeeringHandler& handler) {
  if (config.serverCert.certPem.empty() || config.serverCert.keyPem.empty() ||
      config.clientCaPem.empty()) {
    return kube::makeError(kube::Code::Invalid, "gRPC server: certificate, key and CA required");
  }
  auto server = std::make_unique<GrpcServer>(handler);
  if (kube::Status s = server->start(config); !s.ok()) return s.error();
  return std::unique_ptr<RpcServer>(std::move(server));
}

}  // namespace strait::peering
