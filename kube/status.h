#pragma once
// Error values for the Kubernetes machinery: the shared ones of base/status.h under their
// kube:: names, and the mapping of their codes to HTTP statuses and Kubernetes Status reasons.

#include <string>

#include "base/status.h"

namespace strait::kube {

using base::Cause;
using base::Code;
using base::Error;
using base::isAlreadyExists;
using base::isConflict;
using base::isGone;
using base::isNotFound;
using base::makeError;
using base::Result;
using base::Status;

// HTTP status code and Kubernetes reason string for a code.
int httpCode(Code c);
const char* reasonOf(Code c);
// Inverse of httpCode/reason, for clients reading a Status object.
Code codeFromReason(const std::string& reason, int http);

}  // namespace strait::kube
