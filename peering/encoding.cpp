// Byte helpers on OpenSSL (EVP base64, RAND_bytes, SHA-256, HMAC).
#include "peering/encoding.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <cstdlib>

namespace strait::peering {

SecretString& SecretString::operator=(const SecretString& other) {
  if (this != &other) {
    wipe();
    value_ = other.value_;
  }
  return *this;
}
SecretString::SecretString(SecretString&& other) noexcept : value_(other.value_) { other.wipe(); }
SecretString& SecretString::operator=(SecretString&& other) noexcept {
  if (this != &other) {
    wipe();
    value_ = other.value_;
    other.wipe();
  }
  return *this;
}
SecretString::~SecretString() { wipe(); }
void SecretString::wipe() {
  if (!value_.empty()) OPENSSL_cleanse(value_.data(), value_.size());
  value_.clear();
}

std::string base64Encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

kube::Result<std::string> base64Decode(std::string_view text, const std::string& what) {
  std::string clean;
  clean.reserve(text.size() + 3);
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/' || c == '=';
    if (!ok) return kube::makeError(kube::Code::Invalid, what + ": not base64");
    clean += c;
  }
  size_t pad = 0;
  while (!clean.empty() && clean.back() == '=') {
    clean.pop_back();
    ++pad;
  }
  if (pad > 2 || clean.size() % 4 == 1) {
    return kube::makeError(kube::Code::Invalid, what + ": not base64 (bad length)");
  }
  size_t unpadded = clean.size();
  while (clean.size() % 4 != 0) clean += '=';
  std::string out(clean.size() / 4 * 3 + 1, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(clean.data()),
                          static_cast<int>(clean.size()));
  if (n < 0) return kube::makeError(kube::Code::Invalid, what + ": not base64");
  out.resize(unpadded * 3 / 4);  // EVP_DecodeBlock counts padding as zero bytes
  return out;
}

std::string base64UrlEncode(std::string_view bytes) {
  std::string s = base64Encode(bytes);
  while (!s.empty() && s.back() == '=') s.pop_back();
  for (char& c : s) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return s;
}

kube::Result<std::string> base64UrlDecode(std::string_view text, const std::string& what) {
  std::string s(text);
  for (char& c : s) {
    if (c == '-') {
      c = '+';
    } else if (c == '_') {
      c = '/';
    } else if (c == '+' || c == '/' || c == '=') {
      return kube::makeError(kube::Code::Invalid, what + ": not base64url");
    }
  }
  return base64Decode(s, what);
}

std::string hexEncode(std::string_view bytes) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

std::string randomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    std::abort();  // no safe way to continue without randomness
  }
  return out;
}

std::string sha256Hex(std::string_view data) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), md);
  return hexEncode(std::string_view(reinterpret_cast<char*>(md), sizeof(md)));
}

std::string hmacSha256(std::string_view key, std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), md, &len);
  return std::string(reinterpret_cast<char*>(md), len);
}

bool constantTimeEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace strait::peering
