// In-memory behaviour of the store: CRUD, callbacks, listing, watches, history and fan-out.
// Durability (data directory, WAL, snapshots, kill -9) is in wal_test.cpp.

#include "minicluster/store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace strait::minicluster {
namespace {

using namespace std::chrono_literals;

std::string objJson(uint64_t rv, const std::string& v) {
  return R"({"metadata":{"resourceVersion":")" + std::to_string(rv) + R"("},"v":")" + v + "\"}";
}

UpdateFn setTo(const std::string& v, Labels labels = {}) {
  return [v, labels](const ObjectPtr&, uint64_t rv) -> Result<NewObject> {
    return NewObject{objJson(rv, v), labels, {{"v", v}}};
  };
}

std::unique_ptr<Store> openStore(StoreOptions opts = {}) {
  auto s = newStore(std::move(opts));
  Status st = s->open();
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
  return s;
}

// A write that leaves labels and fields as they were (a status write) shares them with the
// version before, which the watch history keeps; a change gets its own copy.
TEST(Store, UnchangedLabelsAndFieldsAreSharedWithThePreviousVersion) {
  auto s = openStore();
  auto write = [](const std::string& v, Labels labels, Fields fields) -> UpdateFn {
    return [=](const ObjectPtr&, uint64_t rv) -> Result<NewObject> {
      return NewObject{objJson(rv, v), labels, fields};
    };
  };
  const Labels labels = {{"app", "web"}, {"tier", "frontend"}};
  const Fields fields = {{"metadata.name", "web"}, {"spec.nodeName", "n1"}};
  auto v1 = s->create("/core/pods/default/web", write("a", labels, fields));
  ASSERT_TRUE(v1.ok());
  auto v2 = s->update("/core/pods/default/web", write("b", labels, fields));
  ASSERT_TRUE(v2.ok());
  EXPECT_TRUE((*v2)->labels.shares((*v1)->labels));
  EXPECT_TRUE((*v2)->fields.shares((*v1)->fields));
  EXPECT_EQ(&(*v2)->labels.get(), &(*v1)->labels.get());

  Labels relabelled = labels;
  relabelled["tier"] = "backend";
  auto v3 = s->update("/core/pods/default/web", write("c", relabelled, fields));
  ASSERT_TRUE(v3.ok());
  EXPECT_FALSE((*v3)->labels.shares((*v2)->labels));
  EXPECT_TRUE((*v3)->fields.shares((*v2)->fields));
  EXPECT_EQ((*v3)->labels.at("tier"), "backend");
  EXPECT_EQ((*v2)->labels.at("tier"), "frontend");  // the older version is untouched

  Fields moved = fields;
  moved["spec.nodeName"] = "n2";
  auto v4 = s->update("/core/pods/default/web", write("d", relabelled, moved));
  ASSERT_TRUE(v4.ok());
  EXPECT_FALSE((*v4)->fields.shares((*v3)->fields));
  EXPECT_EQ((*v4)->fields.find("spec.nodeName")->second, "n2");
  EXPECT_EQ((*v3)->fields.find("spec.nodeName")->second, "n1");
  EXPECT_TRUE((*v4)->labels.shares((*v3)->labels));
}

// Field names are held once per process, whichever object and however they were spelled;
// lookups by a plain string find them.
TEST(Store, FieldNamesAreInterned) {
  Fields a = {{"spec.serviceAccountName", "x"}};
  std::string spelled = std::string("spec.") + "serviceAccountName";
  Fields b;
  b.emplace(spelled, "y");
  EXPECT_EQ(&a.begin()->first.str(), &b.begin()->first.str());
  EXPECT_EQ(a.find(spelled)->second, "x");
  EXPECT_EQ(b.find(std::string_view("spec.serviceAccountName"))->second, "y");
  EXPECT_EQ(a.find("metadata.name"), a.end());
  EXPECT_EQ(FieldName("spec.nodeName"), FieldName(std::string("spec.nodeName")));
  EXPECT_FALSE(FieldName("spec.nodeName") == FieldName("spec.nodename"));
}

