#include "tunnel/crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <cstring>

namespace strait::tunnel {

template <size_t N>
void SecretBytes<N>::wipe() {
  OPENSSL_cleanse(data_.data(), N);
}
template <size_t N>
bool SecretBytes<N>::isZero() const {
  uint8_t acc = 0;
  for (uint8_t b : data_) acc |= b;
  return acc == 0;
}
template class SecretBytes<32>;
template class SecretBytes<16>;

bool constantTimeEqual(Bytes a, Bytes b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void wipeMemory(void* p, size_t n) { OPENSSL_cleanse(p, n); }

void randomBytes(MutableBytes out) {
  if (RAND_bytes(out.data(), static_cast<int>(out.size())) != 1) {
    std::abort();  // no randomness: continuing would be unsafe
  }
}

namespace {

// Algorithms fetched once; OpenSSL's fetched objects are immutable and thread-safe.
EVP_MD* blake2s() {
  static EVP_MD* md = EVP_MD_fetch(nullptr, "BLAKE2S-256", nullptr);
  return md;
}
EVP_MAC* blake2sMac() {
  static EVP_MAC* m = EVP_MAC_fetch(nullptr, "BLAKE2SMAC", nullptr);
  return m;
}
EVP_MAC* hmacAlg() {
  static EVP_MAC* m = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  return m;
}
EVP_CIPHER* chachaPoly() {
  static EVP_CIPHER* c = EVP_CIPHER_fetch(nullptr, "ChaCha20-Poly1305", nullptr);
  return c;
}
EVP_CIPHER* chacha20() {
  static EVP_CIPHER* c = EVP_CIPHER_fetch(nullptr, "ChaCha20", nullptr);
  return c;
}

// A cipher context per thread and direction, initialised with the cipher once; later calls
// only set key and nonce.
struct ThreadCipher {
  EVP_CIPHER_CTX* ctx = nullptr;
  bool ready = false;
  ThreadCipher() : ctx(EVP_CIPHER_CTX_new()) {}
  ~ThreadCipher() { EVP_CIPHER_CTX_free(ctx); }
};
thread_local ThreadCipher tlsSeal;
thread_local ThreadCipher tlsOpen;

void macInto(EVP_MAC* alg, const OSSL_PARAM* params, Bytes key, std::initializer_list<Bytes> parts,
             uint8_t* out, size_t outLen) {
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(alg);
  size_t written = 0;
  bool ok = ctx && EVP_MAC_init(ctx, key.data(), key.size(), params) == 1;
  for (Bytes p : parts) {
    ok = ok && EVP_MAC_update(ctx, p.data(), p.size()) == 1;
  }
  ok = ok && EVP_MAC_final(ctx, out, &written, outLen) == 1 && written == outLen;
  EVP_MAC_CTX_free(ctx);
  if (!ok) std::abort();  // a missing BLAKE2s provider is a broken installation
}

}  // namespace

HashValue hash(std::initializer_list<Bytes> parts) {
  HashValue out{};
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx && EVP_DigestInit_ex2(ctx, blake2s(), nullptr) == 1;
  for (Bytes p : parts) ok = ok && EVP_DigestUpdate(ctx, p.data(), p.size()) == 1;
  unsigned int len = 0;
  ok = ok && EVP_DigestFinal_ex(ctx, out.data(), &len) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok || len != out.size()) std::abort();
  return out;
}

MacValue mac(Bytes key, std::initializer_list<Bytes> parts) {
  MacValue out{};
  size_t size = kMacSize;
  OSSL_PARAM params[] = {OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
                         OSSL_PARAM_construct_end()};
  macInto(blake2sMac(), params, key, parts, out.data(), out.size());
  return out;
}

HashValue hmac(Bytes key, std::initializer_list<Bytes> parts) {
  HashValue out{};
  char digest[] = "BLAKE2S-256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  macInto(hmacAlg(), params, key, parts, out.data(), out.size());
  return out;
}

void kdf(Bytes chainKey, Bytes input, std::initializer_list<SymmetricKey*> outputs) {
  HashValue prk = hmac(chainKey, {input});
  HashValue t{};
  uint8_t counter = 1;
  bool first = true;
  for (SymmetricKey* o : outputs) {
    Bytes ctr(&counter, 1);
    t = first ? hmac(prk, {ctr}) : hmac(prk, {t, ctr});
    first = false;
    std::memcpy(o->data(), t.data(), kKeySize);
    ++counter;
  }
  wipeMemory(prk.data(), prk.size());
  wipeMemory(t.data(), t.size());
}

PrivateKey generatePrivateKey() {
  PrivateKey k;
  randomBytes(k.mutableBytes());
  k.data()[0] &= 248;
  k.data()[31] = (k.data()[31] & 127) | 64;
  return k;
}

std::optional<PublicKey> publicKeyOf(const PrivateKey& priv) {
  EVP_PKEY* pk = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, priv.data(), kKeySize);
  if (!pk) return std::nullopt;
  PublicKey pub{};
  size_t len = pub.size();
  bool ok = EVP_PKEY_get_raw_public_key(pk, pub.data(), &len) == 1 && len == pub.size();
  EVP_PKEY_free(pk);
  if (!ok) return std::nullopt;
  return pub;
}

