#include "peering/token.h"

#include <gtest/gtest.h>

#include <vector>

#include "peering/encoding.h"

namespace strait::peering {
namespace {

using namespace std::chrono_literals;

const auto kNow = std::chrono::system_clock::from_time_t(1'800'000'000);

Token sample() {
  return newToken("10.0.0.1:7443", "0b8c2c9e-0000-4000-8000-000000000001", "provider",
                  std::string(64, 'a'), 1h, kNow);
}

TEST(Token, RoundTripsAndVerifies) {
  SecretString key(randomBytes(32));
  Token t = sample();
  SecretString text = encodeToken(t, key);
  ASSERT_EQ(text.reveal().rfind("strait1.", 0), 0u);
  kube::Result<Token> parsed = parseToken(text.reveal());
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->endpoint, "10.0.0.1:7443");
  EXPECT_EQ(parsed->clusterName, "provider");
  EXPECT_EQ(parsed->id, t.id);
  EXPECT_EQ(parsed->secret.reveal(), t.secret.reveal());
  kube::Result<Token> verified = verifyToken(text.reveal(), key, kNow + 10min);
  ASSERT_TRUE(verified.ok()) << verified.error().message;
  EXPECT_EQ(tokenSecretHash(verified->secret), tokenSecretHash(t.secret));
}

TEST(Token, TwoTokensDiffer) {
  Token a = sample(), b = sample();
  EXPECT_NE(a.id, b.id);
  EXPECT_NE(a.secret.reveal(), b.secret.reveal());
}

TEST(Token, ExpiredIsRefusedSayingExpired) {
  SecretString key(randomBytes(32));
  SecretString text = encodeToken(sample(), key);
  kube::Result<Token> r = verifyToken(text.reveal(), key, kNow + 2h);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), kube::Code::Gone);
  EXPECT_NE(r.error().message.find("expired"), std::string::npos) << r.error().message;
}

TEST(Token, AlteredPayloadIsRefusedSayingAltered) {
  SecretString key(randomBytes(32));
  Token t = sample();
  std::string text = encodeToken(t, key).reveal();
  // Re-encode the payload with a later expiry but keep the old MAC.
  t.expiresUnix += 3600 * 24;
  std::string forged = encodeToken(t, SecretString(randomBytes(32))).reveal();
  std::string spliced = forged.substr(0, forged.rfind('.')) + text.substr(text.rfind('.'));
  kube::Result<Token> r = verifyToken(spliced, key, kNow);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), kube::Code::Unauthorized);
  EXPECT_NE(r.error().message.find("altered"), std::string::npos) << r.error().message;
  // A flipped character in the MAC too.
  std::string flipped = text;
  char& c = flipped[flipped.size() - 3];
  c = c == 'A' ? 'B' : 'A';
  r = verifyToken(flipped, key, kNow);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("altered"), std::string::npos) << r.error().message;
}

TEST(Token, AnotherClustersKeyIsAltered) {
  SecretString text = encodeToken(sample(), SecretString(randomBytes(32)));
  kube::Result<Token> r = verifyToken(text.reveal(), SecretString(randomBytes(32)), kNow);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("altered"), std::string::npos);
}

TEST(Token, MalformedInputsSayMalformed) {
  SecretString key(randomBytes(32));
  for (std::string bad : std::vector<std::string>{"", "garbage", "strait1.", "strait1.abc", "strait1.a.b.c",
                          "strait1.!!!.AAAA", "strait2.abc.def", std::string(9000, 'x'),
                          "strait1.e30.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}) {
    kube::Result<Token> p = parseToken(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.error().message.find("malformed"), std::string::npos) << p.error().message;
    kube::Result<Token> v = verifyToken(bad, key, kNow);
    ASSERT_FALSE(v.ok()) << bad;
  }
  // Payload fields of the wrong JSON type: malformed, not an exception.
  for (std::string payloadJson : {R"({"v":"1"})", R"({"v":1,"endpoint":5})", R"([1,2])",
                                  R"({"v":1,"endpoint":"a:1","cluster":"c","name":"n",
                                      "ca":"x","id":"i","secret":"s","exp":"soon"})"}) {
    std::string text = "strait1." + base64UrlEncode(payloadJson) + "." +
                       base64UrlEncode(std::string(32, 'x'));
    kube::Result<Token> p = parseToken(text);
    ASSERT_FALSE(p.ok()) << payloadJson;
    EXPECT_NE(p.error().message.find("malformed"), std::string::npos) << p.error().message;
  }
  // A valid MAC over a payload that is not a token: malformed, not a crash.
  std::string payload = base64UrlEncode("{\"v\":1}");
  std::string text = "strait1." + payload + "." + base64UrlEncode(hmacSha256(key.reveal(), payload));
  kube::Result<Token> v = verifyToken(text, key, kNow);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("malformed"), std::string::npos) << v.error().message;
}

TEST(Token, WhitespaceAroundIsTolerated) {
  SecretString key(randomBytes(32));
  SecretString text = encodeToken(sample(), key);
  EXPECT_TRUE(verifyToken("  " + text.reveal() + "\n", key, kNow).ok());
}

TEST(Encoding, Base64RoundTrip) {
  for (std::string s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    kube::Result<std::string> d = base64Decode(base64Encode(s), "x");
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(*d, s);
    kube::Result<std::string> u = base64UrlDecode(base64UrlEncode(s), "x");
    ASSERT_TRUE(u.ok());
    EXPECT_EQ(*u, s);
  }
  EXPECT_FALSE(base64Decode("a", "x").ok());
  EXPECT_FALSE(base64Decode("@@@@", "x").ok());
}

}  // namespace
}  // namespace strait::peering
