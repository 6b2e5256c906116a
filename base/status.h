#pragma once
// Error values shared by every component: a code, a message saying what and where, and
// Result<T> / Status to return them instead of throwing. The codes mirror Kubernetes Status
// reasons so that controllers branch on them and kube/status.h maps them to HTTP in one place;
// components that know nothing of Kubernetes (tunnel/) use them too. Header-only.

#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace strait::base {

enum class Code {
  Ok,
  BadRequest,        // 400 BadRequest
  Invalid,           // 422 Invalid
  Unauthorized,      // 401
  Forbidden,         // 403
  NotFound,          // 404
  MethodNotAllowed,  // 405
  NotAcceptable,     // 406
  AlreadyExists,     // 409 AlreadyExists
  Conflict,          // 409 Conflict
  Gone,              // 410 Expired / Gone
  RequestEntityTooLarge,  // 413
  UnsupportedMediaType,   // 415
  TooManyRequests,   // 429
  Internal,          // 500 InternalError
  ServerTimeout,     // 504 Timeout
  Unavailable,       // 503 ServiceUnavailable
};

// One reason an object was refused (Status.details.causes), e.g. FieldValueInvalid on
// metadata.name.
struct Cause {
  std::string reason;   // FieldValueInvalid, FieldValueRequired, FieldValueDuplicate, ...
  std::string field;    // "metadata.name"
  std::string message;  // what is wrong with it
};

// An error: a code plus a human-readable message saying what and where.
struct Error {
  Code code = Code::Internal;
  std::string message;
  // Optional extra detail for Status.details (e.g. field causes); may be empty.
  std::string field;
  std::string name;  // details.name: the object concerned, when known
  std::string kind;  // details.kind: its kind (Invalid) or resource (NotFound, Conflict)
  std::vector<Cause> causes;
};

inline Error makeError(Code c, std::string msg, std::string field = {}) {
  Error e;
  e.code = c;
  e.message = std::move(msg);
  e.field = std::move(field);
  return e;
}

// Result<T>: either a value or an Error (a minimal std::expected for C++20).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T v) : v_(std::move(v)) {}                 // NOLINT: implicit by design
  Result(Error e) : v_(std::move(e)) {}             // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  Code code() const { return ok() ? Code::Ok : error().code; }

 private:
  std::variant<T, Error> v_;
};

// Status: success or an Error, for operations with no value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : e_(std::move(e)) {}  // NOLINT
  static Status OK() { return Status(); }
  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *e_; }
  Code code() const { return ok() ? Code::Ok : e_->code; }

 private:
  std::optional<Error> e_;
};

inline bool isNotFound(const Error& e) { return e.code == Code::NotFound; }
inline bool isConflict(const Error& e) { return e.code == Code::Conflict; }
inline bool isAlreadyExists(const Error& e) { return e.code == Code::AlreadyExists; }
inline bool isGone(const Error& e) { return e.code == Code::Gone; }

}  // namespace strait::base
