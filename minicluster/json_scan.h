#pragma once
// Finding one member of a JSON object in its text without parsing the rest (private to
// minicluster/). The store keeps every object as compact JSON; a reader that needs only
// `metadata` (the garbage collector) or the raw text of `spec` (the scheduler's digest) finds
// that member's span here and parses just that, instead of building the whole tree (a Pod's
// tree costs about six times its JSON in allocations).
//
// Pure functions on a string_view; no allocation. Malformed text yields nullopt, never a
// crash or a read past the end.

#include <cstddef>
#include <optional>
#include <string_view>

namespace strait::minicluster {

namespace json_scan_detail {

inline bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline size_t skipSpace(std::string_view s, size_t i) {
  while (i < s.size() && isSpace(s[i])) ++i;
  return i;
}

// `s[i]` is '"': the index just past the closing quote, or npos.
inline size_t skipString(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;  // the escaped character (the four hex digits of a \u escape hold no quote or backslash)
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// The index just past the value starting at `s[i]`, or npos when it is malformed.
inline size_t skipValue(std::string_view s, size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  if (s[i] == '"') return skipString(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      char c = s[i];
      if (c == '"') {
        i = skipString(s, i);
        if (i == std::string_view::npos) return i;
        continue;
      }
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return std::string_view::npos;
  }
  size_t start = i;
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && !isSpace(s[i])) ++i;
  return i == start ? std::string_view::npos : i;
}

}  // namespace json_scan_detail

// The raw text of the value of member `key` of the JSON object `text` (its own members only,
// not nested ones), e.g. {"a":1,"metadata":{"name":"x"}} and "metadata" -> {"name":"x"}.
// nullopt when `text` is not an object, has no such member or is malformed before it. Keys
// are compared as written: a key spelled with escapes does not match (the store's JSON,
// written by nlohmann::json, escapes no ASCII letter).
inline std::optional<std::string_view> jsonMember(std::string_view text, std::string_view key) {
  using namespace json_scan_detail;
  constexpr size_t npos = std::string_view::npos;
  size_t i = skipSpace(text, 0);
  if (i >= text.size() || text[i] != '{') return std::nullopt;
  i = skipSpace(text, i + 1);
  if (i < text.size() && text[i] == '}') return std::nullopt;
  while (i < text.size()) {
    if (text[i] != '"') return std::nullopt;
    size_t keyEnd = skipString(text, i);
    if (keyEnd == npos) return std::nullopt;
    std::string_view k = text.substr(i + 1, keyEnd - i - 2);
    i = skipSpace(text, keyEnd);
    if (i >= text.size() || text[i] != ':') return std::nullopt;
    i = skipSpace(text, i + 1);
    size_t valueEnd = skipValue(text, i);
    if (valueEnd == npos) return std::nullopt;
    if (k == key) return text.substr(i, valueEnd - i);
    i = skipSpace(text, valueEnd);
    if (i >= text.size() || text[i] != ',') return std::nullopt;
    i = skipSpace(text, i + 1);
  }
  return std::nullopt;
}

}  // namespace strait::minicluster
