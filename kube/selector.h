#pragma once
// Label and field selectors with the syntax and semantics of apimachinery pkg/labels and
// pkg/fields. Immutable value types once parsed; safe to share between threads.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/status.h"

namespace strait::kube {

enum class SelectorOp {
  Equals,        // a=b
  DoubleEquals,  // a==b
  NotEquals,     // a!=b
  In,            // a in (x,y)
  NotIn,         // a notin (x,y)
  Exists,        // a
  DoesNotExist,  // !a
  GreaterThan,   // a>1 (integer values; label selectors only)
  LessThan,      // a<1
};

using LabelSet = std::map<std::string, std::string>;

// One ANDed term of a label selector. Values are sorted and unique.
struct LabelRequirement {
  std::string key;
  SelectorOp op = SelectorOp::Exists;
  std::vector<std::string> values;

  bool matches(const LabelSet& labels) const;
  // Upstream form: "a=b", "a in (x,y)", "!a", ...
  std::string toString() const;
  bool operator==(const LabelRequirement&) const = default;
};

class LabelSelector {
 public:
  // Matches everything.
  LabelSelector() = default;

  // Parses "a=b,c!=d,e in (x,y),f notin (z),g,!h". Whitespace between tokens is ignored; keys
  // and values are validated like upstream. The empty string gives a selector matching
  // everything. Error (Code::BadRequest) "unable to parse requirement: ..." or
  // "found '...', expected: ..." saying what is wrong. Never throws.
  static Result<LabelSelector> parse(std::string_view text);

  // From a metav1.LabelSelector object {"matchLabels":{...},"matchExpressions":[...]}
  // (operators In, NotIn, Exists, DoesNotExist). As upstream LabelSelectorAsSelector: JSON
  // null gives a selector matching nothing; {} gives one matching everything.
  // Error (Code::Invalid) naming the bad field.
  static Result<LabelSelector> fromJson(const nlohmann::json& metav1LabelSelector);

  // key=value for every entry (no validation, like upstream SelectorFromSet).
  static LabelSelector fromSet(const LabelSet& set);
  // A selector that matches no object.
  static LabelSelector nothing();

  bool matches(const LabelSet& labels) const;
  // True when it does not restrict the selection (false for nothing()).
  bool empty() const { return !nothing_ && requirements_.empty(); }
  bool matchesNothing() const { return nothing_; }
  // Requirements sorted by key, joined by ",". "" for empty() and for nothing().
  std::string toString() const;
  const std::vector<LabelRequirement>& requirements() const { return requirements_; }
  // The value a selector demands for label (a=b, a==b, a in (b)), if any.
  std::optional<std::string> requiresExactMatch(std::string_view label) const;

 private:
  std::vector<LabelRequirement> requirements_;
  bool nothing_ = false;
};

// One ANDed term of a field selector: op is Equals or NotEquals ("==" is read as Equals).
struct FieldRequirement {
  std::string field;
  SelectorOp op = SelectorOp::Equals;
  std::string value;  // unescaped
  bool operator==(const FieldRequirement&) const = default;
};

class FieldSelector {
 public:
  // Matches everything.
  FieldSelector() = default;

  // Parses "metadata.name=foo,status.phase!=Running". Values may escape '\,' '\=' '\\'
  // (upstream EscapeValue). Empty terms are skipped. Error (Code::BadRequest) such as
  // "invalid selector: '...'; can't understand '...'" or
  // "invalid field selector: invalid escape sequence: \x". Never throws.
  static Result<FieldSelector> parse(std::string_view text);

  // A missing field compares as "" (upstream Fields.Get).
  bool matches(const std::map<std::string, std::string>& fields) const;
  bool empty() const { return requirements_.empty(); }
  // Terms in parse order (sorted as upstream), values escaped, joined by ",".
  std::string toString() const;
  // For servers to reject unknown fields.
  const std::vector<FieldRequirement>& requirements() const { return requirements_; }
  std::optional<std::string> requiresExactMatch(std::string_view field) const;

 private:
  std::vector<FieldRequirement> requirements_;
};

// Field selector value escaping (upstream fields.EscapeValue / UnescapeValue).
std::string escapeFieldValue(std::string_view value);
Result<std::string> unescapeFieldValue(std::string_view value);

}  // namespace strait::kube
