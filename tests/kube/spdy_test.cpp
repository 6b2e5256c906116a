// kube/spdy.h: every frame type round-trips through FrameEncoder and FrameDecoder, header
// blocks share one zlib stream per direction with the SPDY/3 dictionary (checked against
// frames compressed by Python's zlib with the dictionary of moby/spdystream), frames fed a
// byte at a time, and malformed input is an error value that sticks.
#include "kube/spdy.h"

#include <gtest/gtest.h>

#include <string>

namespace strait::kube::spdy {
namespace {

std::string unhex(std::string_view h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16));
  }
  return out;
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// A control frame with a raw payload.
std::string control(uint16_t version, uint16_t type, uint8_t flags, const std::string& payload) {
  return be32(0x80000000u | (uint32_t{version} << 16) | type) +
         be32((uint32_t{flags} << 24) | static_cast<uint32_t>(payload.size())) + payload;
}

Frame decodeOne(const std::string& bytes) {
  FrameDecoder d;
  d.feed(bytes);
  auto f = d.next();
  EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().message);
  EXPECT_TRUE(f.ok() && f->has_value());
  return f.ok() && f->has_value() ? **f : Frame{};
}

Error decodeError(const std::string& bytes) {
  FrameDecoder d;
  d.feed(bytes);
  auto f = d.next();
  EXPECT_FALSE(f.ok()) << "decoded " << (f.ok() && *f ? describe(**f) : "nothing");
  return f.ok() ? Error{} : f.error();
}

// Two SYN_STREAMs as kubectl sends them (error then data stream of request 0), compressed by
// Python's zlib (level 9, zdict = spdystream's dictionary, Z_SYNC_FLUSH) in one stream.
const char* kPythonSynError =
    "800300010000003d0000000100000000000078f9e3c6a7c202253a48f95b044eea16061606409ab308125f99a0"
    "74cc68004e892545a989b9d0c2863515141500000000ffff";
const char* kPythonSynData =
    "800300010000001600000003000000000000225333a8a44a04000000ffff";

TEST(SpdyTest, DecodesFramesCompressedWithTheSpdy3DictionaryByAnotherImplementation) {
  FrameDecoder d;
  d.feed(unhex(kPythonSynError) + unhex(kPythonSynData));
  auto first = d.next();
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_TRUE(first->has_value());
  auto* s1 = std::get_if<SynStreamFrame>(&**first);
  ASSERT_NE(s1, nullptr);
  EXPECT_EQ(s1->streamId, 1u);
  EXPECT_EQ(s1->headers, (HeaderBlock{{"port", "8080"}, {"requestid", "0"}, {"streamtype", "error"}}));
  auto second = d.next();
  ASSERT_TRUE(second.ok()) << second.error().message;
  auto* s2 = std::get_if<SynStreamFrame>(&**second);
  ASSERT_NE(s2, nullptr);
  EXPECT_EQ(s2->streamId, 3u);
  EXPECT_EQ(headerValue(s2->headers, "streamtype"), "data");
  EXPECT_EQ(headerValue(s2->headers, "port"), "8080");
  auto none = d.next();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(SpdyTest, EncoderUsesTheSpdy3DictionaryInOneZlibStream) {
  FrameEncoder e;
  auto a = e.encode(SynReplyFrame{1, 0, {{"x", "1"}}});
  ASSERT_TRUE(a.ok());
  // The zlib header names the dictionary by its Adler-32 (0xe3c6a7c2 for SPDY/3's).
  ASSERT_GE(a->size(), 18u);
  EXPECT_EQ(a->substr(12, 6), unhex("78f9e3c6a7c2"));
  auto b = e.encode(SynReplyFrame{3, 0, {{"x", "1"}}});
  ASSERT_TRUE(b.ok());
  // The second block continues the stream: no zlib header, and a back-reference makes it
  // shorter than the first.
  EXPECT_NE(b->substr(12, 2), a->substr(12, 2));
  EXPECT_LT(b->size(), a->size());
  FrameDecoder d;
  d.feed(*a + *b);
  for (uint32_t id : {1u, 3u}) {
    auto f = d.next();
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto* r = std::get_if<SynReplyFrame>(&**f);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->streamId, id);
    EXPECT_EQ(headerValue(r->headers, "x"), "1");
  }
}