TEST(Store, CrudAndRevisionNumbering) {
  auto s = openStore();
  EXPECT_EQ(s->revision(), 1u);
  EXPECT_EQ(s->compactedRevision(), 1u);

  auto c = s->create("/core/pods/default/web", setTo("a", {{"app", "web"}}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->rv, 2u);
  EXPECT_EQ((*c)->key, "/core/pods/default/web");
  EXPECT_EQ((*c)->json, objJson(2, "a"));
  EXPECT_EQ((*c)->labels.at("app"), "web");
  EXPECT_EQ(s->revision(), 2u);

  auto g = s->get("/core/pods/default/web");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->get(), c->get());  // the same immutable snapshot

  auto u = s->update("/core/pods/default/web", setTo("b"));
  ASSERT_TRUE(u.ok());
  EXPECT_EQ((*u)->rv, 3u);
  EXPECT_EQ((*s->get("/core/pods/default/web"))->json, objJson(3, "b"));
  // The old snapshot is untouched.
  EXPECT_EQ((*c)->json, objJson(2, "a"));

  auto r = s->remove("/core/pods/default/web", [](const ObjectPtr& cur, uint64_t rv) {
    return Result<NewObject>(NewObject{objJson(rv, "deleted"), cur->labels, cur->fields});
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->rv, 4u);
  EXPECT_EQ((*r)->json, objJson(4, "deleted"));
  EXPECT_EQ(s->revision(), 4u);
  auto gone = s->get("/core/pods/default/web");
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(kube::isNotFound(gone.error()));
}

TEST(Store, AlreadyExistsAndNotFoundChangeNothing) {
  auto s = openStore();
  ASSERT_TRUE(s->create("/k/a", setTo("1")).ok());
  auto again = s->create("/k/a", setTo("2"));
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(kube::isAlreadyExists(again.error()));

  auto up = s->update("/k/missing", setTo("x"));
  ASSERT_FALSE(up.ok());
  EXPECT_TRUE(kube::isNotFound(up.error()));
  auto rm = s->remove("/k/missing", setTo("x"));
  ASSERT_FALSE(rm.ok());
  EXPECT_TRUE(kube::isNotFound(rm.error()));

  EXPECT_EQ(s->revision(), 2u);
  EXPECT_EQ((*s->get("/k/a"))->json, objJson(2, "1"));
}

TEST(Store, CallbackSeesCurrentAndNewRvAndItsErrorAborts) {
  auto s = openStore();
  ASSERT_TRUE(s->create("/k/a", setTo("1")).ok());
  auto w = s->watch("/k/", 0);
  ASSERT_TRUE(w.ok());

  ObjectPtr seen;
  uint64_t seenRv = 0;
  auto failing = s->update("/k/a", [&](const ObjectPtr& cur, uint64_t rv) -> Result<NewObject> {
    seen = cur;
    seenRv = rv;
    return kube::makeError(kube::Code::Conflict, "precondition failed");
  });
  ASSERT_FALSE(failing.ok());
  EXPECT_TRUE(kube::isConflict(failing.error()));
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->json, objJson(2, "1"));
  EXPECT_EQ(seenRv, 3u);

  auto failingRemove = s->remove("/k/a", [](const ObjectPtr&, uint64_t) -> Result<NewObject> {
    return kube::makeError(kube::Code::Conflict, "has finalizers");
  });
  ASSERT_FALSE(failingRemove.ok());
  auto failingCreate = s->create("/k/b", [](const ObjectPtr& cur, uint64_t) -> Result<NewObject> {
    EXPECT_EQ(cur, nullptr);
    return kube::makeError(kube::Code::Invalid, "bad");
  });
  ASSERT_FALSE(failingCreate.ok());

  EXPECT_EQ(s->revision(), 2u);  // failed writes consume no revision
  EXPECT_EQ((*s->get("/k/a"))->json, objJson(2, "1"));
  EXPECT_FALSE(s->get("/k/b").ok());
  EXPECT_FALSE((*w)->next(20ms).has_value());

  // The next successful write gets the rv the failed one was offered.
  auto ok = s->update("/k/a", setTo("2"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)->rv, 3u);
}

