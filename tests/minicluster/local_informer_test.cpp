// LocalInformer over a real in-memory store: initial list, watch events, indexes, relist
// after compaction, handlers in order.
#include "minicluster/local_informer.h"

#include <gtest/gtest.h>

#include "minicluster/controller_context.h"
#include "minicluster/registry.h"

#include <mutex>
#include <thread>

namespace strait::minicluster {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds deadline = 10s) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return cond();
}

class LocalInformerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions so;
    so.historyLimit = 1000;
    store_ = newStore(so);
    ASSERT_TRUE(store_->open().ok());
  }

  void putPod(const std::string& ns, const std::string& name, const std::string& node = "",
              const std::string& ownerUid = "") {
    std::string key = "/core/pods/" + ns + "/" + name;
    auto fn = [&](const ObjectPtr&, uint64_t rv) -> kube::Result<NewObject> {
      json o = {{"metadata",
                 {{"name", name}, {"namespace", ns}, {"uid", "uid-" + name},
                  {"resourceVersion", std::to_string(rv)}}},
                {"spec", json::object()}};
      if (!node.empty()) o["spec"]["nodeName"] = node;
      if (!ownerUid.empty()) {
        o["metadata"]["ownerReferences"] = json::array({{{"uid", ownerUid}, {"name", "rs"}}});
      }
      return NewObject{o.dump(), {}, {}};
    };
    if (store_->get(key)) {
      ASSERT_TRUE(store_->update(key, fn).ok());
    } else {
      ASSERT_TRUE(store_->create(key, fn).ok());
    }
  }

  void deletePod(const std::string& ns, const std::string& name) {
    auto r = store_->remove("/core/pods/" + ns + "/" + name,
                            [&](const ObjectPtr& cur, uint64_t rv) -> kube::Result<NewObject> {
                              json o = json::parse(cur->json);
                              o["metadata"]["resourceVersion"] = std::to_string(rv);
                              return NewObject{o.dump(), {}, {}};
                            });
    ASSERT_TRUE(r.ok());
  }

  std::unique_ptr<Store> store_;
};

TEST_F(LocalInformerTest, ListsThenFollowsWatchWithHandlersInOrder) {
  putPod("a", "p1", "n1");
  std::mutex mu;
  std::vector<std::string> events;
  LocalInformer inf(*store_, "/core/pods/");
  InformerHandlers h;
  h.onAdd = [&](const CachedPtr& o) {
    std::lock_guard l(mu);
    events.push_back("add " + o->name);
  };
  h.onUpdate = [&](const CachedPtr& o, const CachedPtr& n) {
    std::lock_guard l(mu);
    events.push_back("update " + n->name + " " + std::to_string(o->stored->rv < n->stored->rv));
  };
  h.onDelete = [&](const CachedPtr& o) {
    std::lock_guard l(mu);
    events.push_back("delete " + o->name);
  };
  inf.addHandlers(h);
  inf.start();
  ASSERT_TRUE(inf.waitForSync(10s));
  ASSERT_NE(inf.get("a", "p1"), nullptr);
  EXPECT_EQ(inf.get("a", "p1")->uid, "uid-p1");

  putPod("b", "p2");
  putPod("a", "p1", "n2");
  deletePod("b", "p2");
  ASSERT_TRUE(eventually([&] {
    std::lock_guard l(mu);
    return events.size() == 4;
  }));
  std::lock_guard l(mu);
  EXPECT_EQ(events, (std::vector<std::string>{"add p1", "add p2", "update p1 1", "delete p2"}));
  EXPECT_EQ(inf.get("b", "p2"), nullptr);
  EXPECT_EQ(inf.size(), 1u);
}

