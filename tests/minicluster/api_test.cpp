// API semantics of the minicluster, in process: requests go straight to the ApiHandler (no
// sockets), with the real store, registry, REST layer and controllers behind it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "fakes/fake_responder.h"
#include "minicluster/api_handler.h"
#include "minicluster/controllers.h"
#include "minicluster/registry.h"
#include "minicluster/rest.h"
#include "minicluster/store.h"

namespace strait::minicluster {
namespace {

using kube::HttpRequest;

using nlohmann::json;
using testing::FakeResponder;
using namespace std::chrono_literals;

struct Reply {
  int status = 0;
  json body;
  std::string raw;
  std::string warning;
};

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions so;
    so.historyLimit = 1000;
    store_ = newStore(so);
    ASSERT_TRUE(store_->open().ok());
    registry_ = std::make_unique<Registry>();
    rest_ = std::make_unique<Rest>(*store_, *registry_);
    handler_ = std::make_unique<ApiHandler>(*store_, *registry_, *rest_);
    controllers_ = newControllers(*store_, *registry_, *rest_);
    controllers_->start();
    ASSERT_EQ(call("POST", "/api/v1/namespaces", R"({"metadata":{"name":"default"}})").status, 201);
  }
  void TearDown() override {
    handler_->shutdown();
    for (auto& t : watchThreads_) t.join();
    controllers_->stop();
  }

  // Query decoding as the HTTP layer does it: %XX escapes and '+' for space.
  static std::string decode(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '+') {
        out += ' ';
      } else if (s[i] == '%' && i + 2 < s.size()) {
        out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        out += s[i];
      }
    }
    return out;
  }

  HttpRequest request(const std::string& method, const std::string& target,
                      const std::string& body = "",
                      const std::string& contentType = "application/json",
                      const std::string& accept = "") {
    HttpRequest r;
    r.method = method;
    r.target = target;
    auto q = target.find('?');
    r.path = target.substr(0, q);
    if (q != std::string::npos) {
      std::string qs = target.substr(q + 1);
      size_t i = 0;
      while (i <= qs.size()) {
        size_t j = qs.find('&', i);
        if (j == std::string::npos) j = qs.size();
        std::string kv = qs.substr(i, j - i);
        auto eq = kv.find('=');
        if (!kv.empty()) {
          r.query.emplace_back(decode(kv.substr(0, eq)),
                               eq == std::string::npos ? "" : decode(kv.substr(eq + 1)));
        }
        i = j + 1;
      }
    }
    if (!body.empty()) r.headers["content-type"] = contentType;
    if (!accept.empty()) r.headers["accept"] = accept;
    r.body = body;
    r.user = "admin";
    r.groups = {"system:masters"};
    return r;
  }

  Reply call(const std::string& method, const std::string& target, const std::string& body = "",
             const std::string& contentType = "application/json",
             const std::string& accept = "") {
    FakeResponder out;
    handler_->handle(request(method, target, body, contentType, accept), out);
    Reply r;
    r.status = out.status();
    r.raw = out.body();
    r.body = json::parse(r.raw, nullptr, false);
    r.warning = out.header("Warning");
    return r;
  }

  // Starts a watch on a background thread; the responder collects the stream.
  std::shared_ptr<FakeResponder> watch(const std::string& target, const std::string& accept = "") {
    auto out = std::make_shared<FakeResponder>();
    auto req = request("GET", target, "", "", accept);
    watchThreads_.emplace_back([this, out, req] { handler_->handle(req, *out); });
    return out;
  }

  static std::vector<json> events(const std::string& stream) {
    std::vector<json> out;
    size_t i = 0;
    while (i < stream.size()) {
      size_t j = stream.find('\n', i);
      if (j == std::string::npos) break;
      out.push_back(json::parse(stream.substr(i, j - i)));
      i = j + 1;
    }
    return out;
  }

  static std::string cm(const std::string& name, const std::string& value = "v",
                        const std::string& labels = "{}") {
    return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
           R"(","labels":)" + labels + R"(},"data":{"k":")" + value + R"("}})";
  }

  std::string rvOf(const json& obj) { return obj["metadata"]["resourceVersion"]; }

  template <class F>
  bool eventually(F f, std::chrono::milliseconds timeout = 5s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (f()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return f();
  }

  std::unique_ptr<Store> store_;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<Rest> rest_;
  std::unique_ptr<ApiHandler> handler_;
  std::unique_ptr<Controllers> controllers_;
  std::vector<std::thread> watchThreads_;
};

const char* kCmPath = "/api/v1/namespaces/default/configmaps";