bool x25519(const PrivateKey& priv, const PublicKey& pub, SymmetricKey& out) {
  EVP_PKEY* mine = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, priv.data(), kKeySize);
  EVP_PKEY* theirs = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, pub.data(), kKeySize);
  EVP_PKEY_CTX* ctx = mine ? EVP_PKEY_CTX_new(mine, nullptr) : nullptr;
  size_t len = kKeySize;
  bool ok = theirs && ctx && EVP_PKEY_derive_init(ctx) == 1 &&
            EVP_PKEY_derive_set_peer(ctx, theirs) == 1 &&
            EVP_PKEY_derive(ctx, out.data(), &len) == 1 && len == kKeySize;
  EVP_PKEY_CTX_free(ctx);
  EVP_PKEY_free(theirs);
  EVP_PKEY_free(mine);
  if (!ok) {
    out.wipe();
    return false;
  }
  return !out.isZero();
}

namespace {
void chachaNonce(uint64_t counter, uint8_t nonce[12]) {
  std::memset(nonce, 0, 4);
  for (int i = 0; i < 8; ++i) nonce[4 + i] = static_cast<uint8_t>(counter >> (8 * i));
}

bool sealWithNonce(const uint8_t key[32], const uint8_t nonce[12], Bytes plaintext, Bytes ad,
                   uint8_t* out) {
  ThreadCipher& tc = tlsSeal;
  if (!tc.ready) {
    if (EVP_EncryptInit_ex2(tc.ctx, chachaPoly(), nullptr, nullptr, nullptr) != 1) return false;
    tc.ready = true;
  }
  int len = 0;
  if (EVP_EncryptInit_ex2(tc.ctx, nullptr, key, nonce, nullptr) != 1) return false;
  if (!ad.empty() &&
      EVP_EncryptUpdate(tc.ctx, nullptr, &len, ad.data(), static_cast<int>(ad.size())) != 1) {
    return false;
  }
  if (!plaintext.empty() && EVP_EncryptUpdate(tc.ctx, out, &len, plaintext.data(),
                                              static_cast<int>(plaintext.size())) != 1) {
    return false;
  }
  if (EVP_EncryptFinal_ex(tc.ctx, out + plaintext.size(), &len) != 1) return false;
  return EVP_CIPHER_CTX_ctrl(tc.ctx, EVP_CTRL_AEAD_GET_TAG, kTagSize, out + plaintext.size()) == 1;
}

bool openWithNonce(const uint8_t key[32], const uint8_t nonce[12], Bytes ciphertext, Bytes ad,
                   uint8_t* out) {
  if (ciphertext.size() < kTagSize) return false;
  size_t plainLen = ciphertext.size() - kTagSize;
  ThreadCipher& tc = tlsOpen;
  if (!tc.ready) {
    if (EVP_DecryptInit_ex2(tc.ctx, chachaPoly(), nullptr, nullptr, nullptr) != 1) return false;
    tc.ready = true;
  }
  uint8_t tag[kTagSize];
  std::memcpy(tag, ciphertext.data() + plainLen, kTagSize);  // `out` may alias the input
  int len = 0;
  if (EVP_DecryptInit_ex2(tc.ctx, nullptr, key, nonce, nullptr) != 1) return false;
  if (!ad.empty() &&
      EVP_DecryptUpdate(tc.ctx, nullptr, &len, ad.data(), static_cast<int>(ad.size())) != 1) {
    return false;
  }
  if (plainLen > 0 &&
      EVP_DecryptUpdate(tc.ctx, out, &len, ciphertext.data(), static_cast<int>(plainLen)) != 1) {
    return false;
  }
  if (EVP_CIPHER_CTX_ctrl(tc.ctx, EVP_CTRL_AEAD_SET_TAG, kTagSize, tag) != 1) return false;
  return EVP_DecryptFinal_ex(tc.ctx, out + plainLen, &len) == 1;
}
}  // namespace