TEST(SpdyTest, EveryFrameTypeRoundTrips) {
  std::vector<Frame> frames = {
      DataFrame{7, kFlagFin, std::string("hello\0world", 11)},
      SynStreamFrame{5, 3, 6, 0, kFlagFin | kFlagUnidirectional,
                     {{"streamtype", "data"}, {"port", "80"}, {"multi", std::string("a\0b", 3)}}},
      SynReplyFrame{5, kFlagFin, {}},
      RstStreamFrame{9, static_cast<uint32_t>(RstStatus::Cancel)},
      SettingsFrame{kFlagClearSettings, {{1, kSettingInitialWindowSize, 1 << 20}, {0, 4, 100}}},
      PingFrame{77},
      GoAwayFrame{11, static_cast<uint32_t>(GoAwayStatus::ProtocolError)},
      HeadersFrame{5, 0, {{"trailer", "x"}}},
      WindowUpdateFrame{0, 65536},
  };
  FrameEncoder e;
  std::string wire;
  for (const Frame& f : frames) {
    auto bytes = e.encode(f);
    ASSERT_TRUE(bytes.ok()) << describe(f) << ": " << bytes.error().message;
    wire += *bytes;
  }
  // Fed one byte at a time: a frame appears only when complete.
  FrameDecoder d;
  std::vector<Frame> got;
  for (char c : wire) {
    d.feed(std::string_view(&c, 1));
    while (true) {
      auto f = d.next();
      ASSERT_TRUE(f.ok()) << f.error().message;
      if (!*f) break;
      got.push_back(**f);
    }
  }
  ASSERT_EQ(got.size(), frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(describe(got[i]), describe(frames[i]));
    EXPECT_EQ(got[i].index(), frames[i].index());
  }
  EXPECT_EQ(std::get<DataFrame>(got[0]).data, std::string("hello\0world", 11));
  const auto& syn = std::get<SynStreamFrame>(got[1]);
  EXPECT_EQ(syn.associatedStreamId, 3u);
  EXPECT_EQ(syn.priority, 6);
  EXPECT_EQ(syn.flags, kFlagFin | kFlagUnidirectional);
  EXPECT_EQ(headerValue(syn.headers, "multi"), std::string("a\0b", 3));
  const auto& settings = std::get<SettingsFrame>(got[4]);
  ASSERT_EQ(settings.settings.size(), 2u);
  EXPECT_EQ(settings.settings[0].id, kSettingInitialWindowSize);
  EXPECT_EQ(settings.settings[0].value, 1u << 20);
  EXPECT_EQ(settings.settings[0].flags, 1);
  EXPECT_EQ(std::get<GoAwayFrame>(got[6]).lastGoodStreamId, 11u);
  EXPECT_EQ(std::get<WindowUpdateFrame>(got[8]).deltaWindowSize, 65536u);
}

TEST(SpdyTest, WireLayoutOfDataAndPing) {
  FrameEncoder e;
  auto data = e.encode(DataFrame{3, kFlagFin, "ab"});
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(*data, unhex("00000003010000026162"));
  auto ping = e.encode(PingFrame{1});
  ASSERT_TRUE(ping.ok());
  EXPECT_EQ(*ping, unhex("800300060000000400000001"));
  auto rst = e.encode(RstStreamFrame{1, 5});
  ASSERT_TRUE(rst.ok());
  EXPECT_EQ(*rst, unhex("80030003000000080000000100000005"));
}

TEST(SpdyTest, EncoderRefusesFieldsThatDoNotFit) {
  FrameEncoder e;
  EXPECT_FALSE(e.encode(DataFrame{0x80000001u, 0, "x"}).ok());
  EXPECT_FALSE(e.encode(DataFrame{1, 0, std::string(kMaxFrameLength + 1, 'x')}).ok());
}

