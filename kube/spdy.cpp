// SPDY/3.1 frames and header blocks (see spdy.h).
#include "kube/spdy.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace strait::kube::spdy {
namespace {

// --- The SPDY/3 header compression dictionary (section 2.6.10.1 of the draft) -------------

// The words of the dictionary, each preceded on the wire by its length (4 bytes, big-endian).
constexpr std::string_view kDictionaryWords[] = {
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset",
    "accept-encoding", "accept-language", "accept-ranges", "age", "allow", "authorization",
    "cache-control", "connection", "content-base", "content-encoding", "content-language",
    "content-length", "content-location", "content-md5", "content-range", "content-type", "date",
    "etag", "expect", "expires", "from", "host", "if-match", "if-modified-since",
    "if-none-match", "if-range", "if-unmodified-since", "last-modified", "location",
    "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
    "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent",
    "vary", "via", "warning", "www-authenticate", "method", "get", "status", "200 OK", "version",
    "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin",
};
// Then these bytes, as they are.
constexpr std::string_view kDictionaryTail =
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502"
    "504505203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Re"
    "quest401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Impl"
    "emented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00"
    ":00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,imag"
    "e/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivate"
    "max-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";

const std::string& dictionary() {
  static const std::string dict = [] {
    std::string d;
    for (std::string_view w : kDictionaryWords) {
      uint32_t n = static_cast<uint32_t>(w.size());
      d += static_cast<char>(n >> 24);
      d += static_cast<char>(n >> 16);
      d += static_cast<char>(n >> 8);
      d += static_cast<char>(n);
      d += w;
    }
    d += kDictionaryTail;
    return d;
  }();
  return dict;
}

// --- Byte access -------------------------------------------------------------------------------

uint32_t be32(std::string_view s, size_t at) {
  auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(s[at + i])); };
  return (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
}

void put32(std::string& out, uint32_t v) {
  out += static_cast<char>(v >> 24);
  out += static_cast<char>(v >> 16);
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v);
}

const char* typeName(uint16_t type) {
  switch (static_cast<ControlType>(type)) {
    case ControlType::SynStream: return "SYN_STREAM";
    case ControlType::SynReply: return "SYN_REPLY";
    case ControlType::RstStream: return "RST_STREAM";
    case ControlType::Settings: return "SETTINGS";
    case ControlType::Ping: return "PING";
    case ControlType::GoAway: return "GOAWAY";
    case ControlType::Headers: return "HEADERS";
    case ControlType::WindowUpdate: return "WINDOW_UPDATE";
  }
  return "unknown";
}

Error invalid(std::string msg) { return makeError(Code::Invalid, "spdy: " + std::move(msg)); }

}  // namespace

std::string headerValue(const HeaderBlock& h, std::string_view name) {
  for (const auto& [n, v] : h) {
    if (n == name) return v;
  }
  return {};
}

std::string describe(const Frame& f) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, DataFrame>) {
          return "DATA stream=" + std::to_string(x.streamId) + " flags=" +
                 std::to_string(x.flags) + " length=" + std::to_string(x.data.size());
        } else if constexpr (std::is_same_v<T, SynStreamFrame>) {
          return "SYN_STREAM stream=" + std::to_string(x.streamId) + " flags=" +
                 std::to_string(x.flags);
        } else if constexpr (std::is_same_v<T, SynReplyFrame>) {
          return "SYN_REPLY stream=" + std::to_string(x.streamId);
        } else if constexpr (std::is_same_v<T, RstStreamFrame>) {
          return "RST_STREAM stream=" + std::to_string(x.streamId) + " status=" +
                 std::to_string(x.status);
        } else if constexpr (std::is_same_v<T, SettingsFrame>) {
          return "SETTINGS entries=" + std::to_string(x.settings.size());
        } else if constexpr (std::is_same_v<T, PingFrame>) {
          return "PING id=" + std::to_string(x.id);
        } else if constexpr (std::is_same_v<T, GoAwayFrame>) {
          return "GOAWAY last=" + std::to_string(x.lastGoodStreamId) + " status=" +
                 std::to_string(x.status);
        } else if constexpr (std::is_same_v<T, HeadersFrame>) {
          return "HEADERS stream=" + std::to_string(x.streamId);
        } else {
          return "WINDOW_UPDATE stream=" + std::to_string(x.streamId) + " delta=" +
                 std::to_string(x.deltaWindowSize);
        }
      },
      f);
}

