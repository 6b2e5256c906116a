#pragma once
// Private to peering/ (grpc_*.cpp only): who called, and the guards every RPC runs behind —
// an escaped exception becomes INTERNAL, a call without a verified client certificate is
// refused with UNAUTHENTICATED before the handler runs.
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <string>

#include "peering/grpc_status.h"
#include "peering/transport.h"

namespace strait::peering::grpcauth {

// The caller's verified certificate CommonName (empty without one) and address.
inline Caller callerOf(const grpc::ServerContext* ctx) {
  Caller c;
  c.address = ctx->peer();
  std::shared_ptr<const grpc::AuthContext> auth = ctx->auth_context();
  if (auth && auth->IsPeerAuthenticated()) {
    std::vector<grpc::string_ref> cn = auth->FindPropertyValues("x509_common_name");
    if (!cn.empty()) c.clusterId.assign(cn.front().data(), cn.front().size());
  }
  return c;
}

// Runs `fn`, turning an escaped exception into INTERNAL.
template <class Fn>
grpc::Status guarded(const char* method, Fn&& fn) {
  try {
    return toGrpc(fn());
  } catch (const std::exception& e) {
    spdlog::error("event=rpc_exception method={} error=\"{}\"", method, e.what());
    return grpc::Status(grpc::StatusCode::INTERNAL, std::string(method) + ": internal error");
  }
}

// Runs `fn(caller)` for a caller with a verified client certificate, or refuses.
template <class Fn>
grpc::Status authenticated(const grpc::ServerContext* ctx, const char* method, Fn&& fn) {
  Caller caller = callerOf(ctx);
  if (caller.clusterId.empty()) {
    spdlog::warn("event=rpc_refused method={} peer={} reason=no_client_certificate", method,
                 caller.address);
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        std::string(method) + " requires a client certificate from this "
                                              "cluster's CA (peer first)");
  }
  return guarded(method, [&] { return fn(caller); });
}

}  // namespace strait::peering::grpcauth
