#pragma once
// Small byte helpers for peering: base64 (standard and URL-safe), hex, randomness, SHA-256
// and HMAC-SHA-256 (OpenSSL), and SecretString, a string that wipes itself.
// All functions are pure or use OpenSSL's thread-safe RNG: safe from any thread.

#include <string>
#include <string_view>

#include "kube/status.h"

namespace strait::peering {

// A secret value (token secret, private key PEM, HMAC key). Wiped with OPENSSL_cleanse when
// destroyed or overwritten. Deliberately has no stream operator: never log it.
class SecretString {
 public:
  SecretString() = default;
  explicit SecretString(std::string value) : value_(std::move(value)) {}
  SecretString(const SecretString& other) : value_(other.value_) {}
  SecretString& operator=(const SecretString& other);
  SecretString(SecretString&& other) noexcept;
  SecretString& operator=(SecretString&& other) noexcept;
  ~SecretString();
  const std::string& reveal() const { return value_; }
  bool empty() const { return value_.empty(); }

 private:
  void wipe();
  std::string value_;
};

std::string base64Encode(std::string_view bytes);
// Error (Invalid) naming `what` if the text is not base64 (padding optional, whitespace skipped).
kube::Result<std::string> base64Decode(std::string_view text, const std::string& what);
// RFC 4648 §5 without padding.
std::string base64UrlEncode(std::string_view bytes);
kube::Result<std::string> base64UrlDecode(std::string_view text, const std::string& what);

std::string hexEncode(std::string_view bytes);
// `n` bytes from OpenSSL's CSPRNG. Aborts the process if the RNG fails (cannot continue safely).
std::string randomBytes(size_t n);
// Lowercase hex SHA-256.
std::string sha256Hex(std::string_view data);
// Raw 32-byte HMAC-SHA-256.
std::string hmacSha256(std::string_view key, std::string_view data);
// Constant-time equality.
bool constantTimeEquals(std::string_view a, std::string_view b);

}  // namespace strait::peering
