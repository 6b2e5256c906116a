#include "reflection/namespace_mapping.h"

#include <gtest/gtest.h>

namespace strait::reflection {
namespace {

const std::string kId = "3f2b8c1e-7d4a-4e55-9b1c-0a2d3e4f5a6b";

TEST(NamespaceMapping, DefaultAppendsConsumerId) {
  NamespaceMapping m(kId, NamingStrategy::Default);
  auto r = m.remoteNamespace("web");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "web-" + kId);
  EXPECT_EQ(m.localNamespace("web-" + kId), "web");
  EXPECT_EQ(m.localNamespace("web"), std::nullopt);
  EXPECT_EQ(m.localNamespace("-" + kId), std::nullopt);
  EXPECT_EQ(m.localNamespace("web-other"), std::nullopt);
}

TEST(NamespaceMapping, SameNameKeepsTheName) {
  NamespaceMapping m(kId, NamingStrategy::SameName);
  EXPECT_EQ(*m.remoteNamespace("web"), "web");
  EXPECT_EQ(m.localNamespace("web"), "web");
  EXPECT_EQ(m.localNamespace("Not_Valid"), std::nullopt);
}

TEST(NamespaceMapping, PerNamespaceLookupMapsEachWayByItsOwnStrategy) {
  NamespaceMapping m(kId, [](std::string_view ns) {
    return ns == "mine" || ns == ("web-" + kId) ? NamingStrategy::SameName : NamingStrategy::Default;
  });
  EXPECT_EQ(*m.remoteNamespace("mine"), "mine");
  EXPECT_EQ(*m.remoteNamespace("web"), "web-" + kId);
  EXPECT_EQ(m.localNamespace("mine"), "mine");
  EXPECT_EQ(m.localNamespace("web"), std::nullopt);  // web uses the default naming
  EXPECT_EQ(m.localNamespace("other-" + kId), "other");
  // "web-<id>" is itself a same-name namespace here, and "web" is default-named: both
  // readings agree on "web" first (the default), which wins.
  EXPECT_EQ(m.localNamespace("web-" + kId), "web");
  EXPECT_EQ(m.strategyFor("mine"), NamingStrategy::SameName);
}

TEST(NamespaceMapping, TooLongMappedNameIsAClearError) {
  NamespaceMapping m(kId, NamingStrategy::Default);
  std::string ns26(26, 'a');
  EXPECT_TRUE(m.remoteNamespace(ns26).ok());
  std::string ns27(27, 'a');
  auto r = m.remoteNamespace(ns27);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, kube::Code::Invalid);
  EXPECT_NE(r.error().message.find(ns27), std::string::npos);
  EXPECT_NE(r.error().message.find("same-name"), std::string::npos);
  // Same-name naming has the whole 63 characters.
  EXPECT_TRUE(NamespaceMapping(kId, NamingStrategy::SameName).remoteNamespace(ns27).ok());
}

TEST(NamespaceMapping, InvalidLocalNamespaceIsRefused) {
  NamespaceMapping m(kId, NamingStrategy::SameName);
  EXPECT_FALSE(m.remoteNamespace("").ok());
  EXPECT_FALSE(m.remoteNamespace("UPPER").ok());
  EXPECT_FALSE(m.remoteNamespace("a/b").ok());
}

TEST(NamespaceMapping, ParseStrategy) {
  EXPECT_EQ(*parseNamingStrategy("default"), NamingStrategy::Default);
  EXPECT_EQ(*parseNamingStrategy("same"), NamingStrategy::SameName);
  auto bad = parseNamingStrategy("selected");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("selected"), std::string::npos);
}

}  // namespace
}  // namespace strait::reflection
