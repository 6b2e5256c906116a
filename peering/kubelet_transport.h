#pragma once
// The RemoteKubelet service (proto/strait/kubelet.proto) behind small interfaces, so that
// only grpc_kubelet.cpp includes gRPC headers. Served by the agent's gRPC server next to
// Peering and Reflection (same mutual TLS: a call without a client certificate of the
// cluster's CA is refused before the handler runs), called by the consumer's virtual
// kubelets.

#include <chrono>
#include <functional>
#include <memory>
#include <string_view>

#include "kube/status.h"
#include "peering/transport.h"
#include "proto/strait/kubelet.pb.h"

namespace strait::peering {

// One end of a bidirectional call (Exec, Attach: ExecFrame; PortForward: PortForwardFrame).
// read() from one thread; write() from another (one writer at a time); cancel() from any
// thread makes a blocked read() return false.
template <class Frame>
class FrameStream {
 public:
  virtual ~FrameStream() = default;
  // Next frame; false at the end of the stream or on failure.
  virtual bool read(Frame* frame) = 0;
  // Sends one frame; false when the stream is broken.
  virtual bool write(const Frame& frame) = 0;
  // Client side: no more frames will be written (half-close). No-op on the server side.
  virtual void writesDone() = 0;
  // Ends the call.
  virtual void cancel() = 0;
  // Server side: true once the client cancelled or went away. Client side: false.
  virtual bool cancelled() = 0;
  // Client side, after read() returned false: how the call ended (OK, or the provider's
  // refusal: NotFound, Forbidden, BadRequest...). Blocks until the call is over; call once.
  // Server side: OK.
  virtual kube::Status finish() = 0;
};
using ExecStream = FrameStream<v1::ExecFrame>;
using PortForwardStream = FrameStream<v1::PortForwardFrame>;

// Implemented by the provider side (reflection/remote_kubelet.h). Called from gRPC's thread
// pool, concurrently: implementations must be thread-safe. `caller` is authenticated (its
// certificate CommonName); authorization is the handler's job.
class KubeletHandler {
 public:
  virtual ~KubeletHandler() = default;
  // Streams the log: `send` for each piece of text, false when the caller has gone (stop
  // then). `cancelled` turns true when the caller cancelled. Returns when the log ends.
  virtual kube::Status logs(const Caller& caller, const v1::LogsRequest& req,
                            const std::function<bool(std::string_view)>& send,
                            const std::function<bool()>& cancelled) = 0;
  // Serves one exec: reads the start frame, relays frames both ways, writes the exit frame.
  virtual kube::Status exec(const Caller& caller, ExecStream& stream) = 0;
  // Serves one attach: as exec, with a start frame that names no command.
  virtual kube::Status attach(const Caller& caller, ExecStream& stream) = 0;
  // Serves one forwarded connection: reads the start frame, writes `opened` once connected,
  // then relays data both ways. A refusal or a failed connection is the returned error.
  virtual kube::Status portForward(const Caller& caller, PortForwardStream& stream) = 0;
  virtual kube::Status listPods(const Caller& caller, v1::ListPodsResponse* resp) = 0;
  virtual kube::Status statsSummary(const Caller& caller, v1::StatsSummaryResponse* resp) = 0;
};

// The consumer's calls to one provider's RemoteKubelet, on the channel of an RpcClient
// (RpcClient::kubelet()). Thread-safe.
class KubeletClient {
 public:
  virtual ~KubeletClient() = default;
  // Streams a log into `onData` until it ends, onData returns false, or `cancelled()`
  // (polled a few times a second) turns true. Errors as RpcClient's; a refusal carries the
  // provider's code and message (NotFound, Forbidden, BadRequest...).
  virtual kube::Status logs(const v1::LogsRequest& req,
                            const std::function<bool(std::string_view)>& onData,
                            const std::function<bool()>& cancelled) = 0;
  // Opens an Exec call (the caller writes the start frame first). The stream is not bound
  // by a deadline; cancel() ends it.
  virtual kube::Result<std::unique_ptr<ExecStream>> exec() = 0;
  // Opens an Attach call, as exec().
  virtual kube::Result<std::unique_ptr<ExecStream>> attach() = 0;
  // Opens a PortForward call (the caller writes the start frame first, then waits for
  // `opened`). Not bound by a deadline; cancel() ends it.
  virtual kube::Result<std::unique_ptr<PortForwardStream>> portForward() = 0;
  virtual kube::Status listPods(v1::ListPodsResponse* resp, std::chrono::milliseconds timeout) = 0;
  virtual kube::Status statsSummary(v1::StatsSummaryResponse* resp,
                                    std::chrono::milliseconds timeout) = 0;
};

}  // namespace strait::peering
