// mac1/mac2 and the cookie-reply round trip between a CookieGenerator (sender) and a
// CookieChecker (receiver).
#include "tunnel/cookie.h"

#include <gtest/gtest.h>

#include <cstring>

namespace strait::tunnel {
namespace {

struct CookieFixture : ::testing::Test {
  PrivateKey priv = generatePrivateKey();
  PublicKey pub = *publicKeyOf(priv);
  CookieChecker checker;
  CookieGenerator generator;
  MessageInitiation msg{};
  SteadyTime now = std::chrono::steady_clock::now();
  std::string source = std::string("\x0a\x00\x00\x01\xca\x6c", 6);
  Bytes src() const {
    return Bytes(reinterpret_cast<const uint8_t*>(source.data()), source.size());
  }
  MutableBytes bytes() { return MutableBytes(reinterpret_cast<uint8_t*>(&msg), sizeof msg); }
  void SetUp() override {
    checker.init(pub);
    generator.init(pub);
    msg.type = kMessageInitiationType;
    msg.sender = 77;
    randomBytes(MutableBytes(msg.ephemeral, 32));
  }
};

TEST_F(CookieFixture, Mac1ValidOnlyForItsReceiver) {
  generator.addMacs(bytes(), now);
  EXPECT_TRUE(checker.checkMac1(bytes()));
  CookieChecker other;
  other.init(*publicKeyOf(generatePrivateKey()));
  EXPECT_FALSE(other.checkMac1(bytes()));
  msg.ephemeral[0] ^= 1;
  EXPECT_FALSE(checker.checkMac1(bytes()));
}

TEST_F(CookieFixture, CookieReplyEnablesMac2) {
  generator.addMacs(bytes(), now);
  EXPECT_FALSE(checker.checkMac2(bytes(), src(), now)) << "no cookie yet";
  MessageCookieReply reply = checker.createReply(bytes(), msg.sender, src(), now);
  EXPECT_EQ(reply.type, kMessageCookieReplyType);
  EXPECT_EQ(reply.receiver, 77u);
  ASSERT_TRUE(generator.consumeReply(reply, now));
  EXPECT_FALSE(generator.consumeReply(reply, now)) << "a reply answers one mac1 only";
  generator.addMacs(bytes(), now);
  EXPECT_TRUE(checker.checkMac1(bytes()));
  EXPECT_TRUE(checker.checkMac2(bytes(), src(), now));
  std::string elsewhere = std::string("\x0a\x00\x00\x02\xca\x6c", 6);
  EXPECT_FALSE(
      checker.checkMac2(bytes(), Bytes(reinterpret_cast<const uint8_t*>(elsewhere.data()), 6), now))
      << "a cookie is bound to the source address";
  // Two minutes later the cookie is stale on both sides.
  SteadyTime later = now + std::chrono::seconds(121);
  generator.addMacs(bytes(), later);
  EXPECT_FALSE(checker.checkMac2(bytes(), src(), later));
}

TEST_F(CookieFixture, TamperedCookieReplyRefused) {
  generator.addMacs(bytes(), now);
  MessageCookieReply reply = checker.createReply(bytes(), msg.sender, src(), now);
  reply.encryptedCookie[5] ^= 1;
  EXPECT_FALSE(generator.consumeReply(reply, now));
}

}  // namespace
}  // namespace strait::tunnel
