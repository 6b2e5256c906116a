#include "kube/object.h"

#include <openssl/rand.h>

#include <algorithm>
#include <cstdio>
#include <random>

namespace strait::kube {

namespace {

using nlohmann::json;

const json* metadataOf(const json& obj) {
  if (!obj.is_object()) {
    return nullptr;
  }
  auto it = obj.find("metadata");
  if (it == obj.end() || !it->is_object()) {
    return nullptr;
  }
  return &*it;
}

json& mutableMetadata(json& obj) {
  if (!obj.is_object()) {
    obj = json::object();
  }
  json& md = obj["metadata"];
  if (!md.is_object()) {
    md = json::object();
  }
  return md;
}

std::string getString(const json& obj, const char* field) {
  const json* md = metadataOf(obj);
  if (md == nullptr) {
    return "";
  }
  auto it = md->find(field);
  if (it == md->end() || !it->is_string()) {
    return "";
  }
  return it->get<std::string>();
}

std::optional<std::string> getOptionalString(const json& obj, const char* field) {
  const json* md = metadataOf(obj);
  if (md == nullptr) {
    return std::nullopt;
  }
  auto it = md->find(field);
  if (it == md->end() || !it->is_string()) {
    return std::nullopt;
  }
  return it->get<std::string>();
}

void setString(json& obj, const char* field, std::string_view value) {
  mutableMetadata(obj)[field] = std::string(value);
}

std::map<std::string, std::string> getStringMap(const json& obj, const char* field) {
  std::map<std::string, std::string> out;
  const json* md = metadataOf(obj);
  if (md == nullptr) {
    return out;
  }
  auto it = md->find(field);
  if (it == md->end() || !it->is_object()) {
    return out;
  }
  for (const auto& [k, v] : it->items()) {
    if (v.is_string()) {
      out.emplace(k, v.get<std::string>());
    }
  }
  return out;
}

void setStringMap(json& obj, const char* field, const std::map<std::string, std::string>& m) {
  json& md = mutableMetadata(obj);
  if (m.empty()) {
    md.erase(field);
    return;
  }
  md[field] = m;
}

void setMapEntry(json& obj, const char* field, std::string_view key, std::string_view value) {
  json& md = mutableMetadata(obj);
  json& m = md[field];
  if (!m.is_object()) {
    m = json::object();
  }
  m[std::string(key)] = std::string(value);
}

// Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's algorithm).
int64_t daysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void civilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2 ? 1 : 0);
}

bool isLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned daysInMonth(int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && isLeap(y) ? 29 : kDays[m - 1];
}

std::string formatTime(std::chrono::system_clock::time_point t, bool micro) {
  using namespace std::chrono;
  auto us = time_point_cast<microseconds>(t).time_since_epoch().count();
  // Floor to whole seconds, also before 1970.
  int64_t secs = us / 1000000;
  int64_t frac = us % 1000000;
  if (frac < 0) {
    frac += 1000000;
    secs -= 1;
  }
  int64_t days = secs / 86400;
  int64_t sod = secs % 86400;
  if (sod < 0) {
    sod += 86400;
    days -= 1;
  }
  int64_t y = 0;
  unsigned m = 0;
  unsigned d = 0;
  civilFromDays(days, &y, &m, &d);
  char buf[64];
  if (micro) {
    std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%06lldZ",
                  static_cast<long long>(y), m, d, static_cast<long long>(sod / 3600),
                  static_cast<long long>(sod / 60 % 60), static_cast<long long>(sod % 60),
                  static_cast<long long>(frac));
  } else {
    std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02uT%02lld:%02lld:%02lldZ",
                  static_cast<long long>(y), m, d, static_cast<long long>(sod / 3600),
                  static_cast<long long>(sod / 60 % 60), static_cast<long long>(sod % 60));
  }
  return buf;
}

// Reads exactly n digits at *pos.
bool readDigits(std::string_view s, size_t* pos, size_t n, int64_t* out) {
  if (*pos + n > s.size()) {
    return false;
  }
  int64_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[*pos + i];
    if (c < '0' || c > '9') {
      return false;
    }
    v = v * 10 + (c - '0');
  }
  *pos += n;
  *out = v;
  return true;
}

bool expect(std::string_view s, size_t* pos, char a, char b = '\0') {
  if (*pos < s.size() && (s[*pos] == a || (b != '\0' && s[*pos] == b))) {
    ++*pos;
    return true;
  }
  return false;
}

}  // namespace

