#include "tunnel/noise.h"

#include <cstring>
#include <ctime>

namespace strait::tunnel {

namespace {

Bytes str(const char* s) { return Bytes(reinterpret_cast<const uint8_t*>(s), std::strlen(s)); }

// Ci = HASH(CONSTRUCTION), Hi = HASH(Ci || IDENTIFIER), computed once.
const HashValue& initialChainKey() {
  static const HashValue ci = hash({str(kConstruction)});
  return ci;
}
const HashValue& initialHash() {
  static const HashValue hi = hash({initialChainKey(), str(kIdentifier)});
  return hi;
}

void mixHash(HashValue& h, Bytes data) { h = hash({h, data}); }

// C = KDF1(C, data)
void mixKey(SymmetricKey& c, Bytes data) {
  SymmetricKey out;
  kdf(c.bytes(), data, {&out});
  c = out;
}

// (C, k) = KDF2(C, DH result)
void mixKeyAndKey(SymmetricKey& c, Bytes data, SymmetricKey& k) {
  SymmetricKey nextC;
  kdf(c.bytes(), data, {&nextC, &k});
  c = nextC;
}

}  // namespace

Tai64n tai64nFromUnix(int64_t seconds, uint32_t nanoseconds) {
  Tai64n t{};
  uint64_t label = (1ull << 62) + 10 + static_cast<uint64_t>(seconds);
  for (int i = 0; i < 8; ++i) t[i] = static_cast<uint8_t>(label >> (56 - 8 * i));
  for (int i = 0; i < 4; ++i) t[8 + i] = static_cast<uint8_t>(nanoseconds >> (24 - 8 * i));
  return t;
}

Tai64n tai64nNow() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return tai64nFromUnix(ts.tv_sec, static_cast<uint32_t>(ts.tv_nsec));
}

bool Handshake::setRemoteStatic(const StaticIdentity& local, const PublicKey& remote) {
  remoteStatic = remote;
  if (!local.set) {
    precomputedStaticStatic.wipe();
    return false;
  }
  return x25519(local.privateKey, remote, precomputedStaticStatic);
}

void Handshake::clear() {
  state = HandshakeState::Zeroed;
  wipeMemory(hash.data(), hash.size());
  chainKey.wipe();
  localEphemeral.wipe();
  remoteEphemeral.fill(0);
  localIndex = 0;
  remoteIndex = 0;
}

bool createInitiation(const StaticIdentity& local, Handshake& hs, uint32_t senderIndex,
                      const Tai64n& now, MessageInitiation& msg) {
  if (!local.set || hs.precomputedStaticStatic.isZero()) return false;
  std::memset(&msg, 0, sizeof msg);
  msg.type = kMessageInitiationType;
  msg.sender = senderIndex;

  HashValue h = initialHash();
  SymmetricKey c;
  std::memcpy(c.data(), initialChainKey().data(), kKeySize);
  mixHash(h, hs.remoteStatic);

  PrivateKey eph = generatePrivateKey();
  std::optional<PublicKey> ephPub = publicKeyOf(eph);
  if (!ephPub) return false;
  std::memcpy(msg.ephemeral, ephPub->data(), 32);
  mixKey(c, *ephPub);
  mixHash(h, *ephPub);

  SymmetricKey dh, k;
  if (!x25519(eph, hs.remoteStatic, dh)) return false;
  mixKeyAndKey(c, dh.bytes(), k);
  if (!aeadSeal(k.data(), 0, local.publicKey, h, msg.encryptedStatic)) return false;
  mixHash(h, Bytes(msg.encryptedStatic, sizeof msg.encryptedStatic));

  mixKeyAndKey(c, hs.precomputedStaticStatic.bytes(), k);
  if (!aeadSeal(k.data(), 0, now, h, msg.encryptedTimestamp)) return false;
  mixHash(h, Bytes(msg.encryptedTimestamp, sizeof msg.encryptedTimestamp));

  hs.hash = h;
  hs.chainKey = c;
  hs.localEphemeral = eph;
  hs.localIndex = senderIndex;
  hs.state = HandshakeState::InitiationCreated;
  return true;
}

std::optional<ConsumedInitiation> consumeInitiation(const StaticIdentity& local,
                                                    const MessageInitiation& msg) {
  if (!local.set || msg.type != kMessageInitiationType) return std::nullopt;
  HashValue h = initialHash();
  SymmetricKey c;
  std::memcpy(c.data(), initialChainKey().data(), kKeySize);
  mixHash(h, local.publicKey);

  PublicKey ephemeral{};
  std::memcpy(ephemeral.data(), msg.ephemeral, 32);
  mixKey(c, ephemeral);
  mixHash(h, ephemeral);

  SymmetricKey dh, k;
  if (!x25519(local.privateKey, ephemeral, dh)) return std::nullopt;
  mixKeyAndKey(c, dh.bytes(), k);
  ConsumedInitiation out;
  if (!aeadOpen(k.data(), 0, Bytes(msg.encryptedStatic, sizeof msg.encryptedStatic), h,
                out.peerStatic.data())) {
    return std::nullopt;
  }
  mixHash(h, Bytes(msg.encryptedStatic, sizeof msg.encryptedStatic));

  SymmetricKey ss;
  if (!x25519(local.privateKey, out.peerStatic, ss)) return std::nullopt;
  mixKeyAndKey(c, ss.bytes(), k);
  if (!aeadOpen(k.data(), 0, Bytes(msg.encryptedTimestamp, sizeof msg.encryptedTimestamp), h,
                out.timestamp.data())) {
    return std::nullopt;
  }
  mixHash(h, Bytes(msg.encryptedTimestamp, sizeof msg.encryptedTimestamp));

  out.hash = h;
  out.chainKey = c;
  out.remoteEphemeral = ephemeral;
  out.remoteIndex = msg.sender;
  return out;
}

