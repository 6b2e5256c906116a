#include "kube/quantity.h"

#include <algorithm>
#include <limits>

namespace strait::kube {

namespace {

using i128 = __int128;

// Specification constants (apimachinery pkg/api/resource).
constexpr std::string_view kSplitRegex = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";
constexpr int64_t kNanoExponent = -9;
constexpr int64_t kMaxBinary = std::numeric_limits<int64_t>::max();  // BinarySI cap

// Implementation constants.
constexpr int kMaxDigits = 36;  // |mantissa| < 10^36, so mantissa * 100 fits in __int128
constexpr size_t kEchoLimit = 64;

i128 pow10(int n) {
  i128 r = 1;
  for (int i = 0; i < n; ++i) {
    r *= 10;
  }
  return r;
}

const i128 kMantissaLimit = pow10(kMaxDigits);
const i128 kAlignLimit = pow10(37);

i128 absValue(i128 v) { return v < 0 ? -v : v; }

int digitCount(i128 v) {
  v = absValue(v);
  int n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

std::string int128ToString(i128 v) {
  if (v == 0) {
    return "0";
  }
  bool neg = v < 0;
  std::string out;
  // Work on negative values so the most negative value cannot overflow.
  i128 n = neg ? v : -v;
  while (n != 0) {
    out.push_back(static_cast<char>('0' - static_cast<int>(n % 10)));
    n /= 10;
  }
  if (neg) {
    out.push_back('-');
  }
  std::reverse(out.begin(), out.end());
  return out;
}

// m * 10^k into *out when |result| < limit; false otherwise.
bool mulPow10(i128 m, int64_t k, i128 limit, i128* out) {
  if (m == 0) {
    *out = 0;
    return true;
  }
  if (k > 40) {
    return false;
  }
  i128 a = absValue(m);
  for (int64_t i = 0; i < k; ++i) {
    if (a >= limit / 10) {
      return false;
    }
    a *= 10;
  }
  if (a >= limit) {
    return false;
  }
  *out = m < 0 ? -a : a;
  return true;
}

// Divides m by 10^k rounding away from zero (k >= 0).
i128 divPow10AwayFromZero(i128 m, int64_t k) {
  if (m == 0 || k == 0) {
    return m;
  }
  if (k > 38) {
    return m < 0 ? -1 : 1;
  }
  i128 d = pow10(static_cast<int>(k));
  i128 q = m / d;
  if (m % d != 0) {
    q += m < 0 ? -1 : 1;
  }
  return q;
}

int64_t saturate(i128 v) {
  if (v > std::numeric_limits<int64_t>::max()) {
    return std::numeric_limits<int64_t>::max();
  }
  if (v < std::numeric_limits<int64_t>::min()) {
    return std::numeric_limits<int64_t>::min();
  }
  return static_cast<int64_t>(v);
}

std::string echo(std::string_view text) {
  std::string s(text.substr(0, kEchoLimit));
  if (text.size() > kEchoLimit) {
    s += "...";
  }
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Error parseError(std::string_view text, const std::string& what) {
  return makeError(Code::Invalid, "unable to parse quantity " + echo(text) + ": " + what);
}

Error formatError(std::string_view text) {
  return parseError(
      text, "quantities must match the regular expression '" + std::string(kSplitRegex) + "'");
}

// Suffix meaning: value = number * base^exponent.
struct SuffixInfo {
  int base = 10;
  int64_t exponent = 0;
  Quantity::Format format = Quantity::Format::DecimalSI;
};

bool interpretSuffix(std::string_view s, SuffixInfo* out) {
  struct Entry {
    std::string_view name;
    int base;
    int exponent;
  };
  static constexpr Entry kDecimal[] = {{"", 10, 0},   {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3},
                                       {"k", 10, 3},  {"M", 10, 6},  {"G", 10, 9},  {"T", 10, 12},
                                       {"P", 10, 15}, {"E", 10, 18}};
  static constexpr Entry kBinary[] = {{"Ki", 2, 10}, {"Mi", 2, 20}, {"Gi", 2, 30},
                                      {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60}};
  for (const auto& e : kDecimal) {
    if (e.name == s) {
      *out = {e.base, e.exponent, Quantity::Format::DecimalSI};
      return true;
    }
  }
  for (const auto& e : kBinary) {
    if (e.name == s) {
      *out = {e.base, e.exponent, Quantity::Format::BinarySI};
      return true;
    }
  }
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    std::string_view rest = s.substr(1);
    bool neg = false;
    if (rest[0] == '+' || rest[0] == '-') {
      neg = rest[0] == '-';
      rest.remove_prefix(1);
    }
    if (rest.empty() || rest.size() > 10) {
      return false;
    }
    int64_t v = 0;
    for (char c : rest) {
      if (c < '0' || c > '9') {
        return false;
      }
      v = v * 10 + (c - '0');
    }
    v = neg ? -v : v;
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
      return false;
    }
    *out = {10, v, Quantity::Format::DecimalExponent};
    return true;
  }
  return false;
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// Doubles a decimal digit string in place (most significant digit first).
void doubleDigits(std::string& digits) {
  int carry = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    int d = (*it - '0') * 2 + carry;
    *it = static_cast<char>('0' + d % 10);
    carry = d / 10;
  }
  if (carry != 0) {
    digits.insert(digits.begin(), static_cast<char>('0' + carry));
  }
}

// Adds one to a decimal digit string in place.
void incrementDigits(std::string& digits) {
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (*it == '9') {
      *it = '0';
    } else {
      ++*it;
      return;
    }
  }
  digits.insert(digits.begin(), '1');
}

// Moves trailing zeros of digits into *scale. Returns false when digits is all zeros.
bool stripTrailingZeros(std::string& digits, int64_t* scale) {
  size_t end = digits.find_last_not_of('0');
  if (end == std::string::npos) {
    digits.clear();
    return false;
  }
  *scale += static_cast<int64_t>(digits.size() - end - 1);
  digits.resize(end + 1);
  return true;
}

i128 digitsToInt(std::string_view digits) {
  i128 v = 0;
  for (char c : digits) {
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string_view decimalSuffix(int64_t exponent) {
  switch (exponent) {
    case -9:
      return "n";
    case -6:
      return "u";
    case -3:
      return "m";
    case 0:
      return "";
    case 3:
      return "k";
    case 6:
      return "M";
    case 9:
      return "G";
    case 12:
      return "T";
    case 15:
      return "P";
    case 18:
      return "E";
    default:
      return "?";
  }
}

constexpr std::string_view kBinarySuffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

}  // namespace

const char* formatName(Quantity::Format f) {
  switch (f) {
    case Quantity::Format::DecimalExponent:
      return "DecimalExponent";
    case Quantity::Format::BinarySI:
      return "BinarySI";
    case Quantity::Format::DecimalSI:
      return "DecimalSI";
  }
  return "DecimalSI";
}

Result<Quantity> Quantity::parse(std::string_view text) {
  if (text.empty()) {
    return formatError(text);
  }
  // Scanner: [+-] digits [. digits] [eEinumkKMGTP]* [+-] digits, as upstream's
  // parseQuantityString.
  size_t pos = 0;
  bool negative = false;
  if (text[0] == '+' || text[0] == '-') {
    negative = text[0] == '-';
    ++pos;
  }
  size_t numStart = pos;
  while (pos < text.size() && isDigit(text[pos])) {
    ++pos;
  }
  std::string_view num = text.substr(numStart, pos - numStart);
  std::string_view denom;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    size_t denomStart = pos;
    while (pos < text.size() && isDigit(text[pos])) {
      ++pos;
    }
    denom = text.substr(denomStart, pos - denomStart);
  }
  if (num.empty() && denom.empty()) {
    return parseError(text,
                      "no digits in the numeric part (quantities must match the regular "
                      "expression '" +
                          std::string(kSplitRegex) + "')");
  }
  size_t suffixStart = pos;
  while (pos < text.size() &&
         std::string_view("eEinumkKMGTP").find(text[pos]) != std::string_view::npos) {
    ++pos;
  }
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    ++pos;
  }
  while (pos < text.size() && isDigit(text[pos])) {
    ++pos;
  }
  if (pos != text.size()) {
    return formatError(text);
  }
  std::string_view suffix = text.substr(suffixStart);

