// The Noise_IKpsk2 handshake between two in-memory identities: both sides derive matching
// transport keys; altered, misdirected and replayed messages are refused. (Interop with the
// real wireguard-go is in netns_test.cpp.)
#include "tunnel/noise.h"

#include <gtest/gtest.h>

#include <cstring>

namespace strait::tunnel {
namespace {

StaticIdentity makeIdentity() {
  StaticIdentity id;
  id.privateKey = generatePrivateKey();
  id.publicKey = *publicKeyOf(id.privateKey);
  id.set = true;
  return id;
}

struct Pair {
  StaticIdentity a = makeIdentity(), b = makeIdentity();
  Handshake aHs, bHs;  // a's view of b, b's view of a
  Pair(bool psk) {
    EXPECT_TRUE(aHs.setRemoteStatic(a, b.publicKey));
    EXPECT_TRUE(bHs.setRemoteStatic(b, a.publicKey));
    if (psk) {
      randomBytes(aHs.presharedKey.mutableBytes());
      bHs.presharedKey = aHs.presharedKey;
    }
  }
};

void fullHandshake(bool psk) {
  Pair p(psk);
  MessageInitiation init;
  ASSERT_TRUE(createInitiation(p.a, p.aHs, 111, tai64nNow(), init));
  EXPECT_EQ(p.aHs.state, HandshakeState::InitiationCreated);
  auto consumed = consumeInitiation(p.b, init);
  ASSERT_TRUE(consumed);
  EXPECT_EQ(consumed->peerStatic, p.a.publicKey);
  EXPECT_EQ(consumed->remoteIndex, 111u);
  ASSERT_TRUE(acceptInitiation(p.bHs, std::move(*consumed)));
  MessageResponse resp;
  ASSERT_TRUE(createResponse(p.bHs, 222, resp));
  EXPECT_EQ(resp.receiver, 111u);
  ASSERT_TRUE(consumeResponse(p.a, p.aHs, resp));
  auto ka = beginSession(p.aHs);
  auto kb = beginSession(p.bHs);
  ASSERT_TRUE(ka && kb);
  EXPECT_TRUE(ka->isInitiator);
  EXPECT_FALSE(kb->isInitiator);
  EXPECT_TRUE(constantTimeEqual(ka->send.bytes(), kb->receive.bytes()));
  EXPECT_TRUE(constantTimeEqual(ka->receive.bytes(), kb->send.bytes()));
  EXPECT_FALSE(constantTimeEqual(ka->send.bytes(), ka->receive.bytes()));
  EXPECT_EQ(ka->remoteIndex, 222u);
  EXPECT_EQ(kb->remoteIndex, 111u);
  EXPECT_EQ(p.aHs.state, HandshakeState::Zeroed);
  EXPECT_TRUE(p.aHs.chainKey.isZero()) << "chaining key must be wiped after the session";
}

TEST(Noise, HandshakeDerivesMatchingKeys) { fullHandshake(false); }
TEST(Noise, HandshakeWithPresharedKey) { fullHandshake(true); }

TEST(Noise, PresharedKeyMismatchFailsResponse) {
  Pair p(true);
  p.bHs.presharedKey.data()[0] ^= 1;
  MessageInitiation init;
  ASSERT_TRUE(createInitiation(p.a, p.aHs, 1, tai64nNow(), init));
  auto c = consumeInitiation(p.b, init);
  ASSERT_TRUE(c);
  ASSERT_TRUE(acceptInitiation(p.bHs, std::move(*c)));
  MessageResponse resp;
  ASSERT_TRUE(createResponse(p.bHs, 2, resp));
  EXPECT_FALSE(consumeResponse(p.a, p.aHs, resp));
  EXPECT_EQ(p.aHs.state, HandshakeState::InitiationCreated);
}

TEST(Noise, AlteredOrMisdirectedInitiationRefused) {
  Pair p(false);
  StaticIdentity other = makeIdentity();
  MessageInitiation init;
  ASSERT_TRUE(createInitiation(p.a, p.aHs, 1, tai64nNow(), init));
  EXPECT_FALSE(consumeInitiation(other, init)) << "only the intended responder can decrypt";
  for (size_t off : {8ul, 40ul, 100ul}) {
    MessageInitiation bad = init;
    reinterpret_cast<uint8_t*>(&bad)[off] ^= 0x01;
    EXPECT_FALSE(consumeInitiation(p.b, bad)) << "byte " << off;
  }
}

TEST(Noise, ReplayedTimestampRefused) {
  Pair p(false);
  MessageInitiation init;
  ASSERT_TRUE(createInitiation(p.a, p.aHs, 1, tai64nFromUnix(1000, 5), init));
  auto c1 = consumeInitiation(p.b, init);
  ASSERT_TRUE(c1);
  ASSERT_TRUE(acceptInitiation(p.bHs, std::move(*c1)));
  auto c2 = consumeInitiation(p.b, init);  // the same message again
  ASSERT_TRUE(c2);
  EXPECT_FALSE(acceptInitiation(p.bHs, std::move(*c2)));
  MessageInitiation older;
  ASSERT_TRUE(createInitiation(p.a, p.aHs, 2, tai64nFromUnix(999, 0), older));
  auto c3 = consumeInitiation(p.b, older);
  ASSERT_TRUE(c3);
  EXPECT_FALSE(acceptInitiation(p.bHs, std::move(*c3)));
}

TEST(Noise, ResponseForAnotherIndexRefused) {
  Pair p(false);
  MessageInitiation init;
  ASSERT_TRUE(createInitiation(p.a, p.aHs, 7, tai64nNow(), init));
  auto c = consumeInitiation(p.b, init);
  ASSERT_TRUE(acceptInitiation(p.bHs, std::move(*c)));
  MessageResponse resp;
  ASSERT_TRUE(createResponse(p.bHs, 8, resp));
  resp.receiver = 9;
  EXPECT_FALSE(consumeResponse(p.a, p.aHs, resp));
  resp.receiver = 7;
  resp.encryptedNothing[0] ^= 1;
  EXPECT_FALSE(consumeResponse(p.a, p.aHs, resp));
}

TEST(Noise, Tai64nIsBigEndianLabel) {
  Tai64n t = tai64nFromUnix(0, 0);
  EXPECT_EQ(t[0], 0x40);  // 2^62
  EXPECT_EQ(t[7], 10);
  Tai64n later = tai64nFromUnix(1, 0);
  EXPECT_LT(std::memcmp(t.data(), later.data(), 12), 0);
}

}  // namespace
}  // namespace strait::tunnel
