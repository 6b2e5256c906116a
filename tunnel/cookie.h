#pragma once
// WireGuard's DoS cookies: mac1 (proves knowledge of the receiver's public key), mac2 (proves
// the sender can receive at its source address), and cookie replies encrypted with
// XChaCha20-Poly1305.
//
// CookieChecker is the receiving side (one per device); CookieGenerator the sending side
// (one per peer). Both are thread-safe (an internal mutex); times are passed in.

#include <chrono>
#include <mutex>
#include <span>

#include "base/thread_annotations.h"
#include "tunnel/crypto.h"
#include "tunnel/messages.h"

namespace strait::tunnel {

using SteadyTime = std::chrono::steady_clock::time_point;

// Checks mac1/mac2 of incoming handshake messages and answers with cookie replies.
class CookieChecker {
 public:
  // Derives the mac1 and cookie-encryption keys from this device's public key. Call again
  // when the private key changes.
  void init(const PublicKey& localPublic);
  // True when mac1 (the 16 bytes at size-32) is MAC(HASH(LABEL_MAC1 || our pub), msg[:size-32]).
  bool checkMac1(Bytes msg) const;
  // True when mac2 (the last 16 bytes) is valid for a cookie issued to `source` (address
  // bytes || port) within the last two minutes.
  bool checkMac2(Bytes msg, Bytes source, SteadyTime now);
  // Builds a cookie reply to the handshake message `msg` for `source`.
  MessageCookieReply createReply(Bytes msg, uint32_t receiverIndex, Bytes source, SteadyTime now);

 private:
  HashValue cookieFor(Bytes source, SteadyTime now) REQUIRES(mu_);

  mutable base::Mutex mu_;
  HashValue mac1Key_ GUARDED_BY(mu_){};
  HashValue encryptionKey_ GUARDED_BY(mu_){};
  SymmetricKey secret_ GUARDED_BY(mu_);
  SteadyTime secretSetAt_ GUARDED_BY(mu_){};
  bool secretSet_ GUARDED_BY(mu_) = false;
};

// Adds mac1/mac2 to our handshake messages for one peer and consumes its cookie replies.
class CookieGenerator {
 public:
  void init(const PublicKey& peerPublic);
  // Writes mac1 and (if a fresh cookie is held) mac2 into the last 32 bytes of `msg`.
  void addMacs(MutableBytes msg, SteadyTime now);
  // Decrypts a cookie reply answering our last mac1; false if it does not verify.
  bool consumeReply(const MessageCookieReply& reply, SteadyTime now);

 private:
  base::Mutex mu_;
  HashValue mac1Key_ GUARDED_BY(mu_){};
  HashValue decryptionKey_ GUARDED_BY(mu_){};
  MacValue lastMac1_ GUARDED_BY(mu_){};
  bool hasLastMac1_ GUARDED_BY(mu_) = false;
  SecretBytes<16> cookie_ GUARDED_BY(mu_);
  SteadyTime cookieSetAt_ GUARDED_BY(mu_){};
  bool hasCookie_ GUARDED_BY(mu_) = false;
};

}  // namespace strait::tunnel
