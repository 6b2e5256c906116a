#pragma once
// What reflection counts for the process's metrics, without knowing how they are exported:
// the messages and bytes of the reflection stream each way, the stream's errors and
// reconnections, how long each reflector work item took and how it ended, the depth of each
// work queue and the Pods bound to each virtual node. cmd/agent_metrics.cpp implements
// ReflectionMetrics on Prometheus series and installs it with setReflectionMetrics();
// without one installed every count* call below does nothing.
//
// The sink is process-wide (like a Prometheus client's default registry): the stream
// client, the stream server and the reflector are made in many places and their counts are
// the process's, so they report here rather than through every options struct.
//
// Thread-safe: every function may be called from any thread.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "proto/strait/peering.pb.h"

namespace strait::reflection {

// Which end of the reflection stream this process is.
enum class StreamSide { Consumer, Provider };
enum class StreamDirection { Sent, Received };
// Why a stream counts an error.
enum class StreamError {
  Dial,           // consumer: the stream could not be opened
  Broken,         // an open stream ended without this side asking for it
  Silent,         // nothing arrived for deadAfter: this side ended the stream
  BadMessage,     // a message that did not decode (dropped, or answered with an error)
  RequestFailed,  // an APPLY, DELETE or GET answered with an error
};
// How one handle(key) ended (HandleResult::Kind).
enum class WorkResult { Done, RequeueAfter, Retry };

const char* streamSideName(StreamSide s);            // "consumer", "provider"
const char* streamDirectionName(StreamDirection d);  // "sent", "received"
const char* streamErrorName(StreamError e);          // "dial", "broken", "silent", ...
const char* workResultName(WorkResult r);            // "done", "requeue", "retry"

// The receiving end. Implementations must be thread-safe and must not block: they are
// called on the stream's reader and writer threads and on the reflector's workers.
class ReflectionMetrics {
 public:
  virtual ~ReflectionMetrics() = default;
  // One message of `type` (its wire name; "UNKNOWN" for a name outside the vocabulary) of
  // `bytes` (serialized size).
  virtual void streamMessage(StreamSide side, StreamDirection direction, std::string_view type,
                             size_t bytes) = 0;
  virtual void streamError(StreamSide side, StreamError error) = 0;
  // The consumer opened a stream again after one ended.
  virtual void streamReconnected() = 0;
  // One handle(key) of reflector kind `kind` took `seconds` and ended with `result`.
  virtual void workHandled(const std::string& kind, WorkResult result, double seconds) = 0;
  // A work queue that exists until queueRemoved(reflector, kind): `depth` is read when the
  // metrics are exposed and must stay callable until queueRemoved returns.
  virtual void queueAdded(const std::string& reflector, const std::string& kind,
                          std::function<size_t()> depth) = 0;
  virtual void queueRemoved(const std::string& reflector, const std::string& kind) = 0;
  // The Pods bound to virtual node `node` (offloaded through it), read like queueAdded's
  // depth until podsRemoved(node) returns.
  virtual void podsAdded(const std::string& node, std::function<size_t()> count) = 0;
  virtual void podsRemoved(const std::string& node) = 0;
};

// Installs `sink` for the whole process (null: counting stops). Callers already inside a
// count* call finish with the sink they started with, which the shared_ptr keeps alive.
void setReflectionMetrics(std::shared_ptr<ReflectionMetrics> sink);
// The installed sink, or null.
std::shared_ptr<ReflectionMetrics> reflectionMetrics();

// Shorthands over the installed sink (no-ops without one).
void countStreamMessage(StreamSide side, StreamDirection direction,
                        const strait::v1::ReflectionEvent& e);
void countStreamError(StreamSide side, StreamError error);
void countStreamReconnect();

// One handle(key) of `kind` that began at `began` ended now with `result`.
void countWork(const std::string& kind, WorkResult result,
               std::chrono::steady_clock::time_point began);

}  // namespace strait::reflection
