// Informers against a real minicluster process (--watch-history 50, so history compaction
// is easy to force): convergence to the server's exact state under a random write storm from
// several threads, through a forced 410 (the informer's connections are cut by a TCP proxy
// while more than 50 writes happen), and through an API-server restart on the same port and
// data dir. No event may be lost and no handler may see the same resourceVersion twice.
// Also: the shared factory, indexers and addHandlers after sync.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "e2e/cluster_fixture.h"
#include "e2e/tcp_proxy.h"
#include "kube/client.h"
#include "kube/informer.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
using kube::Code;
namespace res = kube::resources;

constexpr const char* kNs = "storm";

// What the handlers saw, applied in order: key -> resourceVersion.
struct HandlerView {
  std::mutex mu;
  std::map<std::string, std::string> objects;
  std::set<std::string> seenRvs;  // every resourceVersion given to onAdd/onUpdate
  std::vector<std::string> duplicates;
  std::vector<std::string> anomalies;  // add of a present key, update/delete of an absent one
  uint64_t calls = 0;

  kube::EventHandlers handlers() {
    kube::EventHandlers h;
    h.onAdd = [this](const kube::ObjectPtr& o) {
      std::lock_guard<std::mutex> lock(mu);
      record(*o);
      std::string key = kube::objectKey(*o);
      if (objects.count(key)) anomalies.push_back("add of present " + key);
      objects[key] = kube::objectResourceVersion(*o);
    };
    h.onUpdate = [this](const kube::ObjectPtr& old, const kube::ObjectPtr& cur) {
      std::lock_guard<std::mutex> lock(mu);
      record(*cur);
      std::string key = kube::objectKey(*cur);
      if (!objects.count(key)) anomalies.push_back("update of absent " + key);
      if (kube::objectResourceVersion(*old) != objects[key]) {
        anomalies.push_back("update whose old object is not the last seen " + key);
      }
      objects[key] = kube::objectResourceVersion(*cur);
    };
    h.onDelete = [this](const kube::ObjectPtr& o) {
      std::lock_guard<std::mutex> lock(mu);
      ++calls;
      std::string key = kube::objectKey(*o);
      if (!objects.erase(key)) anomalies.push_back("delete of absent " + key);
    };
    return h;
  }

 private:
  void record(const json& o) {
    ++calls;
    std::string rv = kube::objectResourceVersion(o);
    if (!seenRvs.insert(rv).second) duplicates.push_back(kube::objectKey(o) + "@" + rv);
  }
};

class ClientInformerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(server_.start("informer", 60s, {"--watch-history", "50"}), "");
    auto cfg = kube::loadKubeconfig({{server_.kubeconfig()}, ""});
    ASSERT_TRUE(cfg.ok()) << cfg.error().message;
    cfg->qps = 0;  // the storm is not the limiter's test
    auto direct = kube::newClient(*cfg);
    ASSERT_TRUE(direct.ok());
    direct_ = std::move(*direct);
    uint16_t port = static_cast<uint16_t>(std::stoi(server_.server().substr(
        server_.server().rfind(':') + 1)));
    proxy_ = std::make_unique<TcpProxy>(port);
    ASSERT_EQ(proxy_->start(), "");
    cfg->server = "https://127.0.0.1:" + std::to_string(proxy_->port());
    auto viaProxy = kube::newClient(*cfg);
    ASSERT_TRUE(viaProxy.ok());
    proxied_ = std::move(*viaProxy);
    json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNs}}}};
    ASSERT_TRUE(direct_->create(res::kNamespaces, "", ns).ok());
  }

  void TearDown() override {
    if (HasFailure()) std::cerr << "--- server log ---\n" << server_.serverLog() << "\n";
  }

  // `threads` writers doing `ops` random creates/updates/deletes each on 40 names.
  void storm(int threads, int ops, unsigned seed) {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([this, t, ops, seed] {
        std::mt19937 rng(seed * 100 + t);
        for (int i = 0; i < ops; ++i) {
          std::string name = "cm-" + std::to_string(rng() % 40);
          int op = static_cast<int>(rng() % 10);
          if (op < 4) {
            json cm = {{"apiVersion", "v1"},
                       {"kind", "ConfigMap"},
                       {"metadata", {{"name", name}, {"labels", {{"app", rng() % 2 ? "a" : "b"}}}}},
                       {"data", {{"v", std::to_string(i)}}}};
            (void)direct_->create(res::kConfigMaps, kNs, cm);
          } else if (op < 8) {
            (void)direct_->patch(res::kConfigMaps, kNs, name, kube::PatchType::Merge,
                                 {{"data", {{"v", std::to_string(i)}, {"t", std::to_string(t)}}}});
          } else {
            (void)direct_->remove(res::kConfigMaps, kNs, name);
          }
        }
      });
    }
    for (auto& t : ts) t.join();
  }

  // key -> resourceVersion on the server now.
  std::map<std::string, std::string> serverState() {
    std::map<std::string, std::string> out;
    auto l = direct_->list(res::kConfigMaps, kNs);
    if (!l) return {{"<error>", l.error().message}};
    for (const auto& it : (*l)["items"]) out[kube::objectKey(it)] = kube::objectResourceVersion(it);
    return out;
  }

  static std::map<std::string, std::string> cacheState(const kube::Informer& inf) {
    std::map<std::string, std::string> out;
    for (const auto& o : inf.cache().list()) out[kube::objectKey(*o)] = kube::objectResourceVersion(*o);
    return out;
  }

  // Waits until cache and handler view both equal the server's state.
  ::testing::AssertionResult converged(kube::Informer& inf, HandlerView& view) {
    std::map<std::string, std::string> want, cache, seen;
    bool ok = waitFor(
        [&] {
          want = serverState();
          cache = cacheState(inf);
          std::lock_guard<std::mutex> lock(view.mu);
          seen = view.objects;
          return want == cache && want == seen;
        },
        90s, 100ms);
    if (ok) return ::testing::AssertionSuccess();
    auto dump = [](const std::map<std::string, std::string>& m) {
      std::string s;
      for (const auto& [k, v] : m) s += k + "@" + v + " ";
      return s;
    };
    return ::testing::AssertionFailure() << "server: " << dump(want) << "\ncache:  " << dump(cache)
                                         << "\nviewed: " << dump(seen);
  }

  Minicluster server_;
  std::unique_ptr<TcpProxy> proxy_;
  std::unique_ptr<kube::Client> direct_;
  std::unique_ptr<kube::Client> proxied_;
};