TEST_F(LocalInformerTest, IndexesFollowChanges) {
  LocalInformer inf(*store_, "/core/pods/");
  inf.addIndex("first-letter", [](const CachedObject& o) {
    return std::vector<std::string>{o.name.substr(0, 1)};
  });
  inf.start();
  ASSERT_TRUE(inf.waitForSync(10s));
  putPod("a", "x1", "n1", "owner-1");
  putPod("a", "y1", "n1", "owner-1");
  putPod("b", "x2", "n2");
  ASSERT_TRUE(eventually([&] { return inf.size() == 3; }));
  EXPECT_EQ(inf.byIndex(kIndexNodeName, "n1").size(), 2u);
  EXPECT_EQ(inf.byIndex(kIndexOwnerUid, "owner-1").size(), 2u);
  EXPECT_EQ(inf.list("a").size(), 2u);
  EXPECT_EQ(inf.byIndex("first-letter", "x").size(), 2u);
  EXPECT_TRUE(inf.byIndex("no-such-index", "x").empty());

  putPod("a", "x1", "n2");  // moves node, drops owner
  ASSERT_TRUE(eventually([&] { return inf.byIndex(kIndexNodeName, "n1").size() == 1; }));
  EXPECT_EQ(inf.byIndex(kIndexNodeName, "n2").size(), 2u);
  EXPECT_EQ(inf.byIndex(kIndexOwnerUid, "owner-1").size(), 1u);
  deletePod("a", "y1");
  ASSERT_TRUE(eventually([&] { return inf.byIndex(kIndexNodeName, "n1").empty(); }));
  EXPECT_TRUE(inf.byIndex(kIndexOwnerUid, "owner-1").empty());
}

// A namespace's objects come from the key order, not from an index entry per object: an
// object files no namespace index value, and a namespace whose name extends another's
// ("a" and "ab") is not mixed in.
TEST_F(LocalInformerTest, NamespaceListingNeedsNoIndexEntries) {
  LocalInformer inf(*store_, "/core/pods/");
  inf.start();
  ASSERT_TRUE(inf.waitForSync(10s));
  putPod("a", "p1");
  putPod("a", "p2");
  putPod("ab", "p3");
  putPod("b", "p4");
  ASSERT_TRUE(eventually([&] { return inf.size() == 4; }));
  auto names = [](const std::vector<CachedPtr>& objs) {
    std::vector<std::string> out;
    for (const auto& o : objs) out.push_back(o->ns + "/" + o->name);
    return out;
  };
  EXPECT_EQ(names(inf.list("a")), (std::vector<std::string>{"a/p1", "a/p2"}));
  EXPECT_EQ(names(inf.byIndex(kIndexNamespace, "a")), (std::vector<std::string>{"a/p1", "a/p2"}));
  EXPECT_EQ(names(inf.list("ab")), (std::vector<std::string>{"ab/p3"}));
  EXPECT_TRUE(inf.list("c").empty());
  EXPECT_TRUE(inf.byIndex(kIndexNamespace, "").empty());
  for (const auto& o : inf.list()) {
    for (const auto& [index, value] : o->indexed) EXPECT_NE(index, kIndexNamespace);
  }
  deletePod("a", "p1");
  ASSERT_TRUE(eventually([&] { return inf.list("a").size() == 1; }));
}

TEST_F(LocalInformerTest, PrefixLimitsTheResource) {
  LocalInformer inf(*store_, "/core/pods/a/");
  inf.start();
  putPod("a", "p1");
  putPod("b", "p2");
  ASSERT_TRUE(eventually([&] { return inf.size() == 1; }));
  putPod("a", "p3");
  ASSERT_TRUE(eventually([&] { return inf.size() == 2; }));
  EXPECT_EQ(inf.get("b", "p2"), nullptr);
}

TEST(ObjectKeyTest, RoundTrips) {
  EXPECT_EQ(objectKey("ns", "n"), "ns/n");
  EXPECT_EQ(objectKey("", "n"), "n");
  EXPECT_EQ(splitObjectKey("ns/n"), (std::pair<std::string, std::string>{"ns", "n"}));
  EXPECT_EQ(splitObjectKey("n"), (std::pair<std::string, std::string>{"", "n"}));
}

