#pragma once
// Kubernetes' time formats: metav1.Time ("2024-05-01T12:00:00Z", whole seconds, UTC) and
// metav1.MicroTime ("2024-05-01T12:00:00.123456Z"), written and parsed as RFC 3339.
// Pure and thread-safe; nothing here throws.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "kube/status.h"

namespace strait::kube {

// metav1.Time of now / of `t`, and metav1.MicroTime of `t`. Times are truncated, not rounded.
std::string rfc3339Now();
std::string rfc3339(std::chrono::system_clock::time_point t);
std::string rfc3339Micro(std::chrono::system_clock::time_point t);
// metav1.Time of `seconds` since the epoch; any year from 0001 to 9999, so also Go's zero
// time (-62135596800 is "0001-01-01T00:00:00Z"), which a system_clock time cannot hold.
std::string rfc3339FromUnix(int64_t seconds);

// Parses "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)" (up to 9 fraction digits;
// 't' and 'z' accepted too). Error (Code::Invalid) saying what is wrong.
Result<std::chrono::system_clock::time_point> parseRfc3339(std::string_view text);
// The same, as whole seconds since the epoch (the fraction dropped); any year from 0000 to
// 9999.
Result<int64_t> parseRfc3339Unix(std::string_view text);

}  // namespace strait::kube