TEST_F(ApiTest, CreateGetListAssignsServerFields) {
  auto r = call("POST", kCmPath, cm("a"));
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_FALSE(r.body["metadata"]["uid"].get<std::string>().empty());
  EXPECT_FALSE(r.body["metadata"]["creationTimestamp"].get<std::string>().empty());
  EXPECT_FALSE(rvOf(r.body).empty());
  auto g = call("GET", std::string(kCmPath) + "/a");
  ASSERT_EQ(g.status, 200);
  EXPECT_EQ(g.body["data"]["k"], "v");
  auto l = call("GET", kCmPath);
  ASSERT_EQ(l.status, 200);
  EXPECT_EQ(l.body["kind"], "ConfigMapList");
  ASSERT_EQ(l.body["items"].size(), 1u);
  EXPECT_EQ(call("POST", kCmPath, cm("a")).status, 409);
  auto missing = call("GET", std::string(kCmPath) + "/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body["reason"], "NotFound");
  EXPECT_EQ(missing.body["message"], "configmaps \"nope\" not found");
}

TEST_F(ApiTest, GenerateNameMakesUniqueNames) {
  std::set<std::string> names;
  for (int i = 0; i < 20; ++i) {
    auto r = call("POST", kCmPath, R"({"metadata":{"generateName":"web-"},"data":{}})");
    ASSERT_EQ(r.status, 201) << r.raw;
    std::string n = r.body["metadata"]["name"];
    EXPECT_EQ(n.rfind("web-", 0), 0u);
    EXPECT_EQ(n.size(), 9u);
    names.insert(n);
  }
  EXPECT_EQ(names.size(), 20u);
}

TEST_F(ApiTest, StaleUpdateIsConflict) {
  auto c = call("POST", kCmPath, cm("a"));
  json obj = c.body;
  obj["data"]["k"] = "v2";
  auto u1 = call("PUT", std::string(kCmPath) + "/a", obj.dump());
  ASSERT_EQ(u1.status, 200) << u1.raw;
  EXPECT_NE(rvOf(u1.body), rvOf(c.body));
  obj["data"]["k"] = "v3";  // still carries the old resourceVersion
  auto u2 = call("PUT", std::string(kCmPath) + "/a", obj.dump());
  EXPECT_EQ(u2.status, 409);
  EXPECT_EQ(u2.body["reason"], "Conflict");
  EXPECT_THAT(u2.body["message"].get<std::string>(),
              ::testing::HasSubstr("the object has been modified"));
}

TEST_F(ApiTest, ConcurrentWritersSeeConflictsAndNoLostUpdate) {
  call("POST", kCmPath, R"({"metadata":{"name":"counter"},"data":{"n":"0"}})");
  std::atomic<int> conflicts{0};
  auto worker = [&] {
    for (int i = 0; i < 50; ++i) {
      for (;;) {
        auto g = call("GET", std::string(kCmPath) + "/counter");
        json obj = g.body;
        int n = std::stoi(obj["data"]["n"].get<std::string>());
        obj["data"]["n"] = std::to_string(n + 1);
        auto u = call("PUT", std::string(kCmPath) + "/counter", obj.dump());
        if (u.status == 200) break;
        ASSERT_EQ(u.status, 409);
        ++conflicts;
      }
    }
  };
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) ts.emplace_back(worker);
  for (auto& t : ts) t.join();
  auto g = call("GET", std::string(kCmPath) + "/counter");
  EXPECT_EQ(g.body["data"]["n"], "200");  // every increment landed exactly once
}

TEST_F(ApiTest, NoOpUpdateKeepsResourceVersion) {
  auto c = call("POST", kCmPath, cm("a"));
  auto u = call("PUT", std::string(kCmPath) + "/a", c.body.dump());
  ASSERT_EQ(u.status, 200);
  EXPECT_EQ(rvOf(u.body), rvOf(c.body));
}

TEST_F(ApiTest, WatchFromResourceVersionResumesWithoutReplay) {
  auto a = call("POST", kCmPath, cm("a"));
  auto b = call("POST", kCmPath, cm("b"));
  // From a's version: exactly b's ADDED, then live events.
  auto w = watch(std::string(kCmPath) + "?watch=true&resourceVersion=" + rvOf(a.body) +
                 "&timeoutSeconds=5");
  ASSERT_TRUE(w->waitFor("\"b\"", 3s));
  call("DELETE", std::string(kCmPath) + "/a");
  ASSERT_TRUE(w->waitFor("DELETED", 3s));
  auto evs = events(w->body());
  ASSERT_EQ(evs.size(), 2u) << w->body();
  EXPECT_EQ(evs[0]["type"], "ADDED");
  EXPECT_EQ(evs[0]["object"]["metadata"]["name"], "b");
  EXPECT_EQ(evs[1]["type"], "DELETED");
  EXPECT_EQ(evs[1]["object"]["metadata"]["name"], "a");
}

