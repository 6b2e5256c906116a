// Cell formatting shared by the Table printers, see table_format.h.
#include "minicluster/table_format.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <set>

#include "kube/time.h"
#include "minicluster/tables.h"

namespace strait::minicluster::table {

using json = nlohmann::json;

namespace {

const json& nullJson() {
  static const json kNull;
  return kNull;
}

}  // namespace

const json& path(const json& obj, std::initializer_list<std::string_view> keys) {
  const json* cur = &obj;
  for (std::string_view k : keys) {
    if (!cur->is_object()) {
      return nullJson();
    }
    auto it = cur->find(std::string(k));
    if (it == cur->end()) {
      return nullJson();
    }
    cur = &*it;
  }
  return *cur;
}

std::string str(const json& j) { return j.is_string() ? j.get<std::string>() : std::string(); }

long long integer(const json& j, long long dflt) {
  if (j.is_number_integer() || j.is_number_unsigned()) {
    return j.get<long long>();
  }
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (!(d > -9.2e18 && d < 9.2e18)) return dflt;  // out of range or NaN
    return static_cast<long long>(d);
  }
  return dflt;
}

size_t sizeOf(const json& j) { return (j.is_object() || j.is_array()) ? j.size() : 0; }

const json& arrayOrEmpty(const json& j) {
  static const json kEmpty = json::array();
  return j.is_array() ? j : kEmpty;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) {
      out += sep;
    }
    out += parts[i];
  }
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

std::string trimSpace(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::optional<long long> timeOf(const json& ts) {
  if (!ts.is_string()) return std::nullopt;
  auto t = kube::parseRfc3339Unix(ts.get_ref<const std::string&>());
  if (!t) return std::nullopt;
  return *t;
}

// translateTimestampSince: "<unknown>" for an absent (zero) timestamp.
std::string since(const json& ts, long long now) {
  auto t = timeOf(ts);
  if (!t) return "<unknown>";
  return humanDuration(now - *t);
}

std::string age(const json& obj, long long now) {
  return since(path(obj, {"metadata", "creationTimestamp"}), now);
}

std::string nameOf(const json& obj) { return str(path(obj, {"metadata", "name"})); }

json columnJson(const Column& c) {
  return {{"name", c.name},
          {"type", c.type},
          {"format", c.format},
          {"description", c.description},
          {"priority", c.priority}};
}

const char* const kNameDoc =
    "Name must be unique within a namespace. Name is primarily intended for creation "
    "idempotence and configuration definition. Cannot be updated.";
const char* const kAgeDoc =
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created, in RFC3339 form and in UTC.";

Column nameCol() { return {"Name", "string", "name", kNameDoc, 0}; }
Column ageCol() { return {"Age", "string", "", kAgeDoc, 0}; }
Column col(std::string name, std::string type, std::string description, int priority) {
  return {std::move(name), std::move(type), "", std::move(description), priority};
}

// labels.FormatLabels: "a=b,c=d" sorted by key, "<none>" when empty.
std::string formatLabels(const json& m) {
  if (!m.is_object() || m.empty()) return "<none>";
  std::vector<std::string> parts;
  for (auto it = m.begin(); it != m.end(); ++it) {  // nlohmann objects iterate sorted
    parts.push_back(it.key() + "=" +
                    (it->is_string() ? it->get<std::string>()
                                     : it->dump(-1, ' ', false, json::error_handler_t::replace)));
  }
  return join(parts, ",");
}

std::optional<std::string> selectorString(const json& sel) {
  if (!sel.is_object()) return std::string();
  std::vector<std::pair<std::string, std::string>> reqs;  // key, rendered requirement
  const json& ml = path(sel, {"matchLabels"});
  if (ml.is_object()) {
    for (auto it = ml.begin(); it != ml.end(); ++it) {
      reqs.emplace_back(it.key(), it.key() + "=" + str(*it));
    }
  }
  for (const json& e : arrayOrEmpty(path(sel, {"matchExpressions"}))) {
    std::string key = str(path(e, {"key"}));
    std::string op = str(path(e, {"operator"}));
    std::set<std::string> values;
    for (const json& v : arrayOrEmpty(path(e, {"values"}))) values.insert(str(v));
    std::string vs = join(std::vector<std::string>(values.begin(), values.end()), ",");
    if (op == "In") {
      reqs.emplace_back(key, key + " in (" + vs + ")");
    } else if (op == "NotIn") {
      reqs.emplace_back(key, key + " notin (" + vs + ")");
    } else if (op == "Exists") {
      reqs.emplace_back(key, key);
    } else if (op == "DoesNotExist") {
      reqs.emplace_back(key, "!" + key);
    } else {
      return std::nullopt;
    }
  }
  std::stable_sort(reqs.begin(), reqs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> parts;
  for (auto& r : reqs) parts.push_back(r.second);
  return join(parts, ",");
}

// metav1.FormatLabelSelector: "<none>" when empty, "<error>" when invalid.
std::string formatLabelSelector(const json& sel) {
  auto s = selectorString(sel);
  if (!s) return "<error>";
  return s->empty() ? "<none>" : *s;
}

// layoutContainerCells: names and images joined with ",".
std::pair<std::string, std::string> containerCells(const json& podSpec) {
  std::vector<std::string> names, images;
  for (const json& c : arrayOrEmpty(path(podSpec, {"containers"}))) {
    names.push_back(str(path(c, {"name"})));
    images.push_back(str(path(c, {"image"})));
  }
  return {join(names, ","), join(images, ",")};
}

std::string listWithMore(const std::vector<std::string>& list, bool more, size_t count,
                         size_t max) {
  std::string ret = join(list, ",");
  if (more) return ret + " + " + std::to_string(count - max) + " more...";
  return ret.empty() ? "<unset>" : ret;
}

std::string joinHostPort(const std::string& host, long long port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

}  // namespace strait::minicluster::table
