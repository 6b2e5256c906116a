#include "vnode/stream_health.h"

#include <gtest/gtest.h>

namespace strait::vnode {
namespace {

using namespace std::chrono_literals;

struct FakeClock {
  std::chrono::steady_clock::time_point t{};
  StreamHealth::Clock fn() {
    return [this] { return t; };
  }
};

TEST(StreamHealth, NotReadyUntilFirstConnect) {
  FakeClock c;
  StreamHealth h(30s, c.fn());
  EXPECT_FALSE(h.readiness().ready);
  EXPECT_EQ(h.readiness().reason, "ReflectionStreamNotConnected");
  h.onConnected();
  EXPECT_TRUE(h.readiness().ready);
  EXPECT_EQ(h.readiness().reason, "KubeletReady");
}

TEST(StreamHealth, PartitionShorterThanGraceStaysReady) {
  FakeClock c;
  StreamHealth h(30s, c.fn());
  h.onConnected();
  c.t += 5s;
  h.onMessage();
  h.onDisconnected();
  c.t += 29s;
  EXPECT_TRUE(h.readiness().ready);
  h.onConnected();
  c.t += 60s;
  h.onMessage();
  EXPECT_TRUE(h.readiness().ready);
}

TEST(StreamHealth, LongerPartitionMakesNotReady) {
  FakeClock c;
  StreamHealth h(30s, c.fn());
  h.onConnected();
  h.onDisconnected();
  c.t += 30s;
  Readiness r = h.readiness();
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.reason, "ReflectionStreamDown");
  EXPECT_NE(r.message.find("down since "), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("(grace 30000 ms)"), std::string::npos) << r.message;
  // The message does not change while the outage lasts (no Node write at every round).
  c.t += 5s;
  EXPECT_EQ(h.readiness().message, r.message);
  h.onConnected();
  EXPECT_TRUE(h.readiness().ready);
}

TEST(StreamHealth, SilentConnectedStreamCountsAsDown) {
  FakeClock c;
  StreamHealth h(10s, c.fn());
  h.onConnected();
  c.t += 9s;
  EXPECT_TRUE(h.readiness().ready);
  h.onMessage();
  c.t += 9s;
  EXPECT_TRUE(h.readiness().ready);
  c.t += 2s;
  EXPECT_FALSE(h.readiness().ready);
  EXPECT_NE(h.readiness().message.find("silent"), std::string::npos);
  // A message after the disconnect does not revive it.
  h.onDisconnected();
  h.onMessage();
  EXPECT_FALSE(h.readiness().ready);
}

}  // namespace
}  // namespace strait::vnode
