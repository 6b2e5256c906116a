#include "kube/selector.h"

#include <algorithm>
#include <charconv>

#include "kube/validation.h"

namespace strait::kube {

namespace {

// ---------------------------------------------------------------------------------------------
// Label selector lexer and parser, following apimachinery pkg/labels/selector.go: a lexer turns
// the string into tokens, and a recursive-descent parser reads requirements from them. "in" and
// "notin" are keywords only where an operator is expected; elsewhere they are identifiers.

enum class Tok {
  EndOfString,
  ClosedPar,
  Comma,
  DoesNotExist,  // !
  DoubleEquals,
  Equals,
  GreaterThan,
  Identifier,
  In,
  LessThan,
  NotEquals,
  NotIn,
  OpenPar,
};

struct Item {
  Tok tok;
  std::string literal;
};

bool isWhitespace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool isSpecialSymbol(char c) {
  switch (c) {
    case '=':
    case '!':
    case '(':
    case ')':
    case ',':
    case '>':
    case '<':
      return true;
    default:
      return false;
  }
}

std::vector<Item> lex(std::string_view s) {
  std::vector<Item> items;
  size_t pos = 0;
  while (true) {
    while (pos < s.size() && isWhitespace(s[pos])) {
      ++pos;
    }
    if (pos >= s.size()) {
      items.push_back({Tok::EndOfString, ""});
      return items;
    }
    char c = s[pos];
    if (isSpecialSymbol(c)) {
      // Longest match: "==" and "!=" are the only two-character operators.
      if (pos + 1 < s.size() && s[pos + 1] == '=' && (c == '=' || c == '!')) {
        items.push_back(
            {c == '=' ? Tok::DoubleEquals : Tok::NotEquals, std::string(s.substr(pos, 2))});
        pos += 2;
        continue;
      }
      Tok t = Tok::Equals;
      switch (c) {
        case '=':
          t = Tok::Equals;
          break;
        case '!':
          t = Tok::DoesNotExist;
          break;
        case '(':
          t = Tok::OpenPar;
          break;
        case ')':
          t = Tok::ClosedPar;
          break;
        case ',':
          t = Tok::Comma;
          break;
        case '>':
          t = Tok::GreaterThan;
          break;
        case '<':
          t = Tok::LessThan;
          break;
        default:
          break;
      }
      items.push_back({t, std::string(1, c)});
      ++pos;
      continue;
    }
    size_t start = pos;
    while (pos < s.size() && !isSpecialSymbol(s[pos]) && !isWhitespace(s[pos])) {
      ++pos;
    }
    std::string lit(s.substr(start, pos - start));
    Tok t = Tok::Identifier;
    if (lit == "in") {
      t = Tok::In;
    } else if (lit == "notin") {
      t = Tok::NotIn;
    }
    items.push_back({t, std::move(lit)});
  }
}

enum class Context { KeyAndOperator, Values };

std::string joinErrors(const std::vector<std::string>& errs) {
  std::string out;
  for (size_t i = 0; i < errs.size(); ++i) {
    if (i > 0) {
      out += "; ";
    }
    out += errs[i];
  }
  return out;
}

std::string quote(std::string_view s) {
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool parseInt64(std::string_view s, int64_t* out) {
  if (s.empty()) {
    return false;
  }
  std::string_view digits = s;
  if (digits[0] == '+') {
    digits.remove_prefix(1);  // Go's ParseInt accepts a leading '+'
    if (digits.empty() || digits[0] == '-') {
      return false;
    }
  }
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *out);
  return ec == std::errc() && ptr == digits.data() + digits.size();
}

// Upstream NewRequirement's checks. Returns "" when the requirement is valid.
std::string checkRequirement(const LabelRequirement& r) {
  std::vector<std::string> errs;
  if (auto keyErrs = validateLabelKey(r.key); !keyErrs.empty()) {
    errs.push_back("key: Invalid value: " + quote(r.key) + ": " + joinErrors(keyErrs));
  }
  switch (r.op) {
    case SelectorOp::In:
    case SelectorOp::NotIn:
      if (r.values.empty()) {
        errs.push_back(
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't "
            "be empty");
      }
      break;
    case SelectorOp::Equals:
    case SelectorOp::DoubleEquals:
    case SelectorOp::NotEquals:
      if (r.values.size() != 1) {
        errs.push_back(
            "values: Invalid value: exact-match compatibility requires one single "
            "value");
      }
      break;
    case SelectorOp::Exists:
    case SelectorOp::DoesNotExist:
      if (!r.values.empty()) {
        errs.push_back(
            "values: Invalid value: values set must be empty for exists and does not "
            "exist");
      }
      break;
    case SelectorOp::GreaterThan:
    case SelectorOp::LessThan:
      if (r.values.size() != 1) {
        errs.push_back(
            "values: Invalid value: for 'Gt', 'Lt' operators, exactly one value is "
            "required");
      }
      for (size_t i = 0; i < r.values.size(); ++i) {
        int64_t ignored = 0;
        if (!parseInt64(r.values[i], &ignored)) {
          errs.push_back("values[" + std::to_string(i) + "]: Invalid value: " + quote(r.values[i]) +
                         ": for 'Gt', 'Lt' operators, the value must be an integer");
        }
      }
      break;
  }
  for (size_t i = 0; i < r.values.size(); ++i) {
    if (auto valErrs = validateLabelValue(r.values[i]); !valErrs.empty()) {
      errs.push_back("values[" + std::to_string(i) + "][" + r.key +
                     "]: Invalid value: " + quote(r.values[i]) + ": " + joinErrors(valErrs));
    }
  }
  if (errs.empty()) {
    return "";
  }
  if (errs.size() == 1) {
    return errs[0];
  }
  std::string out = "[";
  for (size_t i = 0; i < errs.size(); ++i) {
    out += (i > 0 ? ", " : "") + errs[i];
  }
  return out + "]";
}

void sortUnique(std::vector<std::string>* values) {
  std::sort(values->begin(), values->end());
  values->erase(std::unique(values->begin(), values->end()), values->end());
}

class Parser {
 public:
  explicit Parser(std::string_view text) : items_(lex(text)) {}

