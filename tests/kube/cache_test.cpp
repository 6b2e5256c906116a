#include "kube/cache.h"

#include <gtest/gtest.h>

#include <thread>

namespace strait::kube {
namespace {

using nlohmann::json;

ObjectPtr pod(const std::string& ns, const std::string& name, const std::string& node,
              json labels, const std::string& rv = "1") {
  json p = {{"metadata", {{"namespace", ns}, {"name", name}, {"labels", labels},
                          {"resourceVersion", rv}}},
            {"spec", json::object()}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  return std::make_shared<const json>(std::move(p));
}

std::vector<std::string> names(const std::vector<ObjectPtr>& objs) {
  std::vector<std::string> out;
  for (const auto& o : objs) out.push_back(objectKey(*o));
  std::sort(out.begin(), out.end());
  return out;
}

class CacheModes : public ::testing::TestWithParam<bool> {};

TEST_P(CacheModes, KeysAndIndexesFollowUpdatesAndDeletes) {
  Cache c(GetParam());
  c.addIndex(kNamespaceIndex, indexByNamespace());
  c.addIndex(kNodeNameIndex, indexByNodeName());
  c.addIndex(kLabelsIndex, indexByLabels());
  c.upsert("a/p1", pod("a", "p1", "n1", {{"app", "web"}}));
  c.upsert("a/p2", pod("a", "p2", "n2", {{"app", "db"}}));
  c.upsert("b/p3", pod("b", "p3", "n1", {{"app", "web"}}));
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(names(c.byIndex(kNamespaceIndex, "a")), (std::vector<std::string>{"a/p1", "a/p2"}));
  EXPECT_EQ(names(c.byIndex(kNodeNameIndex, "n1")), (std::vector<std::string>{"a/p1", "b/p3"}));
  EXPECT_EQ(names(c.byIndex(kLabelsIndex, "app=web")),
            (std::vector<std::string>{"a/p1", "b/p3"}));

  // p1 moves to n2 and changes its label: old index entries go.
  ObjectPtr before = c.get("a/p1");
  ObjectPtr old = c.upsert("a/p1", pod("a", "p1", "n2", {{"app", "db"}}, "2"));
  EXPECT_EQ(*old, *before);
  EXPECT_EQ(objectResourceVersion(*c.get("a/p1")), "2");
  EXPECT_EQ(objectResourceVersion(*before), "1");  // snapshots never change
  EXPECT_EQ(names(c.byIndex(kNodeNameIndex, "n1")), (std::vector<std::string>{"b/p3"}));
  EXPECT_EQ(names(c.byIndex(kLabelsIndex, "app=db")), (std::vector<std::string>{"a/p1", "a/p2"}));

  EXPECT_NE(c.erase("b/p3"), nullptr);
  EXPECT_EQ(c.erase("b/p3"), nullptr);
  EXPECT_TRUE(c.byIndex(kNodeNameIndex, "n1").empty());
  EXPECT_TRUE(c.byIndex(kNamespaceIndex, "b").empty());
  EXPECT_TRUE(c.byIndex("no-such-index", "x").empty());
  EXPECT_EQ(c.get("b/p3"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(ParsedAndCompact, CacheModes, ::testing::Bool());

TEST(Cache, CustomIndexAddedLaterIndexesExistingObjects) {
  Cache c(true);
  c.upsert("a/p1", pod("a", "p1", "", {{"tier", "front"}}));
  c.addIndex("tier", [](const json& o) {
    return std::vector<std::string>{o["metadata"]["labels"].value("tier", "")};
  });
  EXPECT_EQ(c.byIndex("tier", "front").size(), 1u);
  EXPECT_TRUE(c.byIndex(kNodeNameIndex, "").empty());
}

TEST(Cache, ConcurrentReadersAndOneWriter) {
  Cache c;
  c.addIndex(kNamespaceIndex, indexByNamespace());
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done) {
      for (const auto& o : c.byIndex(kNamespaceIndex, "ns")) ASSERT_TRUE(o->is_object());
      (void)c.list();
    }
  });
  for (int i = 0; i < 2000; ++i) {
    std::string name = "p" + std::to_string(i % 50);
    c.upsert("ns/" + name, pod("ns", name, "", json::object(), std::to_string(i)));
    if (i % 3 == 0) c.erase("ns/" + name);
  }
  done = true;
  reader.join();
  EXPECT_LE(c.size(), 50u);
}

TEST(Cache, ObjectKey) {
  EXPECT_EQ(objectKey(json{{"metadata", {{"name", "n"}}}}), "n");
  EXPECT_EQ(objectKey(json{{"metadata", {{"name", "n"}, {"namespace", "s"}}}}), "s/n");
  EXPECT_EQ(objectKey(json::array()), "");
}

}  // namespace
}  // namespace strait::kube