std::string getName(const json& obj) { return getString(obj, "name"); }
void setName(json& obj, std::string_view name) { setString(obj, "name", name); }
std::string getNamespace(const json& obj) { return getString(obj, "namespace"); }
void setNamespace(json& obj, std::string_view ns) { setString(obj, "namespace", ns); }
std::string getUid(const json& obj) { return getString(obj, "uid"); }
void setUid(json& obj, std::string_view uid) { setString(obj, "uid", uid); }
std::string getResourceVersion(const json& obj) { return getString(obj, "resourceVersion"); }
void setResourceVersion(json& obj, std::string_view rv) { setString(obj, "resourceVersion", rv); }
std::string getGenerateName(const json& obj) { return getString(obj, "generateName"); }

int64_t getGeneration(const json& obj) {
  const json* md = metadataOf(obj);
  if (md == nullptr) {
    return 0;
  }
  auto it = md->find("generation");
  if (it == md->end()) {
    return 0;
  }
  if (it->is_number_integer()) {
    return it->get<int64_t>();
  }
  if (it->is_number_unsigned()) {
    uint64_t v = it->get<uint64_t>();
    return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
  }
  return 0;
}

void setGeneration(json& obj, int64_t generation) {
  mutableMetadata(obj)["generation"] = generation;
}

std::map<std::string, std::string> getLabels(const json& obj) {
  return getStringMap(obj, "labels");
}
void setLabels(json& obj, const std::map<std::string, std::string>& labels) {
  setStringMap(obj, "labels", labels);
}
void setLabel(json& obj, std::string_view key, std::string_view value) {
  setMapEntry(obj, "labels", key, value);
}
std::map<std::string, std::string> getAnnotations(const json& obj) {
  return getStringMap(obj, "annotations");
}
void setAnnotations(json& obj, const std::map<std::string, std::string>& annotations) {
  setStringMap(obj, "annotations", annotations);
}
void setAnnotation(json& obj, std::string_view key, std::string_view value) {
  setMapEntry(obj, "annotations", key, value);
}

std::vector<std::string> getFinalizers(const json& obj) {
  std::vector<std::string> out;
  const json* md = metadataOf(obj);
  if (md == nullptr) {
    return out;
  }
  auto it = md->find("finalizers");
  if (it == md->end() || !it->is_array()) {
    return out;
  }
  for (const auto& f : *it) {
    if (f.is_string()) {
      out.push_back(f.get<std::string>());
    }
  }
  return out;
}

void setFinalizers(json& obj, const std::vector<std::string>& finalizers) {
  json& md = mutableMetadata(obj);
  if (finalizers.empty()) {
    md.erase("finalizers");
    return;
  }
  md["finalizers"] = finalizers;
}

bool hasFinalizer(const json& obj, std::string_view finalizer) {
  auto f = getFinalizers(obj);
  return std::find(f.begin(), f.end(), finalizer) != f.end();
}

bool addFinalizer(json& obj, std::string_view finalizer) {
  auto f = getFinalizers(obj);
  if (std::find(f.begin(), f.end(), finalizer) != f.end()) {
    return false;
  }
  f.emplace_back(finalizer);
  setFinalizers(obj, f);
  return true;
}

bool removeFinalizer(json& obj, std::string_view finalizer) {
  auto f = getFinalizers(obj);
  auto end = std::remove(f.begin(), f.end(), finalizer);
  if (end == f.end()) {
    return false;
  }
  f.erase(end, f.end());
  setFinalizers(obj, f);
  return true;
}

std::vector<json> getOwnerReferences(const json& obj) {
  std::vector<json> out;
  const json* md = metadataOf(obj);
  if (md == nullptr) {
    return out;
  }
  auto it = md->find("ownerReferences");
  if (it == md->end() || !it->is_array()) {
    return out;
  }
  for (const auto& r : *it) {
    if (r.is_object()) {
      out.push_back(r);
    }
  }
  return out;
}

void setOwnerReferences(json& obj, const std::vector<json>& refs) {
  json& md = mutableMetadata(obj);
  if (refs.empty()) {
    md.erase("ownerReferences");
    return;
  }
  md["ownerReferences"] = refs;
}

std::optional<json> getControllerOf(const json& obj) {
  for (auto& r : getOwnerReferences(obj)) {
    auto c = r.find("controller");
    if (c != r.end() && c->is_boolean() && c->get<bool>()) {
      return r;
    }
  }
  return std::nullopt;
}

