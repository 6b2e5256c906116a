#pragma once
// Watch events and the decoder for the API server's watch stream: newline-delimited JSON
// objects {"type": ..., "object": ...} arriving in arbitrary chunks (an event may be split
// across chunks, a chunk may hold many events).
//
// WatchDecoder is not thread-safe (one per stream).

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kube/status.h"

namespace strait::kube {

enum class WatchEventType { Added, Modified, Deleted, Bookmark, Error };

// "ADDED", "MODIFIED", ...
const char* watchEventTypeName(WatchEventType t);

struct WatchEvent {
  WatchEventType type = WatchEventType::Added;
  nlohmann::json object;  // the object; a Status for Error events

  // object.metadata.resourceVersion, or "" when absent.
  std::string resourceVersion() const;
  // For Error events: the Status as an Error (Code::Gone for 410 Expired). Internal for
  // other event types.
  Error error() const;
};

// Parses one line (one JSON document). BadRequest when it is not an object with a known
// "type" and an object "object" (bookmarks and errors included).
Result<WatchEvent> parseWatchEvent(std::string_view line);

class WatchDecoder {
 public:
  // Lines longer than maxLineBytes are errors (protects memory against a hostile server).
  explicit WatchDecoder(size_t maxLineBytes = 64 * 1024 * 1024) : maxLine_(maxLineBytes) {}

  // Consumes `chunk`; every complete event is appended to `out`. Blank lines are skipped.
  // On a malformed or over-long line returns BadRequest naming the byte offset in the
  // stream; the decoder then stays failed (further calls return the same error). Events
  // decoded before the bad line are still appended.
  Status feed(std::string_view chunk, std::vector<WatchEvent>& out);
  // End of stream: BadRequest if an incomplete event is left over, else OK.
  Status finish() const;
  // Bytes held for an incomplete line.
  size_t buffered() const { return partial_.size(); }

 private:
  size_t maxLine_;
  std::string partial_;
  size_t consumed_ = 0;  // stream offset of partial_[0]
  Status failed_;
};

}  // namespace strait::kube
