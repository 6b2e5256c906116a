// Fuzzes jsonMember (minicluster/json_scan.cpp) with arbitrary bytes as the text: it must never
// crash, read outside the text or return a span outside it; for every text nlohmann::json
// accepts as an object, the span it returns for a key must parse to that member's value.
#include <rapidjson/error/error.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "minicluster/json_scan.h"

namespace {

using nlohmann::json;
using strait::minicluster::jsonMember;

void require(bool ok) {
  if (!ok) std::abort();
}

// The span must view `text`.
void requireInside(std::string_view text, const std::optional<std::string_view>& span) {
  if (!span) return;
  require(!span->empty());
  require(span->data() >= text.data());
  require(span->data() + span->size() <= text.data() + text.size());
}

// Looks `key` up in `text`, then looks a member up in a copy of the span in a buffer of its
// exact size (the nested lookups of rest.cpp and the informer), so that AddressSanitizer
// catches a read past the end of either.
std::optional<std::string_view> lookUp(std::string_view text, std::string_view key) {
  auto span = jsonMember(text, key);
  requireInside(text, span);
  if (span) {
    std::unique_ptr<char[]> copy(new char[span->size()]);
    std::memcpy(copy.get(), span->data(), span->size());
    std::string_view inner(copy.get(), span->size());
    requireInside(inner, jsonMember(inner, "a"));
  }
  return span;
}

// The keys of the top-level object as nlohmann decodes them, with how often each occurs.
std::optional<std::map<std::string, int>> topLevelKeys(std::string_view text, json& parsed) {
  std::map<std::string, int> keys;
  json::parser_callback_t count = [&keys](int depth, json::parse_event_t event, json& value) {
    if (event == json::parse_event_t::key && depth == 1) ++keys[value.get<std::string>()];
    return true;
  };
  parsed = json::parse(text.begin(), text.end(), count, false);
  if (parsed.is_discarded()) return std::nullopt;
  return keys;
}

// A key that the text can only spell as itself: no character that needs an escape.
bool plainKey(std::string_view key) {
  for (unsigned char c : key) {
    if (c == '"' || c == '\\' || c < 0x20) return false;
  }
  return true;
}

// Whether rapidjson rejects the whole text only for a number out of a double's range (0e400
// included), the one kind of valid JSON jsonMember documents as invalid.
bool rejectedForNumberRange(std::string_view text) {
  rapidjson::MemoryStream in(text.data(), text.size());
  rapidjson::BaseReaderHandler<> ignore;
  rapidjson::Reader reader;
  auto result =
      reader.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseNumbersAsStringsFlag>(in,
                                                                                           ignore);
  return result.Code() == rapidjson::kParseErrorNumberTooBig;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // libFuzzer hands a heap buffer of exactly `size` bytes: a read past it is a crash.
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> keys = {"a", "b", "metadata", "spec", "status", ""};
  std::vector<std::optional<std::string_view>> found;
  for (const auto& key : keys) found.push_back(lookUp(text, key));

  json parsed;
  auto counts = topLevelKeys(text, parsed);
  if (!counts) return 0;  // not JSON for nlohmann: only the crash checks above apply
  // nlohmann skips a UTF-8 byte order mark; jsonMember, like the store, does not expect one.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") return 0;
  if (!parsed.is_object()) {
    for (const auto& span : found) require(!span);
    return 0;
  }
  const bool numberRange = rejectedForNumberRange(text);
  for (const auto& [key, n] : *counts) {
    if (plainKey(key) && keys.size() < 16) {
      keys.push_back(key);
      found.push_back(lookUp(text, key));
    }
  }
  const bool escapes = text.find('\\') != std::string_view::npos;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    const auto& span = found[i];
    auto c = counts->find(key);
    const int n = c == counts->end() ? 0 : c->second;
    if (n == 0) {
      // No member decodes to this key, and a plain key can only be spelled as itself.
      require(!span);
    } else if (!span) {
      // A member with this key exists: missed only when it is spelled with an escape, or
      // when rapidjson refuses a number that overflows a double (jsonMember's documented limit).
      require(escapes || numberRange);
    } else if (n == 1) {
      require(json::parse(*span) == parsed[key]);
    } else {
      // Repeated key: jsonMember gives the first member, nlohmann keeps the last.
      require(json::accept(*span));
    }
  }
  return 0;
}