// --- Header blocks -----------------------------------------------------------------------------

std::string serializeHeaderBlock(const HeaderBlock& h) {
  std::string out;
  put32(out, static_cast<uint32_t>(h.size()));
  for (const auto& [name, value] : h) {
    put32(out, static_cast<uint32_t>(name.size()));
    out += name;
    put32(out, static_cast<uint32_t>(value.size()));
    out += value;
  }
  return out;
}

Result<HeaderBlock> parseHeaderBlock(std::string_view block) {
  if (block.size() < 4) return invalid("header block shorter than its pair count");
  uint32_t count = be32(block, 0);
  size_t at = 4;
  // Each pair takes at least 8 bytes: a count beyond that is a lie, refuse before reserving.
  if (count > (block.size() - at) / 8) {
    return invalid("header block claims " + std::to_string(count) + " pairs in " +
                   std::to_string(block.size()) + " bytes");
  }
  HeaderBlock h;
  h.reserve(count);
  auto field = [&](const char* what, std::string& out) -> Status {
    if (block.size() - at < 4) return invalid(std::string("header block truncated in a ") + what + " length");
    uint32_t n = be32(block, at);
    at += 4;
    if (block.size() - at < n) {
      return invalid(std::string("header ") + what + " of " + std::to_string(n) +
                     " bytes overruns the block");
    }
    out.assign(block.substr(at, n));
    at += n;
    return Status::OK();
  };
  for (uint32_t i = 0; i < count; ++i) {
    std::string name, value;
    if (auto s = field("name", name); !s) return s.error();
    if (name.empty()) return invalid("empty header name");
    if (std::any_of(name.begin(), name.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
      return invalid("header name \"" + name + "\" is not lower-case");
    }
    for (const auto& [n, v] : h) {
      if (n == name) return invalid("header \"" + name + "\" repeated");
    }
    if (auto s = field("value", value); !s) return s.error();
    h.emplace_back(std::move(name), std::move(value));
  }
  if (at != block.size()) {
    return invalid(std::to_string(block.size() - at) + " bytes after the header block");
  }
  return h;
}

// --- Decoder -----------------------------------------------------------------------------------

struct FrameDecoder::Inflater {
  z_stream z{};
  bool ok = false;
  Inflater() { ok = inflateInit(&z) == Z_OK; }
  ~Inflater() {
    if (ok) inflateEnd(&z);
  }
};

FrameDecoder::FrameDecoder() : inflater_(std::make_unique<Inflater>()) {}
FrameDecoder::~FrameDecoder() = default;

void FrameDecoder::feed(std::string_view bytes) {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > 64 * 1024) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(bytes);
}

Result<HeaderBlock> FrameDecoder::inflateBlock(std::string_view compressed) {
  if (!inflater_->ok) return makeError(Code::Internal, "spdy: zlib inflateInit failed");
  z_stream& z = inflater_->z;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char chunk[4096];
  while (true) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof(chunk);
    int rc = inflate(&z, Z_SYNC_FLUSH);
    if (rc == Z_NEED_DICT) {
      const std::string& d = dictionary();
      if (inflateSetDictionary(&z, reinterpret_cast<const Bytef*>(d.data()),
                               static_cast<uInt>(d.size())) != Z_OK) {
        return invalid("header block asks for a dictionary other than SPDY/3's");
      }
      rc = inflate(&z, Z_SYNC_FLUSH);
    }
    size_t produced = sizeof(chunk) - z.avail_out;
    out.append(chunk, produced);
    if (out.size() > kMaxHeaderBlockBytes) {
      return invalid("header block inflates to more than " +
                     std::to_string(kMaxHeaderBlockBytes) + " bytes");
    }
    if (rc == Z_STREAM_END) return invalid("header compression stream ended");
    if (rc == Z_BUF_ERROR) {
      // No progress possible: all input consumed and nothing more to produce.
      if (z.avail_in == 0) break;
      return invalid("header block is not a complete zlib sync-flushed block");
    }
    if (rc != Z_OK) {
      return invalid(std::string("header block does not inflate: ") + (z.msg ? z.msg : "zlib error"));
    }
    if (z.avail_in == 0 && z.avail_out != 0) break;
  }
  return parseHeaderBlock(out);
}