TEST_F(ApiTest, WatchWithoutVersionSendsSyntheticAdds) {
  call("POST", kCmPath, cm("a"));
  call("POST", kCmPath, cm("b"));
  auto w = watch(std::string(kCmPath) + "?watch=True&timeoutSeconds=5");  // Python's spelling
  ASSERT_TRUE(w->waitFor("\"b\"", 3s));
  auto evs = events(w->body());
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(evs[0]["type"], "ADDED");
  EXPECT_EQ(evs[1]["type"], "ADDED");
}

TEST_F(ApiTest, WatchAfterCompactionIsGone) {
  auto a = call("POST", kCmPath, cm("a"));
  for (int i = 0; i < 5; ++i) call("POST", kCmPath, cm("x" + std::to_string(i)));
  store_->compact(store_->revision());
  auto w = watch(std::string(kCmPath) + "?watch=true&resourceVersion=" + rvOf(a.body));
  ASSERT_TRUE(w->waitFor("ERROR", 3s));
  EXPECT_EQ(w->status(), 200);
  auto evs = events(w->body());
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0]["type"], "ERROR");
  EXPECT_EQ(evs[0]["object"]["code"], 410);
  EXPECT_EQ(evs[0]["object"]["reason"], "Expired");
  EXPECT_THAT(evs[0]["object"]["message"].get<std::string>(),
              ::testing::HasSubstr("too old resource version"));
}

