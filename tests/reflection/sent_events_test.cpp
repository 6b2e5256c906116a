#include "reflection/sent_events.h"

#include <gtest/gtest.h>

namespace strait::reflection {
namespace {

using nlohmann::json;

json event(const std::string& uid, const std::string& rv, const std::string& last) {
  return {{"kind", "Event"},
          {"metadata", {{"uid", uid}, {"resourceVersion", rv}, {"name", "e-" + uid}}},
          {"lastTimestamp", last}};
}

TEST(SentEvents, AnEventIsSentOncePerVersion) {
  SentEvents s;
  json e = event("u1", "10", "2026-11-30T05:00:00Z");
  EXPECT_FALSE(s.sent(e));
  s.record(e);
  EXPECT_TRUE(s.sent(e));
  EXPECT_FALSE(s.sent(event("u1", "11", "2026-11-30T05:00:05Z")));  // count went up: again
  EXPECT_FALSE(s.sent(json{{"kind", "Event"}}));                   // no uid: never known
}

TEST(SentEvents, CapacityDropsTheOldest) {
  SentEvents s(3);
  for (int i = 0; i < 5; i++) s.record(event("u" + std::to_string(i), "1", ""));
  EXPECT_EQ(s.size(), 3u);
  EXPECT_FALSE(s.sent(event("u0", "1", "")));
  EXPECT_FALSE(s.sent(event("u1", "1", "")));
  EXPECT_TRUE(s.sent(event("u4", "1", "")));
}

TEST(SentEvents, ForgetSentAfterUnrecordsTheRecentOnes) {
  SentEvents s;
  s.record(event("old", "1", ""));
  const auto cut = SentEvents::Clock::now();
  s.record(event("recent", "1", ""));
  s.forgetSentAfter(cut);
  EXPECT_TRUE(s.sent(event("old", "1", "")));
  EXPECT_FALSE(s.sent(event("recent", "1", "")));
}

TEST(SentEvents, NewestEventsKeepsTheNewestInOrder) {
  std::vector<json> evs;
  // Same second for the last three: the resourceVersion decides (9 < 10 as numbers).
  evs.push_back(event("c", "10", "2026-11-30T05:00:02Z"));
  evs.push_back(event("a", "5", "2026-11-30T05:00:00Z"));
  evs.push_back(event("b", "9", "2026-11-30T05:00:02Z"));
  evs.push_back(event("d", "11", "2026-11-30T05:00:02Z"));
  std::vector<json> newest = newestEvents(evs, 3);
  ASSERT_EQ(newest.size(), 3u);
  EXPECT_EQ(newest[0]["metadata"]["uid"], "b");
  EXPECT_EQ(newest[1]["metadata"]["uid"], "c");
  EXPECT_EQ(newest[2]["metadata"]["uid"], "d");
  EXPECT_EQ(newestEvents(evs, 10).size(), 4u);
}

}  // namespace
}  // namespace strait::reflection