Result<std::optional<Frame>> FrameDecoder::next() {
  if (failed_) return *failed_;
  auto fail = [this](Error e) -> Result<std::optional<Frame>> {
    failed_ = e;
    return e;
  };
  std::string_view avail = std::string_view(buf_).substr(pos_);
  if (avail.size() < kFrameHeaderSize) return std::optional<Frame>();
  uint32_t word0 = be32(avail, 0);
  uint32_t word1 = be32(avail, 4);
  uint8_t flags = static_cast<uint8_t>(word1 >> 24);
  uint32_t length = word1 & 0xffffff;
  if (avail.size() - kFrameHeaderSize < length) return std::optional<Frame>();
  std::string_view payload = avail.substr(kFrameHeaderSize, length);
  pos_ += kFrameHeaderSize + length;

  if ((word0 & 0x80000000u) == 0) {
    DataFrame d;
    d.streamId = word0 & kMaxStreamId;
    if (d.streamId == 0) return fail(invalid("DATA frame on stream 0"));
    if (flags & ~kFlagFin) {
      return fail(invalid("DATA frame with unknown flags " + std::to_string(flags)));
    }
    d.flags = flags;
    d.data.assign(payload);
    return std::optional<Frame>(std::move(d));
  }
  uint16_t version = static_cast<uint16_t>((word0 >> 16) & 0x7fff);
  uint16_t type = static_cast<uint16_t>(word0 & 0xffff);
  if (version != kVersion) {
    return fail(invalid("control frame of SPDY version " + std::to_string(version) +
                        ", only 3 is spoken"));
  }
  auto f = parseControl(type, flags, payload);
  if (!f) return fail(f.error());
  return std::optional<Frame>(std::move(*f));
}

