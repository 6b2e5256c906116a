#pragma once
// SPDY/3.1 framing (the draft-mbelshe-httpbis-spdy-00 "SPDY Protocol - Draft 3.1"), the
// transport of Kubernetes' port-forward, exec and attach before WebSockets: frames,
// name/value header blocks and their zlib compression with the SPDY/3 dictionary.
//
// A session is two byte streams, one per direction. Each direction has one FrameDecoder
// (the peer's frames) or one FrameEncoder (ours): header blocks of a direction form a single
// zlib stream, so the encoder and decoder keep state and must see every frame of their
// direction, in order. Neither is thread-safe; each belongs to one reader or one writer.
//
// Wire layout (all integers big-endian):
//   control frame: |1| version(15) | type(16) | flags(8) | length(24) | payload(length)
//   data frame:    |0| stream id(31)          | flags(8) | length(24) | payload(length)

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "kube/status.h"

namespace strait::kube::spdy {

// --- Specification constants ---------------------------------------------------------------

inline constexpr uint16_t kVersion = 3;
inline constexpr size_t kFrameHeaderSize = 8;
inline constexpr uint32_t kMaxFrameLength = 0xffffff;  // 24-bit length field
inline constexpr uint32_t kMaxStreamId = 0x7fffffff;

enum class ControlType : uint16_t {
  SynStream = 1,
  SynReply = 2,
  RstStream = 3,
  Settings = 4,
  Ping = 6,
  GoAway = 7,
  Headers = 8,
  WindowUpdate = 9,
};

// Flags of DATA, SYN_STREAM, SYN_REPLY and HEADERS frames.
inline constexpr uint8_t kFlagFin = 0x01;
// SYN_STREAM only.
inline constexpr uint8_t kFlagUnidirectional = 0x02;
// SETTINGS frame flag.
inline constexpr uint8_t kFlagClearSettings = 0x01;

// RST_STREAM status codes.
enum class RstStatus : uint32_t {
  ProtocolError = 1,
  InvalidStream = 2,
  RefusedStream = 3,
  UnsupportedVersion = 4,
  Cancel = 5,
  InternalError = 6,
  FlowControlError = 7,
  StreamInUse = 8,
  StreamAlreadyClosed = 9,
  FrameTooLarge = 11,
};

// GOAWAY status codes.
enum class GoAwayStatus : uint32_t { Ok = 0, ProtocolError = 1, InternalError = 2 };

// SETTINGS ids (only those a port-forward peer may send matter; others are carried as is).
inline constexpr uint32_t kSettingInitialWindowSize = 7;

// --- Implementation constants --------------------------------------------------------------

// A decompressed header block larger than this is refused (a compression bomb).
inline constexpr size_t kMaxHeaderBlockBytes = 256 * 1024;

// --- Frames ----------------------------------------------------------------------------------

// Name/value pairs of a header block, in wire order. Names are lower-case on the wire;
// a value holding several values separates them with NUL bytes.
using HeaderBlock = std::vector<std::pair<std::string, std::string>>;

// The value of header `name` ("" when absent; the first one if repeated).
std::string headerValue(const HeaderBlock& h, std::string_view name);

struct DataFrame {
  uint32_t streamId = 0;
  uint8_t flags = 0;  // kFlagFin
  std::string data;
};

struct SynStreamFrame {
  uint32_t streamId = 0;
  uint32_t associatedStreamId = 0;
  uint8_t priority = 0;  // 0 (highest) .. 7
  uint8_t slot = 0;
  uint8_t flags = 0;  // kFlagFin, kFlagUnidirectional
  HeaderBlock headers;
};

struct SynReplyFrame {
  uint32_t streamId = 0;
  uint8_t flags = 0;  // kFlagFin
  HeaderBlock headers;
};

struct RstStreamFrame {
  uint32_t streamId = 0;
  uint32_t status = static_cast<uint32_t>(RstStatus::Cancel);  // RstStatus, as received
};

struct Setting {
  uint8_t flags = 0;
  uint32_t id = 0;  // 24 bits
  uint32_t value = 0;
};

struct SettingsFrame {
  uint8_t flags = 0;  // kFlagClearSettings
  std::vector<Setting> settings;
};

struct PingFrame {
  uint32_t id = 0;
};

struct GoAwayFrame {
  uint32_t lastGoodStreamId = 0;
  uint32_t status = 0;  // GoAwayStatus, as received
};

struct HeadersFrame {
  uint32_t streamId = 0;
  uint8_t flags = 0;  // kFlagFin
  HeaderBlock headers;
};

struct WindowUpdateFrame {
  uint32_t streamId = 0;
  uint32_t deltaWindowSize = 0;  // 1 .. 2^31-1
};

using Frame = std::variant<DataFrame, SynStreamFrame, SynReplyFrame, RstStreamFrame,
                           SettingsFrame, PingFrame, GoAwayFrame, HeadersFrame,
                           WindowUpdateFrame>;

// A short description for logs, e.g. "SYN_STREAM stream=1 flags=0x0".
std::string describe(const Frame& f);

// --- Header-block compression --------------------------------------------------------------

// Serializes and parses an uncompressed name/value block (count, then length-prefixed names
// and values). parseHeaderBlock fails with Invalid on truncation, trailing bytes, an
// empty or upper-case name, or a repeated name.
std::string serializeHeaderBlock(const HeaderBlock& h);
Result<HeaderBlock> parseHeaderBlock(std::string_view block);

// --- Decoder and encoder ---------------------------------------------------------------------

// Reads the frames of one direction of a session from a byte stream fed in pieces.
class FrameDecoder {
 public:
  FrameDecoder();
  ~FrameDecoder();
  FrameDecoder(const FrameDecoder&) = delete;
  FrameDecoder& operator=(const FrameDecoder&) = delete;

  // Appends received bytes.
  void feed(std::string_view bytes);
  // The next complete frame; nullopt when more bytes are needed. Error (Invalid) on a
  // malformed frame — wrong version, unknown control type, a length that does not fit the
  // type, a bad header block, a zero stream id where one is required — with a message
  // naming the frame. After an error the session cannot go on (the compression state is
  // lost) and every later call fails too. Unknown control types are an error, as spdystream
  // treats them.
  Result<std::optional<Frame>> next();

 private:
  struct Inflater;
  std::string buf_;
  size_t pos_ = 0;
  std::optional<Error> failed_;
  std::unique_ptr<Inflater> inflater_;

  Result<Frame> parseControl(uint16_t type, uint8_t flags, std::string_view payload);
  Result<HeaderBlock> inflateBlock(std::string_view compressed);
};

// Writes the frames of one direction of a session.
class FrameEncoder {
 public:
  FrameEncoder();
  ~FrameEncoder();
  FrameEncoder(const FrameEncoder&) = delete;
  FrameEncoder& operator=(const FrameEncoder&) = delete;

  // The wire bytes of `f`. Error (Invalid) when a field does not fit (stream id over 31
  // bits, a payload over 2^24-1 bytes), Internal if zlib fails. Header blocks are
  // compressed with a sync flush, so each frame can be sent at once.
  Result<std::string> encode(const Frame& f);

 private:
  struct Deflater;
  std::unique_ptr<Deflater> deflater_;

  Result<std::string> deflateBlock(const HeaderBlock& h);
};

}  // namespace strait::kube::spdy
