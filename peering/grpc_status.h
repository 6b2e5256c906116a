#pragma once
// Private to peering/: kube::Status <-> grpc::Status in one place.
#include <grpcpp/grpcpp.h>

#include "kube/status.h"

namespace strait::peering {

inline grpc::StatusCode toGrpcCode(kube::Code c) {
  switch (c) {
    case kube::Code::Ok: return grpc::StatusCode::OK;
    case kube::Code::BadRequest:
    case kube::Code::Invalid: return grpc::StatusCode::INVALID_ARGUMENT;
    case kube::Code::Unauthorized: return grpc::StatusCode::UNAUTHENTICATED;
    case kube::Code::Forbidden: return grpc::StatusCode::PERMISSION_DENIED;
    case kube::Code::NotFound: return grpc::StatusCode::NOT_FOUND;
    case kube::Code::AlreadyExists: return grpc::StatusCode::ALREADY_EXISTS;
    case kube::Code::Conflict: return grpc::StatusCode::ABORTED;
    case kube::Code::Gone: return grpc::StatusCode::FAILED_PRECONDITION;
    case kube::Code::TooManyRequests: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case kube::Code::Unavailable: return grpc::StatusCode::UNAVAILABLE;
    case kube::Code::ServerTimeout: return grpc::StatusCode::DEADLINE_EXCEEDED;
    case kube::Code::MethodNotAllowed: return grpc::StatusCode::UNIMPLEMENTED;
    default: return grpc::StatusCode::INTERNAL;
  }
}

inline kube::Code fromGrpcCode(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::OK: return kube::Code::Ok;
    case grpc::StatusCode::INVALID_ARGUMENT: return kube::Code::Invalid;
    case grpc::StatusCode::UNAUTHENTICATED: return kube::Code::Unauthorized;
    case grpc::StatusCode::PERMISSION_DENIED: return kube::Code::Forbidden;
    case grpc::StatusCode::NOT_FOUND: return kube::Code::NotFound;
    case grpc::StatusCode::ALREADY_EXISTS: return kube::Code::AlreadyExists;
    case grpc::StatusCode::ABORTED: return kube::Code::Conflict;
    case grpc::StatusCode::FAILED_PRECONDITION: return kube::Code::Gone;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return kube::Code::TooManyRequests;
    case grpc::StatusCode::UNAVAILABLE: return kube::Code::Unavailable;
    case grpc::StatusCode::DEADLINE_EXCEEDED: return kube::Code::ServerTimeout;
    case grpc::StatusCode::UNIMPLEMENTED: return kube::Code::MethodNotAllowed;
    default: return kube::Code::Internal;
  }
}

inline grpc::Status toGrpc(const kube::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(toGrpcCode(s.code()), s.error().message);
}

inline kube::Status fromGrpc(const grpc::Status& s) {
  if (s.ok()) return kube::Status::OK();
  return kube::makeError(fromGrpcCode(s.error_code()), s.error_message());
}

}  // namespace strait::peering