  SuffixInfo info;
  if (!interpretSuffix(suffix, &info)) {
    return parseError(text, "unable to parse quantity's suffix " + echo(suffix) +
                                " (want one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, "
                                "Ei, or an exponent such as e3 or E-6)");
  }

  // value = digits * 10^scale
  std::string digits;
  digits.reserve(num.size() + denom.size());
  digits.append(num);
  digits.append(denom);
  int64_t scale = -static_cast<int64_t>(denom.size());
  if (info.base == 10) {
    scale += info.exponent;
  } else {
    for (int64_t i = 0; i < info.exponent; ++i) {
      doubleDigits(digits);
    }
  }
  size_t first = digits.find_first_not_of('0');
  digits.erase(0, first == std::string::npos ? digits.size() : first);

  Quantity q;
  q.format_ = info.format;
  if (!stripTrailingZeros(digits, &scale)) {
    return q;  // zero, in the format that was written
  }
  // Round a non-zero value finer than nano away from zero to the nano unit.
  if (scale < kNanoExponent) {
    int64_t drop = kNanoExponent - scale;
    if (drop >= static_cast<int64_t>(digits.size())) {
      digits = "1";
    } else {
      digits.resize(digits.size() - static_cast<size_t>(drop));
      incrementDigits(digits);  // the dropped digits end in a non-zero digit
    }
    scale = kNanoExponent;
    stripTrailingZeros(digits, &scale);
  }
  const int64_t magnitudeDigits = static_cast<int64_t>(digits.size()) + scale;
  if (info.format == Format::BinarySI) {
    bool overCap = magnitudeDigits > 19;
    if (!overCap) {
      // value * 10^9 has at most 28 digits.
      i128 nanos = digitsToInt(digits) * pow10(static_cast<int>(scale - kNanoExponent));
      overCap = nanos > static_cast<i128>(kMaxBinary) * pow10(9);
    }
    if (overCap) {
      q.mantissa_ = negative ? -static_cast<i128>(kMaxBinary) : kMaxBinary;
      q.exponent_ = 0;
      return q;
    }
  }
  if (digits.size() > static_cast<size_t>(kMaxDigits)) {
    return parseError(text, "more than " + std::to_string(kMaxDigits) +
                                " significant digits cannot be represented exactly");
  }
  i128 m = digitsToInt(digits);
  q.mantissa_ = negative ? -m : m;
  q.exponent_ = scale;
  if (q.format_ == Format::BinarySI && magnitudeDigits <= 0) {
    // 0 < |value| < 1: shown as DecimalSI to avoid rounding, as upstream.
    q.format_ = Format::DecimalSI;
  }
  return q;
}

