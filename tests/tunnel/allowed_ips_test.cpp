// Longest-prefix matching of the allowed-IPs table.
#include "tunnel/allowed_ips.h"

#include <gtest/gtest.h>

namespace strait::tunnel {
namespace {

IpPrefix P(const std::string& s) { return *IpPrefix::parse(s); }
IpAddress A(const std::string& s) { return *IpAddress::parse(s); }

TEST(AllowedIps, LongestPrefixWins) {
  AllowedIps<int> t;
  t.insert(P("0.0.0.0/0"), 1);
  t.insert(P("10.0.0.0/8"), 2);
  t.insert(P("10.1.0.0/16"), 3);
  t.insert(P("10.1.2.3/32"), 4);
  EXPECT_EQ(t.lookup(A("192.168.1.1")), 1);
  EXPECT_EQ(t.lookup(A("10.9.9.9")), 2);
  EXPECT_EQ(t.lookup(A("10.1.9.9")), 3);
  EXPECT_EQ(t.lookup(A("10.1.2.3")), 4);
  EXPECT_EQ(t.lookup(A("10.1.2.4")), 3);
  EXPECT_FALSE(t.lookup(A("fd00::1"))) << "families are separate";
}

TEST(AllowedIps, HostBitsIgnoredAndReplace) {
  AllowedIps<int> t;
  t.insert(P("10.1.2.3/16"), 1);  // parse masks to 10.1.0.0/16
  EXPECT_EQ(t.lookup(A("10.1.200.1")), 1);
  t.insert(P("10.1.0.0/16"), 2);  // same prefix: moves to the other value
  EXPECT_EQ(t.lookup(A("10.1.200.1")), 2);
  EXPECT_EQ(t.size(), 1u);
}

TEST(AllowedIps, RemoveAndRemoveValue) {
  AllowedIps<int> t;
  t.insert(P("10.0.0.0/8"), 1);
  t.insert(P("10.1.0.0/16"), 2);
  t.insert(P("fd00::/64"), 2);
  t.insert(P("fd00::1/128"), 1);
  EXPECT_EQ(t.lookup(A("fd00::1")), 1);
  EXPECT_EQ(t.lookup(A("fd00::2")), 2);
  EXPECT_TRUE(t.remove(P("10.1.0.0/16")));
  EXPECT_FALSE(t.remove(P("10.1.0.0/16")));
  EXPECT_EQ(t.lookup(A("10.1.0.1")), 1);
  t.removeValue(1);
  EXPECT_FALSE(t.lookup(A("10.1.0.1")));
  EXPECT_EQ(t.lookup(A("fd00::1")), 2);
  auto mine = t.prefixesOf(2);
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].toString(), "fd00::/64");
}

TEST(AllowedIps, ManyPeers) {
  AllowedIps<int> t;
  for (int i = 0; i < 1000; ++i) {
    t.insert(
        *IpPrefix::parse("10." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ".0/24"),
        i);
  }
  EXPECT_EQ(t.lookup(A("10.3.231.77")), 3 * 256 + 231);
  EXPECT_FALSE(t.lookup(A("11.0.0.1")));
}

TEST(IpParsing, ErrorsNameTheInput) {
  auto bad = IpPrefix::parse("10.0.0.0/33");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("10.0.0.0/33"), std::string::npos);
  EXPECT_FALSE(IpPrefix::parse("10.0.0/8").ok());
  EXPECT_FALSE(IpPrefix::parse("10.0.0.0/").ok());
  EXPECT_FALSE(Endpoint::parse("1.2.3.4").ok());
  EXPECT_FALSE(Endpoint::parse("1.2.3.4:0").ok());
  EXPECT_FALSE(Endpoint::parse("[fd00::1:51820").ok());
  auto e6 = Endpoint::parse("[fd00::1]:51820");
  ASSERT_TRUE(e6.ok());
  EXPECT_EQ(e6->toString(), "[fd00::1]:51820");
  auto e4 = Endpoint::parse("10.99.0.2:51820");
  ASSERT_TRUE(e4.ok());
  sockaddr_in6 sa = e4->toSockaddr6();
  EXPECT_TRUE(Endpoint::fromSockaddr(reinterpret_cast<sockaddr*>(&sa)) == *e4);
}

}  // namespace
}  // namespace strait::tunnel