// An informer that keeps no trees caches the stored JSON only: its handlers share one parse
// per event, the tree is gone once nobody holds it, tree() parses it again, and the indexes
// still file and unfile by the values computed when the object arrived.
TEST_F(LocalInformerTest, WithoutKeptTreesCachesOnlyTheJson) {
  putPod("a", "p1", "n1", "owner-1");
  LocalInformer inf(*store_, "/core/pods/", false);
  EXPECT_FALSE(inf.keepsTrees());
  std::mutex mu;
  std::vector<const json*> firstSeen, secondSeen;
  std::vector<bool> headHasSpec, headHasName;
  InformerHandlers first, second;
  first.onAdd = [&](const CachedPtr& o) {
    std::lock_guard l(mu);
    JsonPtr head = o->head();
    firstSeen.push_back(head.get());
    headHasSpec.push_back(head->contains("spec"));
    headHasName.push_back(head->contains("metadata") && (*head)["metadata"].contains("name"));
  };
  second.onAdd = [&](const CachedPtr& o) {
    std::lock_guard l(mu);
    secondSeen.push_back(o->head().get());
  };
  inf.addHandlers(first);
  inf.addHandlers(second);
  inf.start();
  ASSERT_TRUE(inf.waitForSync(5s));
  putPod("a", "p2", "n2");
  ASSERT_TRUE(eventually([&] { return inf.size() == 2; }));
  ASSERT_TRUE(eventually([&] {
    std::lock_guard l(mu);
    return secondSeen.size() == 2;
  }));
  {
    std::lock_guard l(mu);
    EXPECT_EQ(firstSeen, secondSeen);  // one parse shared by both handlers
    // The handlers' view is the head: metadata, no spec.
    EXPECT_EQ(headHasSpec, std::vector<bool>(firstSeen.size(), false));
    EXPECT_EQ(headHasName, std::vector<bool>(firstSeen.size(), true));
  }
  for (const char* name : {"p1", "p2"}) {
    auto c = inf.get("a", name);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->kept, nullptr) << name;
    EXPECT_TRUE(c->recent.expired()) << name;  // no tree outlives the handlers
    EXPECT_TRUE(c->recentHead.expired()) << name;
    JsonPtr t = c->tree();
    EXPECT_EQ((*t)["metadata"]["name"], name);
    EXPECT_EQ(c->tree(), t);  // shared while held
    EXPECT_EQ(c->head(), t);  // a held tree serves as the head too
    EXPECT_TRUE(t->contains("spec"));
  }
  ASSERT_EQ(inf.byIndex(kIndexOwnerUid, "owner-1").size(), 1u);
  ASSERT_EQ(inf.byIndex(kIndexNodeName, "n2").size(), 1u);
  putPod("a", "p1", "n3");  // moves node, loses its owner
  ASSERT_TRUE(eventually([&] { return inf.byIndex(kIndexNodeName, "n3").size() == 1; }));
  EXPECT_TRUE(inf.byIndex(kIndexNodeName, "n1").empty());
  EXPECT_TRUE(inf.byIndex(kIndexOwnerUid, "owner-1").empty());
  deletePod("a", "p2");
  ASSERT_TRUE(eventually([&] { return inf.byIndex(kIndexNodeName, "n2").empty(); }));
  inf.stop();

  // The default keeps trees with the cached objects.
  LocalInformer keeping(*store_, "/core/pods/");
  keeping.start();
  ASSERT_TRUE(keeping.waitForSync(5s));
  auto c = keeping.get("a", "p1");
  ASSERT_TRUE(c);
  EXPECT_NE(c->kept, nullptr);
  EXPECT_EQ(&c->obj(), c->kept.get());
  keeping.stop();
}

// The controllers' shared informers keep parsed trees for every resource except Pods, whose
// number grows with the workload.
TEST(InformerSetTest, PodInformerKeepsNoTrees) {
  StoreOptions so;
  auto store = newStore(so);
  ASSERT_TRUE(store->open().ok());
  Registry registry;
  InformerSet set(*store, registry);
  EXPECT_FALSE(set.informer("", "pods").keepsTrees());
  EXPECT_TRUE(set.informer("", "services").keepsTrees());
  EXPECT_TRUE(set.informer("apps", "replicasets").keepsTrees());
}

}  // namespace
}  // namespace strait::minicluster