namespace {

// Normalizes (mantissa, exponent): no trailing zeros, zero has exponent 0.
void normalize(i128* m, int64_t* e) {
  if (*m == 0) {
    *e = 0;
    return;
  }
  while (*m % 10 == 0) {
    *m /= 10;
    ++*e;
  }
}

}  // namespace

Quantity Quantity::fromInt(int64_t value, Format format) {
  Quantity q;
  q.mantissa_ = value;
  q.exponent_ = 0;
  q.format_ = format;
  normalize(&q.mantissa_, &q.exponent_);
  return q;
}

Quantity Quantity::fromMilli(int64_t milli, Format format) {
  Quantity q;
  q.mantissa_ = milli;
  q.exponent_ = -3;
  q.format_ = format;
  normalize(&q.mantissa_, &q.exponent_);
  return q;
}

std::string Quantity::toString() const {
  if (mantissa_ == 0) {
    return "0";
  }
  Format fmt = format_;
  if (fmt == Format::BinarySI) {
    i128 integer = 0;
    // Fractional values, values below 1024 in magnitude, and (a divergence from upstream,
    // which would need big integers) integers beyond __int128 are shown as DecimalSI.
    if (exponent_ < 0 || !mulPow10(mantissa_, exponent_, kAlignLimit, &integer) ||
        absValue(integer) < 1024) {
      fmt = Format::DecimalSI;
    } else {
      size_t times = 0;
      while (times + 1 < std::size(kBinarySuffixes) && integer % 1024 == 0) {
        integer /= 1024;
        ++times;
      }
      return int128ToString(integer) + std::string(kBinarySuffixes[times]);
    }
  }
  // Lower the exponent to a multiple of 3 (upstream AsCanonicalBytes).
  i128 amount = mantissa_;
  int64_t exponent = exponent_;
  int64_t r = ((exponent % 3) + 3) % 3;
  for (int64_t i = 0; i < r; ++i) {
    amount *= 10;
  }
  exponent -= r;
  std::string out = int128ToString(amount);
  if (fmt == Format::DecimalSI && exponent >= -9 && exponent <= 18) {
    out += decimalSuffix(exponent);
  } else if (exponent != 0) {
    // DecimalExponent, or DecimalSI beyond "E" (upstream falls back to the exponent form).
    out += "e" + std::to_string(exponent);
  }
  return out;
}

nlohmann::json Quantity::toJson() const { return toString(); }

