#pragma once
// WireGuard's cryptographic primitives (whitepaper section 5.4) on top of OpenSSL 3:
// BLAKE2s HASH and keyed MAC, HMAC-BLAKE2s and the HKDF chain (KDF1/2/3), X25519, and
// ChaCha20-Poly1305 / XChaCha20-Poly1305 AEADs. Secrets live in SecretBytes, which wipes
// itself with OPENSSL_cleanse on every exit path.
//
// Thread-safety: every function is safe to call from any thread concurrently (cipher
// contexts are thread-local; fetched algorithms are immutable after first use).

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>

namespace strait::tunnel {

using Bytes = std::span<const uint8_t>;
using MutableBytes = std::span<uint8_t>;

// A fixed-size secret that is wiped when destroyed or overwritten (move leaves the source
// wiped too).
template <size_t N>
class SecretBytes {
 public:
  SecretBytes() { data_.fill(0); }
  SecretBytes(const SecretBytes& o) : data_(o.data_) {}
  SecretBytes& operator=(const SecretBytes& o) {
    data_ = o.data_;
    return *this;
  }
  ~SecretBytes() { wipe(); }
  void wipe();
  uint8_t* data() { return data_.data(); }
  const uint8_t* data() const { return data_.data(); }
  static constexpr size_t size() { return N; }
  Bytes bytes() const { return Bytes(data_.data(), N); }
  MutableBytes mutableBytes() { return MutableBytes(data_.data(), N); }
  bool isZero() const;

 private:
  std::array<uint8_t, N> data_;
};

constexpr size_t kKeySize = 32;
constexpr size_t kHashSize = 32;
constexpr size_t kMacSize = 16;
constexpr size_t kTagSize = 16;

using SymmetricKey = SecretBytes<kKeySize>;
using PrivateKey = SecretBytes<kKeySize>;
using PublicKey = std::array<uint8_t, kKeySize>;
using HashValue = std::array<uint8_t, kHashSize>;
using MacValue = std::array<uint8_t, kMacSize>;

// Constant-time equality of two equal-length byte strings (CRYPTO_memcmp).
bool constantTimeEqual(Bytes a, Bytes b);
// Wipes memory that may hold a secret (OPENSSL_cleanse).
void wipeMemory(void* p, size_t n);
// Fills `out` with random bytes from OpenSSL's CSPRNG; aborts if the RNG fails.
void randomBytes(MutableBytes out);

// HASH(parts...): BLAKE2s-256 of the concatenation.
HashValue hash(std::initializer_list<Bytes> parts);
// MAC(key, parts...): keyed BLAKE2s with a 16-byte digest. key is 1..32 bytes.
MacValue mac(Bytes key, std::initializer_list<Bytes> parts);
// HMAC-BLAKE2s(key, parts...).
HashValue hmac(Bytes key, std::initializer_list<Bytes> parts);
// KDFn(chainKey, input) of the whitepaper (HKDF with salt = chainKey, no info). `outputs`
// receives n keys; n is 1..3.
void kdf(Bytes chainKey, Bytes input, std::initializer_list<SymmetricKey*> outputs);

// X25519. generatePrivateKey clamps like `wg genkey`.
PrivateKey generatePrivateKey();
// The public key of a private key; nullopt only if OpenSSL refuses the key.
std::optional<PublicKey> publicKeyOf(const PrivateKey& priv);
// DH(priv, pub) into `out`; false if the shared secret is all zeros (low-order point) or
// OpenSSL fails.
bool x25519(const PrivateKey& priv, const PublicKey& pub, SymmetricKey& out);

// ChaCha20-Poly1305 with nonce = 4 zero bytes || LE64(counter). `out` must hold
// plaintext.size() + 16 bytes (it may alias `plaintext` exactly). Returns false only if
// OpenSSL fails.
bool aeadSeal(const uint8_t key[32], uint64_t counter, Bytes plaintext, Bytes ad, uint8_t* out);
// Opens `ciphertext` (tag included) into `out` (ciphertext.size() - 16 bytes; may alias).
// False when the tag does not verify or the input is shorter than a tag.
bool aeadOpen(const uint8_t key[32], uint64_t counter, Bytes ciphertext, Bytes ad, uint8_t* out);

// HChaCha20(key, nonce16) -> 32-byte subkey (draft-irtf-cfrg-xchacha-03 §2.2).
bool hchacha20(const uint8_t key[32], const uint8_t nonce[16], uint8_t out[32]);
// XChaCha20-Poly1305 with a 24-byte nonce; same buffer rules as aeadSeal/aeadOpen.
bool xaeadSeal(const uint8_t key[32], const uint8_t nonce[24], Bytes plaintext, Bytes ad,
               uint8_t* out);
bool xaeadOpen(const uint8_t key[32], const uint8_t nonce[24], Bytes ciphertext, Bytes ad,
               uint8_t* out);

// Standard base64 of a 32-byte key (44 characters) and back; nullopt names nothing: the
// caller says which field was wrong.
std::string keyToBase64(Bytes key);
std::optional<std::array<uint8_t, 32>> keyFromBase64(const std::string& text);
std::string toHex(Bytes b);
std::optional<std::array<uint8_t, 32>> keyFromHex(const std::string& text);

}  // namespace strait::tunnel
