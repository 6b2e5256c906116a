#pragma once
// WireGuard wire formats and constants. Specification constants first (named as the
// whitepaper and wireguard-go name them), implementation constants after.

#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace strait::tunnel {

static_assert(std::endian::native == std::endian::little,
              "wire structs are read in place: little-endian hosts only");

// ---- Specification constants ----
inline constexpr char kConstruction[] = "Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s";
inline constexpr char kIdentifier[] = "WireGuard v1 zx2c4 Jason@zx2c4.com";
inline constexpr char kLabelMac1[] = "mac1----";
inline constexpr char kLabelCookie[] = "cookie--";

inline constexpr uint32_t kMessageInitiationType = 1;
inline constexpr uint32_t kMessageResponseType = 2;
inline constexpr uint32_t kMessageCookieReplyType = 3;
inline constexpr uint32_t kMessageTransportType = 4;

inline constexpr uint64_t kRekeyAfterMessages = 1ull << 60;
inline constexpr uint64_t kRejectAfterMessages = ~0ull - (1ull << 13);  // 2^64 - 2^13 - 1
inline constexpr auto kCookieRefreshTime = std::chrono::seconds(120);
inline constexpr auto kHandshakeInitationRate = std::chrono::milliseconds(20);

inline constexpr size_t kMessageTransportHeaderSize = 16;
inline constexpr size_t kMessageTransportMinSize = kMessageTransportHeaderSize + 16;
inline constexpr size_t kPaddingMultiple = 16;

struct MessageInitiation {
  uint32_t type;
  uint32_t sender;
  uint8_t ephemeral[32];
  uint8_t encryptedStatic[32 + 16];
  uint8_t encryptedTimestamp[12 + 16];
  uint8_t mac1[16];
  uint8_t mac2[16];
};
static_assert(sizeof(MessageInitiation) == 148);

struct MessageResponse {
  uint32_t type;
  uint32_t sender;
  uint32_t receiver;
  uint8_t ephemeral[32];
  uint8_t encryptedNothing[16];
  uint8_t mac1[16];
  uint8_t mac2[16];
};
static_assert(sizeof(MessageResponse) == 92);

struct MessageCookieReply {
  uint32_t type;
  uint32_t receiver;
  uint8_t nonce[24];
  uint8_t encryptedCookie[16 + 16];
};
static_assert(sizeof(MessageCookieReply) == 64);

struct MessageTransportHeader {
  uint32_t type;
  uint32_t receiver;
  uint64_t counter;
};
static_assert(sizeof(MessageTransportHeader) == kMessageTransportHeaderSize);

// Timers of the whitepaper, shortened in a test mode (TimerConfig::scaled).
struct TimerConfig {
  std::chrono::milliseconds rekeyAfterTime{120'000};
  std::chrono::milliseconds rejectAfterTime{180'000};
  std::chrono::milliseconds rekeyAttemptTime{90'000};
  std::chrono::milliseconds rekeyTimeout{5'000};
  std::chrono::milliseconds keepaliveTimeout{10'000};
  uint64_t rekeyAfterMessages = kRekeyAfterMessages;

  // Every duration divided by `factor` (>= 1), for tests that must see rekeys quickly.
  TimerConfig scaled(int factor) const {
    TimerConfig t = *this;
    t.rekeyAfterTime /= factor;
    t.rejectAfterTime /= factor;
    t.rekeyAttemptTime /= factor;
    t.rekeyTimeout /= factor;
    t.keepaliveTimeout /= factor;
    return t;
  }
};

// ---- Implementation constants ----
inline constexpr size_t kMaxStagedPackets = 128;  // queued per peer while handshaking
inline constexpr size_t kMaxSegmentSize = 65535;  // largest UDP datagram we handle
inline constexpr size_t kBatchSize = 64;          // recvmmsg/sendmmsg/TUN batch
inline constexpr int kDefaultMtu = 1420;
inline constexpr uint32_t kDefaultUnderLoadHandshakes = 64;  // per second, then cookies

}  // namespace strait::tunnel
