#pragma once
// Peering tokens: what `strait token` prints and `strait peer --token` consumes.
//
// Text form: "strait1." base64url(JSON payload) "." base64url(HMAC-SHA-256(key, payload)).
// The payload names the provider agent's endpoint, its cluster ID and name, the SHA-256
// fingerprint of its CA certificate (the consumer pins it), a public token ID, the one-time
// secret and the expiry. The HMAC key is the provider's token key (kept in its identity
// Secret), so only the provider can check integrity; anyone can parse the public fields.
// The provider keeps a record per token ID (a hash of the secret, the expiry, whether it was
// used) so that each token works once.
//
// Refusals say which: malformed, altered, expired, already used, unknown.
// Pure functions; safe from any thread.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "kube/status.h"
#include "peering/encoding.h"

namespace strait::peering {

inline constexpr std::string_view kTokenPrefix = "strait1.";

struct Token {
  std::string endpoint;       // host:port of the provider agent
  std::string clusterId;      // provider cluster ID
  std::string clusterName;    // provider cluster name
  std::string caFingerprint;  // lowercase hex SHA-256 of the provider CA certificate (DER)
  std::string id;             // public token ID (names the provider's record)
  SecretString secret;        // one-time secret (base64url of 32 random bytes)
  int64_t expiresUnix = 0;    // seconds since the epoch
};

// A new token with a fresh ID and secret, valid for `ttl` from `now`.
Token newToken(std::string endpoint, std::string clusterId, std::string clusterName,
               std::string caFingerprint, std::chrono::seconds ttl,
               std::chrono::system_clock::time_point now);

// The text form, integrity-protected with `key`. The result contains the secret: treat it
// as one (never log it).
SecretString encodeToken(const Token& token, const SecretString& key);

// Parses the public fields without checking integrity (the consumer cannot: it lacks the
// key). Error (Invalid) "token refused: malformed (...)" saying what is wrong.
kube::Result<Token> parseToken(std::string_view text);

// Provider side: parse, then check the HMAC with `key` (Unauthorized "token refused: altered
// ..."), then the expiry against `now` (Gone "token refused: expired ..."). Returns the token.
kube::Result<Token> verifyToken(std::string_view text, const SecretString& key,
                                std::chrono::system_clock::time_point now);

// The hash of a token secret that the provider's record keeps (hex SHA-256).
std::string tokenSecretHash(const SecretString& secret);

}  // namespace strait::peering