int64_t Quantity::value() const {
  if (exponent_ >= 0) {
    i128 v = 0;
    if (!mulPow10(mantissa_, exponent_, kAlignLimit, &v)) {
      return mantissa_ < 0 ? std::numeric_limits<int64_t>::min()
                           : std::numeric_limits<int64_t>::max();
    }
    return saturate(v);
  }
  return saturate(divPow10AwayFromZero(mantissa_, -exponent_));
}

int64_t Quantity::milliValue() const {
  Quantity scaled = *this;
  scaled.exponent_ += 3;
  return scaled.value();
}

Result<Quantity> Quantity::add(const Quantity& other) const {
  Quantity out;
  out.format_ = isZero() ? other.format_ : format_;
  int64_t e = std::min(exponent_, other.exponent_);
  i128 a = 0;
  i128 b = 0;
  if (!mulPow10(mantissa_, exponent_ - e, kAlignLimit, &a) ||
      !mulPow10(other.mantissa_, other.exponent_ - e, kAlignLimit, &b)) {
    return makeError(Code::Invalid, "quantity " + toString() + " + " + other.toString() +
                                        " needs more than " + std::to_string(kMaxDigits) +
                                        " significant digits");
  }
  out.mantissa_ = a + b;
  out.exponent_ = e;
  normalize(&out.mantissa_, &out.exponent_);
  if (absValue(out.mantissa_) >= kMantissaLimit) {
    return makeError(Code::Invalid, "quantity " + toString() + " + " + other.toString() +
                                        " needs more than " + std::to_string(kMaxDigits) +
                                        " significant digits");
  }
  return out;
}

Result<Quantity> Quantity::sub(const Quantity& other) const { return add(other.negated()); }

Quantity Quantity::negated() const {
  Quantity q = *this;
  q.mantissa_ = -q.mantissa_;
  return q;
}

std::strong_ordering Quantity::operator<=>(const Quantity& other) const {
  int sa = sign();
  int sb = other.sign();
  if (sa != sb) {
    return sa <=> sb;
  }
  if (sa == 0) {
    return std::strong_ordering::equal;
  }
  // Same sign, both non-zero: compare magnitudes, then flip for negatives.
  int64_t orderA = digitCount(mantissa_) + exponent_;
  int64_t orderB = digitCount(other.mantissa_) + other.exponent_;
  std::strong_ordering magnitude = std::strong_ordering::equal;
  if (orderA != orderB) {
    magnitude = orderA <=> orderB;
  } else {
    // Same order of magnitude: the exponents differ by at most 35, so aligning fits.
    int64_t e = std::min(exponent_, other.exponent_);
    i128 a = absValue(mantissa_);
    i128 b = absValue(other.mantissa_);
    for (int64_t i = e; i < exponent_; ++i) {
      a *= 10;
    }
    for (int64_t i = e; i < other.exponent_; ++i) {
      b *= 10;
    }
    magnitude = a <=> b;
  }
  if (sa < 0) {
    return 0 <=> magnitude;
  }
  return magnitude;
}

bool Quantity::operator==(const Quantity& other) const {
  return mantissa_ == other.mantissa_ && exponent_ == other.exponent_;
}

Result<std::map<std::string, Quantity>> parseResourceList(const nlohmann::json& json) {
  std::map<std::string, Quantity> out;
  if (json.is_null()) {
    return out;
  }
  if (!json.is_object()) {
    return makeError(Code::Invalid,
                     std::string("resource list must be a JSON object, got ") + json.type_name());
  }
  for (const auto& [key, value] : json.items()) {
    std::string text;
    if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_number()) {
      text = value.dump();  // 1e+20 for large floats, which parse() accepts
    } else {
      return makeError(
          Code::Invalid,
          "resource " + key + ": quantity must be a string or a number, got " + value.type_name(),
          key);
    }
    // Upstream trims surrounding whitespace before parsing a JSON quantity.
    size_t b = text.find_first_not_of(" \t\r\n");
    size_t e = text.find_last_not_of(" \t\r\n");
    text = b == std::string::npos ? std::string() : text.substr(b, e - b + 1);
    auto q = Quantity::parse(text);
    if (!q.ok()) {
      return makeError(Code::Invalid, "resource " + key + ": " + q.error().message, key);
    }
    out.emplace(key, std::move(q).value());
  }
  return out;
}

nlohmann::json formatResourceList(const std::map<std::string, Quantity>& list) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, q] : list) {
    out[key] = q.toString();
  }
  return out;
}

}  // namespace strait::kube