TEST_F(ApiTest, SendInitialEventsEndsWithAnnotatedBookmark) {
  call("POST", kCmPath, cm("a"));
  auto w = watch(std::string(kCmPath) +
                 "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                 "&allowWatchBookmarks=true&timeoutSeconds=5");
  ASSERT_TRUE(w->waitFor("initial-events-end", 3s));
  auto evs = events(w->body());
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(evs[0]["type"], "ADDED");
  EXPECT_EQ(evs[1]["type"], "BOOKMARK");
  EXPECT_EQ(evs[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
  // Without resourceVersionMatch the request is refused so clients fall back to list+watch.
  auto bad = call("GET", std::string(kCmPath) + "?watch=1&sendInitialEvents=true");
  EXPECT_EQ(bad.status, 422);
}

TEST_F(ApiTest, WatchTimeoutEndsStream) {
  auto start = std::chrono::steady_clock::now();
  FakeResponder out;
  handler_->handle(request("GET", std::string(kCmPath) + "?watch=true&timeoutSeconds=1"), out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  EXPECT_EQ(out.status(), 200);
}

TEST_F(ApiTest, WatchWithLabelSelectorTurnsRelabelIntoDeleted) {
  auto a = call("POST", kCmPath, cm("a", "v", R"({"app":"web"})"));
  auto w = watch(std::string(kCmPath) + "?watch=true&labelSelector=app%3Dweb&resourceVersion=" +
                 rvOf(a.body) + "&timeoutSeconds=5");
  json obj = a.body;
  obj["metadata"]["labels"]["app"] = "db";
  ASSERT_EQ(call("PUT", std::string(kCmPath) + "/a", obj.dump()).status, 200);
  ASSERT_TRUE(w->waitFor("DELETED", 3s)) << w->body();
}

TEST_F(ApiTest, PaginationWithContinue) {
  for (int i = 0; i < 7; ++i) call("POST", kCmPath, cm("p" + std::to_string(i)));
  std::vector<std::string> seen;
  std::string cont;
  std::string listRv;
  for (int page = 0; page < 10; ++page) {
    auto r = call("GET", std::string(kCmPath) + "?limit=3" + (cont.empty() ? "" : "&continue=" + cont));
    ASSERT_EQ(r.status, 200) << r.raw;
    if (listRv.empty()) listRv = r.body["metadata"]["resourceVersion"];
    EXPECT_EQ(r.body["metadata"]["resourceVersion"], listRv);  // constant across pages
    for (const auto& it : r.body["items"]) seen.push_back(it["metadata"]["name"]);
    cont = r.body["metadata"].value("continue", "");
    if (cont.empty()) break;
  }
  EXPECT_EQ(seen.size(), 7u);
  auto bad = call("GET", std::string(kCmPath) + "?limit=3&continue=garbage");
  EXPECT_EQ(bad.status, 400);
}

TEST_F(ApiTest, ExpiredContinueIsGone) {
  for (int i = 0; i < 4; ++i) call("POST", kCmPath, cm("p" + std::to_string(i)));
  auto r = call("GET", std::string(kCmPath) + "?limit=2");
  std::string cont = r.body["metadata"]["continue"];
  call("POST", kCmPath, cm("later"));
  store_->compact(store_->revision());
  auto r2 = call("GET", std::string(kCmPath) + "?limit=2&continue=" + cont);
  EXPECT_EQ(r2.status, 410);
  EXPECT_EQ(r2.body["reason"], "Expired");
}

TEST_F(ApiTest, LabelAndFieldSelectors) {
  call("POST", kCmPath, cm("a", "v", R"({"tier":"web","env":"prod"})"));
  call("POST", kCmPath, cm("b", "v", R"({"tier":"db"})"));
  call("POST", kCmPath, cm("c", "v", R"({})"));
  auto names = [&](const std::string& q) {
    auto r = call("GET", std::string(kCmPath) + "?" + q);
    std::vector<std::string> out;
    for (const auto& it : r.body["items"]) out.push_back(it["metadata"]["name"]);
    return out;
  };
  EXPECT_THAT(names("labelSelector=tier%3Dweb"), ::testing::ElementsAre("a"));
  EXPECT_THAT(names("labelSelector=tier+in+(web,db)"), ::testing::ElementsAre("a", "b"));
  EXPECT_THAT(names("labelSelector=!tier"), ::testing::ElementsAre("c"));
  EXPECT_THAT(names("labelSelector=tier!%3Dweb"), ::testing::ElementsAre("b", "c"));
  EXPECT_THAT(names("fieldSelector=metadata.name%3Db"), ::testing::ElementsAre("b"));
  EXPECT_THAT(names("fieldSelector=metadata.name!%3Db"), ::testing::ElementsAre("a", "c"));
  auto bad = call("GET", std::string(kCmPath) + "?labelSelector=a+in+(");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["kind"], "Status");
  auto badField = call("GET", std::string(kCmPath) + "?fieldSelector=spec.nope%3Dx");
  EXPECT_EQ(badField.status, 400);
  EXPECT_THAT(badField.body["message"].get<std::string>(), ::testing::HasSubstr("spec.nope"));
}

TEST_F(ApiTest, PodFieldSelectorsAndBinding) {
  const std::string pods = "/api/v1/namespaces/default/pods";
  auto pod = [](const std::string& name) {
    return R"({"metadata":{"name":")" + name +
           R"("},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}})";
  };
  ASSERT_EQ(call("POST", pods, pod("p1")).status, 201);
  ASSERT_EQ(call("POST", pods, pod("p2")).status, 201);
  auto b = call("POST", pods + "/p1/binding",
                R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"p1"},"target":{"kind":"Node","name":"n1"}})");
  ASSERT_EQ(b.status, 201) << b.raw;
  auto again = call("POST", pods + "/p1/binding",
                    R"({"metadata":{"name":"p1"},"target":{"name":"n2"}})");
  EXPECT_EQ(again.status, 409);
  auto r = call("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1,status.phase!%3DSucceeded");
  ASSERT_EQ(r.status, 200) << r.raw;
  ASSERT_EQ(r.body["items"].size(), 1u);
  EXPECT_EQ(r.body["items"][0]["metadata"]["name"], "p1");
  auto p = call("GET", pods + "/p2");
  EXPECT_EQ(p.body["status"]["phase"], "Pending");
  EXPECT_EQ(p.body["status"]["qosClass"], "BestEffort");
}

