#pragma once
// Finding one member of a JSON object in its text without building the rest (private to
// minicluster/). The store keeps every object as compact JSON; a reader that needs only
// `metadata` (the garbage collector) or the raw text of `spec` (the scheduler's digest) finds
// that member's span here and parses just that, instead of building the whole tree (a Pod's
// tree costs about six times its JSON in allocations).
//
// The text is read by rapidjson's SAX reader (json_scan.cpp), which validates everything up
// to the end of the member found; nothing after it is read.

#include <optional>
#include <string_view>

namespace strait::minicluster {

// The raw text of the value of member `key` of the JSON object `text` (its own members only,
// not nested ones), e.g. {"a":1,"metadata":{"name":"x"}} and "metadata" -> {"name":"x"}.
// The result views `text` (no copy): it lives as long as the caller's buffer.
//
// nullopt when `text` is not an object, has no such member, or is not valid JSON up to the
// end of that member's value (the members before it included); text after that value is not
// read, so `{"a":1,` still yields 1 for "a". Never reads outside `text` (it need not be
// null-terminated). Numbers that overflow a double are invalid here, even 0e400 (rapidjson's
// range check), and strings are not checked to be UTF-8; the store's JSON, written by
// nlohmann::json, holds neither.
//
// Keys are compared as written: a key spelled with escapes matches only the same spelling
// (the store's JSON escapes no ASCII letter). When the object repeats the key, the first
// member wins. Thread-safe; allocates only for strings or nesting beyond about 2 KB.
std::optional<std::string_view> jsonMember(std::string_view text, std::string_view key);

}  // namespace strait::minicluster
