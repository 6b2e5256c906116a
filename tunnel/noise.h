#pragma once
// Noise_IKpsk2 handshake of WireGuard: message creation and consumption, and the session
// keys it yields. Pure functions over a Handshake value; no I/O, no clocks (the caller
// passes the TAI64N timestamp), no locking: the owner of a Handshake serialises access.

#include <array>
#include <cstdint>
#include <optional>

#include "tunnel/crypto.h"
#include "tunnel/messages.h"

namespace strait::tunnel {

using Tai64n = std::array<uint8_t, 12>;

// TAI64N label of a wall-clock time given as unix seconds and nanoseconds.
Tai64n tai64nFromUnix(int64_t seconds, uint32_t nanoseconds);
// The current wall-clock time as TAI64N.
Tai64n tai64nNow();

// This device's static identity. mac1/cookie keys are derived from the public key.
struct StaticIdentity {
  PrivateKey privateKey;
  PublicKey publicKey{};
  bool set = false;
};

enum class HandshakeState {
  Zeroed,
  InitiationCreated,
  InitiationConsumed,
  ResponseCreated,
  ResponseConsumed,
};

// Handshake state for one peer. Owned by that peer and guarded by its lock.
struct Handshake {
  HandshakeState state = HandshakeState::Zeroed;
  HashValue hash{};
  SymmetricKey chainKey;
  SymmetricKey presharedKey;
  PrivateKey localEphemeral;
  PublicKey remoteEphemeral{};
  PublicKey remoteStatic{};
  SymmetricKey precomputedStaticStatic;  // DH(local static, remote static)
  uint32_t localIndex = 0;
  uint32_t remoteIndex = 0;
  Tai64n lastTimestamp{};  // newest accepted initiation timestamp

  // Sets the peer's static key and recomputes DH(local static, remote static). False if
  // the DH is all zeros (then the peer cannot complete a handshake).
  bool setRemoteStatic(const StaticIdentity& local, const PublicKey& remote);
  // Forgets ephemeral and chaining state (keeps remote static, psk and lastTimestamp).
  void clear();
};

// The session keys a completed handshake yields.
struct SessionKeys {
  SymmetricKey send;
  SymmetricKey receive;
  uint32_t localIndex = 0;
  uint32_t remoteIndex = 0;
  bool isInitiator = false;
};

// Initiator, step 1: fills `msg` (mac1/mac2 zero: the cookie generator adds them) and moves
// `hs` to InitiationCreated with localIndex = `senderIndex`. False if a DH fails.
bool createInitiation(const StaticIdentity& local, Handshake& hs, uint32_t senderIndex,
                      const Tai64n& now, MessageInitiation& msg);

// What a responder learns from an initiation before it knows which peer sent it.
struct ConsumedInitiation {
  PublicKey peerStatic{};
  HashValue hash{};
  SymmetricKey chainKey;
  PublicKey remoteEphemeral{};
  uint32_t remoteIndex = 0;
  Tai64n timestamp{};
};

// Responder, step 1: decrypts the initiator's static key and timestamp. nullopt if the
// message does not decrypt (wrong recipient, altered, or a DH fails). The caller then
// finds the peer, checks the timestamp and rate (acceptInitiation) and stores it.
std::optional<ConsumedInitiation> consumeInitiation(const StaticIdentity& local,
                                                    const MessageInitiation& msg);
// Stores a consumed initiation into the peer's handshake (state InitiationConsumed) if its
// timestamp is strictly newer than the last accepted one. False when it is a replay.
bool acceptInitiation(Handshake& hs, ConsumedInitiation&& in);

// Responder, step 2: needs InitiationConsumed; fills `msg` (macs zero) and moves to
// ResponseCreated with localIndex = `senderIndex`.
bool createResponse(Handshake& hs, uint32_t senderIndex, MessageResponse& msg);

// Initiator, step 2: needs InitiationCreated and msg.receiver == hs.localIndex; on success
// moves to ResponseConsumed. False (state unchanged) when the message does not verify.
bool consumeResponse(const StaticIdentity& local, Handshake& hs, const MessageResponse& msg);

// Derives the transport keys from a handshake in ResponseCreated or ResponseConsumed and
// zeroes the handshake's chaining state (state Zeroed). nullopt in any other state.
std::optional<SessionKeys> beginSession(Handshake& hs);

}  // namespace strait::tunnel