TEST_F(ApiTest, FourPatchTypes) {
  const std::string path = std::string(kCmPath) + "/a";
  call("POST", kCmPath, R"({"metadata":{"name":"a"},"data":{"x":"1","y":"2"}})");
  auto merge = call("PATCH", path, R"({"data":{"x":null,"z":"3"}})", "application/merge-patch+json");
  ASSERT_EQ(merge.status, 200) << merge.raw;
  EXPECT_FALSE(merge.body["data"].contains("x"));
  EXPECT_EQ(merge.body["data"]["z"], "3");
  auto jp = call("PATCH", path, R"([{"op":"replace","path":"/data/y","value":"9"}])",
                 "application/json-patch+json");
  ASSERT_EQ(jp.status, 200) << jp.raw;
  EXPECT_EQ(jp.body["data"]["y"], "9");
  auto badJp = call("PATCH", path, R"([{"op":"test","path":"/data/y","value":"0"}])",
                    "application/json-patch+json");
  EXPECT_EQ(badJp.status, 422);
  auto smp = call("PATCH", path, R"({"data":{"w":"4"}})", "application/strategic-merge-patch+json");
  ASSERT_EQ(smp.status, 200) << smp.raw;
  EXPECT_EQ(smp.body["data"]["w"], "4");
  EXPECT_EQ(smp.body["data"]["y"], "9");
  auto apply = call("PATCH", std::string(kCmPath) + "/b?fieldManager=test",
                    R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"data":{"q":"1"}})",
                    "application/apply-patch+yaml");
  EXPECT_EQ(apply.status, 201) << apply.raw;  // server-side apply creates
  auto bad = call("PATCH", path, "{}", "text/plain");
  EXPECT_EQ(bad.status, 415);
  // Re-applying without a field the manager applied before removes it.
  auto again = call("PATCH", std::string(kCmPath) + "/b?fieldManager=test",
                    R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"data":{"r":"2"}})",
                    "application/apply-patch+yaml");
  ASSERT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(again.body["data"], json({{"r", "2"}}));
  EXPECT_EQ(again.body["metadata"]["managedFields"][0]["manager"], "test");
  // A field another client wrote stays.
  call("PATCH", std::string(kCmPath) + "/b", R"({"data":{"other":"x"}})",
       "application/merge-patch+json");
  auto third = call("PATCH", std::string(kCmPath) + "/b?fieldManager=test",
                    R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"data":{"r":"3"}})",
                    "application/apply-patch+yaml");
  EXPECT_EQ(third.body["data"], json({{"r", "3"}, {"other", "x"}}));
}

TEST_F(ApiTest, StrategicMergeKeepsOtherContainer) {
  const std::string deploys = "/apis/apps/v1/namespaces/default/deployments";
  json d = {{"apiVersion", "apps/v1"},
            {"kind", "Deployment"},
            {"metadata", {{"name", "web"}}},
            {"spec",
             {{"selector", {{"matchLabels", {{"app", "web"}}}}},
              {"template",
               {{"metadata", {{"labels", {{"app", "web"}}}}},
                {"spec",
                 {{"containers",
                   {{{"name", "a"}, {"image", "nginx:1.26"}},
                    {{"name", "b"}, {"image", "redis:7"}}}}}}}}}}};
  ASSERT_EQ(call("POST", deploys, d.dump()).status, 201);
  auto r = call("PATCH", deploys + "/web",
                R"({"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],"containers":[{"image":"redis:7.2","name":"b"}]}}}})",
                "application/strategic-merge-patch+json");
  ASSERT_EQ(r.status, 200) << r.raw;
  const json& cs = r.body["spec"]["template"]["spec"]["containers"];
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[0]["image"], "nginx:1.26");
  EXPECT_EQ(cs[1]["image"], "redis:7.2");
  EXPECT_EQ(r.body["metadata"]["generation"], 2);
}

TEST_F(ApiTest, StatusSubresourceSeparatesSpecAndStatus) {
  const std::string deploys = "/apis/apps/v1/namespaces/default/deployments";
  json d = {{"metadata", {{"name", "web"}}},
            {"spec",
             {{"replicas", 1},
              {"selector", {{"matchLabels", {{"app", "web"}}}}},
              {"template",
               {{"metadata", {{"labels", {{"app", "web"}}}}},
                {"spec", {{"containers", {{{"name", "a"}, {"image", "nginx"}}}}}}}}}},
            {"status", {{"replicas", 99}}}};
  auto c = call("POST", deploys, d.dump());
  ASSERT_EQ(c.status, 201) << c.raw;
  EXPECT_FALSE(c.body["status"].contains("replicas"));  // status reset on create
  json s = c.body;
  s["status"]["replicas"] = 3;
  s["spec"]["replicas"] = 7;
  auto st = call("PUT", deploys + "/web/status", s.dump());
  ASSERT_EQ(st.status, 200) << st.raw;
  EXPECT_EQ(st.body["status"]["replicas"], 3);
  EXPECT_EQ(st.body["spec"]["replicas"], 1);  // spec untouched by a status write
  json m = st.body;
  m["status"]["replicas"] = 0;
  m["spec"]["replicas"] = 2;
  auto main = call("PUT", deploys + "/web", m.dump());
  ASSERT_EQ(main.status, 200) << main.raw;
  EXPECT_EQ(main.body["spec"]["replicas"], 2);
  EXPECT_EQ(main.body["status"]["replicas"], 3);  // status untouched by a main write
  auto scale = call("GET", deploys + "/web/scale");
  EXPECT_EQ(scale.body["spec"]["replicas"], 2);
  auto sc = call("PATCH", deploys + "/web/scale", R"({"spec":{"replicas":5}})",
                 "application/merge-patch+json");
  ASSERT_EQ(sc.status, 200) << sc.raw;
  EXPECT_EQ(call("GET", deploys + "/web").body["spec"]["replicas"], 5);
}