  Result<std::vector<LabelRequirement>> parse() {
    std::vector<LabelRequirement> reqs;
    while (true) {
      auto [tok, lit] = lookahead(Context::Values);
      switch (tok) {
        case Tok::Identifier:
        case Tok::DoesNotExist: {
          LabelRequirement r;
          std::string err = parseRequirement(&r);
          if (!err.empty()) {
            return fail("unable to parse requirement: " + err);
          }
          reqs.push_back(std::move(r));
          auto [t, l] = consume(Context::Values);
          if (t == Tok::EndOfString) {
            return reqs;
          }
          if (t == Tok::Comma) {
            auto [t2, l2] = lookahead(Context::Values);
            if (t2 != Tok::Identifier && t2 != Tok::DoesNotExist) {
              return fail("found '" + l2 + "', expected: identifier after ','");
            }
            break;
          }
          return fail("found '" + l + "', expected: ',' or 'end of string'");
        }
        case Tok::EndOfString:
          return reqs;
        default:
          return fail("found '" + lit + "', expected: !, identifier, or 'end of string'");
      }
    }
  }

 private:
  static Error fail(std::string msg) { return makeError(Code::BadRequest, std::move(msg)); }

  static Tok inContext(Tok t, Context c) {
    if (c == Context::Values && (t == Tok::In || t == Tok::NotIn)) {
      return Tok::Identifier;
    }
    return t;
  }

  std::pair<Tok, std::string> lookahead(Context c) const {
    const Item& it = items_[std::min(pos_, items_.size() - 1)];
    return {inContext(it.tok, c), it.literal};
  }