TEST(Store, ListByPrefixWithFilter) {
  auto s = openStore();
  for (const char* k : {"/core/pods/default/a", "/core/pods/default/b", "/core/pods/kube-system/c",
                        "/core/podsx/default/z", "/core/nodes//n1", "/core/pods/defaultx/d"}) {
    ASSERT_TRUE(s->create(k, setTo(k, {{"k", k}})).ok());
  }
  auto keys = [](const ListResult& r) {
    std::vector<std::string> out;
    for (const auto& o : r.items) out.push_back(o->key);
    return out;
  };
  auto all = s->list("/core/pods/");
  EXPECT_EQ(keys(all),
            (std::vector<std::string>{"/core/pods/default/a", "/core/pods/default/b",
                                      "/core/pods/defaultx/d", "/core/pods/kube-system/c"}));
  EXPECT_EQ(all.rv, s->revision());
  EXPECT_EQ(keys(s->list("/core/pods/default/")),
            (std::vector<std::string>{"/core/pods/default/a", "/core/pods/default/b"}));
  EXPECT_EQ(keys(s->list("/core/nodes/")), (std::vector<std::string>{"/core/nodes//n1"}));
  EXPECT_TRUE(s->list("/apps/").items.empty());
  auto filtered = s->list(
      "/core/pods/", [](const Object& o) { return o.labels.at("k") == "/core/pods/default/b"; });
  EXPECT_EQ(keys(filtered), (std::vector<std::string>{"/core/pods/default/b"}));
}

TEST(Store, WatchDeliversTypedEventsInOrderForItsPrefix) {
  auto s = openStore();
  auto w = s->watch("/core/pods/default/", 0);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(s->create("/core/pods/default/a", setTo("1")).ok());
  ASSERT_TRUE(s->create("/core/pods/other/x", setTo("1")).ok());  // not under the prefix
  ASSERT_TRUE(s->update("/core/pods/default/a", setTo("2")).ok());
  ASSERT_TRUE(s->remove("/core/pods/default/a", setTo("3")).ok());

  auto e1 = (*w)->next(1s);
  auto e2 = (*w)->next(1s);
  auto e3 = (*w)->next(1s);
  ASSERT_TRUE(e1 && e2 && e3);
  EXPECT_EQ((*e1)->type, EventType::Added);
  EXPECT_EQ((*e1)->rv, 2u);
  EXPECT_EQ((*e1)->prev, nullptr);
  EXPECT_EQ((*e2)->type, EventType::Modified);
  EXPECT_EQ((*e2)->rv, 4u);
  EXPECT_EQ((*e2)->prev->json, objJson(2, "1"));
  EXPECT_EQ((*e2)->object->json, objJson(4, "2"));
  EXPECT_EQ((*e3)->type, EventType::Deleted);
  EXPECT_EQ((*e3)->rv, 5u);
  EXPECT_EQ((*e3)->object->rv, 5u);
  EXPECT_EQ((*e3)->object->json, objJson(5, "3"));
  EXPECT_EQ((*e3)->prev->json, objJson(4, "2"));
  EXPECT_FALSE((*w)->next(10ms).has_value());
  EXPECT_STREQ(eventTypeName((*e3)->type), "DELETED");
}

TEST(Store, WatchResumesFromRvThenContinuesLive) {
  auto s = openStore();
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(s->create("/k/" + std::to_string(i), setTo("v")).ok());  // rvs 2..11
  }
  auto w = s->watch("/k/", 6);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(s->create("/k/live", setTo("v")).ok());  // rv 12
  for (uint64_t want = 7; want <= 12; ++want) {
    auto e = (*w)->next(1s);
    ASSERT_TRUE(e) << want;
    EXPECT_EQ((*e)->rv, want);
  }
  EXPECT_FALSE((*w)->next(10ms).has_value());

  // From the current revision: nothing to replay.
  auto now = s->watch("/k/", s->revision());
  ASSERT_TRUE(now.ok());
  EXPECT_FALSE((*now)->next(10ms).has_value());
  // From 0: only future events.
  auto fromZero = s->watch("/k/", 0);
  ASSERT_TRUE(fromZero.ok());
  EXPECT_FALSE((*fromZero)->next(10ms).has_value());
  ASSERT_TRUE(s->update("/k/live", setTo("w")).ok());
  auto e = (*fromZero)->next(1s);
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)->rv, 13u);
}