TEST_F(ApiTest, GracefulPodDeletion) {
  const std::string pods = "/api/v1/namespaces/default/pods";
  call("POST", pods,
       R"({"metadata":{"name":"p"},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"x"}]}})");
  auto d = call("DELETE", pods + "/p", R"({"gracePeriodSeconds":30})");
  ASSERT_EQ(d.status, 200) << d.raw;
  EXPECT_TRUE(d.body["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(d.body["metadata"]["deletionGracePeriodSeconds"], 30);
  EXPECT_EQ(call("GET", pods + "/p").status, 200);  // still there: the kubelet must confirm
  auto d0 = call("DELETE", pods + "/p?gracePeriodSeconds=0");
  ASSERT_EQ(d0.status, 200);
  EXPECT_EQ(call("GET", pods + "/p").status, 404);
  // Unscheduled pods go at once.
  call("POST", pods, R"({"metadata":{"name":"q"},"spec":{"containers":[{"name":"c","image":"x"}]}})");
  call("DELETE", pods + "/q");
  EXPECT_EQ(call("GET", pods + "/q").status, 404);
}

TEST_F(ApiTest, FinalizersHoldDeletion) {
  call("POST", kCmPath, R"({"metadata":{"name":"f","finalizers":["example.com/hold"]}})");
  auto d = call("DELETE", std::string(kCmPath) + "/f");
  ASSERT_EQ(d.status, 200);
  auto g = call("GET", std::string(kCmPath) + "/f");
  ASSERT_EQ(g.status, 200);
  EXPECT_TRUE(g.body["metadata"].contains("deletionTimestamp"));
  auto p = call("PATCH", std::string(kCmPath) + "/f", R"({"metadata":{"finalizers":null}})",
                "application/merge-patch+json");
  ASSERT_EQ(p.status, 200) << p.raw;
  EXPECT_EQ(call("GET", std::string(kCmPath) + "/f").status, 404);
}

TEST_F(ApiTest, GarbageCollectionBackgroundForegroundOrphan) {
  auto owner = [&](const std::string& name) {
    return call("POST", kCmPath, cm(name)).body["metadata"]["uid"].get<std::string>();
  };
  auto dependent = [&](const std::string& name, const std::string& ownerName,
                       const std::string& uid) {
    json d = {{"metadata",
               {{"name", name},
                {"ownerReferences",
                 {{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", ownerName},
                   {"uid", uid}, {"blockOwnerDeletion", true}}}}}}};
    ASSERT_EQ(call("POST", kCmPath, d.dump()).status, 201);
  };
  auto exists = [&](const std::string& n) {
    return call("GET", std::string(kCmPath) + "/" + n).status == 200;
  };
  // Background: owner goes at once, dependent follows.
  dependent("bg-dep", "bg", owner("bg"));
  call("DELETE", std::string(kCmPath) + "/bg", R"({"propagationPolicy":"Background"})");
  EXPECT_FALSE(exists("bg"));
  EXPECT_TRUE(eventually([&] { return !exists("bg-dep"); }));
  // Foreground: the owner stays (with a finalizer) until its dependents are gone.
  dependent("fg-dep", "fg", owner("fg"));
  call("DELETE", std::string(kCmPath) + "/fg", R"({"propagationPolicy":"Foreground"})");
  EXPECT_TRUE(eventually([&] { return !exists("fg-dep") && !exists("fg"); }));
  // Orphan: dependent stays, its ownerReference removed.
  dependent("or-dep", "or", owner("or"));
  call("DELETE", std::string(kCmPath) + "/or", R"({"propagationPolicy":"Orphan"})");
  EXPECT_TRUE(eventually([&] { return !exists("or"); }));
  auto dep = call("GET", std::string(kCmPath) + "/or-dep");
  ASSERT_EQ(dep.status, 200);
  EXPECT_FALSE(dep.body["metadata"].contains("ownerReferences"));
}

// A dependent created after its owner is already gone (a controller acting on a stale
// cache: a ReplicaSet re-creating Pods while it is being deleted) is collected too, as
// upstream's garbage collector does for an absent owner.
TEST_F(ApiTest, GarbageCollectionDeletesADependentCreatedAfterItsOwnerWasGone) {
  auto dependent = [&](const std::string& name, const std::string& ownerName,
                       const std::string& uid) {
    json d = {{"metadata",
               {{"name", name},
                {"ownerReferences",
                 {{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", ownerName},
                   {"uid", uid}}}}}}};
    ASSERT_EQ(call("POST", kCmPath, d.dump()).status, 201);
  };
  auto exists = [&](const std::string& n) {
    return call("GET", std::string(kCmPath) + "/" + n).status == 200;
  };
  // First a dependent whose owner lives (it must stay), then one whose owner is gone.
  dependent("live-dep", "live-owner",
            call("POST", kCmPath, cm("live-owner")).body["metadata"]["uid"].get<std::string>());
  std::string gone =
      call("POST", kCmPath, cm("late-owner")).body["metadata"]["uid"].get<std::string>();
  ASSERT_EQ(call("DELETE", std::string(kCmPath) + "/late-owner").status, 200);
  dependent("late-dep", "late-owner", gone);
  EXPECT_TRUE(eventually([&] { return !exists("late-dep"); }));
  // The collector handles events in order: live-dep was seen before late-dep.
  EXPECT_TRUE(exists("live-dep"));
}

TEST_F(ApiTest, NamespaceTermination) {
  ASSERT_EQ(call("POST", "/api/v1/namespaces", R"({"metadata":{"name":"tmp"}})").status, 201);
  ASSERT_EQ(call("POST", "/api/v1/namespaces/tmp/configmaps", cm("x")).status, 201);
  auto d = call("DELETE", "/api/v1/namespaces/tmp");
  ASSERT_EQ(d.status, 200);
  EXPECT_EQ(d.body["status"]["phase"], "Terminating");
  auto refused = call("POST", "/api/v1/namespaces/tmp/configmaps", cm("y"));
  if (refused.status != 404) {  // may already be gone
    EXPECT_EQ(refused.status, 403);
    EXPECT_THAT(refused.body["message"].get<std::string>(),
                ::testing::HasSubstr("because it is being terminated"));
  }
  EXPECT_TRUE(eventually([&] { return call("GET", "/api/v1/namespaces/tmp").status == 404; }));
  EXPECT_EQ(call("GET", "/api/v1/namespaces/tmp/configmaps/x").status, 404);
  EXPECT_EQ(call("POST", "/api/v1/namespaces/gone/configmaps", cm("z")).status, 404);
}

TEST_F(ApiTest, DryRunDoesNotPersist) {
  auto r = call("POST", std::string(kCmPath) + "?dryRun=All", cm("dry"));
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(call("GET", std::string(kCmPath) + "/dry").status, 404);
  call("POST", kCmPath, cm("real"));
  auto d = call("DELETE", std::string(kCmPath) + "/real?dryRun=All");
  EXPECT_EQ(d.status, 200);
  EXPECT_EQ(call("GET", std::string(kCmPath) + "/real").status, 200);
}

TEST_F(ApiTest, FieldValidation) {
  const std::string body = R"({"metadata":{"name":"fv"},"data":{},"bogus":1})";
  auto strict = call("POST", std::string(kCmPath) + "?fieldValidation=Strict", body);
  EXPECT_EQ(strict.status, 400);
  EXPECT_THAT(strict.body["message"].get<std::string>(), ::testing::HasSubstr("bogus"));
  auto warn = call("POST", std::string(kCmPath) + "?fieldValidation=Warn", body);
  EXPECT_EQ(warn.status, 201);
  EXPECT_THAT(warn.warning, ::testing::HasSubstr("bogus"));
  EXPECT_FALSE(warn.body.contains("bogus"));  // unknown fields are dropped, as upstream
  auto bad = call("POST", std::string(kCmPath) + "?fieldValidation=Loud", body);
  EXPECT_EQ(bad.status, 400);
}

TEST_F(ApiTest, BadInputGetsStatus) {
  auto check = [&](const Reply& r, int code, const std::string& needle) {
    EXPECT_EQ(r.status, code) << r.raw;
    ASSERT_TRUE(r.body.is_object()) << r.raw;
    EXPECT_EQ(r.body["kind"], "Status");
    EXPECT_EQ(r.body["code"], code);
    EXPECT_THAT(r.body["message"].get<std::string>(), ::testing::HasSubstr(needle));
  };
  check(call("POST", kCmPath, "{not json"), 400, "JSON");
  check(call("POST", kCmPath, "a: [b", "application/yaml"), 400, "YAML");
  check(call("POST", "/api/v1/namespaces/default/secrets", cm("x")), 400, "ConfigMap");
  auto invalid = call("POST", kCmPath, cm("Bad_Name"));
  check(invalid, 422, "RFC 1123");
  EXPECT_EQ(invalid.body["details"]["name"], "Bad_Name");
  EXPECT_EQ(invalid.body["details"]["kind"], "ConfigMap");
  EXPECT_EQ(invalid.body["details"]["causes"][0]["field"], "metadata.name");
  EXPECT_EQ(invalid.body["details"]["causes"][0]["reason"], "FieldValueInvalid");
  check(call("POST", kCmPath, cm("x"), "text/plain"), 415, "unknown format");
  std::string deep = R"({"metadata":{"name":"deep"},"data":{},"x":)" + std::string(100000, '[') +
                     std::string(100000, ']') + "}";
  check(call("POST", kCmPath, deep), 400, "nested");
  check(call("POST", kCmPath, "[1,2]"), 400, "object");
  check(call("POST", kCmPath, R"({"metadata":{"name":"x","labels":{"a":1}}})"), 422, "label");
  check(call("GET", "/api/v1/widgets"), 404, "could not find");
  // Invalid UTF-8 in a name (from the URL or a YAML body) is reported, never thrown.
  check(call("GET", std::string(kCmPath) + "/bad\xff\xfename"), 404, "not found");
  check(call("POST", kCmPath, "metadata:\n  name: \"a\xff\"\n", "application/yaml"), 422,
        "invalid");
  check(call("GET", "/apis/nope.example.com/v1/things"), 404, "could not find");
  check(call("PUT", std::string(kCmPath) + "/a", cm("b")), 400, "does not match");
  // yaml-cpp loops forever on this flow document; it must be refused quickly.
  check(call("POST", kCmPath, R"({"a"}, b)", "application/yaml"), 400, "valid JSON");
  auto yaml = call("POST", kCmPath, "metadata:\n  name: fromyaml\ndata:\n  k: v\n",
                   "application/yaml");
  EXPECT_EQ(yaml.status, 201) << yaml.raw;
}

TEST_F(ApiTest, CustomResourcesServedAfterCrd) {
  json crd = {
      {"apiVersion", "apiextensions.k8s.io/v1"},
      {"kind", "CustomResourceDefinition"},
      {"metadata", {{"name", "widgets.example.com"}}},
      {"spec",
       {{"group", "example.com"},
        {"scope", "Namespaced"},
        {"names", {{"plural", "widgets"}, {"singular", "widget"}, {"kind", "Widget"},
                   {"listKind", "WidgetList"}}},
        {"versions",
         {{{"name", "v1"}, {"served", true}, {"storage", true},
           {"subresources", {{"status", json::object()}}},
           {"schema", {{"openAPIV3Schema", {{"type", "object"},
                                            {"x-kubernetes-preserve-unknown-fields", true}}}}}}}}}}};
  auto c = call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd.dump());
  ASSERT_EQ(c.status, 201) << c.raw;
  const std::string path = "/apis/example.com/v1/namespaces/default/widgets";
  auto w = call("POST", path,
                R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":3},"status":{"ok":true}})");
  ASSERT_EQ(w.status, 201) << w.raw;
  EXPECT_FALSE(w.body.contains("status"));  // status subresource: dropped on create
  auto st = call("PATCH", path + "/w1/status", R"({"status":{"ok":true}})",
                 "application/merge-patch+json");
  ASSERT_EQ(st.status, 200) << st.raw;
  EXPECT_EQ(st.body["status"]["ok"], true);
  auto l = call("GET", path);
  ASSERT_EQ(l.body["items"].size(), 1u);
  auto disc = call("GET", "/apis/example.com/v1");
  EXPECT_EQ(disc.status, 200);
  auto del = call("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com");
  EXPECT_EQ(del.status, 200);
  EXPECT_EQ(call("GET", path).status, 404);
}

TEST_F(ApiTest, DiscoveryNegotiation) {
  auto legacy = call("GET", "/api");
  EXPECT_EQ(legacy.body["kind"], "APIVersions");
  auto agg = call("GET", "/apis", "", "",
                  "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                  "application/json");
  EXPECT_EQ(agg.body["kind"], "APIGroupDiscoveryList");
  EXPECT_EQ(agg.body["apiVersion"], "apidiscovery.k8s.io/v2");
  auto old = call("GET", "/apis", "", "",
                  "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                  "application/json");
  EXPECT_EQ(old.body["apiVersion"], "apidiscovery.k8s.io/v2beta1");
  auto plain = call("GET", "/apis");
  EXPECT_EQ(plain.body["kind"], "APIGroupList");
  auto version = call("GET", "/version");
  EXPECT_EQ(version.body["minor"], "32");
}

TEST_F(ApiTest, TableResponses) {
  call("POST", kCmPath, cm("a"));
  auto t = call("GET", kCmPath, "", "",
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json");
  ASSERT_EQ(t.status, 200) << t.raw;
  EXPECT_EQ(t.body["kind"], "Table");
  ASSERT_EQ(t.body["rows"].size(), 1u);
  EXPECT_EQ(t.body["rows"][0]["object"]["kind"], "PartialObjectMetadata");
}

}  // namespace
}  // namespace strait::minicluster
