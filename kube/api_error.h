#pragma once
// Turning API server error responses into typed kube::Error values: the Status body's reason
// and code select the Code (NotFound, AlreadyExists, Conflict, Gone, Forbidden, Unauthorized,
// Invalid with its causes, TooManyRequests, ServerTimeout...), its message, details.name,
// details.kind and details.causes are kept. Pure functions; thread-safe.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kube/status.h"

namespace strait::kube {

// From a parsed Status object (which may be malformed: then the HTTP code decides).
Error errorFromStatus(int httpStatus, const nlohmann::json& status);
// From a raw response: the body is parsed as a Status when it is one; otherwise the error
// says "the server responded with HTTP N" and quotes the start of the body.
Error errorFromResponse(int httpStatus, std::string_view body);

// Seconds to wait from a Retry-After header value (delta-seconds only, as the API server
// sends); nullopt when absent or malformed. Capped at one hour.
std::optional<int> parseRetryAfter(std::string_view value);

inline bool isForbidden(const Error& e) { return e.code == Code::Forbidden; }
inline bool isUnauthorized(const Error& e) { return e.code == Code::Unauthorized; }
inline bool isInvalid(const Error& e) { return e.code == Code::Invalid; }
inline bool isTooManyRequests(const Error& e) { return e.code == Code::TooManyRequests; }
inline bool isServerTimeout(const Error& e) { return e.code == Code::ServerTimeout; }
// A Conflict from a stale resourceVersion: optimistic concurrency ("the object has been
// modified; please apply your changes to the latest version and try again", the API server's
// words), which a retry on the current version resolves. Not a conflict between owners.
inline bool isStaleVersionConflict(const Error& e) {
  return e.code == Code::Conflict &&
         e.message.find("the object has been modified") != std::string::npos;
}

}  // namespace strait::kube
