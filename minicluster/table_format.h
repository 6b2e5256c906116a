#pragma once
// Cell formatting shared by the Table printers (private to minicluster/): non-throwing
// access to object fields, the column definitions, and the upstream printers' formats for
// ages, labels, selectors and containers. Pure; thread-safe.

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strait::minicluster::table {

// obj[k1][k2]... or null when any step is missing or not an object.
const nlohmann::json& path(const nlohmann::json& obj, std::initializer_list<std::string_view> keys);
// The string, or "" for any other type.
std::string str(const nlohmann::json& j);
// The number truncated to an integer, or `dflt` for any other type or a float out of range.
long long integer(const nlohmann::json& j, long long dflt = 0);
// Members of an object or elements of an array; 0 for anything else.
size_t sizeOf(const nlohmann::json& j);
// j when it is an array, else an empty array.
const nlohmann::json& arrayOrEmpty(const nlohmann::json& j);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string lower(std::string s);
std::string trimSpace(const std::string& s);

// Go's zero time.Time (0001-01-01T00:00:00Z) in seconds since the epoch.
inline constexpr long long kZeroTime = -62135596800LL;

// An RFC 3339 timestamp in whole seconds since the epoch; nullopt when not a valid one.
std::optional<long long> timeOf(const nlohmann::json& ts);
// translateTimestampSince: the age of `ts` at `now`, "<unknown>" for an absent timestamp.
std::string since(const nlohmann::json& ts, long long now);
// The age of the object (its creationTimestamp) at `now`.
std::string age(const nlohmann::json& obj, long long now);
std::string nameOf(const nlohmann::json& obj);

struct Column {
  std::string name;
  std::string type = "string";
  std::string format;
  std::string description;
  int priority = 0;
};

// The TableColumnDefinition of a column.
nlohmann::json columnJson(const Column& c);

extern const char* const kNameDoc;
extern const char* const kAgeDoc;

Column nameCol();
Column ageCol();
Column col(std::string name, std::string type, std::string description, int priority = 0);

// labels.FormatLabels: "a=b,c=d" sorted by key, "<none>" when empty.
std::string formatLabels(const nlohmann::json& m);
// metav1.LabelSelectorAsSelector(sel).String(); nullopt if the selector is invalid.
std::optional<std::string> selectorString(const nlohmann::json& sel);
// metav1.FormatLabelSelector: "<none>" when empty, "<error>" when invalid.
std::string formatLabelSelector(const nlohmann::json& sel);
// layoutContainerCells: names and images joined with ",".
std::pair<std::string, std::string> containerCells(const nlohmann::json& podSpec);
std::string listWithMore(const std::vector<std::string>& list, bool more, size_t count,
                         size_t max);
std::string joinHostPort(const std::string& host, long long port);

}  // namespace strait::minicluster::table