TEST(SpdyTest, MalformedFramesAreErrorsNamingTheFrame) {
  EXPECT_NE(decodeError(control(2, 6, 0, be32(1))).message.find("version 2"), std::string::npos);
  EXPECT_NE(decodeError(control(3, 42, 0, "")).message.find("unknown control frame type 42"),
            std::string::npos);
  EXPECT_NE(decodeError(control(3, 6, 0, be32(1) + "x")).message.find("PING frame of length 5"),
            std::string::npos);
  EXPECT_NE(decodeError(control(3, 6, 0, be32(0))).message.find("id 0"), std::string::npos);
  EXPECT_NE(decodeError(control(3, 3, 0, be32(0) + be32(5))).message.find("stream 0"),
            std::string::npos);
  EXPECT_NE(decodeError(control(3, 9, 0, be32(1) + be32(0))).message.find("delta 0"),
            std::string::npos);
  EXPECT_NE(decodeError(control(3, 4, 0, be32(3) + be32(1))).message.find("3 entries"),
            std::string::npos);
  EXPECT_NE(decodeError(control(3, 7, 1, be32(0) + be32(0))).message.find("flags"),
            std::string::npos);
  EXPECT_NE(decodeError(control(3, 1, 0, "short")).message.find("SYN_STREAM"), std::string::npos);
  // DATA on stream 0.
  EXPECT_NE(decodeError(be32(0) + be32(0)).message.find("stream 0"), std::string::npos);
  // A header block that is not zlib data.
  EXPECT_NE(decodeError(control(3, 2, 0, be32(1) + "not zlib at all")).message.find("SYN_REPLY"),
            std::string::npos);
  EXPECT_NE(decodeError(control(3, 2, 0, be32(1) + "garbage")).message.find("spdy: "),
            std::string::npos);
}

TEST(SpdyTest, BadHeaderBlocksAreRefused) {
  // Parsed uncompressed (parseHeaderBlock), every way a block can lie.
  EXPECT_FALSE(parseHeaderBlock("").ok());
  EXPECT_FALSE(parseHeaderBlock(be32(1)).ok());                             // no pair
  EXPECT_FALSE(parseHeaderBlock(be32(0x7fffffff) + std::string(16, 'a')).ok());  // huge count
  EXPECT_FALSE(parseHeaderBlock(be32(1) + be32(100) + "abc").ok());  // name overruns
  EXPECT_FALSE(parseHeaderBlock(be32(1) + be32(1) + "a" + be32(9) + "v").ok());  // value overruns
  EXPECT_FALSE(parseHeaderBlock(be32(1) + be32(0) + be32(0)).ok());  // empty name
  EXPECT_FALSE(parseHeaderBlock(be32(1) + be32(1) + "A" + be32(0)).ok());  // upper case
  EXPECT_FALSE(
      parseHeaderBlock(be32(2) + be32(1) + "a" + be32(0) + be32(1) + "a" + be32(0)).ok());
  EXPECT_FALSE(parseHeaderBlock(be32(0) + "x").ok());  // trailing bytes
  auto ok = parseHeaderBlock(be32(1) + be32(1) + "a" + be32(2) + "bc");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, (HeaderBlock{{"a", "bc"}}));
}

TEST(SpdyTest, AnErrorSticks) {
  FrameDecoder d;
  FrameEncoder e;
  d.feed(control(3, 42, 0, ""));
  auto good = e.encode(PingFrame{1});
  ASSERT_TRUE(good.ok());
  d.feed(*good);
  EXPECT_FALSE(d.next().ok());
  EXPECT_FALSE(d.next().ok());
}

TEST(SpdyTest, CompressionBombIsRefused) {
  // A SYN_REPLY whose header block inflates to far more than the limit.
  FrameEncoder e;
  std::string big(kMaxHeaderBlockBytes + 10, 'v');
  auto f = e.encode(SynReplyFrame{1, 0, {{"x", big}}});
  ASSERT_TRUE(f.ok());
  EXPECT_LT(f->size(), 4096u);  // it compresses well
  Error err = decodeError(*f);
  EXPECT_NE(err.message.find("inflates to more than"), std::string::npos) << err.message;
}

TEST(SpdyTest, IncompleteFrameWaitsForMoreBytes) {
  FrameEncoder e;
  auto f = e.encode(DataFrame{1, 0, "abcdef"});
  ASSERT_TRUE(f.ok());
  FrameDecoder d;
  d.feed(f->substr(0, 9));
  auto none = d.next();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  d.feed(f->substr(9));
  auto one = d.next();
  ASSERT_TRUE(one.ok());
  ASSERT_TRUE(one->has_value());
  EXPECT_EQ(std::get<DataFrame>(**one).data, "abcdef");
}

}  // namespace
}  // namespace strait::kube::spdy
