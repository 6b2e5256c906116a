#pragma once
// Name and label validation with Kubernetes' exact rules and messages
// (apimachinery pkg/util/validation and pkg/api/validate/content).
// Each function returns an empty vector when the value is valid, otherwise one message per
// problem, worded as upstream so clients see the same text. Pure functions; thread-safe.
// Implemented by hand (no std::regex), so long or hostile input cannot blow the stack.

#include <string>
#include <string_view>
#include <vector>

namespace strait::kube {

// At most 253 characters of lower-case RFC 1123 labels joined by '.' (object names).
std::vector<std::string> validateDns1123Subdomain(std::string_view value);
// At most 63 characters of [a-z0-9-], starting and ending alphanumeric (namespace names).
std::vector<std::string> validateDns1123Label(std::string_view value);
// At most 63 characters of [a-z0-9-], starting with a letter (service names).
std::vector<std::string> validateDns1035Label(std::string_view value);
// [prefix/]name: prefix a DNS-1123 subdomain, name <= 63 of [A-Za-z0-9_.-] starting and ending
// alphanumeric. Used for label and annotation keys.
std::vector<std::string> validateLabelKey(std::string_view value);
// Empty, or <= 63 of [A-Za-z0-9_.-] starting and ending alphanumeric.
std::vector<std::string> validateLabelValue(std::string_view value);
// Same rules as a label key (upstream IsQualifiedName is IsLabelKey).
std::vector<std::string> validateQualifiedName(std::string_view value);

// Message helpers, worded as upstream.
std::string maxLenError(size_t length);  // "must be no more than N characters"
std::string regexError(std::string_view msg, std::string_view regex,
                       const std::vector<std::string>& examples);
std::string emptyError();  // "must be non-empty"

}  // namespace strait::kube
