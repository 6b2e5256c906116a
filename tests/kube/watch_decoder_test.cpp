#include <gtest/gtest.h>

#include "kube/api_error.h"
#include "kube/watch.h"

namespace strait::kube {
namespace {

std::string ev(const std::string& type, const std::string& name, const std::string& rv) {
  return R"({"type":")" + type + R"(","object":{"kind":"Pod","metadata":{"name":")" + name +
         R"(","resourceVersion":")" + rv + R"("}}})" + "\n";
}

TEST(WatchDecoder, ManyEventsInOneChunk) {
  WatchDecoder d;
  std::vector<WatchEvent> out;
  ASSERT_TRUE(d.feed(ev("ADDED", "a", "1") + ev("MODIFIED", "a", "2") + ev("DELETED", "a", "3"),
                     out)
                  .ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].type, WatchEventType::Added);
  EXPECT_EQ(out[1].type, WatchEventType::Modified);
  EXPECT_EQ(out[2].type, WatchEventType::Deleted);
  EXPECT_EQ(out[2].resourceVersion(), "3");
  EXPECT_TRUE(d.finish().ok());
}

TEST(WatchDecoder, EventSplitAcrossChunksAtEveryByte) {
  std::string stream = ev("ADDED", "a", "1") + ev("BOOKMARK", "", "7");
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    WatchDecoder d;
    std::vector<WatchEvent> out;
    ASSERT_TRUE(d.feed(stream.substr(0, cut), out).ok());
    ASSERT_TRUE(d.feed(stream.substr(cut), out).ok());
    ASSERT_EQ(out.size(), 2u) << "cut at " << cut;
    EXPECT_EQ(out[1].type, WatchEventType::Bookmark);
    EXPECT_EQ(out[1].resourceVersion(), "7");
  }
}

TEST(WatchDecoder, ByteAtATime) {
  std::string stream = ev("ADDED", "a", "1") + "\r\n" + ev("MODIFIED", "a", "2");
  WatchDecoder d;
  std::vector<WatchEvent> out;
  for (char c : stream) ASSERT_TRUE(d.feed(std::string_view(&c, 1), out).ok());
  EXPECT_EQ(out.size(), 2u);
}

TEST(WatchDecoder, MalformedLineIsAnErrorNamingTheOffsetAndSticks) {
  WatchDecoder d;
  std::vector<WatchEvent> out;
  std::string good = ev("ADDED", "a", "1");
  auto s = d.feed(good + "{not json}\n" + ev("ADDED", "b", "2"), out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::BadRequest);
  EXPECT_NE(s.error().message.find("byte " + std::to_string(good.size())), std::string::npos)
      << s.error().message;
  EXPECT_EQ(out.size(), 1u);  // the event before the bad line
  EXPECT_FALSE(d.feed(ev("ADDED", "c", "3"), out).ok());
}

TEST(WatchDecoder, WrongShapesAreErrors) {
  for (const char* line : {"[]", R"({"type":"ADDED"})", R"({"type":"NOPE","object":{}})",
                           R"({"type":1,"object":{}})", R"({"type":"ADDED","object":"x"})"}) {
    WatchDecoder d;
    std::vector<WatchEvent> out;
    EXPECT_FALSE(d.feed(std::string(line) + "\n", out).ok()) << line;
  }
}

TEST(WatchDecoder, OverlongLineIsAnError) {
  WatchDecoder d(100);
  std::vector<WatchEvent> out;
  auto s = d.feed(std::string(150, 'x'), out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("longer than 100"), std::string::npos);
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(WatchDecoder, TruncatedStreamIsAnErrorAtFinish) {
  WatchDecoder d;
  std::vector<WatchEvent> out;
  std::string e = ev("ADDED", "a", "1");
  ASSERT_TRUE(d.feed(e.substr(0, e.size() / 2), out).ok());
  EXPECT_FALSE(d.finish().ok());
}

TEST(WatchDecoder, ErrorEventBecomesGone) {
  WatchDecoder d;
  std::vector<WatchEvent> out;
  std::string line = R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1",)"
                     R"("metadata":{},"status":"Failure","message":"too old resource version: )"
                     R"x(1 (5)","reason":"Expired","code":410}})x";
  ASSERT_TRUE(d.feed(line + "\n", out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, WatchEventType::Error);
  Error e = out[0].error();
  EXPECT_EQ(e.code, Code::Gone);
  EXPECT_NE(e.message.find("too old"), std::string::npos);
}

TEST(ApiError, StatusBodiesBecomeTypedErrors) {
  struct Case {
    int http;
    const char* reason;
    Code want;
  } cases[] = {{404, "NotFound", Code::NotFound},       {409, "AlreadyExists", Code::AlreadyExists},
               {409, "Conflict", Code::Conflict},       {410, "Expired", Code::Gone},
               {410, "Gone", Code::Gone},               {403, "Forbidden", Code::Forbidden},
               {401, "Unauthorized", Code::Unauthorized}, {422, "Invalid", Code::Invalid},
               {429, "TooManyRequests", Code::TooManyRequests},
               {504, "Timeout", Code::ServerTimeout},   {500, "Timeout", Code::ServerTimeout},
               {409, "", Code::Conflict}};
  for (const auto& c : cases) {
    nlohmann::json st = {{"kind", "Status"}, {"status", "Failure"}, {"message", "m"},
                         {"reason", c.reason}, {"code", c.http}};
    Error e = errorFromResponse(c.http, st.dump());
    EXPECT_EQ(e.code, c.want) << c.http << " " << c.reason;
    EXPECT_EQ(e.message, "m");
  }
}

TEST(ApiError, InvalidKeepsCausesAndNonStatusBodiesAreQuoted) {
  nlohmann::json st = {{"kind", "Status"}, {"reason", "Invalid"}, {"code", 422},
                       {"message", "bad"},
                       {"details", {{"name", "x"}, {"kind", "Pod"},
                                    {"causes", {{{"reason", "FieldValueInvalid"},
                                                 {"field", "metadata.name"},
                                                 {"message", "no"}}}}}}};
  Error e = errorFromResponse(422, st.dump());
  EXPECT_EQ(e.code, Code::Invalid);
  ASSERT_EQ(e.causes.size(), 1u);
  EXPECT_EQ(e.causes[0].field, "metadata.name");
  EXPECT_EQ(e.name, "x");
  Error plain = errorFromResponse(502, "<html>bad gateway</html>");
  EXPECT_NE(plain.message.find("HTTP 502"), std::string::npos);
  EXPECT_NE(plain.message.find("bad gateway"), std::string::npos);
}

TEST(ApiError, RetryAfter) {
  EXPECT_EQ(parseRetryAfter("3"), 3);
  EXPECT_EQ(parseRetryAfter(" 10 "), 10);
  EXPECT_EQ(parseRetryAfter("999999"), 3600);
  EXPECT_FALSE(parseRetryAfter(""));
  EXPECT_FALSE(parseRetryAfter("-1"));
  EXPECT_FALSE(parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"));
}

}  // namespace
}  // namespace strait::kube
