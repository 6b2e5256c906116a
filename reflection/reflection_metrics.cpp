#include "reflection/reflection_metrics.h"

#include <mutex>

#include "reflection/stream_messages.h"

namespace strait::reflection {

namespace {

std::mutex g_mu;
std::shared_ptr<ReflectionMetrics> g_sink;  // guarded by g_mu

// The wire name when it is one of the vocabulary's, else "UNKNOWN" (a peer's type string
// never becomes a label value of its own).
std::string_view knownTypeName(const std::string& wire) {
  // Every enumerator (streamMessageTypeName says "UNKNOWN" past the last one).
  for (int t = 0; t < 64; ++t) {
    const char* name = streamMessageTypeName(static_cast<StreamMessageType>(t));
    if (wire == name) return name;
  }
  return "UNKNOWN";
}

}  // namespace

const char* streamSideName(StreamSide s) {
  return s == StreamSide::Consumer ? "consumer" : "provider";
}

const char* streamDirectionName(StreamDirection d) {
  return d == StreamDirection::Sent ? "sent" : "received";
}

const char* streamErrorName(StreamError e) {
  switch (e) {
    case StreamError::Dial:
      return "dial";
    case StreamError::Broken:
      return "broken";
    case StreamError::Silent:
      return "silent";
    case StreamError::BadMessage:
      return "bad_message";
    case StreamError::RequestFailed:
      return "request_failed";
  }
  return "unknown";
}

const char* workResultName(WorkResult r) {
  switch (r) {
    case WorkResult::Done:
      return "done";
    case WorkResult::RequeueAfter:
      return "requeue";
    case WorkResult::Retry:
      return "retry";
  }
  return "unknown";
}

void setReflectionMetrics(std::shared_ptr<ReflectionMetrics> sink) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_sink = std::move(sink);
}

std::shared_ptr<ReflectionMetrics> reflectionMetrics() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_sink;
}

void countStreamMessage(StreamSide side, StreamDirection direction,
                        const strait::v1::ReflectionEvent& e) {
  if (std::shared_ptr<ReflectionMetrics> m = reflectionMetrics()) {
    m->streamMessage(side, direction, knownTypeName(e.type()), e.ByteSizeLong());
  }
}

void countStreamError(StreamSide side, StreamError error) {
  if (std::shared_ptr<ReflectionMetrics> m = reflectionMetrics()) m->streamError(side, error);
}

void countStreamReconnect() {
  if (std::shared_ptr<ReflectionMetrics> m = reflectionMetrics()) m->streamReconnected();
}

void countWork(const std::string& kind, WorkResult result,
               std::chrono::steady_clock::time_point began) {
  if (std::shared_ptr<ReflectionMetrics> m = reflectionMetrics()) {
    m->workHandled(kind, result,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  }
}

}  // namespace strait::reflection
