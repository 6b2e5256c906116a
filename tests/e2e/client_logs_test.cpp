// pods/log as a stream through kube::Client against a minicluster with one simulated node
// (whose kubelet writes a "heartbeat K" line per second): follow delivers lines while the
// container runs, and a stop_token ends the stream promptly.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "e2e/cluster_fixture.h"
#include "kube/client.h"

namespace strait::e2e {
namespace {

using json = nlohmann::json;
namespace res = kube::resources;

TEST(ClientLogsTest, FollowStreamsLinesAndStopsOnRequest) {
  Minicluster server;
  ASSERT_EQ(server.start("logs", 60s, {"--nodes", "1", "--pod-start-latency", "100ms"}), "");
  auto cfg = kube::loadKubeconfig({{server.kubeconfig()}, ""});
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  auto c = kube::newClient(*cfg);
  ASSERT_TRUE(c.ok());
  kube::Client& client = **c;
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "talker"}}},
              {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}};
  ASSERT_TRUE(client.create(res::kPods, "default", pod).ok());
  ASSERT_TRUE(waitFor(
      [&] {
        auto p = client.get(res::kPods, "default", "talker");
        return p.ok() && (*p)["status"].value("phase", "") == "Running";
      },
      60s))
      << server.serverLog();

  // Follow until two heartbeat lines arrived: they come one per second, so the stream must
  // deliver data while it is still open.
  std::string text;
  auto t0 = std::chrono::steady_clock::now();
  kube::LogOptions follow;
  follow.follow = true;
  auto s = client.streamLogs("default", "talker", follow, [&](std::string_view d) {
    text.append(d);
    size_t n = 0;
    for (size_t p = text.find("heartbeat"); p != std::string::npos; p = text.find("heartbeat", p + 1)) ++n;
    return n < 2;
  });
  EXPECT_TRUE(s.ok()) << s.error().message;
  EXPECT_THAT(text, ::testing::HasSubstr("heartbeat"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s);

  // A stop_token ends a followed stream that would otherwise run for as long as the pod.
  std::stop_source stop;
  std::atomic<bool> got{false};
  kube::Status result;
  std::thread reader([&] {
    result = client.streamLogs("default", "talker", follow,
                               [&](std::string_view) {
                                 got = true;
                                 return true;
                               },
                               stop.get_token());
  });
  ASSERT_TRUE(waitFor([&] { return got.load(); }, 30s));
  auto stopAt = std::chrono::steady_clock::now();
  stop.request_stop();
  reader.join();
  EXPECT_LT(std::chrono::steady_clock::now() - stopAt, 5s);
  EXPECT_TRUE(result.ok()) << result.error().message;

  kube::LogOptions tail;
  tail.tailLines = 1;
  std::string last;
  ASSERT_TRUE(client.streamLogs("default", "talker", tail, [&](std::string_view d) {
    last.append(d);
    return true;
  }).ok());
  EXPECT_EQ(std::count(last.begin(), last.end(), '\n'), 1) << last;
}

}  // namespace
}  // namespace strait::e2e
