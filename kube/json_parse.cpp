#include "kube/json_parse.h"

namespace strait::kube {

int bracketDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == '\\' && quote == '"') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

Result<nlohmann::json> parseJson(std::string_view text, int maxDepth) {
  if (bracketDepth(text) > maxDepth) {
    return makeError(Code::BadRequest, "JSON nested deeper than " + std::to_string(maxDepth) +
                                           " levels");
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for numbers beyond a double ("1E888"; found by
    // watch_decoder_fuzz).
    return makeError(Code::BadRequest, e.what());
  }
}

}  // namespace strait::kube
