// RFC 3339 times as Kubernetes writes them, see time.h.
#include "kube/time.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace strait::kube {

namespace {

using nlohmann::json;

// Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's algorithm).
int64_t daysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void civilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2 ? 1 : 0);
}

bool isLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned daysInMonth(int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && isLeap(y) ? 29 : kDays[m - 1];
}

// `secs` since the epoch as metav1.Time, or as metav1.MicroTime with `micros` (0..999999).
std::string formatUnix(int64_t secs, int64_t micros, bool micro) {
  int64_t days = secs / 86400;
  int64_t sod = secs % 86400;
  if (sod < 0) {
    sod += 86400;
    days -= 1;
  }
  int64_t y = 0;
  unsigned m = 0;
  unsigned d = 0;
  civilFromDays(days, &y, &m, &d);
  char buf[64];
  if (micro) {
    std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%06lldZ",
                  static_cast<long long>(y), m, d, static_cast<long long>(sod / 3600),
                  static_cast<long long>(sod / 60 % 60), static_cast<long long>(sod % 60),
                  static_cast<long long>(micros));
  } else {
    std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02uT%02lld:%02lld:%02lldZ",
                  static_cast<long long>(y), m, d, static_cast<long long>(sod / 3600),
                  static_cast<long long>(sod / 60 % 60), static_cast<long long>(sod % 60));
  }
  return buf;
}

std::string formatTime(std::chrono::system_clock::time_point t, bool micro) {
  using namespace std::chrono;
  auto us = time_point_cast<microseconds>(t).time_since_epoch().count();
  // Floor to whole seconds, also before 1970.
  int64_t secs = us / 1000000;
  int64_t frac = us % 1000000;
  if (frac < 0) {
    frac += 1000000;
    secs -= 1;
  }
  return formatUnix(secs, frac, micro);
}

// Reads exactly n digits at *pos.
bool readDigits(std::string_view s, size_t* pos, size_t n, int64_t* out) {
  if (*pos + n > s.size()) {
    return false;
  }
  int64_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[*pos + i];
    if (c < '0' || c > '9') {
      return false;
    }
    v = v * 10 + (c - '0');
  }
  *pos += n;
  *out = v;
  return true;
}

bool expect(std::string_view s, size_t* pos, char a, char b = '\0') {
  if (*pos < s.size() && (s[*pos] == a || (b != '\0' && s[*pos] == b))) {
    ++*pos;
    return true;
  }
  return false;
}

}  // namespace

std::string rfc3339Now() { return rfc3339(std::chrono::system_clock::now()); }

std::string rfc3339(std::chrono::system_clock::time_point t) { return formatTime(t, false); }

std::string rfc3339Micro(std::chrono::system_clock::time_point t) { return formatTime(t, true); }

namespace {

// A parsed time: whole seconds since the epoch (floor) and the nanoseconds past them.
struct UnixTime {
  int64_t seconds = 0;
  int64_t nanos = 0;
};

Result<UnixTime> parseUnix(std::string_view text) {
  auto bad = [&](const std::string& what) -> Error {
    std::string shown(text.substr(0, 64));
    return makeError(Code::Invalid,
                     "invalid RFC 3339 time " +
                         json(shown).dump(-1, ' ', false, json::error_handler_t::replace) + ": " +
                         what + " (want e.g. \"2006-01-02T15:04:05Z\")");
  };
  size_t pos = 0;
  int64_t year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!readDigits(text, &pos, 4, &year) || !expect(text, &pos, '-') ||
      !readDigits(text, &pos, 2, &month) || !expect(text, &pos, '-') ||
      !readDigits(text, &pos, 2, &day)) {
    return bad("date must be YYYY-MM-DD");
  }
  if (!expect(text, &pos, 'T', 't')) {
    return bad("missing 'T' between date and time");
  }
  if (!readDigits(text, &pos, 2, &hour) || !expect(text, &pos, ':') ||
      !readDigits(text, &pos, 2, &minute) || !expect(text, &pos, ':') ||
      !readDigits(text, &pos, 2, &second)) {
    return bad("time must be HH:MM:SS");
  }
  if (month < 1 || month > 12) {
    return bad("month out of range");
  }
  if (day < 1 || day > daysInMonth(year, static_cast<unsigned>(month))) {
    return bad("day out of range");
  }
  if (hour > 23 || minute > 59 || second > 59) {
    return bad("hour, minute or second out of range");
  }
  int64_t nanos = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (pos - start < 9) {
        nanos = nanos * 10 + (text[pos] - '0');
      }
      ++pos;
    }
    size_t n = pos - start;
    if (n == 0) {
      return bad("no digits after '.'");
    }
    if (n > 9) {
      return bad("more than 9 fractional digits");
    }
    for (size_t i = n; i < 9; ++i) {
      nanos *= 10;
    }
  }
  int64_t offset = 0;
  if (expect(text, &pos, 'Z', 'z')) {
    offset = 0;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    int64_t oh = 0, om = 0;
    if (!readDigits(text, &pos, 2, &oh) || !expect(text, &pos, ':') ||
        !readDigits(text, &pos, 2, &om) || oh > 23 || om > 59) {
      return bad("time zone offset must be Z or +HH:MM / -HH:MM");
    }
    offset = sign * (oh * 3600 + om * 60);
  } else {
    return bad("missing time zone (Z or +HH:MM)");
  }
  if (pos != text.size()) {
    return bad("unexpected text after the time zone");
  }
  int64_t days = daysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset;
  return UnixTime{secs, nanos};
}

}  // namespace

Result<std::chrono::system_clock::time_point> parseRfc3339(std::string_view text) {
  Result<UnixTime> t = parseUnix(text);
  if (!t) {
    return t.error();
  }
  using namespace std::chrono;
  auto d = duration_cast<system_clock::duration>(seconds(t->seconds) + nanoseconds(t->nanos));
  return system_clock::time_point(d);
}

Result<int64_t> parseRfc3339Unix(std::string_view text) {
  Result<UnixTime> t = parseUnix(text);
  if (!t) {
    return t.error();
  }
  return t->seconds;
}

std::string rfc3339FromUnix(int64_t seconds) { return formatUnix(seconds, 0, false); }

}  // namespace strait::kube
