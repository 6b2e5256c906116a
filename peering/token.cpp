// Token encoding and verification (see token.h for the format and refusal messages).
#include "peering/token.h"

#include <nlohmann/json.hpp>

#include <ctime>

#include "kube/time.h"

namespace strait::peering {
namespace {

kube::Error malformed(const std::string& why) {
  return kube::makeError(kube::Code::Invalid, "token refused: malformed (" + why + ")");
}

struct Parts {
  std::string payloadB64;
  std::string payload;
  std::string mac;
};

kube::Result<Parts> split(std::string_view text) {
  // Tolerate surrounding whitespace from copy and paste, nothing else.
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  if (text.empty()) return malformed("empty");
  if (text.size() > 8192) return malformed("longer than 8192 characters");
  if (text.substr(0, kTokenPrefix.size()) != kTokenPrefix) {
    return malformed("does not start with \"strait1.\"");
  }
  text.remove_prefix(kTokenPrefix.size());
  size_t dot = text.find('.');
  if (dot == std::string_view::npos || text.find('.', dot + 1) != std::string_view::npos) {
    return malformed("expected strait1.<payload>.<mac>");
  }
  Parts p;
  p.payloadB64 = std::string(text.substr(0, dot));
  kube::Result<std::string> payload = base64UrlDecode(p.payloadB64, "payload");
  if (!payload.ok()) return malformed(payload.error().message);
  kube::Result<std::string> mac = base64UrlDecode(text.substr(dot + 1), "mac");
  if (!mac.ok()) return malformed(mac.error().message);
  if (mac->size() != 32) return malformed("mac is not 32 bytes");
  p.payload = std::move(*payload);
  p.mac = std::move(*mac);
  return p;
}

kube::Result<Token> decodePayload(const std::string& payload) {
  nlohmann::json j = nlohmann::json::parse(payload, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return malformed("payload is not a JSON object");
  Token t;
  auto str = [&](const char* key, std::string* out) -> bool {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
      return false;
    }
    *out = it->get<std::string>();
    return true;
  };
  auto version = j.find("v");
  if (version == j.end() || !version->is_number_integer() || version->get<int64_t>() != 1) {
    return malformed("unsupported version");
  }
  std::string secret;
  for (auto [key, out] : {std::pair{"endpoint", &t.endpoint}, std::pair{"cluster", &t.clusterId},
                          std::pair{"name", &t.clusterName}, std::pair{"ca", &t.caFingerprint},
                          std::pair{"id", &t.id}, std::pair{"secret", &secret}}) {
    if (!str(key, out)) return malformed(std::string("field \"") + key + "\" missing or empty");
  }
  t.secret = SecretString(std::move(secret));
  auto exp = j.find("exp");
  if (exp == j.end() || !exp->is_number_integer()) return malformed("field \"exp\" missing");
  t.expiresUnix = exp->get<int64_t>();
  if (t.caFingerprint.size() != 64) return malformed("CA fingerprint is not SHA-256 hex");
  if (t.endpoint.find(':') == std::string::npos) return malformed("endpoint has no port");
  return t;
}

}  // namespace

Token newToken(std::string endpoint, std::string clusterId, std::string clusterName,
               std::string caFingerprint, std::chrono::seconds ttl,
               std::chrono::system_clock::time_point now) {
  Token t;
  t.endpoint = std::move(endpoint);
  t.clusterId = std::move(clusterId);
  t.clusterName = std::move(clusterName);
  t.caFingerprint = std::move(caFingerprint);
  t.id = hexEncode(randomBytes(8));
  t.secret = SecretString(base64UrlEncode(randomBytes(32)));
  t.expiresUnix =
      std::chrono::duration_cast<std::chrono::seconds>((now + ttl).time_since_epoch()).count();
  return t;
}

SecretString encodeToken(const Token& token, const SecretString& key) {
  nlohmann::json j = {{"v", 1},
                      {"endpoint", token.endpoint},
                      {"cluster", token.clusterId},
                      {"name", token.clusterName},
                      {"ca", token.caFingerprint},
                      {"id", token.id},
                      {"secret", token.secret.reveal()},
                      {"exp", token.expiresUnix}};
  SecretString payload(j.dump());
  SecretString payloadB64(base64UrlEncode(payload.reveal()));
  std::string mac = hmacSha256(key.reveal(), payloadB64.reveal());
  return SecretString(std::string(kTokenPrefix) + payloadB64.reveal() + "." +
                      base64UrlEncode(mac));
}

kube::Result<Token> parseToken(std::string_view text) {
  kube::Result<Parts> parts = split(text);
  if (!parts.ok()) return parts.error();
  SecretString payload(std::move(parts->payload));
  return decodePayload(payload.reveal());
}

kube::Result<Token> verifyToken(std::string_view text, const SecretString& key,
                                std::chrono::system_clock::time_point now) {
  kube::Result<Parts> parts = split(text);
  if (!parts.ok()) return parts.error();
  SecretString payload(std::move(parts->payload));
  std::string expected = hmacSha256(key.reveal(), parts->payloadB64);
  if (!constantTimeEquals(expected, parts->mac)) {
    return kube::makeError(kube::Code::Unauthorized,
                           "token refused: altered (integrity check failed; the token was "
                           "changed or was not issued by this cluster)");
  }
  kube::Result<Token> token = decodePayload(payload.reveal());
  if (!token.ok()) return token.error();
  int64_t nowUnix =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  if (token->expiresUnix <= nowUnix) {
    return kube::makeError(kube::Code::Gone, "token refused: expired at " +
                                                 kube::rfc3339FromUnix(token->expiresUnix) +
                                                 " (issue a new one with `strait token`)");
  }
  return token;
}

std::string tokenSecretHash(const SecretString& secret) { return sha256Hex(secret.reveal()); }

}  // namespace strait::peering
