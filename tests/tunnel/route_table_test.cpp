// RouteTable against the kernel: a private network namespace (NetnsLab's A, whose veth
// reaches 10.99.0.0/24), routes read back with iproute2.
#include "tunnel/route_table.h"

#include <gtest/gtest.h>

#include "tunnel/netns_lab.h"

namespace strait::tunnel {
namespace {

using testing::NetnsLab;

Route route(const std::string& dst, const std::string& via) {
  Route r;
  r.destination = *IpPrefix::parse(dst);
  r.gateway = *IpAddress::parse(via);
  return r;
}

class RouteTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (network namespaces)";
    lab_ = std::make_unique<NetnsLab>();
    std::string err = lab_->setUp();
    ASSERT_EQ(err, "");
    auto table = RouteTable::open("/run/netns/" + lab_->a());
    ASSERT_TRUE(table.ok()) << table.error().message;
    table_ = std::move(*table);
  }

  // `ip route` of namespace A, one route a line.
  std::string routes(const std::string& filter = "") {
    std::vector<std::string> argv = {"ip", "route", "show"};
    if (!filter.empty()) {
      argv.push_back("proto");
      argv.push_back(filter);
    }
    e2e::CommandResult r = lab_->exec(lab_->a(), argv);
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    return r.out;
  }

  std::unique_ptr<NetnsLab> lab_;
  std::unique_ptr<RouteTable> table_;
};

TEST_F(RouteTableTest, SyncAddsChangesAndRemovesOnlyItsOwnRoutes) {
  auto first = table_->sync({route("10.240.0.0/16", "10.99.0.2"), route("10.241.0.0/16", "10.99.0.2")});
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->added.size(), 2u);
  EXPECT_TRUE(first->failed.empty());
  std::string own = routes("199");
  EXPECT_NE(own.find("10.240.0.0/16 via 10.99.0.2"), std::string::npos) << own;
  EXPECT_NE(own.find("10.241.0.0/16 via 10.99.0.2"), std::string::npos) << own;

  auto listed = table_->list();
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0], route("10.240.0.0/16", "10.99.0.2"));
  EXPECT_EQ((*listed)[1], route("10.241.0.0/16", "10.99.0.2"));

  // The same set again changes nothing.
  auto again = table_->sync(*listed);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->changedAnything());

  // A route somebody else owns, for a destination we are then asked to route too.
  e2e::CommandResult foreign =
      lab_->exec(lab_->a(), {"ip", "route", "add", "10.250.0.0/16", "via", "10.99.0.2"});
  ASSERT_EQ(foreign.exitCode, 0) << foreign.describe();

  auto second = table_->sync({route("10.241.0.0/16", "10.99.0.3"),
                              route("10.250.0.0/16", "10.99.0.2"),
                              route("10.242.0.0/16", "192.0.2.1")});
  ASSERT_TRUE(second.ok()) << second.error().message;
  ASSERT_EQ(second->removed.size(), 1u);
  EXPECT_EQ(second->removed[0], route("10.240.0.0/16", "10.99.0.2"));
  ASSERT_EQ(second->changed.size(), 1u);
  EXPECT_EQ(second->changed[0], route("10.241.0.0/16", "10.99.0.3"));
  EXPECT_TRUE(second->added.empty());
  ASSERT_EQ(second->failed.size(), 2u);
  // The foreign route is reported and left as it was; the unreachable gateway is named.
  std::string failures = second->failed[0].second + " | " + second->failed[1].second;
  EXPECT_NE(failures.find("10.250.0.0/16 via 10.99.0.2: the destination already has a route"),
            std::string::npos)
      << failures;
  EXPECT_NE(failures.find("10.242.0.0/16 via 192.0.2.1"), std::string::npos) << failures;

  own = routes("199");
  EXPECT_EQ(own.find("10.240.0.0/16"), std::string::npos) << own;
  EXPECT_NE(own.find("10.241.0.0/16 via 10.99.0.3"), std::string::npos) << own;
  EXPECT_EQ(own.find("10.250.0.0/16"), std::string::npos) << own;
  std::string all = routes();
  EXPECT_NE(all.find("10.250.0.0/16 via 10.99.0.2"), std::string::npos) << all;

  // removeAll takes exactly ours away.
  auto removed = table_->removeAll();
  ASSERT_TRUE(removed.ok()) << removed.error().message;
  ASSERT_EQ(removed->size(), 1u);
  EXPECT_EQ((*removed)[0], route("10.241.0.0/16", "10.99.0.3"));
  EXPECT_EQ(routes("199"), "");
  all = routes();
  EXPECT_NE(all.find("10.250.0.0/16 via 10.99.0.2"), std::string::npos) << all;
}

TEST_F(RouteTableTest, TheCallersNamespaceIsUntouched) {
  auto r = table_->sync({route("10.243.0.0/16", "10.99.0.2")});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->added.size(), 1u);
  e2e::CommandResult host = e2e::runCommand({"ip", "route", "show", "10.243.0.0/16"});
  EXPECT_EQ(host.exitCode, 0) << host.describe();
  EXPECT_EQ(host.out, "");
  EXPECT_NE(routes("199").find("10.243.0.0/16"), std::string::npos);
}

TEST_F(RouteTableTest, BadInputIsAnErrorNamingIt) {
  auto twice = table_->sync({route("10.240.0.0/16", "10.99.0.2"), route("10.240.0.0/16", "10.99.0.3")});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().message, "routes: destination 10.240.0.0/16 is given twice");

  auto mixed = table_->sync({route("fd00:1::/64", "10.99.0.2")});
  ASSERT_TRUE(mixed.ok());
  ASSERT_EQ(mixed->failed.size(), 1u);
  EXPECT_NE(mixed->failed[0].second.find("address family differs"), std::string::npos);

  auto missing = RouteTable::open("/run/netns/strait-no-such-namespace");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/run/netns/strait-no-such-namespace"), std::string::npos)
      << missing.error().message;
}

}  // namespace
}  // namespace strait::tunnel