  std::pair<Tok, std::string> consume(Context c) {
    const Item& it = items_[std::min(pos_, items_.size() - 1)];
    if (pos_ < items_.size() - 1) {
      ++pos_;  // the end-of-string token is never passed
    }
    return {inContext(it.tok, c), it.literal};
  }

  // Returns "" on success, otherwise the reason.
  std::string parseRequirement(LabelRequirement* r) {
    // Key, and the unary operator if there is one.
    bool notExists = false;
    auto [tok, lit] = consume(Context::Values);
    if (tok == Tok::DoesNotExist) {
      notExists = true;
      std::tie(tok, lit) = consume(Context::Values);
    }
    if (tok != Tok::Identifier) {
      return "found '" + lit + "', expected: identifier";
    }
    if (auto errs = validateLabelKey(lit); !errs.empty()) {
      return "Invalid value: " + quote(lit) + ": " + joinErrors(errs);
    }
    r->key = lit;
    auto [next, nextLit] = lookahead(Context::Values);
    if (notExists) {
      r->op = SelectorOp::DoesNotExist;
      return checkRequirement(*r);
    }
    if (next == Tok::EndOfString || next == Tok::Comma) {
      r->op = SelectorOp::Exists;
      return checkRequirement(*r);
    }
    // Binary operator.
    auto [opTok, opLit] = consume(Context::KeyAndOperator);
    switch (opTok) {
      case Tok::In:
        r->op = SelectorOp::In;
        break;
      case Tok::NotIn:
        r->op = SelectorOp::NotIn;
        break;
      case Tok::Equals:
        r->op = SelectorOp::Equals;
        break;
      case Tok::DoubleEquals:
        r->op = SelectorOp::DoubleEquals;
        break;
      case Tok::NotEquals:
        r->op = SelectorOp::NotEquals;
        break;
      case Tok::GreaterThan:
        r->op = SelectorOp::GreaterThan;
        break;
      case Tok::LessThan:
        r->op = SelectorOp::LessThan;
        break;
      default:
        return "found '" + opLit + "', expected: in, notin, =, ==, !=, gt, lt";
    }
    std::string err = (r->op == SelectorOp::In || r->op == SelectorOp::NotIn)
                          ? parseValues(&r->values)
                          : parseExactValue(&r->values);
    if (!err.empty()) {
      return err;
    }
    sortUnique(&r->values);
    return checkRequirement(*r);
  }

  // "(" values ")"; "()" is the set holding "".
  std::string parseValues(std::vector<std::string>* values) {
    auto [tok, lit] = consume(Context::Values);
    if (tok != Tok::OpenPar) {
      return "found '" + lit + "' expected: '('";
    }
    std::tie(tok, lit) = lookahead(Context::Values);
    switch (tok) {
      case Tok::Identifier:
      case Tok::Comma: {
        std::string err = parseIdentifiersList(values);
        if (!err.empty()) {
          return err;
        }
        auto [closeTok, closeLit] = consume(Context::Values);
        if (closeTok != Tok::ClosedPar) {
          return "found '" + closeLit + "', expected: ')'";
        }
        return "";
      }
      case Tok::ClosedPar:
        consume(Context::Values);
        values->push_back("");
        return "";
      default:
        return "found '" + lit + "', expected: ',', ')' or identifier";
    }
  }

  // A possibly empty list of possibly empty identifiers separated by commas.
  std::string parseIdentifiersList(std::vector<std::string>* values) {
    while (true) {
      auto [tok, lit] = consume(Context::Values);
      if (tok == Tok::Identifier) {
        values->push_back(lit);
        auto [t2, l2] = lookahead(Context::Values);
        if (t2 == Tok::Comma) {
          continue;
        }
        if (t2 == Tok::ClosedPar) {
          return "";
        }
        return "found '" + l2 + "', expected: ',' or ')'";
      }
      if (tok == Tok::Comma) {
        if (values->empty()) {
          values->push_back("");  // "(,"
        }
        auto [t2, l2] = lookahead(Context::Values);
        if (t2 == Tok::ClosedPar) {
          values->push_back("");  // ",)"
          return "";
        }
        if (t2 == Tok::Comma) {
          values->push_back("");  // ",,"
        }
        continue;
      }
      return "found '" + lit + "', expected: ',', or identifier";
    }
  }