TEST(Store, GoneAfterCompact) {
  auto s = openStore();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s->create("/k/" + std::to_string(i), setTo("v")).ok());
  s->compact(6);
  EXPECT_EQ(s->compactedRevision(), 6u);
  auto old = s->watch("/k/", 5);
  ASSERT_FALSE(old.ok());
  EXPECT_TRUE(kube::isGone(old.error()));
  EXPECT_EQ(old.error().message, "too old resource version: 5 (6)");

  auto ok = s->watch("/k/", 6);
  ASSERT_TRUE(ok.ok());
  auto e = (*ok)->next(1s);
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)->rv, 7u);

  s->compact(3);  // never moves backwards
  EXPECT_EQ(s->compactedRevision(), 6u);
  s->compact(1000);  // clamped to the current revision
  EXPECT_EQ(s->compactedRevision(), 11u);
  EXPECT_TRUE(s->watch("/k/", 11).ok());
}

TEST(Store, GoneAfterHistoryOverflow) {
  StoreOptions opts;
  opts.historyLimit = 5;
  auto s = openStore(opts);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s->create("/k/" + std::to_string(i), setTo("v")).ok());
  // rvs 2..11; history keeps 7..11, so 6 is the newest dropped.
  EXPECT_EQ(s->compactedRevision(), 6u);
  auto old = s->watch("/k/", 3);
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.error().code, kube::Code::Gone);
  EXPECT_EQ(old.error().message, "too old resource version: 3 (6)");
  auto w = s->watch("/k/", 6);
  ASSERT_TRUE(w.ok());
  for (uint64_t want = 7; want <= 11; ++want) {
    auto e = (*w)->next(1s);
    ASSERT_TRUE(e);
    EXPECT_EQ((*e)->rv, want);
  }
}

TEST(Store, ConcurrentWritersAndWatchersSeeEveryEventOnceInOrder) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  constexpr int kTotal = kThreads * kPerThread;
  auto s = openStore();

  struct Seen {
    std::vector<uint64_t> rvs;
  };
  std::vector<Seen> seen(3);
  std::vector<std::unique_ptr<Watch>> watches;
  watches.push_back(s->watch("/w/", 0).value());
  watches.push_back(s->watch("/w/", 0).value());
  watches.push_back(s->watch("/w/t1/", 0).value());  // one writer's keys only
  std::vector<std::thread> readers;
  for (size_t i = 0; i < watches.size(); ++i) {
    size_t want = i == 2 ? kPerThread : kTotal;
    readers.emplace_back([&, i, want] {
      auto deadline = std::chrono::steady_clock::now() + 15s;
      while (seen[i].rvs.size() < want && std::chrono::steady_clock::now() < deadline) {
        if (auto e = watches[i]->next(100ms)) seen[i].rvs.push_back((*e)->rv);
      }
    });
  }
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string key = "/w/t" + std::to_string(t) + "/" + std::to_string(i % 50);
        Result<ObjectPtr> r = i < 50 ? s->create(key, setTo("v")) : s->update(key, setTo("v"));
        ASSERT_TRUE(r.ok());
      }
    });
  }
  for (auto& th : writers) th.join();
  for (auto& th : readers) th.join();

  EXPECT_EQ(s->revision(), static_cast<uint64_t>(1 + kTotal));
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(seen[i].rvs.size(), static_cast<size_t>(kTotal)) << "watcher " << i;
    for (int j = 0; j < kTotal; ++j) ASSERT_EQ(seen[i].rvs[j], static_cast<uint64_t>(j + 2));
  }
  ASSERT_EQ(seen[2].rvs.size(), static_cast<size_t>(kPerThread));
  for (size_t j = 1; j < seen[2].rvs.size(); ++j) ASSERT_LT(seen[2].rvs[j - 1], seen[2].rvs[j]);
  for (auto& w : watches) EXPECT_FALSE(w->next(1ms).has_value());  // no duplicates
}