Result<Frame> FrameDecoder::parseControl(uint16_t type, uint8_t flags, std::string_view p) {
  const std::string name = typeName(type);
  auto needLength = [&](size_t want, bool exact) -> Status {
    if (exact ? p.size() != want : p.size() < want) {
      return invalid(name + " frame of length " + std::to_string(p.size()) + ", expected " +
                     (exact ? "" : "at least ") + std::to_string(want));
    }
    return Status::OK();
  };
  auto streamId = [&](size_t at) -> Result<uint32_t> {
    uint32_t id = be32(p, at) & kMaxStreamId;
    if (id == 0) return invalid(name + " frame on stream 0");
    return id;
  };
  // Header-block errors name the frame they were found in.
  auto headerBlock = [&](std::string_view compressed) -> Result<HeaderBlock> {
    auto h = inflateBlock(compressed);
    if (!h) {
      std::string why = h.error().message;
      if (why.rfind("spdy: ", 0) == 0) why.erase(0, 6);
      return makeError(h.error().code, "spdy: " + name + " frame: " + why);
    }
    return h;
  };
  auto noFlags = [&](uint8_t allowed) -> Status {
    if (flags & ~allowed) {
      return invalid(name + " frame with unknown flags " + std::to_string(flags));
    }
    return Status::OK();
  };
  switch (static_cast<ControlType>(type)) {
    case ControlType::SynStream: {
      if (auto s = needLength(10, false); !s) return s.error();
      if (auto s = noFlags(kFlagFin | kFlagUnidirectional); !s) return s.error();
      SynStreamFrame f;
      auto id = streamId(0);
      if (!id) return id.error();
      f.streamId = *id;
      f.associatedStreamId = be32(p, 4) & kMaxStreamId;
      f.priority = static_cast<uint8_t>(static_cast<unsigned char>(p[8]) >> 5);
      f.slot = static_cast<uint8_t>(p[9]);
      f.flags = flags;
      auto h = headerBlock(p.substr(10));
      if (!h) return h.error();
      f.headers = std::move(*h);
      return Frame(std::move(f));
    }
    case ControlType::SynReply:
    case ControlType::Headers: {
      if (auto s = needLength(4, false); !s) return s.error();
      if (auto s = noFlags(kFlagFin); !s) return s.error();
      auto id = streamId(0);
      if (!id) return id.error();
      auto h = headerBlock(p.substr(4));
      if (!h) return h.error();
      if (static_cast<ControlType>(type) == ControlType::SynReply) {
        return Frame(SynReplyFrame{*id, flags, std::move(*h)});
      }
      return Frame(HeadersFrame{*id, flags, std::move(*h)});
    }
    case ControlType::RstStream: {
      if (auto s = needLength(8, true); !s) return s.error();
      if (auto s = noFlags(0); !s) return s.error();
      auto id = streamId(0);
      if (!id) return id.error();
      uint32_t status = be32(p, 4);
      if (status == 0) return invalid("RST_STREAM frame with status 0");
      return Frame(RstStreamFrame{*id, status});
    }
    case ControlType::Settings: {
      if (auto s = needLength(4, false); !s) return s.error();
      if (auto s = noFlags(kFlagClearSettings); !s) return s.error();
      uint32_t n = be32(p, 0);
      if (n > (p.size() - 4) / 8 || p.size() != 4 + static_cast<size_t>(n) * 8) {
        return invalid("SETTINGS frame of length " + std::to_string(p.size()) + " with " +
                       std::to_string(n) + " entries");
      }
      SettingsFrame f;
      f.flags = flags;
      for (uint32_t i = 0; i < n; ++i) {
        uint32_t w = be32(p, 4 + i * 8);
        f.settings.push_back(Setting{static_cast<uint8_t>(w >> 24), w & 0xffffff, be32(p, 8 + i * 8)});
      }
      return Frame(std::move(f));
    }
    case ControlType::Ping: {
      if (auto s = needLength(4, true); !s) return s.error();
      if (auto s = noFlags(0); !s) return s.error();
      uint32_t id = be32(p, 0);
      if (id == 0) return invalid("PING frame with id 0");
      return Frame(PingFrame{id});
    }
    case ControlType::GoAway: {
      if (auto s = needLength(8, true); !s) return s.error();
      if (auto s = noFlags(0); !s) return s.error();
      return Frame(GoAwayFrame{be32(p, 0) & kMaxStreamId, be32(p, 4)});
    }
    case ControlType::WindowUpdate: {
      if (auto s = needLength(8, true); !s) return s.error();
      if (auto s = noFlags(0); !s) return s.error();
      uint32_t delta = be32(p, 4) & 0x7fffffff;
      if (delta == 0) return invalid("WINDOW_UPDATE frame with delta 0");
      // Stream 0 is the session window (SPDY/3.1).
      return Frame(WindowUpdateFrame{be32(p, 0) & kMaxStreamId, delta});
    }
  }
  return invalid("unknown control frame type " + std::to_string(type));
}

// --- Encoder -----------------------------------------------------------------------------------

struct FrameEncoder::Deflater {
  z_stream z{};
  bool ok = false;
  Deflater() {
    ok = deflateInit(&z, Z_BEST_COMPRESSION) == Z_OK;
    if (ok) {
      const std::string& d = dictionary();
      ok = deflateSetDictionary(&z, reinterpret_cast<const Bytef*>(d.data()),
                                static_cast<uInt>(d.size())) == Z_OK;
    }
  }
  ~Deflater() { deflateEnd(&z); }
};

FrameEncoder::FrameEncoder() : deflater_(std::make_unique<Deflater>()) {}
FrameEncoder::~FrameEncoder() = default;

Result<std::string> FrameEncoder::deflateBlock(const HeaderBlock& h) {
  if (!deflater_->ok) return makeError(Code::Internal, "spdy: zlib deflate setup failed");
  std::string in = serializeHeaderBlock(h);
  z_stream& z = deflater_->z;
  z.next_in = reinterpret_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char chunk[4096];
  do {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof(chunk);
    int rc = deflate(&z, Z_SYNC_FLUSH);
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return makeError(Code::Internal, "spdy: zlib deflate failed");
    }
    out.append(chunk, sizeof(chunk) - z.avail_out);
  } while (z.avail_out == 0);
  return out;
}

