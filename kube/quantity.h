#pragma once
// Quantity: an exact fixed-point number with Kubernetes resource.Quantity semantics
// ("100m", "1.5Gi", "12e6"). Never floating point. Value type; safe to copy and to share
// between threads once built (all methods are const except setFormat).
//
// Representation: mantissa * 10^exponent, with the mantissa kept free of trailing zeros and
// below 10^36 in magnitude, and the exponent >= -9 (Kubernetes keeps values down to nano,
// rounding finer non-zero values away from zero: "0.9n" -> "1n"). That covers every value a
// Kubernetes API server keeps in practice (2^63 bytes, 1n, "1e100"); a value needing more
// than 36 significant digits is rejected with an error instead of being rounded.

#include <compare>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kube/status.h"

namespace strait::kube {

class Quantity {
 public:
  // How the canonical string is written. Parsing remembers the family of the input.
  enum class Format {
    DecimalExponent,  // 12e6
    BinarySI,         // 12Mi (12 * 2^20)
    DecimalSI,        // 12M  (12 * 10^6)
  };

  // Zero, DecimalSI.
  Quantity() = default;

  // Parses every form Kubernetes accepts: "1", "1.5", ".5", "+1", "-2", decimal SI suffixes
  // n u m k M G T P E, binary suffixes Ki Mi Gi Ti Pi Ei, exponents "1e3" / "1E-3".
  // A non-zero value finer than 1n rounds away from zero to the nano unit; a BinarySI value
  // is capped at 2^63-1 in magnitude ("8Ei" -> 9223372036854775807), both as upstream.
  // Error (Code::Invalid) with a message naming the input and the problem. Never throws.
  static Result<Quantity> parse(std::string_view text);

  // value * 10^0 in the given format.
  static Quantity fromInt(int64_t value, Format format = Format::DecimalSI);
  // milli / 1000 in the given format ("1500" milli -> "1500m").
  static Quantity fromMilli(int64_t milli, Format format = Format::DecimalSI);

  // Canonical Kubernetes form (CanonicalizeBytes): no fractional digits, the largest suffix
  // that loses nothing, binary kept binary when the value is an integer of at least 1024 in
  // magnitude ("1.5Gi" -> "1536Mi", "1000m" -> "1", "0.5" -> "500m", "1e3" -> "1e3").
  std::string toString() const;
  // The canonical string as a JSON string value.
  nlohmann::json toJson() const;

  Format format() const { return format_; }
  void setFormat(Format f) { format_ = f; }

  bool isZero() const { return mantissa_ == 0; }
  // -1, 0 or 1.
  int sign() const { return mantissa_ < 0 ? -1 : (mantissa_ > 0 ? 1 : 0); }

  // ceil(q) rounded away from zero, as upstream Value(); saturates at INT64_MIN/INT64_MAX
  // where upstream silently overflows.
  int64_t value() const;
  // ceil(q * 1000) rounded away from zero, as upstream MilliValue(); saturates likewise.
  int64_t milliValue() const;

  // Exact sum / difference. The result keeps this quantity's format, or takes the other's
  // when this one is zero (upstream Add/Sub). Error (Code::Invalid) only when the exact
  // result needs more than 36 significant digits (e.g. "1e50" + "1n").
  Result<Quantity> add(const Quantity& other) const;
  Result<Quantity> sub(const Quantity& other) const;
  Quantity negated() const;

  // Numeric comparison; the format is ignored ("1e3" == "1k", "1.5Gi" == "1536Mi").
  std::strong_ordering operator<=>(const Quantity& other) const;
  bool operator==(const Quantity& other) const;

 private:
  __int128 mantissa_ = 0;
  int64_t exponent_ = 0;  // base 10, >= -9
  Format format_ = Format::DecimalSI;
};

const char* formatName(Quantity::Format f);

// Parses a ResourceList such as {"cpu":"100m","memory":"1Gi"}. Values may be strings or JSON
// numbers (as upstream accepts). Error (Code::Invalid) naming the offending key in the message
// and in Error::field; an error as well if json is not an object.
Result<std::map<std::string, Quantity>> parseResourceList(const nlohmann::json& json);
// The reverse: {"cpu":"100m",...} with canonical strings.
nlohmann::json formatResourceList(const std::map<std::string, Quantity>& list);

}  // namespace strait::kube