TEST(Store, WatcherOverQueueLimitIsEnded) {
  StoreOptions opts;
  opts.watcherQueueLimit = 10;
  auto s = openStore(opts);
  auto slow = s->watch("/k/", 0);
  auto reader = s->watch("/k/", 0);
  ASSERT_TRUE(slow.ok() && reader.ok());
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(s->create("/k/" + std::to_string(i), setTo("v")).ok());
    ASSERT_TRUE((*reader)->next(1s).has_value());
  }
  EXPECT_FALSE((*slow)->ended());  // exactly at the limit
  ASSERT_TRUE(s->create("/k/over", setTo("v")).ok());
  EXPECT_TRUE((*slow)->ended());
  EXPECT_FALSE((*slow)->next(10ms).has_value());
  // The reader that kept up is unaffected.
  EXPECT_FALSE((*reader)->ended());
  auto e = (*reader)->next(1s);
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)->object->key, "/k/over");

  // A resume whose replay alone exceeds the limit ends at once.
  auto replay = s->watch("/k/", 1);
  ASSERT_TRUE(replay.ok());
  EXPECT_TRUE((*replay)->ended());
}

TEST(Store, StopAndDestroyEndTheWatch) {
  auto s = openStore();
  auto w = s->watch("/k/", 0);
  ASSERT_TRUE(w.ok());
  std::thread blocked([&] { EXPECT_FALSE((*w)->next(10s).has_value()); });
  std::this_thread::sleep_for(20ms);  // let next() block; stop() must wake it either way
  auto start = std::chrono::steady_clock::now();
  (*w)->stop();
  blocked.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  (*w)->stop();  // idempotent
  EXPECT_FALSE((*w)->ended());
  ASSERT_TRUE(s->create("/k/a", setTo("v")).ok());
  EXPECT_FALSE((*w)->next(10ms).has_value());

  { auto tmp = s->watch("/k/", 0); }  // destroyed: unregistered, writes still fine
  ASSERT_TRUE(s->create("/k/b", setTo("v")).ok());

  // A watch outliving its store is ended, not dangling.
  auto orphan = s->watch("/k/", 0).value();
  s.reset();
  EXPECT_TRUE(orphan->ended());
  EXPECT_FALSE(orphan->next(1ms).has_value());
}

TEST(Store, FanOutTo20WatchersIsFast) {
  constexpr int kWatchers = 20;
  constexpr int kEvents = 10000;
  auto s = openStore();
  std::vector<std::unique_ptr<Watch>> ws;
  for (int i = 0; i < kWatchers; ++i) ws.push_back(s->watch("/f/", 0).value());
  std::atomic<int> delivered{0};
  std::vector<std::thread> readers;
  for (auto& w : ws) {
    readers.emplace_back([&, wp = w.get()] {
      for (int n = 0; n < kEvents; ++n) {
        if (!wp->next(10s)) return;
        delivered.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kEvents; ++i) {
    ASSERT_TRUE(s->create("/f/" + std::to_string(i), setTo("v")).ok());
  }
  auto written = std::chrono::steady_clock::now();
  for (auto& th : readers) th.join();
  auto done = std::chrono::steady_clock::now();
  EXPECT_EQ(delivered.load(), kWatchers * kEvents);
  double writeSec = std::chrono::duration<double>(written - start).count();
  double allSec = std::chrono::duration<double>(done - start).count();
  std::printf("fan-out: %d events x %d watchers: writes %.0f/s, all delivered in %.3f s\n", kEvents,
              kWatchers, kEvents / writeSec, allSec);
  EXPECT_LT(allSec, 5.0);
}

TEST(Store, InMemoryWriteRate) {
  auto s = openStore();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50000;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> ths;
  for (int t = 0; t < kThreads; ++t) {
    ths.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string key = "/m/t" + std::to_string(t) + "/" + std::to_string(i % 1000);
        if (i < 1000) {
          ASSERT_TRUE(s->create(key, setTo("v")).ok());
        } else {
          ASSERT_TRUE(s->update(key, setTo("v")).ok());
        }
      }
    });
  }
  for (auto& th : ths) th.join();
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("in-memory: %d writers, %.0f writes/s\n", kThreads, kThreads * kPerThread / sec);
  EXPECT_EQ(s->revision(), static_cast<uint64_t>(1 + kThreads * kPerThread));
}

TEST(Store, OptionsAreValidated) {
  StoreOptions opts;
  opts.watcherQueueLimit = 0;
  auto s = newStore(opts);
  Status st = s->open();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("watcherQueueLimit"), std::string::npos);
}

}  // namespace
}  // namespace strait::minicluster