bool aeadSeal(const uint8_t key[32], uint64_t counter, Bytes plaintext, Bytes ad, uint8_t* out) {
  uint8_t nonce[12];
  chachaNonce(counter, nonce);
  return sealWithNonce(key, nonce, plaintext, ad, out);
}

bool aeadOpen(const uint8_t key[32], uint64_t counter, Bytes ciphertext, Bytes ad, uint8_t* out) {
  uint8_t nonce[12];
  chachaNonce(counter, nonce);
  return openWithNonce(key, nonce, ciphertext, ad, out);
}

namespace {
uint32_t le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
void putLe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
}  // namespace

// The ChaCha20 block function of OpenSSL returns rounds(state) + state as keystream. With
// the 16-byte IV in state words 12..15, subtracting the known state words 0..3 (constants)
// and 12..15 (nonce) leaves rounds(state) at those words, which is HChaCha20's output.
bool hchacha20(const uint8_t key[32], const uint8_t nonce[16], uint8_t out[32]) {
  static const uint8_t sigma[16] = {'e', 'x', 'p', 'a', 'n', 'd', ' ', '3',
                                    '2', '-', 'b', 'y', 't', 'e', ' ', 'k'};
  uint8_t zeros[64] = {0};
  uint8_t block[64];
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  int len = 0;
  bool ok = ctx && EVP_EncryptInit_ex2(ctx, chacha20(), key, nonce, nullptr) == 1 &&
            EVP_EncryptUpdate(ctx, block, &len, zeros, sizeof zeros) == 1 && len == 64;
  EVP_CIPHER_CTX_free(ctx);
  if (ok) {
    for (int i = 0; i < 4; ++i) {
      putLe32(out + 4 * i, le32(block + 4 * i) - le32(sigma + 4 * i));
      putLe32(out + 16 + 4 * i, le32(block + 48 + 4 * i) - le32(nonce + 4 * i));
    }
  }
  wipeMemory(block, sizeof block);
  return ok;
}

bool xaeadSeal(const uint8_t key[32], const uint8_t nonce[24], Bytes plaintext, Bytes ad,
               uint8_t* out) {
  SymmetricKey sub;
  if (!hchacha20(key, nonce, sub.data())) return false;
  uint8_t n[12] = {0};
  std::memcpy(n + 4, nonce + 16, 8);
  return sealWithNonce(sub.data(), n, plaintext, ad, out);
}

bool xaeadOpen(const uint8_t key[32], const uint8_t nonce[24], Bytes ciphertext, Bytes ad,
               uint8_t* out) {
  SymmetricKey sub;
  if (!hchacha20(key, nonce, sub.data())) return false;
  uint8_t n[12] = {0};
  std::memcpy(n + 4, nonce + 16, 8);
  return openWithNonce(sub.data(), n, ciphertext, ad, out);
}

std::string keyToBase64(Bytes key) {
  std::string out(4 * ((key.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), key.data(),
                          static_cast<int>(key.size()));
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

std::optional<std::array<uint8_t, 32>> keyFromBase64(const std::string& text) {
  if (text.size() != 44 || text[43] != '=' || text[42] == '=') return std::nullopt;
  unsigned char buf[33];
  int n = EVP_DecodeBlock(buf, reinterpret_cast<const unsigned char*>(text.data()), 44);
  if (n != 33) return std::nullopt;  // 44 chars decode to 33 bytes, the last one padding
  std::array<uint8_t, 32> key{};
  std::memcpy(key.data(), buf, 32);
  wipeMemory(buf, sizeof buf);
  return key;
}

std::string toHex(Bytes b) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  s.reserve(b.size() * 2);
  for (uint8_t c : b) {
    s.push_back(digits[c >> 4]);
    s.push_back(digits[c & 15]);
  }
  return s;
}

std::optional<std::array<uint8_t, 32>> keyFromHex(const std::string& text) {
  if (text.size() != 64) return std::nullopt;
  std::array<uint8_t, 32> key{};
  for (size_t i = 0; i < 32; ++i) {
    int v = 0;
    for (int j = 0; j < 2; ++j) {
      char c = text[2 * i + j];
      int d = (c >= '0' && c <= '9')   ? c - '0'
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10
              : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                       : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + d;
    }
    key[i] = static_cast<uint8_t>(v);
  }
  return key;
}

}  // namespace strait::tunnel
