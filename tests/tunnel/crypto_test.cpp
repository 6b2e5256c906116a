// Known-answer tests of the primitives: BLAKE2s (RFC 7693 "abc"), keyed BLAKE2s-128, HMAC-
// BLAKE2s and the KDF chain (values from Python's hashlib/hmac, an independent
// implementation), X25519 (RFC 7748 §5.2), HChaCha20 and XChaCha20-Poly1305
// (draft-irtf-cfrg-xchacha-03 §2.2.1 and A.3.1), ChaCha20-Poly1305 round trips.
#include "tunnel/crypto.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tunnel/test_util.h"

namespace strait::tunnel {
namespace {

using testing::hexOf;
using testing::unhex;

Bytes text(const char* s) { return Bytes(reinterpret_cast<const uint8_t*>(s), std::strlen(s)); }

TEST(Crypto, Blake2sKnownAnswer) {
  EXPECT_EQ(hexOf(hash({text("abc")})),
            "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982");
  // Parts are concatenated.
  EXPECT_EQ(hash({text("a"), text("bc")}), hash({text("abc")}));
}

TEST(Crypto, KeyedMacIs16ByteBlake2sNotTruncated) {
  std::vector<uint8_t> key(32);
  for (int i = 0; i < 32; ++i) key[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(hexOf(mac(key, {text("hello wireguard")})), "d7ced850c9c0917a705fad04539c3a01");
}

TEST(Crypto, HmacAndKdfKnownAnswer) {
  std::vector<uint8_t> key(32);
  for (int i = 0; i < 32; ++i) key[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(hexOf(hmac(key, {text("hello wireguard")})),
            "c030854166ba79dbc4432ec45565144a37b3729a58feda7e75a70add8d0fd74a");
  SymmetricKey t1, t2, t3;
  kdf(key, text("input"), {&t1, &t2, &t3});
  EXPECT_EQ(hexOf(t1.bytes()), "87b7f70b24183c6db5dc4f6d9f4c47cdb203321aa2a0bef714896adb3107a040");
  EXPECT_EQ(hexOf(t2.bytes()), "538a02e1eb2e31b7e4d4b82476d1fe2acf50085d3fb584537279195f5d1f5824");
  EXPECT_EQ(hexOf(t3.bytes()), "9ad858025593be88de0f9442a589cfe84a88dc19e4753d93684d1c5efc4837f9");
}

TEST(Crypto, X25519Rfc7748) {
  PrivateKey scalar;
  auto s = unhex("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4");
  std::memcpy(scalar.data(), s.data(), 32);
  PublicKey u{};
  auto uv = unhex("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c");
  std::memcpy(u.data(), uv.data(), 32);
  SymmetricKey out;
  ASSERT_TRUE(x25519(scalar, u, out));
  EXPECT_EQ(hexOf(out.bytes()), "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552");
}

TEST(Crypto, X25519RejectsLowOrderPoint) {
  PrivateKey k = generatePrivateKey();
  PublicKey zero{};  // the all-zero point gives an all-zero shared secret
  SymmetricKey out;
  EXPECT_FALSE(x25519(k, zero, out));
}

TEST(Crypto, DiffieHellmanAgrees) {
  PrivateKey a = generatePrivateKey(), b = generatePrivateKey();
  auto pa = publicKeyOf(a), pb = publicKeyOf(b);
  ASSERT_TRUE(pa && pb);
  SymmetricKey ab, ba;
  ASSERT_TRUE(x25519(a, *pb, ab));
  ASSERT_TRUE(x25519(b, *pa, ba));
  EXPECT_TRUE(constantTimeEqual(ab.bytes(), ba.bytes()));
}

TEST(Crypto, HChaCha20DraftVector) {
  auto key = unhex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
  auto nonce = unhex("000000090000004a0000000031415927");
  uint8_t out[32];
  ASSERT_TRUE(hchacha20(key.data(), nonce.data(), out));
  EXPECT_EQ(hexOf(out, 32), "82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc");
}

TEST(Crypto, XChaCha20Poly1305DraftVector) {
  auto key = unhex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f");
  auto nonce = unhex("404142434445464748494a4b4c4d4e4f5051525354555657");
  auto aad = unhex("50515253c0c1c2c3c4c5c6c7");
  std::string pt =
      "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the "
      "future, sunscreen would be it.";
  std::vector<uint8_t> out(pt.size() + 16);
  ASSERT_TRUE(xaeadSeal(key.data(), nonce.data(), text(pt.c_str()), aad, out.data()));
  EXPECT_EQ(hexOf(out),
            "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb731c7f1b0b4aa6440bf3a"
            "82f4eda7e39ae64c6708c54c216cb96b72e1213b4522f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc3"
            "69488f76b2383565d3fff921f9664c97637da9768812f615c68b13b52e"
            "c0875924c1c7987947deafd8780acf49");
  std::vector<uint8_t> back(pt.size());
  ASSERT_TRUE(xaeadOpen(key.data(), nonce.data(), out, aad, back.data()));
  EXPECT_EQ(std::string(back.begin(), back.end()), pt);
  out[3] ^= 1;
  EXPECT_FALSE(xaeadOpen(key.data(), nonce.data(), out, aad, back.data()));
}

TEST(Crypto, AeadRoundTripInPlaceAndTamper) {
  uint8_t key[32] = {7};
  std::vector<uint8_t> buf(64 + 16);
  for (int i = 0; i < 64; ++i) buf[i] = static_cast<uint8_t>(i);
  ASSERT_TRUE(aeadSeal(key, 42, Bytes(buf.data(), 64), Bytes(), buf.data()));
  std::vector<uint8_t> sealed = buf;
  ASSERT_TRUE(aeadOpen(key, 42, buf, Bytes(), buf.data()));
  for (int i = 0; i < 64; ++i) ASSERT_EQ(buf[i], i);
  EXPECT_FALSE(aeadOpen(key, 43, sealed, Bytes(), buf.data())) << "wrong counter must fail";
  sealed[70] ^= 0x80;
  EXPECT_FALSE(aeadOpen(key, 42, sealed, Bytes(), buf.data())) << "altered tag must fail";
  EXPECT_FALSE(aeadOpen(key, 42, Bytes(sealed.data(), 8), Bytes(), buf.data()));
}

TEST(Crypto, KeysWipeAndEncode) {
  PrivateKey k = generatePrivateKey();
  EXPECT_FALSE(k.isZero());
  EXPECT_EQ(k.data()[0] & 7, 0);  // clamped like wg genkey
  std::string b64 = keyToBase64(k.bytes());
  EXPECT_EQ(b64.size(), 44u);
  auto back = keyFromBase64(b64);
  ASSERT_TRUE(back);
  EXPECT_TRUE(constantTimeEqual(*back, k.bytes()));
  EXPECT_FALSE(keyFromBase64("not a key"));
  EXPECT_FALSE(keyFromBase64(b64.substr(0, 43) + "A"));
  EXPECT_TRUE(keyFromHex(toHex(k.bytes())));
  EXPECT_FALSE(keyFromHex(std::string(64, 'g')));
  k.wipe();
  EXPECT_TRUE(k.isZero());
}

}  // namespace
}  // namespace strait::tunnel