Result<std::string> FrameEncoder::encode(const Frame& frame) {
  auto control = [&](ControlType type, uint8_t flags, const std::string& payload) -> Result<std::string> {
    if (payload.size() > kMaxFrameLength) {
      return invalid(std::string(typeName(static_cast<uint16_t>(type))) + " frame payload of " +
                     std::to_string(payload.size()) + " bytes is too long");
    }
    std::string o;
    put32(o, 0x80000000u | (uint32_t{kVersion} << 16) | static_cast<uint16_t>(type));
    put32(o, (uint32_t{flags} << 24) | static_cast<uint32_t>(payload.size()));
    o += payload;
    return o;
  };
  auto checkId = [](uint32_t id) -> Status {
    if (id > kMaxStreamId) return invalid("stream id " + std::to_string(id) + " over 31 bits");
    return Status::OK();
  };
  return std::visit(
      [&](const auto& f) -> Result<std::string> {
        using T = std::decay_t<decltype(f)>;
        if constexpr (std::is_same_v<T, DataFrame>) {
          if (auto s = checkId(f.streamId); !s) return s.error();
          if (f.data.size() > kMaxFrameLength) {
            return invalid("DATA payload of " + std::to_string(f.data.size()) + " bytes is too long");
          }
          std::string o;
          put32(o, f.streamId);
          put32(o, (uint32_t{f.flags} << 24) | static_cast<uint32_t>(f.data.size()));
          o += f.data;
          return o;
        } else if constexpr (std::is_same_v<T, SynStreamFrame>) {
          if (auto s = checkId(f.streamId); !s) return s.error();
          if (auto s = checkId(f.associatedStreamId); !s) return s.error();
          auto block = deflateBlock(f.headers);
          if (!block) return block.error();
          std::string p;
          put32(p, f.streamId);
          put32(p, f.associatedStreamId);
          p += static_cast<char>((f.priority & 7) << 5);
          p += static_cast<char>(f.slot);
          p += *block;
          return control(ControlType::SynStream, f.flags, p);
        } else if constexpr (std::is_same_v<T, SynReplyFrame> || std::is_same_v<T, HeadersFrame>) {
          if (auto s = checkId(f.streamId); !s) return s.error();
          auto block = deflateBlock(f.headers);
          if (!block) return block.error();
          std::string p;
          put32(p, f.streamId);
          p += *block;
          return control(std::is_same_v<T, SynReplyFrame> ? ControlType::SynReply
                                                          : ControlType::Headers,
                         f.flags, p);
        } else if constexpr (std::is_same_v<T, RstStreamFrame>) {
          if (auto s = checkId(f.streamId); !s) return s.error();
          std::string p;
          put32(p, f.streamId);
          put32(p, f.status);
          return control(ControlType::RstStream, 0, p);
        } else if constexpr (std::is_same_v<T, SettingsFrame>) {
          std::string p;
          put32(p, static_cast<uint32_t>(f.settings.size()));
          for (const Setting& s : f.settings) {
            put32(p, (uint32_t{s.flags} << 24) | (s.id & 0xffffff));
            put32(p, s.value);
          }
          return control(ControlType::Settings, f.flags, p);
        } else if constexpr (std::is_same_v<T, PingFrame>) {
          std::string p;
          put32(p, f.id);
          return control(ControlType::Ping, 0, p);
        } else if constexpr (std::is_same_v<T, GoAwayFrame>) {
          if (auto s = checkId(f.lastGoodStreamId); !s) return s.error();
          std::string p;
          put32(p, f.lastGoodStreamId);
          put32(p, f.status);
          return control(ControlType::GoAway, 0, p);
        } else {
          if (auto s = checkId(f.streamId); !s) return s.error();
          std::string p;
          put32(p, f.streamId);
          put32(p, f.deltaWindowSize & 0x7fffffff);
          return control(ControlType::WindowUpdate, 0, p);
        }
      },
      frame);
}

}  // namespace strait::kube::spdy
