// The JSONPath subset of CRD printer columns, see jsonpath.h.
#include "minicluster/jsonpath.h"

#include <cctype>
#include <string>

namespace strait::minicluster {
namespace {

using json = nlohmann::json;

// Evaluates `expr` (".a.b", "['k.x']", "[0]", "[*]", "[?(@.type==\"Ready\")]") against
// `root`; missing keys yield no result, as with AllowMissingKeys(true). Returns nullopt if
// the expression is outside the subset.
class JsonPath {
 public:
  static std::optional<std::vector<const json*>> eval(std::string_view expr, const json& root) {
    // CRD columns are written without braces; tolerate "{.a.b}".
    if (expr.size() >= 2 && expr.front() == '{' && expr.back() == '}') {
      expr = expr.substr(1, expr.size() - 2);
    }
    if (!expr.empty() && expr.front() == '$') expr.remove_prefix(1);
    JsonPath p(expr);
    std::vector<const json*> cur = {&root};
    if (!p.evalSteps(cur)) return std::nullopt;
    return cur;
  }

 private:
  explicit JsonPath(std::string_view s) : s_(s) {}

  bool evalSteps(std::vector<const json*>& cur) {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '.') {
        ++pos_;
        if (pos_ < s_.size() && s_[pos_] == '.') return false;  // recursive descent: unsupported
        if (pos_ < s_.size() && s_[pos_] == '*') {
          ++pos_;
          cur = children(cur);
          continue;
        }
        size_t start = pos_;
        while (pos_ < s_.size() && s_[pos_] != '.' && s_[pos_] != '[') ++pos_;
        std::string key(s_.substr(start, pos_ - start));
        if (key.empty()) continue;  // "." alone is the current node
        cur = field(cur, key);
      } else if (c == '[') {
        ++pos_;
        if (!evalBracket(cur)) return false;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else {
        return false;
      }
    }
    return true;
  }

  static std::vector<const json*> field(const std::vector<const json*>& in,
                                        const std::string& key) {
    std::vector<const json*> out;
    for (const json* n : in) {
      if (n->is_object()) {
        auto it = n->find(key);
        if (it != n->end()) out.push_back(&*it);
      }
    }
    return out;
  }

  static std::vector<const json*> children(const std::vector<const json*>& in) {
    std::vector<const json*> out;
    for (const json* n : in) {
      if (n->is_array() || n->is_object()) {
        for (const json& c : *n) out.push_back(&c);
      }
    }
    return out;
  }

  std::optional<std::string> quoted() {
    char q = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out += s_[pos_++];
    }
    if (pos_ >= s_.size()) return std::nullopt;
    ++pos_;
    return out;
  }

  bool expect(char c) {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  bool evalBracket(std::vector<const json*>& cur) {
    if (pos_ >= s_.size()) return false;
    char c = s_[pos_];
    if (c == '*') {
      ++pos_;
      cur = children(cur);
      return expect(']');
    }
    if (c == '\'' || c == '"') {
      auto key = quoted();
      if (!key) return false;
      cur = field(cur, *key);
      return expect(']');
    }
    if (c == '?') {
      ++pos_;
      if (!expect('(')) return false;
      size_t depth = 1, start = pos_;
      char inQuote = 0;
      for (; pos_ < s_.size(); ++pos_) {
        char ch = s_[pos_];
        if (inQuote) {
          if (ch == inQuote) inQuote = 0;
        } else if (ch == '\'' || ch == '"') {
          inQuote = ch;
        } else if (ch == '(') {
          ++depth;
        } else if (ch == ')' && --depth == 0) {
          break;
        }
      }
      if (pos_ >= s_.size()) return false;
      std::string_view filter = s_.substr(start, pos_ - start);
      ++pos_;
      if (!expect(']')) return false;
      return applyFilter(filter, cur);
    }
    // Index: [N] or [-N].
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ == start || (pos_ == start + 1 && s_[start] == '-')) return false;
    if (pos_ - start > 18) return false;  // would overflow; no real array is that long
    long long idx = std::stoll(std::string(s_.substr(start, pos_ - start)));
    if (!expect(']')) return false;
    std::vector<const json*> out;
    for (const json* n : cur) {
      if (!n->is_array()) continue;
      long long i = idx < 0 ? static_cast<long long>(n->size()) + idx : idx;
      if (i >= 0 && i < static_cast<long long>(n->size())) out.push_back(&(*n)[i]);
    }
    cur = std::move(out);
    return true;
  }

  // "@.a.b OP literal" or "@.a.b" (exists); OP one of == != < > <= >=.
  static bool applyFilter(std::string_view filter, std::vector<const json*>& cur) {
    static const char* kOps[] = {"==", "!=", "<=", ">=", "<", ">"};
    std::string_view lhs = filter, op, rhs;
    size_t quote = filter.find_first_of("'\"");
    std::string_view head = filter.substr(0, quote);
    for (const char* o : kOps) {
      size_t at = head.find(o);
      if (at != std::string_view::npos) {
        lhs = filter.substr(0, at);
        op = o;
        rhs = filter.substr(at + std::string_view(o).size());
        break;
      }
    }
    auto trim = [](std::string_view v) {
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
      return v;
    };
    lhs = trim(lhs);
    rhs = trim(rhs);
    if (lhs.empty() || lhs.front() != '@') return false;
    lhs.remove_prefix(1);
    json literal;
    if (!op.empty()) {
      if (rhs.size() >= 2 && (rhs.front() == '\'' || rhs.front() == '"') &&
          rhs.back() == rhs.front()) {
        literal = std::string(rhs.substr(1, rhs.size() - 2));
      } else {
        literal = json::parse(rhs, nullptr, false);
        if (literal.is_discarded()) return false;
      }
    }
    std::vector<const json*> out;
    for (const json* n : children(cur)) {
      auto vals = eval(lhs, *n);
      if (!vals) return false;
      if (vals->empty()) continue;
      const json& v = *vals->front();
      bool keep = false;
      if (op.empty()) {
        keep = true;
      } else if (op == "==") {
        keep = v == literal;
      } else if (op == "!=") {
        keep = v != literal;
      } else if (v.is_number() && literal.is_number()) {
        double a = v.get<double>(), b = literal.get<double>();
        keep = op == "<" ? a < b : op == ">" ? a > b : op == "<=" ? a <= b : a >= b;
      }
      if (keep) out.push_back(n);
    }
    cur = std::move(out);
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<std::vector<const json*>> evalJsonPath(std::string_view expr, const json& root) {
  return JsonPath::eval(expr, root);
}

}  // namespace strait::minicluster
