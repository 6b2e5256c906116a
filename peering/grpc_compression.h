#pragma once
// Per-message compression of the reflection stream (both ends). The stream negotiates gzip;
// gRPC then deflates each message on its own, which for a message of a few bytes (a
// KEEPALIVE, a small STATUS_PATCH) costs a fresh zlib state (hundreds of KB allocated and
// cleared) and saves nothing. Messages below kMinCompressedBytes go uncompressed.
// Thread-safe (no state).

#include <grpcpp/grpcpp.h>

#include "proto/strait/peering.pb.h"

namespace strait::peering {

inline constexpr size_t kMinCompressedBytes = 512;

// The write options of one reflection message: no compression when it is small.
inline grpc::WriteOptions reflectionWriteOptions(const v1::ReflectionEvent& e) {
  grpc::WriteOptions o;
  if (e.ByteSizeLong() < kMinCompressedBytes) o.set_no_compression();
  return o;
}

}  // namespace strait::peering
