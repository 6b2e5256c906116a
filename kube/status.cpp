#include "kube/status.h"

namespace strait::kube {

int httpCode(Code c) {
  switch (c) {
    case Code::Ok: return 200;
    case Code::BadRequest: return 400;
    case Code::Invalid: return 422;
    case Code::Unauthorized: return 401;
    case Code::Forbidden: return 403;
    case Code::NotFound: return 404;
    case Code::MethodNotAllowed: return 405;
    case Code::NotAcceptable: return 406;
    case Code::AlreadyExists: return 409;
    case Code::Conflict: return 409;
    case Code::Gone: return 410;
    case Code::RequestEntityTooLarge: return 413;
    case Code::UnsupportedMediaType: return 415;
    case Code::TooManyRequests: return 429;
    case Code::Internal: return 500;
    case Code::ServerTimeout: return 504;
    case Code::Unavailable: return 503;
  }
  return 500;
}

const char* reasonOf(Code c) {
  switch (c) {
    case Code::Ok: return "";
    case Code::BadRequest: return "BadRequest";
    case Code::Invalid: return "Invalid";
    case Code::Unauthorized: return "Unauthorized";
    case Code::Forbidden: return "Forbidden";
    case Code::NotFound: return "NotFound";
    case Code::MethodNotAllowed: return "MethodNotAllowed";
    case Code::NotAcceptable: return "NotAcceptable";
    case Code::AlreadyExists: return "AlreadyExists";
    case Code::Conflict: return "Conflict";
    case Code::Gone: return "Expired";
    case Code::RequestEntityTooLarge: return "RequestEntityTooLarge";
    case Code::UnsupportedMediaType: return "UnsupportedMediaType";
    case Code::TooManyRequests: return "TooManyRequests";
    case Code::Internal: return "InternalError";
    case Code::ServerTimeout: return "Timeout";
    case Code::Unavailable: return "ServiceUnavailable";
  }
  return "InternalError";
}

Code codeFromReason(const std::string& reason, int http) {
  static const Code all[] = {Code::BadRequest, Code::Invalid, Code::Unauthorized,
                             Code::Forbidden, Code::NotFound, Code::MethodNotAllowed,
                             Code::NotAcceptable, Code::AlreadyExists, Code::Conflict,
                             Code::Gone, Code::RequestEntityTooLarge,
                             Code::UnsupportedMediaType, Code::TooManyRequests,
                             Code::Internal, Code::ServerTimeout, Code::Unavailable};
  for (Code c : all) {
    if (reason == reasonOf(c)) return c;
  }
  if (reason == "Gone") return Code::Gone;
  for (Code c : all) {
    if (httpCode(c) == http) return c;
  }
  return http >= 200 && http < 300 ? Code::Ok : Code::Internal;
}

}  // namespace strait::kube
