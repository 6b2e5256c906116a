#pragma once
// Standard base64 (RFC 4648, with padding), as Kubernetes uses for []byte fields
// (Secret data, CSR request and certificate, caBundle) and continue tokens. Thread-safe.

#include <optional>
#include <string>
#include <string_view>

namespace strait::kube {

std::string base64Encode(std::string_view in);
// nullopt when `in` is not padded base64 (length not a multiple of 4, bad characters).
// Empty input decodes to empty output.
std::optional<std::string> base64Decode(std::string_view in);

}  // namespace strait::kube
