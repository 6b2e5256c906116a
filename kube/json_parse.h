#pragma once
// Parsing of untrusted JSON: nesting depth is checked before the recursive parser runs (a
// hostile body of 100,000 '[' would otherwise exhaust the stack), and errors say where.

#include <nlohmann/json.hpp>
#include <string_view>

#include "kube/status.h"

namespace strait::kube {

// Deepest nesting accepted (the Go JSON decoder's limit).
inline constexpr int kMaxJsonDepth = 10000;

// Parses one JSON document. BadRequest with the byte offset on malformed input or nesting
// deeper than maxDepth. Never throws.
Result<nlohmann::json> parseJson(std::string_view text, int maxDepth = kMaxJsonDepth);

// Deepest '['/'{' nesting outside string literals (JSON or YAML flow style); a cheap scan.
int bracketDepth(std::string_view text);

}  // namespace strait::kube