TEST_F(ClientInformerTest, ConvergesThroughStormGoneAndRestart) {
  kube::InformerOptions o;
  o.resource = res::kConfigMaps;
  o.ns = kNs;
  o.pageSize = 7;
  o.minWatchTimeout = std::chrono::seconds(2);  // the server ends watches often: re-watch
  kube::Informer inf(*proxied_, o);
  HandlerView view;
  inf.addHandlers(view.handlers());
  inf.start();
  ASSERT_TRUE(inf.waitForSync(30s));

  // 1. A storm from four threads while the informer watches.
  storm(4, 150, 1);
  EXPECT_TRUE(converged(inf, view));

  // 2. Forced 410: cut the informer's connections, write more than the history holds, let
  //    it reconnect. Its watch from the last resourceVersion gets Expired: relist + diff.
  auto before = inf.stats();
  proxy_->cut();
  storm(2, 80, 2);
  proxy_->resume();
  EXPECT_TRUE(converged(inf, view));
  EXPECT_GT(inf.stats().goneRelists, before.goneRelists) << "no 410 was forced";

  // 3. API-server restart on the same port and data dir, then more writes.
  before = inf.stats();
  ASSERT_EQ(server_.restart(), "");
  storm(3, 100, 3);
  EXPECT_TRUE(converged(inf, view));
  // The old server ends its watches (cleanly on SIGTERM, or as a dropped connection while it
  // is down); the informer must have watched the new process to converge.
  EXPECT_GT(inf.stats().watches, before.watches) << "the restart went unnoticed";

  inf.stop();
  std::lock_guard<std::mutex> lock(view.mu);
  EXPECT_TRUE(view.duplicates.empty()) << "resourceVersions seen twice: "
                                       << ::testing::PrintToString(view.duplicates);
  EXPECT_TRUE(view.anomalies.empty()) << ::testing::PrintToString(view.anomalies);
  EXPECT_GT(view.calls, 100u);
}

TEST_F(ClientInformerTest, FactorySharesOneInformerAndIndexes) {
  kube::InformerFactory factory(*direct_);
  auto a = factory.informerFor(res::kConfigMaps, kNs, "app=a");
  auto b = factory.informerFor(res::kConfigMaps, kNs, "app=a");
  auto other = factory.informerFor(res::kConfigMaps, kNs, "app=b");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other);
  a->addIndex(kube::kLabelsIndex, kube::indexByLabels());
  for (int i = 0; i < 5; ++i) {
    json cm = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata",
                {{"name", "f" + std::to_string(i)},
                 {"labels", {{"app", i < 3 ? "a" : "b"}, {"n", std::to_string(i % 2)}}}}}};
    ASSERT_TRUE(direct_->create(res::kConfigMaps, kNs, cm).ok());
  }
  factory.start();
  ASSERT_TRUE(factory.waitForSync(30s));
  EXPECT_EQ(a->cache().size(), 3u);
  EXPECT_EQ(other->cache().size(), 2u);
  EXPECT_EQ(a->cache().byIndex(kube::kLabelsIndex, "n=0").size(), 2u);  // f0, f2
  // A handler added after sync first gets the cached objects as adds.
  std::atomic<int> adds{0};
  a->addHandlers({[&](const kube::ObjectPtr&) { ++adds; }, nullptr, nullptr});
  EXPECT_EQ(adds.load(), 3);
  ASSERT_TRUE(direct_->remove(res::kConfigMaps, kNs, "f0").ok());
  EXPECT_TRUE(waitFor([&] { return a->cache().get(std::string(kNs) + "/f0") == nullptr; }, 30s));
  EXPECT_EQ(a->cache().byIndex(kube::kLabelsIndex, "n=0").size(), 1u);
  factory.stop();
}

}  // namespace
}  // namespace strait::e2e