bool acceptInitiation(Handshake& hs, ConsumedInitiation&& in) {
  // TAI64N is big-endian, so byte order is time order.
  if (std::memcmp(in.timestamp.data(), hs.lastTimestamp.data(), in.timestamp.size()) <= 0) {
    return false;
  }
  hs.lastTimestamp = in.timestamp;
  hs.hash = in.hash;
  hs.chainKey = in.chainKey;
  hs.remoteEphemeral = in.remoteEphemeral;
  hs.remoteIndex = in.remoteIndex;
  hs.localEphemeral.wipe();
  hs.state = HandshakeState::InitiationConsumed;
  return true;
}

bool createResponse(Handshake& hs, uint32_t senderIndex, MessageResponse& msg) {
  if (hs.state != HandshakeState::InitiationConsumed) return false;
  std::memset(&msg, 0, sizeof msg);
  msg.type = kMessageResponseType;
  msg.sender = senderIndex;
  msg.receiver = hs.remoteIndex;

  PrivateKey eph = generatePrivateKey();
  std::optional<PublicKey> ephPub = publicKeyOf(eph);
  if (!ephPub) return false;
  std::memcpy(msg.ephemeral, ephPub->data(), 32);
  SymmetricKey c = hs.chainKey;
  HashValue h = hs.hash;
  mixKey(c, *ephPub);
  mixHash(h, *ephPub);

  SymmetricKey dh;
  if (!x25519(eph, hs.remoteEphemeral, dh)) return false;
  mixKey(c, dh.bytes());
  if (!x25519(eph, hs.remoteStatic, dh)) return false;
  mixKey(c, dh.bytes());

  SymmetricKey nextC, tau, k;
  kdf(c.bytes(), hs.presharedKey.bytes(), {&nextC, &tau, &k});
  mixHash(h, tau.bytes());
  if (!aeadSeal(k.data(), 0, Bytes(), h, msg.encryptedNothing)) return false;
  mixHash(h, Bytes(msg.encryptedNothing, sizeof msg.encryptedNothing));

  hs.chainKey = nextC;
  hs.hash = h;
  hs.localEphemeral = eph;
  hs.localIndex = senderIndex;
  hs.state = HandshakeState::ResponseCreated;
  return true;
}

bool consumeResponse(const StaticIdentity& local, Handshake& hs, const MessageResponse& msg) {
  if (hs.state != HandshakeState::InitiationCreated || msg.type != kMessageResponseType ||
      msg.receiver != hs.localIndex) {
    return false;
  }
  PublicKey ephemeral{};
  std::memcpy(ephemeral.data(), msg.ephemeral, 32);
  SymmetricKey c = hs.chainKey;
  HashValue h = hs.hash;
  mixKey(c, ephemeral);
  mixHash(h, ephemeral);

  SymmetricKey dh;
  if (!x25519(hs.localEphemeral, ephemeral, dh)) return false;
  mixKey(c, dh.bytes());
  if (!x25519(local.privateKey, ephemeral, dh)) return false;
  mixKey(c, dh.bytes());

  SymmetricKey nextC, tau, k;
  kdf(c.bytes(), hs.presharedKey.bytes(), {&nextC, &tau, &k});
  mixHash(h, tau.bytes());
  uint8_t nothing[1];
  if (!aeadOpen(k.data(), 0, Bytes(msg.encryptedNothing, sizeof msg.encryptedNothing), h,
                nothing)) {
    return false;
  }
  mixHash(h, Bytes(msg.encryptedNothing, sizeof msg.encryptedNothing));

  hs.chainKey = nextC;
  hs.hash = h;
  hs.remoteEphemeral = ephemeral;
  hs.remoteIndex = msg.sender;
  hs.state = HandshakeState::ResponseConsumed;
  return true;
}

std::optional<SessionKeys> beginSession(Handshake& hs) {
  bool initiator;
  if (hs.state == HandshakeState::ResponseConsumed) {
    initiator = true;
  } else if (hs.state == HandshakeState::ResponseCreated) {
    initiator = false;
  } else {
    return std::nullopt;
  }
  SymmetricKey first, second;
  static const uint8_t kEmpty[1] = {0};
  kdf(hs.chainKey.bytes(), Bytes(kEmpty, 0), {&first, &second});
  SessionKeys keys;
  keys.isInitiator = initiator;
  keys.send = initiator ? first : second;
  keys.receive = initiator ? second : first;
  keys.localIndex = hs.localIndex;
  keys.remoteIndex = hs.remoteIndex;
  hs.clear();
  return keys;
}

}  // namespace strait::tunnel