  std::string parseExactValue(std::vector<std::string>* values) {
    auto [tok, lit] = lookahead(Context::Values);
    if (tok == Tok::EndOfString || tok == Tok::Comma) {
      values->push_back("");
      return "";
    }
    std::tie(tok, lit) = consume(Context::Values);
    if (tok == Tok::Identifier) {
      values->push_back(lit);
      return "";
    }
    return "found '" + lit + "', expected: identifier";
  }

  std::vector<Item> items_;
  size_t pos_ = 0;
};

bool hasValue(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

void sortByKey(std::vector<LabelRequirement>* reqs) {
  std::stable_sort(
      reqs->begin(), reqs->end(),
      [](const LabelRequirement& a, const LabelRequirement& b) { return a.key < b.key; });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// LabelRequirement / LabelSelector

bool LabelRequirement::matches(const LabelSet& labels) const {
  auto it = labels.find(key);
  switch (op) {
    case SelectorOp::In:
    case SelectorOp::Equals:
    case SelectorOp::DoubleEquals:
      return it != labels.end() && hasValue(values, it->second);
    case SelectorOp::NotIn:
    case SelectorOp::NotEquals:
      return it == labels.end() || !hasValue(values, it->second);
    case SelectorOp::Exists:
      return it != labels.end();
    case SelectorOp::DoesNotExist:
      return it == labels.end();
    case SelectorOp::GreaterThan:
    case SelectorOp::LessThan: {
      int64_t have = 0;
      int64_t want = 0;
      if (it == labels.end() || values.size() != 1 || !parseInt64(it->second, &have) ||
          !parseInt64(values[0], &want)) {
        return false;
      }
      return op == SelectorOp::GreaterThan ? have > want : have < want;
    }
  }
  return false;
}

std::string LabelRequirement::toString() const {
  std::string out;
  if (op == SelectorOp::DoesNotExist) {
    out += "!";
  }
  out += key;
  switch (op) {
    case SelectorOp::Equals:
      out += "=";
      break;
    case SelectorOp::DoubleEquals:
      out += "==";
      break;
    case SelectorOp::NotEquals:
      out += "!=";
      break;
    case SelectorOp::In:
      out += " in ";
      break;
    case SelectorOp::NotIn:
      out += " notin ";
      break;
    case SelectorOp::GreaterThan:
      out += ">";
      break;
    case SelectorOp::LessThan:
      out += "<";
      break;
    case SelectorOp::Exists:
    case SelectorOp::DoesNotExist:
      return out;
  }
  bool set = op == SelectorOp::In || op == SelectorOp::NotIn;
  if (set) {
    out += "(";
  }
  std::vector<std::string> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    out += (i > 0 ? "," : "") + sorted[i];
  }
  if (set) {
    out += ")";
  }
  return out;
}

Result<LabelSelector> LabelSelector::parse(std::string_view text) {
  Parser parser(text);
  auto reqs = parser.parse();
  if (!reqs.ok()) {
    return reqs.error();
  }
  LabelSelector s;
  s.requirements_ = std::move(reqs).value();
  sortByKey(&s.requirements_);
  return s;
}

Result<LabelSelector> LabelSelector::fromJson(const nlohmann::json& j) {
  if (j.is_null()) {
    return nothing();
  }
  if (!j.is_object()) {
    return makeError(Code::Invalid,
                     std::string("label selector must be an object, got ") + j.type_name());
  }
  LabelSelector s;
  if (auto ml = j.find("matchLabels"); ml != j.end() && !ml->is_null()) {
    if (!ml->is_object()) {
      return makeError(Code::Invalid, "matchLabels must be an object of strings", "matchLabels");
    }
    for (const auto& [k, v] : ml->items()) {
      std::string field = "matchLabels[" + k + "]";
      if (!v.is_string()) {
        return makeError(Code::Invalid, field + ": value must be a string", field);
      }
      LabelRequirement r{k, SelectorOp::Equals, {v.get<std::string>()}};
      if (std::string err = checkRequirement(r); !err.empty()) {
        return makeError(Code::Invalid, field + ": " + err, field);
      }
      s.requirements_.push_back(std::move(r));
    }
  }
  if (auto me = j.find("matchExpressions"); me != j.end() && !me->is_null()) {
    if (!me->is_array()) {
      return makeError(Code::Invalid, "matchExpressions must be an array", "matchExpressions");
    }
    for (size_t i = 0; i < me->size(); ++i) {
      const auto& expr = (*me)[i];
      std::string field = "matchExpressions[" + std::to_string(i) + "]";
      if (!expr.is_object()) {
        return makeError(Code::Invalid, field + " must be an object", field);
      }
      LabelRequirement r;
      auto key = expr.find("key");
      if (key == expr.end() || !key->is_string()) {
        return makeError(Code::Invalid, field + ".key: Required value", field + ".key");
      }
      r.key = key->get<std::string>();
      auto op = expr.find("operator");
      std::string opName = op != expr.end() && op->is_string() ? op->get<std::string>() : "";
      if (opName == "In") {
        r.op = SelectorOp::In;
      } else if (opName == "NotIn") {
        r.op = SelectorOp::NotIn;
      } else if (opName == "Exists") {
        r.op = SelectorOp::Exists;
      } else if (opName == "DoesNotExist") {
        r.op = SelectorOp::DoesNotExist;
      } else {
        return makeError(
            Code::Invalid,
            field + ".operator: " + quote(opName) + " is not a valid label selector operator",
            field + ".operator");
      }
      if (auto vals = expr.find("values"); vals != expr.end() && !vals->is_null()) {
        if (!vals->is_array()) {
          return makeError(Code::Invalid, field + ".values must be an array of strings",
                           field + ".values");
        }
        for (const auto& v : *vals) {
          if (!v.is_string()) {
            return makeError(Code::Invalid, field + ".values must be an array of strings",
                             field + ".values");
          }
          r.values.push_back(v.get<std::string>());
        }
      }
      sortUnique(&r.values);
      if (std::string err = checkRequirement(r); !err.empty()) {
        return makeError(Code::Invalid, field + ": " + err, field);
      }
      s.requirements_.push_back(std::move(r));
    }
  }
  sortByKey(&s.requirements_);
  return s;
}

LabelSelector LabelSelector::fromSet(const LabelSet& set) {
  LabelSelector s;
  for (const auto& [k, v] : set) {
    s.requirements_.push_back({k, SelectorOp::Equals, {v}});
  }
  return s;  // std::map iterates in key order
}

LabelSelector LabelSelector::nothing() {
  LabelSelector s;
  s.nothing_ = true;
  return s;
}

bool LabelSelector::matches(const LabelSet& labels) const {
  if (nothing_) {
    return false;
  }
  for (const auto& r : requirements_) {
    if (!r.matches(labels)) {
      return false;
    }
  }
  return true;
}

std::string LabelSelector::toString() const {
  if (nothing_) {
    return "";
  }
  std::string out;
  for (size_t i = 0; i < requirements_.size(); ++i) {
    out += (i > 0 ? "," : "") + requirements_[i].toString();
  }
  return out;
}

std::optional<std::string> LabelSelector::requiresExactMatch(std::string_view label) const {
  for (const auto& r : requirements_) {
    if (r.key != label) {
      continue;
    }
    bool exact =
        r.op == SelectorOp::Equals || r.op == SelectorOp::DoubleEquals || r.op == SelectorOp::In;
    if (exact && r.values.size() == 1) {
      return r.values[0];
    }
    return std::nullopt;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Field selectors (apimachinery pkg/fields/selector.go).

std::string escapeFieldValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == ',' || c == '=') {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  return out;
}

Result<std::string> unescapeFieldValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  bool inSlash = false;
  for (char c : value) {
    if (inSlash) {
      if (c != '\\' && c != ',' && c != '=') {
        return makeError(Code::BadRequest,
                         "invalid field selector: invalid escape sequence: \\" + std::string(1, c));
      }
      out.push_back(c);
      inSlash = false;
      continue;
    }
    if (c == '\\') {
      inSlash = true;
    } else if (c == ',' || c == '=') {
      return makeError(Code::BadRequest, "invalid field selector: unescaped character in value: " +
                                             std::string(1, c));
    } else {
      out.push_back(c);
    }
  }
  if (inSlash) {
    return makeError(Code::BadRequest, "invalid field selector: invalid escape sequence: \\");
  }
  return out;
}

Result<FieldSelector> FieldSelector::parse(std::string_view text) {
  // Split on commas that are not escaped.
  std::vector<std::string> parts;
  if (!text.empty()) {
    size_t start = 0;
    bool inSlash = false;
    for (size_t i = 0; i < text.size(); ++i) {
      if (inSlash) {
        inSlash = false;
      } else if (text[i] == '\\') {
        inSlash = true;
      } else if (text[i] == ',') {
        parts.emplace_back(text.substr(start, i - start));
        start = i + 1;
      }
    }
    parts.emplace_back(text.substr(start));
  }
  std::sort(parts.begin(), parts.end());

  FieldSelector s;
  for (const auto& part : parts) {
    if (part.empty()) {
      continue;
    }
    // The first position holding an operator, trying "!=", "==", "=" there in that order.
    static constexpr std::string_view kOps[] = {"!=", "==", "="};
    bool found = false;
    for (size_t i = 0; i < part.size() && !found; ++i) {
      std::string_view rest = std::string_view(part).substr(i);
      for (std::string_view op : kOps) {
        if (rest.substr(0, op.size()) == op) {
          auto value = unescapeFieldValue(rest.substr(op.size()));
          if (!value.ok()) {
            return value.error();
          }
          s.requirements_.push_back({part.substr(0, i),
                                     op == "!=" ? SelectorOp::NotEquals : SelectorOp::Equals,
                                     std::move(value).value()});
          found = true;
          break;
        }
      }
    }
    if (!found) {
      return makeError(Code::BadRequest, "invalid selector: '" + std::string(text) +
                                             "'; can't understand '" + part + "'");
    }
  }
  return s;
}

bool FieldSelector::matches(const std::map<std::string, std::string>& fields) const {
  for (const auto& r : requirements_) {
    auto it = fields.find(r.field);
    const std::string& have = it == fields.end() ? std::string() : it->second;
    bool equal = have == r.value;
    if (equal != (r.op == SelectorOp::Equals)) {
      return false;
    }
  }
  return true;
}

std::string FieldSelector::toString() const {
  std::string out;
  for (size_t i = 0; i < requirements_.size(); ++i) {
    const auto& r = requirements_[i];
    out += (i > 0 ? "," : "") + r.field + (r.op == SelectorOp::NotEquals ? "!=" : "=") +
           escapeFieldValue(r.value);
  }
  return out;
}

std::optional<std::string> FieldSelector::requiresExactMatch(std::string_view field) const {
  for (const auto& r : requirements_) {
    if (r.field == field && r.op == SelectorOp::Equals) {
      return r.value;
    }
  }
  return std::nullopt;
}

}  // namespace strait::kube