bool isControlledBy(const json& obj, std::string_view ownerUid) {
  auto c = getControllerOf(obj);
  if (!c) {
    return false;
  }
  auto uid = c->find("uid");
  return uid != c->end() && uid->is_string() && uid->get_ref<const std::string&>() == ownerUid;
}

std::optional<std::string> getCreationTimestamp(const json& obj) {
  return getOptionalString(obj, "creationTimestamp");
}
void setCreationTimestamp(json& obj, std::string_view ts) {
  setString(obj, "creationTimestamp", ts);
}
std::optional<std::string> getDeletionTimestamp(const json& obj) {
  return getOptionalString(obj, "deletionTimestamp");
}
void setDeletionTimestamp(json& obj, std::string_view ts) {
  setString(obj, "deletionTimestamp", ts);
}
bool isBeingDeleted(const json& obj) { return getDeletionTimestamp(obj).has_value(); }

std::string rfc3339Now() { return rfc3339(std::chrono::system_clock::now()); }

std::string rfc3339(std::chrono::system_clock::time_point t) { return formatTime(t, false); }

std::string rfc3339Micro(std::chrono::system_clock::time_point t) { return formatTime(t, true); }

Result<std::chrono::system_clock::time_point> parseRfc3339(std::string_view text) {
  auto bad = [&](const std::string& what) -> Error {
    std::string shown(text.substr(0, 64));
    return makeError(Code::Invalid,
                     "invalid RFC 3339 time " +
                         json(shown).dump(-1, ' ', false, json::error_handler_t::replace) + ": " +
                         what + " (want e.g. \"2006-01-02T15:04:05Z\")");
  };
  size_t pos = 0;
  int64_t year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!readDigits(text, &pos, 4, &year) || !expect(text, &pos, '-') ||
      !readDigits(text, &pos, 2, &month) || !expect(text, &pos, '-') ||
      !readDigits(text, &pos, 2, &day)) {
    return bad("date must be YYYY-MM-DD");
  }
  if (!expect(text, &pos, 'T', 't')) {
    return bad("missing 'T' between date and time");
  }
  if (!readDigits(text, &pos, 2, &hour) || !expect(text, &pos, ':') ||
      !readDigits(text, &pos, 2, &minute) || !expect(text, &pos, ':') ||
      !readDigits(text, &pos, 2, &second)) {
    return bad("time must be HH:MM:SS");
  }
  if (month < 1 || month > 12) {
    return bad("month out of range");
  }
  if (day < 1 || day > daysInMonth(year, static_cast<unsigned>(month))) {
    return bad("day out of range");
  }
  if (hour > 23 || minute > 59 || second > 59) {
    return bad("hour, minute or second out of range");
  }
  int64_t nanos = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (pos - start < 9) {
        nanos = nanos * 10 + (text[pos] - '0');
      }
      ++pos;
    }
    size_t n = pos - start;
    if (n == 0) {
      return bad("no digits after '.'");
    }
    if (n > 9) {
      return bad("more than 9 fractional digits");
    }
    for (size_t i = n; i < 9; ++i) {
      nanos *= 10;
    }
  }
  int64_t offset = 0;
  if (expect(text, &pos, 'Z', 'z')) {
    offset = 0;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    int64_t oh = 0, om = 0;
    if (!readDigits(text, &pos, 2, &oh) || !expect(text, &pos, ':') ||
        !readDigits(text, &pos, 2, &om) || oh > 23 || om > 59) {
      return bad("time zone offset must be Z or +HH:MM / -HH:MM");
    }
    offset = sign * (oh * 3600 + om * 60);
  } else {
    return bad("missing time zone (Z or +HH:MM)");
  }
  if (pos != text.size()) {
    return bad("unexpected text after the time zone");
  }
  int64_t days = daysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset;
  using namespace std::chrono;
  auto d = duration_cast<system_clock::duration>(seconds(secs) + nanoseconds(nanos));
  return system_clock::time_point(d);
}

std::string newUid() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof(b)) != 1) {
    std::random_device rd;
    for (auto& c : b) {
      c = static_cast<unsigned char>(rd());
    }
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      out.push_back('-');
    }
    out.push_back(kHex[b[i] >> 4]);
    out.push_back(kHex[b[i] & 0x0f]);
  }
  return out;
}

}  // namespace strait::kube
