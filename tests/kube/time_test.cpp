// Tests for kube/time.h: metav1.Time and MicroTime formatting and RFC 3339 parsing.
#include "kube/time.h"

#include <gtest/gtest.h>

#include <string>

namespace strait::kube {
namespace {

using std::chrono::system_clock;

TEST(TimeTest, Rfc3339Format) {
  using namespace std::chrono;
  EXPECT_EQ(rfc3339(system_clock::time_point{}), "1970-01-01T00:00:00Z");
  system_clock::time_point t =
      system_clock::time_point{seconds(1714564800)} + microseconds(123456) + nanoseconds(789);
  EXPECT_EQ(rfc3339(t), "2024-05-01T12:00:00Z");
  EXPECT_EQ(rfc3339Micro(t), "2024-05-01T12:00:00.123456Z");
  EXPECT_EQ(rfc3339Micro(system_clock::time_point{}), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(rfc3339(system_clock::time_point{seconds(951782400)}), "2000-02-29T00:00:00Z");
  EXPECT_EQ(rfc3339(system_clock::time_point{seconds(-1)}), "1969-12-31T23:59:59Z");
  EXPECT_EQ(rfc3339(system_clock::time_point{milliseconds(-1)}), "1969-12-31T23:59:59Z");
  std::string now = rfc3339Now();
  EXPECT_EQ(now.size(), 20u);
  EXPECT_EQ(now.back(), 'Z');
  EXPECT_TRUE(parseRfc3339(now).ok());
}

TEST(TimeTest, Rfc3339Parse) {
  using namespace std::chrono;
  auto r = parseRfc3339("2024-05-01T12:00:00Z");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(duration_cast<seconds>(r->time_since_epoch()).count(), 1714564800);

  r = parseRfc3339("2024-05-01T14:30:00+02:30");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(duration_cast<seconds>(r->time_since_epoch()).count(), 1714564800);

  r = parseRfc3339("2024-05-01T09:00:00-03:00");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(duration_cast<seconds>(r->time_since_epoch()).count(), 1714564800);

  r = parseRfc3339("2024-05-01T12:00:00.123456Z");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(rfc3339Micro(*r), "2024-05-01T12:00:00.123456Z");

  r = parseRfc3339("2024-05-01t12:00:00.5z");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(rfc3339Micro(*r), "2024-05-01T12:00:00.500000Z");

  r = parseRfc3339("1969-12-31T23:59:59Z");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(duration_cast<seconds>(r->time_since_epoch()).count(), -1);

  ASSERT_TRUE(parseRfc3339("2024-02-29T00:00:00Z").ok());
  ASSERT_TRUE(parseRfc3339("2000-02-29T00:00:00Z").ok());

  // Round trip.
  auto t = system_clock::time_point{seconds(1700000000)} + microseconds(42);
  EXPECT_EQ(parseRfc3339(rfc3339Micro(t)).value(), t);
}

TEST(TimeTest, Rfc3339ParseErrors) {
  for (const char* bad : {"",
                          "2024-05-01",
                          "2024-05-01T12:00:00",
                          "2024-05-01 12:00:00Z",
                          "2024-5-01T12:00:00Z",
                          "2024-13-01T12:00:00Z",
                          "2024-00-01T12:00:00Z",
                          "2023-02-29T00:00:00Z",
                          "1900-02-29T00:00:00Z",
                          "2024-04-31T00:00:00Z",
                          "2024-05-01T24:00:00Z",
                          "2024-05-01T12:60:00Z",
                          "2024-05-01T12:00:60Z",
                          "2024-05-01T12:00:00.Z",
                          "2024-05-01T12:00:00.1234567890Z",
                          "2024-05-01T12:00:00+0200",
                          "2024-05-01T12:00:00+2",
                          "2024-05-01T12:00:00Zjunk",
                          "2024-05-01T12:00:00+24:00",
                          "abcd-ef-ghTij:kl:mnZ",
                          "2024-05-01T12:00:00ZZ"}) {
    auto r = parseRfc3339(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.code(), Code::Invalid);
      EXPECT_NE(r.error().message.find("invalid RFC 3339 time"), std::string::npos);
    }
  }
}

TEST(TimeTest, UnixFormsCoverGoZeroTime) {
  // Go's zero time.Time, which a system_clock time point cannot hold.
  EXPECT_EQ(rfc3339FromUnix(-62135596800), "0001-01-01T00:00:00Z");
  EXPECT_EQ(rfc3339FromUnix(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(rfc3339FromUnix(1714564800), "2024-05-01T12:00:00Z");
  EXPECT_EQ(rfc3339FromUnix(-1), "1969-12-31T23:59:59Z");
  EXPECT_EQ(rfc3339FromUnix(253402300799), "9999-12-31T23:59:59Z");

  auto r = parseRfc3339Unix("0001-01-01T00:00:00Z");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, -62135596800);
  r = parseRfc3339Unix("2024-05-01T14:30:00.9+02:30");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 1714564800);  // the fraction is dropped
  r = parseRfc3339Unix("1969-12-31T23:59:59.5Z");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, -1);  // whole seconds round down, also before 1970

  r = parseRfc3339Unix("2024-05-01 12:00:00Z");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::Invalid);
}

}  // namespace
}  // namespace strait::kube
