// Table conversion for `kubectl get`. Columns and cell formats follow upstream
// pkg/printers/internalversion (built-in kinds, always generated "wide" as the API server
// does, so priority-1 columns carry cells too), the apiextensions table convertor (CRD
// additionalPrinterColumns) and the generic default convertor.

#include "minicluster/tables.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "minicluster/registry.h"

namespace strait::minicluster {
namespace {

using json = nlohmann::json;

const json& nullJson() {
  static const json kNull;
  return kNull;
}

// obj[k1][k2]... or null when any step is missing or not an object.
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

long long integer(const json& j, long long dflt = 0) {
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

// ---- Time -----------------------------------------------------------------------------

long long daysFromCivil(long long y, unsigned m, unsigned d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long long>(doe) - 719468;
}

// RFC 3339 ("2024-05-01T10:00:00Z", "...T10:00:00.123456+02:00") to whole seconds since
// the epoch (fraction dropped); nullopt if malformed.
std::optional<long long> parseRfc3339(std::string_view s) {
  auto digits = [&](size_t pos, size_t n) -> std::optional<int> {
    if (pos + n > s.size()) return std::nullopt;
    int v = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  auto y = digits(0, 4), mo = digits(5, 2), d = digits(8, 2), h = digits(11, 2),
       mi = digits(14, 2), se = digits(17, 2);
  if (!y || !mo || !d || !h || !mi || !se || s.size() < 20 || s[4] != '-' || s[7] != '-' ||
      (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  if (*mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 || *se > 60) {
    return std::nullopt;
  }
  size_t pos = 19;
  if (s[pos] == '.') {
    ++pos;
    size_t start = pos;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
    if (pos == start) return std::nullopt;
  }
  long long offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    auto oh = digits(pos + 1, 2), om = digits(pos + 4, 2);
    if (!oh || !om || s[pos + 3] != ':') return std::nullopt;
    offset = (*oh * 3600LL + *om * 60LL) * (s[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  long long days = daysFromCivil(*y, static_cast<unsigned>(*mo), static_cast<unsigned>(*d));
  return days * 86400 + *h * 3600LL + *mi * 60LL + *se - offset;
}

// Go's zero time.Time (0001-01-01T00:00:00Z) in seconds since the epoch.
constexpr long long kZeroTime = -62135596800LL;

// Seconds since the epoch to "2006-01-02T15:04:05Z".
std::string formatRfc3339(long long t) {
  long long days = t >= 0 ? t / 86400 : (t - 86399) / 86400;
  long long secs = t - days * 86400;
  const long long z = days + 719468;
  const long long era = (z >= 0 ? z : z - 146096) / 146097;
  const long long doe = z - era * 146097;
  const long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const long long mp = (5 * doy + 2) / 153;
  const long long d = doy - (153 * mp + 2) / 5 + 1;
  const long long m = mp < 10 ? mp + 3 : mp - 9;
  const long long y = yoe + era * 400 + (m <= 2);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ", y, m, d,
                secs / 3600, secs % 3600 / 60, secs % 60);
  return buf;
}

std::optional<long long> timeOf(const json& ts) {
  if (!ts.is_string()) return std::nullopt;
  return parseRfc3339(ts.get_ref<const std::string&>());
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

// ---- Columns --------------------------------------------------------------------------

struct Column {
  std::string name;
  std::string type = "string";
  std::string format;
  std::string description;
  int priority = 0;
};

json columnJson(const Column& c) {
  return {{"name", c.name},
          {"type", c.type},
          {"format", c.format},
          {"description", c.description},
          {"priority", c.priority}};
}

const char* kNameDoc =
    "Name must be unique within a namespace. Name is primarily intended for creation "
    "idempotence and configuration definition. Cannot be updated.";
const char* kAgeDoc =
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created, in RFC3339 form and in UTC.";

Column nameCol() { return {"Name", "string", "name", kNameDoc, 0}; }
Column ageCol() { return {"Age", "string", "", kAgeDoc, 0}; }
Column col(std::string name, std::string type, std::string description, int priority = 0) {
  return {std::move(name), std::move(type), "", std::move(description), priority};
}

// ---- Shared formatting ----------------------------------------------------------------

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

// metav1.LabelSelectorAsSelector(sel).String(); nullopt if the selector is invalid.
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

// ---- Built-in kinds -------------------------------------------------------------------

using CellsFn = std::function<json(const json& obj, long long now, json& rowConditions)>;

struct Printer {
  std::vector<Column> columns;
  CellsFn cells;
};

json podCells(const json& pod, long long now, json& rowConditions) {
  const json& spec = path(pod, {"spec"});
  const json& status = path(pod, {"status"});
  long long restarts = 0;
  long long restartableInitRestarts = 0;
  long long totalContainers = static_cast<long long>(sizeOf(path(spec, {"containers"})));
  long long readyContainers = 0;
  std::optional<long long> lastRestart, lastRestartableInitRestart;
  auto later = [](std::optional<long long>& cur, const json& finishedAt) {
    auto t = timeOf(finishedAt);
    if (t && (!cur || *cur < *t)) cur = t;
  };

  const std::string phase = str(path(status, {"phase"}));
  std::string reason = phase;
  if (!str(path(status, {"reason"})).empty()) reason = str(path(status, {"reason"}));
  for (const json& c : arrayOrEmpty(path(status, {"conditions"}))) {
    if (str(path(c, {"type"})) == "PodScheduled" &&
        str(path(c, {"reason"})) == "SchedulingGated") {
      reason = "SchedulingGated";
    }
  }
  if (phase == "Succeeded") {
    rowConditions = json::array({{{"type", "Completed"},
                                  {"status", "True"},
                                  {"reason", "Succeeded"},
                                  {"message", "The pod has completed successfully."}}});
  } else if (phase == "Failed") {
    rowConditions = json::array({{{"type", "Completed"},
                                  {"status", "True"},
                                  {"reason", "Failed"},
                                  {"message", "The pod failed."}}});
  }

  std::set<std::string> restartableInit;  // sidecars: initContainers with restartPolicy Always
  const json& initSpecs = arrayOrEmpty(path(spec, {"initContainers"}));
  for (const json& c : initSpecs) {
    if (str(path(c, {"restartPolicy"})) == "Always") {
      restartableInit.insert(str(path(c, {"name"})));
      ++totalContainers;
    }
  }

  bool initializing = false;
  const json& initStatuses = arrayOrEmpty(path(status, {"initContainerStatuses"}));
  for (size_t i = 0; i < initStatuses.size(); ++i) {
    const json& cs = initStatuses[i];
    const bool sidecar = restartableInit.count(str(path(cs, {"name"}))) > 0;
    restarts += integer(path(cs, {"restartCount"}));
    const json& lastTerminated = path(cs, {"lastState", "terminated"});
    if (lastTerminated.is_object()) later(lastRestart, path(lastTerminated, {"finishedAt"}));
    if (sidecar) {
      restartableInitRestarts += integer(path(cs, {"restartCount"}));
      if (lastTerminated.is_object()) {
        later(lastRestartableInitRestart, path(lastTerminated, {"finishedAt"}));
      }
    }
    const json& terminated = path(cs, {"state", "terminated"});
    const json& waiting = path(cs, {"state", "waiting"});
    if (terminated.is_object() && integer(path(terminated, {"exitCode"})) == 0) {
      continue;
    }
    if (sidecar && path(cs, {"started"}) == json(true)) {
      if (path(cs, {"ready"}) == json(true)) ++readyContainers;
      continue;
    }
    if (terminated.is_object()) {
      std::string r = str(path(terminated, {"reason"}));
      if (r.empty()) {
        long long signal = integer(path(terminated, {"signal"}));
        reason = signal != 0
                     ? "Init:Signal:" + std::to_string(signal)
                     : "Init:ExitCode:" + std::to_string(integer(path(terminated, {"exitCode"})));
      } else {
        reason = "Init:" + r;
      }
    } else if (waiting.is_object() && !str(path(waiting, {"reason"})).empty() &&
               str(path(waiting, {"reason"})) != "PodInitializing") {
      reason = "Init:" + str(path(waiting, {"reason"}));
    } else {
      reason = "Init:" + std::to_string(i) + "/" + std::to_string(initSpecs.size());
    }
    initializing = true;
    break;
  }

  bool initializedTrue = false;
  for (const json& c : arrayOrEmpty(path(status, {"conditions"}))) {
    if (str(path(c, {"type"})) == "Initialized") {
      initializedTrue = str(path(c, {"status"})) == "True";
      break;
    }
  }

  if (!initializing || initializedTrue) {
    restarts = restartableInitRestarts;
    lastRestart = lastRestartableInitRestart;
    bool hasRunning = false;
    const json& statuses = arrayOrEmpty(path(status, {"containerStatuses"}));
    for (size_t k = statuses.size(); k-- > 0;) {
      const json& cs = statuses[k];
      restarts += integer(path(cs, {"restartCount"}));
      const json& lastTerminated = path(cs, {"lastState", "terminated"});
      if (lastTerminated.is_object()) later(lastRestart, path(lastTerminated, {"finishedAt"}));
      const json& waiting = path(cs, {"state", "waiting"});
      const json& terminated = path(cs, {"state", "terminated"});
      if (waiting.is_object() && !str(path(waiting, {"reason"})).empty()) {
        reason = str(path(waiting, {"reason"}));
      } else if (terminated.is_object() && !str(path(terminated, {"reason"})).empty()) {
        reason = str(path(terminated, {"reason"}));
      } else if (terminated.is_object()) {
        long long signal = integer(path(terminated, {"signal"}));
        reason = signal != 0
                     ? "Signal:" + std::to_string(signal)
                     : "ExitCode:" + std::to_string(integer(path(terminated, {"exitCode"})));
      } else if (path(cs, {"ready"}) == json(true) && path(cs, {"state", "running"}).is_object()) {
        hasRunning = true;
        ++readyContainers;
      }
    }
    if (reason == "Completed" && hasRunning) {
      bool podReady = false;
      for (const json& c : arrayOrEmpty(path(status, {"conditions"}))) {
        if (str(path(c, {"type"})) == "Ready" && str(path(c, {"status"})) == "True") {
          podReady = true;
        }
      }
      reason = podReady ? "Running" : "NotReady";
    }
  }

  const bool deleting = !path(pod, {"metadata", "deletionTimestamp"}).is_null();
  if (deleting && str(path(status, {"reason"})) == "NodeLost") {
    reason = "Unknown";
  } else if (deleting && phase != "Succeeded" && phase != "Failed") {
    reason = "Terminating";
  }

  std::string restartsStr = std::to_string(restarts);
  if (restarts != 0 && lastRestart) {
    restartsStr += " (" + humanDuration(now - *lastRestart) + " ago)";
  }

  std::string podIP;
  const json& podIPs = path(status, {"podIPs"});
  if (podIPs.is_array() && !podIPs.empty()) {
    podIP = str(path(podIPs[0], {"ip"}));
  } else {
    podIP = str(path(status, {"podIP"}));
  }
  if (podIP.empty()) podIP = "<none>";
  std::string nodeName = str(path(spec, {"nodeName"}));
  if (nodeName.empty()) nodeName = "<none>";
  std::string nominated = str(path(status, {"nominatedNodeName"}));
  if (nominated.empty()) nominated = "<none>";
  std::string readinessGates = "<none>";
  const json& gates = arrayOrEmpty(path(spec, {"readinessGates"}));
  if (!gates.empty()) {
    size_t trueConditions = 0;
    for (const json& g : gates) {
      for (const json& c : arrayOrEmpty(path(status, {"conditions"}))) {
        if (path(c, {"type"}) == path(g, {"conditionType"})) {
          if (str(path(c, {"status"})) == "True") ++trueConditions;
          break;
        }
      }
    }
    readinessGates = std::to_string(trueConditions) + "/" + std::to_string(gates.size());
  }

  return json::array({nameOf(pod),
                      std::to_string(readyContainers) + "/" + std::to_string(totalContainers),
                      reason, restartsStr, age(pod, now), podIP, nodeName, nominated,
                      readinessGates});
}

std::string nodeAddress(const json& node, const std::string& type) {
  for (const json& a : arrayOrEmpty(path(node, {"status", "addresses"}))) {
    if (str(path(a, {"type"})) == type) return str(path(a, {"address"}));
  }
  return "<none>";
}

json nodeCells(const json& node, long long now, json&) {
  std::vector<std::string> status;
  for (const json& c : arrayOrEmpty(path(node, {"status", "conditions"}))) {
    if (str(path(c, {"type"})) == "Ready") {
      status = {str(path(c, {"status"})) == "True" ? "Ready" : "NotReady"};  // last one wins
    }
  }
  if (status.empty()) status.push_back("Unknown");
  if (path(node, {"spec", "unschedulable"}) == json(true)) status.push_back("SchedulingDisabled");

  std::set<std::string> roles;
  const json& labels = path(node, {"metadata", "labels"});
  if (labels.is_object()) {
    const std::string prefix = "node-role.kubernetes.io/";
    for (auto it = labels.begin(); it != labels.end(); ++it) {
      if (it.key().rfind(prefix, 0) == 0) {
        if (it.key().size() > prefix.size()) roles.insert(it.key().substr(prefix.size()));
      } else if (it.key() == "kubernetes.io/role" && !str(*it).empty()) {
        roles.insert(str(*it));
      }
    }
  }
  std::string rolesStr = join(std::vector<std::string>(roles.begin(), roles.end()), ",");
  if (rolesStr.empty()) rolesStr = "<none>";

  const json& info = path(node, {"status", "nodeInfo"});
  auto orUnknown = [](std::string s) { return s.empty() ? std::string("<unknown>") : s; };
  return json::array({nameOf(node), join(status, ","), rolesStr, age(node, now),
                      str(path(info, {"kubeletVersion"})), nodeAddress(node, "InternalIP"),
                      nodeAddress(node, "ExternalIP"), orUnknown(str(path(info, {"osImage"}))),
                      orUnknown(str(path(info, {"kernelVersion"}))),
                      orUnknown(str(path(info, {"containerRuntimeVersion"})))});
}

std::string serviceExternalIP(const json& svc) {
  std::string type = str(path(svc, {"spec", "type"}));
  if (type.empty()) type = "ClusterIP";
  std::vector<std::string> externalIPs;
  for (const json& ip : arrayOrEmpty(path(svc, {"spec", "externalIPs"}))) {
    externalIPs.push_back(str(ip));
  }
  if (type == "ClusterIP" || type == "NodePort") {
    return externalIPs.empty() ? "<none>" : join(externalIPs, ",");
  }
  if (type == "LoadBalancer") {
    std::set<std::string> lb;
    for (const json& in : arrayOrEmpty(path(svc, {"status", "loadBalancer", "ingress"}))) {
      if (!str(path(in, {"ip"})).empty()) {
        lb.insert(str(path(in, {"ip"})));
      } else if (!str(path(in, {"hostname"})).empty()) {
        lb.insert(str(path(in, {"hostname"})));
      }
    }
    std::vector<std::string> all(lb.begin(), lb.end());
    if (!externalIPs.empty()) {
      all.insert(all.end(), externalIPs.begin(), externalIPs.end());
      return join(all, ",");
    }
    return all.empty() ? "<pending>" : join(all, ",");
  }
  if (type == "ExternalName") return str(path(svc, {"spec", "externalName"}));
  return "<unknown>";
}

json serviceCells(const json& svc, long long now, json&) {
  const json& spec = path(svc, {"spec"});
  std::string type = str(path(spec, {"type"}));
  if (type.empty()) type = "ClusterIP";
  std::string clusterIP = "<none>";
  const json& ips = path(spec, {"clusterIPs"});
  if (ips.is_array() && !ips.empty()) {
    clusterIP = str(ips[0]);
  } else if (!str(path(spec, {"clusterIP"})).empty()) {
    clusterIP = str(path(spec, {"clusterIP"}));
  }
  std::vector<std::string> ports;
  for (const json& p : arrayOrEmpty(path(spec, {"ports"}))) {
    std::string proto = str(path(p, {"protocol"}));
    if (proto.empty()) proto = "TCP";
    long long nodePort = integer(path(p, {"nodePort"}));
    std::string piece = std::to_string(integer(path(p, {"port"})));
    if (nodePort > 0) piece += ":" + std::to_string(nodePort);
    ports.push_back(piece + "/" + proto);
  }
  std::string portStr = ports.empty() ? "<none>" : join(ports, ",");
  return json::array({nameOf(svc), type, clusterIP, serviceExternalIP(svc), portStr, age(svc, now),
                      formatLabels(path(spec, {"selector"}))});
}

json endpointsCells(const json& ep, long long now, json&) {
  const json& subsets = arrayOrEmpty(path(ep, {"subsets"}));
  if (subsets.empty()) return json::array({nameOf(ep), "<none>", age(ep, now)});
  std::vector<std::string> list;
  const size_t max = 3;
  bool more = false;
  size_t count = 0;
  for (const json& ss : subsets) {
    const json& addrs = arrayOrEmpty(path(ss, {"addresses"}));
    const json& ports = arrayOrEmpty(path(ss, {"ports"}));
    if (ports.empty()) {
      count += addrs.size();
      for (const json& a : addrs) {
        if (list.size() == max) {
          more = true;
          break;
        }
        list.push_back(str(path(a, {"ip"})));
      }
      continue;
    }
    for (const json& p : ports) {
      count += addrs.size();
      for (const json& a : addrs) {
        if (list.size() == max) {
          more = true;
          break;
        }
        list.push_back(joinHostPort(str(path(a, {"ip"})), integer(path(p, {"port"}))));
      }
    }
  }
  std::string ret = join(list, ",");
  if (more) ret += " + " + std::to_string(count - max) + " more...";
  return json::array({nameOf(ep), ret, age(ep, now)});
}

json endpointSliceCells(const json& es, long long now, json&) {
  const size_t max = 3;
  std::vector<std::string> ports;
  bool morePorts = false;
  size_t portCount = 0;
  for (const json& p : arrayOrEmpty(path(es, {"ports"}))) {
    if (ports.size() < max) {
      std::string s = "*";
      if (path(p, {"port"}).is_number()) {
        s = std::to_string(integer(path(p, {"port"})));
      } else if (path(p, {"name"}).is_string()) {
        s = str(path(p, {"name"}));
      }
      ports.push_back(s);
    } else if (ports.size() == max) {
      morePorts = true;
    }
    ++portCount;
  }
  std::vector<std::string> addrs;
  bool moreAddrs = false;
  size_t addrCount = 0;
  for (const json& e : arrayOrEmpty(path(es, {"endpoints"}))) {
    for (const json& a : arrayOrEmpty(path(e, {"addresses"}))) {
      if (addrs.size() < max) {
        addrs.push_back(str(a));
      } else if (addrs.size() == max) {
        moreAddrs = true;
      }
      ++addrCount;
    }
  }
  return json::array({nameOf(es), str(path(es, {"addressType"})),
                      listWithMore(ports, morePorts, portCount, max),
                      listWithMore(addrs, moreAddrs, addrCount, max), age(es, now)});
}

// Core events and events.k8s.io events (whose fields are renamed) print alike.
json eventCells(const json& ev, long long now, bool eventsGroup) {
  auto field = [&](const char* core, const char* group) -> const json& {
    return path(ev, {eventsGroup ? group : core});
  };
  const json& firstTs = field("firstTimestamp", "deprecatedFirstTimestamp");
  const json& lastTs = field("lastTimestamp", "deprecatedLastTimestamp");
  std::string first = timeOf(firstTs) ? since(firstTs, now) : since(path(ev, {"eventTime"}), now);
  std::string last = timeOf(lastTs) ? since(lastTs, now) : first;
  long long count = integer(field("count", "deprecatedCount"));
  const json& series = path(ev, {"series"});
  if (series.is_object()) {
    last = since(path(series, {"lastObservedTime"}), now);
    count = integer(path(series, {"count"}));
  } else if (count == 0) {
    count = 1;
  }
  const json& involved = field("involvedObject", "regarding");
  std::string target = lower(str(path(involved, {"kind"})));
  if (!str(path(involved, {"name"})).empty()) target += "/" + str(path(involved, {"name"}));
  const json& source = field("source", "deprecatedSource");
  std::string component = str(path(source, {"component"}));
  if (component.empty()) component = str(path(ev, {"reportingController"}));
  std::string host = str(path(source, {"host"}));
  if (host.empty()) host = str(path(ev, {"reportingInstance"}));
  std::string sourceStr = host.empty() ? component : component + ", " + host;
  return json::array({last, str(path(ev, {"type"})), str(path(ev, {"reason"})), target,
                      str(path(involved, {"fieldPath"})), sourceStr,
                      trimSpace(str(field("message", "note"))), first, count, nameOf(ev)});
}

json deploymentCells(const json& d, long long now, json&) {
  const json& spec = path(d, {"spec"});
  const json& status = path(d, {"status"});
  long long desired = integer(path(spec, {"replicas"}), 1);
  auto [names, images] = containerCells(path(spec, {"template", "spec"}));
  auto sel = selectorString(path(spec, {"selector"}));
  return json::array({nameOf(d),
                      std::to_string(integer(path(status, {"readyReplicas"}))) + "/" +
                          std::to_string(desired),
                      integer(path(status, {"updatedReplicas"})),
                      integer(path(status, {"availableReplicas"})), age(d, now), names, images,
                      sel ? *sel : std::string("<invalid>")});
}

json replicaSetCells(const json& rs, long long now, json&) {
  const json& spec = path(rs, {"spec"});
  const json& status = path(rs, {"status"});
  auto [names, images] = containerCells(path(spec, {"template", "spec"}));
  return json::array({nameOf(rs), integer(path(spec, {"replicas"}), 1),
                      integer(path(status, {"replicas"})),
                      integer(path(status, {"readyReplicas"})), age(rs, now), names, images,
                      formatLabelSelector(path(spec, {"selector"}))});
}

json statefulSetCells(const json& ss, long long now, json&) {
  const json& spec = path(ss, {"spec"});
  auto [names, images] = containerCells(path(spec, {"template", "spec"}));
  return json::array({nameOf(ss),
                      std::to_string(integer(path(ss, {"status", "readyReplicas"}))) + "/" +
                          std::to_string(integer(path(spec, {"replicas"}), 1)),
                      age(ss, now), names, images});
}

json daemonSetCells(const json& ds, long long now, json&) {
  const json& spec = path(ds, {"spec"});
  const json& status = path(ds, {"status"});
  auto [names, images] = containerCells(path(spec, {"template", "spec"}));
  return json::array({nameOf(ds), integer(path(status, {"desiredNumberScheduled"})),
                      integer(path(status, {"currentNumberScheduled"})),
                      integer(path(status, {"numberReady"})),
                      integer(path(status, {"updatedNumberScheduled"})),
                      integer(path(status, {"numberAvailable"})),
                      formatLabels(path(spec, {"template", "spec", "nodeSelector"})), age(ds, now),
                      names, images, formatLabelSelector(path(spec, {"selector"}))});
}

json csrCells(const json& csr, long long now, json&) {
  const json& spec = path(csr, {"spec"});
  bool approved = false, denied = false, failed = false;
  for (const json& c : arrayOrEmpty(path(csr, {"status", "conditions"}))) {
    std::string type = str(path(c, {"type"}));
    approved = approved || type == "Approved";
    denied = denied || type == "Denied";
    failed = failed || type == "Failed";
  }
  std::string condition = denied ? "Denied" : approved ? "Approved" : "Pending";
  if (failed) condition += ",Failed";
  if (!str(path(csr, {"status", "certificate"})).empty()) condition += ",Issued";
  std::string signer = str(path(spec, {"signerName"}));
  if (signer.empty()) signer = "<none>";
  std::string requested = "<none>";
  if (path(spec, {"expirationSeconds"}).is_number()) {
    requested = humanDuration(integer(path(spec, {"expirationSeconds"})));
  }
  return json::array({nameOf(csr), age(csr, now), signer, str(path(spec, {"username"})),
                      requested, condition});
}

const std::map<std::string, Printer>& builtinPrinters() {
  static const std::map<std::string, Printer> kPrinters = [] {
    std::map<std::string, Printer> p;
    const std::string kContainersDoc = "Names of each container in the template.";
    const std::string kImagesDoc = "Images referenced by each container in the template.";
    p["pods"] = {
        {nameCol(),
         col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
         col("Status", "string", "The aggregate status of the containers in this pod."),
         col("Restarts", "string",
             "The number of times the containers in this pod have been restarted and when the "
             "last container in this pod has restarted."),
         ageCol(), col("IP", "string", "IP address allocated to the pod.", 1),
         col("Node", "string", "The node this pod is scheduled onto.", 1),
         col("Nominated Node", "string",
             "The node the scheduler nominated for this pod when preempting.", 1),
         col("Readiness Gates", "string", "Readiness gates of the pod that are true.", 1)},
        podCells};
    p["nodes"] = {
        {nameCol(), col("Status", "string", "The status of the node"),
         col("Roles", "string", "The roles of the node"), ageCol(),
         col("Version", "string", "Kubelet Version reported by the node."),
         col("Internal-IP", "string", "List of addresses reachable to the node.", 1),
         col("External-IP", "string", "List of addresses reachable to the node.", 1),
         col("OS-Image", "string", "OS Image reported by the node.", 1),
         col("Kernel-Version", "string", "Kernel Version reported by the node.", 1),
         col("Container-Runtime", "string", "ContainerRuntime Version reported by the node.",
             1)},
        nodeCells};
    p["namespaces"] = {{nameCol(), col("Status", "string", "The status of the namespace"),
                        ageCol()},
                       [](const json& o, long long now, json&) {
                         return json::array(
                             {nameOf(o), str(path(o, {"status", "phase"})), age(o, now)});
                       }};
    p["services"] = {
        {nameCol(), col("Type", "string", "Type determines how the Service is exposed."),
         col("Cluster-IP", "string", "The IP address of the service."),
         col("External-IP", "string", "External IPs of the service."),
         col("Port(s)", "string", "The list of ports that are exposed by this service."),
         ageCol(), col("Selector", "string", "Route service traffic to pods with these labels.", 1)},
        serviceCells};
    p["endpoints"] = {{nameCol(), col("Endpoints", "string", "The set of all endpoints."),
                       ageCol()},
                      endpointsCells};
    p["configmaps"] = {{nameCol(), col("Data", "string", "Configuration data."), ageCol()},
                       [](const json& o, long long now, json&) {
                         return json::array({nameOf(o),
                                             static_cast<long long>(sizeOf(path(o, {"data"})) +
                                                                    sizeOf(path(o, {"binaryData"}))),
                                             age(o, now)});
                       }};
    p["secrets"] = {{nameCol(), col("Type", "string", "Used to facilitate programmatic handling."),
                     col("Data", "string", "Secret data."), ageCol()},
                    [](const json& o, long long now, json&) {
                      return json::array({nameOf(o), str(path(o, {"type"})),
                                          static_cast<long long>(sizeOf(path(o, {"data"}))),
                                          age(o, now)});
                    }};
    p["serviceaccounts"] = {{nameCol(), col("Secrets", "string", "Secrets of the account."),
                             ageCol()},
                            [](const json& o, long long now, json&) {
                              return json::array(
                                  {nameOf(o), static_cast<long long>(sizeOf(path(o, {"secrets"}))),
                                   age(o, now)});
                            }};
    std::vector<Column> eventColumns = {
        col("Last Seen", "string", "The time at which the most recent occurrence was recorded."),
        col("Type", "string", "Type of this event (Normal, Warning)."),
        col("Reason", "string", "Short, machine understandable reason for the transition."),
        col("Object", "string", "The object that this event is about."),
        col("Subobject", "string", "The part of the object this event is about.", 1),
        col("Source", "string", "The component reporting this event.", 1),
        col("Message", "string", "A human-readable description of the status of this operation."),
        col("First Seen", "string", "The time at which the event was first recorded.", 1),
        col("Count", "string", "The number of times this event has occurred.", 1),
        {"Name", "string", "name", kNameDoc, 1}};
    p["events"] = {eventColumns, [](const json& o, long long now, json&) {
                     return eventCells(o, now, false);
                   }};
    p["events.events.k8s.io"] = {eventColumns, [](const json& o, long long now, json&) {
                                   return eventCells(o, now, true);
                                 }};
    p["deployments.apps"] = {
        {nameCol(), col("Ready", "string", "Number of the pod with ready state"),
         col("Up-to-date", "string", "Total number of non-terminated pods with the desired template."),
         col("Available", "string", "Total number of available pods."), ageCol(),
         col("Containers", "string", kContainersDoc, 1), col("Images", "string", kImagesDoc, 1),
         col("Selector", "string", "Label selector for pods.", 1)},
        deploymentCells};
    p["replicasets.apps"] = {
        {nameCol(), col("Desired", "integer", "Number of desired pods."),
         col("Current", "integer", "The most recently observed number of replicas."),
         col("Ready", "integer", "The number of ready replicas."), ageCol(),
         col("Containers", "string", kContainersDoc, 1), col("Images", "string", kImagesDoc, 1),
         col("Selector", "string", "Label selector for pods.", 1)},
        replicaSetCells};
    p["statefulsets.apps"] = {{nameCol(), col("Ready", "string", "Number of the pod with ready state"),
                               ageCol(), col("Containers", "string", kContainersDoc, 1),
                               col("Images", "string", kImagesDoc, 1)},
                              statefulSetCells};
    p["daemonsets.apps"] = {
        {nameCol(), col("Desired", "integer", "The total number of nodes that should run the pod."),
         col("Current", "integer", "The number of nodes running at least one daemon pod."),
         col("Ready", "integer", "The number of nodes with a ready daemon pod."),
         col("Up-to-date", "integer", "The number of nodes running the updated daemon pod."),
         col("Available", "integer", "The number of nodes with an available daemon pod."),
         col("Node Selector", "string", "Selector which must match a node's labels."), ageCol(),
         col("Containers", "string", kContainersDoc, 1), col("Images", "string", kImagesDoc, 1),
         col("Selector", "string", "Label selector for pods.", 1)},
        daemonSetCells};
    p["leases.coordination.k8s.io"] = {
        {nameCol(), col("Holder", "string", "The holder of the lease."), ageCol()},
        [](const json& o, long long now, json&) {
          return json::array({nameOf(o), str(path(o, {"spec", "holderIdentity"})), age(o, now)});
        }};
    p["endpointslices.discovery.k8s.io"] = {
        {nameCol(), col("AddressType", "string", "The type of address carried by this slice."),
         col("Ports", "string", "The network ports exposed by each endpoint."),
         col("Endpoints", "string", "The list of unique endpoints in this slice."), ageCol()},
        endpointSliceCells};
    p["certificatesigningrequests.certificates.k8s.io"] = {
        {nameCol(), ageCol(), col("SignerName", "string", "The requested signer."),
         col("Requestor", "string", "The user that created the request."),
         col("RequestedDuration", "string", "The requested validity duration."),
         col("Condition", "string", "The conditions of the request.")},
        csrCells};
    p["customresourcedefinitions.apiextensions.k8s.io"] = {
        {nameCol(), {"Created At", "date", "", kAgeDoc, 0}},
        [](const json& o, long long, json&) {
          // The default convertor prints the creation time as RFC 3339 in UTC.
          auto t = timeOf(path(o, {"metadata", "creationTimestamp"}));
          std::string created = formatRfc3339(t.value_or(kZeroTime));
          return json::array({nameOf(o), created});
        }};
    Printer webhooks = {
        {nameCol(),
         col("Webhooks", "integer",
             "Webhooks indicates the number of webhooks registered in this configuration"),
         ageCol()},
        [](const json& o, long long now, json&) {
          return json::array(
              {nameOf(o), static_cast<long long>(sizeOf(path(o, {"webhooks"}))), age(o, now)});
        }};
    p["mutatingwebhookconfigurations.admissionregistration.k8s.io"] = webhooks;
    p["validatingwebhookconfigurations.admissionregistration.k8s.io"] = webhooks;
    return p;
  }();
  return kPrinters;
}

// ---- CRD printer columns: a JSONPath subset --------------------------------------------

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

// jsonpath PrintResults for one value: compound values as compact JSON, scalars as text.
std::string printValue(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  // Compound values as JSON, numbers and booleans as Go's %v prints them.
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// cellForJSONValue of the apiextensions table convertor.
json customCell(const std::string& type, const json& v, long long now) {
  if (v.is_null()) return nullptr;
  if (type == "string") return printValue(v);
  if (type == "integer") {
    if (v.is_number()) return integer(v);
  } else if (type == "number") {
    if (v.is_number()) return v.get<double>();
  } else if (type == "boolean") {
    if (v.is_boolean()) return v;
  } else if (type == "date") {
    if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      if (s.empty() || s == "null") return "<unknown>";
      auto t = parseRfc3339(s);
      if (!t) return "<invalid>";
      return humanDuration(now - *t);
    }
  }
  return nullptr;
}

struct CustomPrinter {
  std::vector<Column> columns;
  std::vector<std::string> paths;  // one per column after Name
};

CustomPrinter customPrinter(const ResourceInfo& info) {
  CustomPrinter cp;
  cp.columns.push_back(nameCol());
  const json& cols = info.printerColumns;
  if (!cols.is_array() || cols.empty()) {
    // serveDefaultColumnsIfEmpty: Age from .metadata.creationTimestamp.
    cp.columns.push_back({"Age", "date", "", kAgeDoc, 0});
    cp.paths.push_back(".metadata.creationTimestamp");
    return cp;
  }
  for (const json& c : cols) {
    std::string jsonPath = str(path(c, {"jsonPath"}));
    std::string desc = str(path(c, {"description"}));
    if (desc.empty()) {
      desc = "Custom resource definition column (in JSONPath format): " + jsonPath;
    }
    cp.columns.push_back({str(path(c, {"name"})), str(path(c, {"type"})),
                          str(path(c, {"format"})), desc,
                          static_cast<int>(integer(path(c, {"priority"})))});
    cp.paths.push_back(jsonPath);
  }
  return cp;
}

json customCells(const CustomPrinter& cp, const json& obj, long long now) {
  json cells = json::array({nameOf(obj)});
  for (size_t i = 0; i < cp.paths.size(); ++i) {
    auto results = JsonPath::eval(cp.paths[i], obj);
    if (!results || results->empty()) {
      cells.push_back(nullptr);
      continue;
    }
    cells.push_back(customCell(cp.columns[i + 1].type, *results->front(), now));
  }
  return cells;
}

json rowObject(const json& obj, const std::string& includeObject) {
  if (includeObject == "Object") return obj;
  json meta = path(obj, {"metadata"});
  if (!meta.is_object()) meta = json::object();
  return {{"kind", "PartialObjectMetadata"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", std::move(meta)}};
}

}  // namespace

std::string humanDuration(long long seconds) {
  // Upstream tolerates up to 1s of clock skew as "0s"; further into the future is invalid.
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return std::to_string(seconds) + "s";
  const long long minutes = seconds / 60;
  if (minutes < 10) {
    const long long s = seconds % 60;
    return s == 0 ? std::to_string(minutes) + "m"
                  : std::to_string(minutes) + "m" + std::to_string(s) + "s";
  }
  if (minutes < 60 * 3) return std::to_string(minutes) + "m";
  const long long hours = seconds / 3600;
  if (hours < 8) {
    const long long m = minutes % 60;
    return m == 0 ? std::to_string(hours) + "h"
                  : std::to_string(hours) + "h" + std::to_string(m) + "m";
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    const long long h = hours % 24;
    return h == 0 ? std::to_string(hours / 24) + "d"
                  : std::to_string(hours / 24) + "d" + std::to_string(h) + "h";
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    const long long dy = (hours / 24) % 365;
    return dy == 0 ? std::to_string(hours / 24 / 365) + "y"
                   : std::to_string(hours / 24 / 365) + "y" + std::to_string(dy) + "d";
  }
  return std::to_string(hours / 24 / 365) + "y";
}

json makeTable(const ResourceInfo& info, const std::vector<json>& objects, const json& listMeta,
               const std::string& includeObject, long long now) {
  std::vector<Column> columns;
  std::function<json(const json&, json&)> cellsOf;

  std::optional<CustomPrinter> custom;
  const Printer* builtin = nullptr;
  if (info.custom) {
    custom = customPrinter(info);
    columns = custom->columns;
    cellsOf = [&](const json& obj, json&) { return customCells(*custom, obj, now); };
  } else if (auto it = builtinPrinters().find(info.groupResource());
             it != builtinPrinters().end()) {
    builtin = &it->second;
    columns = builtin->columns;
    cellsOf = [&](const json& obj, json& conditions) {
      return builtin->cells(obj, now, conditions);
    };
  } else {
    columns = {nameCol(), ageCol()};
    cellsOf = [&](const json& obj, json&) { return json::array({nameOf(obj), age(obj, now)}); };
  }

  json table = {{"kind", "Table"}, {"apiVersion", "meta.k8s.io/v1"}};
  table["metadata"] = listMeta.is_object() ? listMeta : json::object();
  json defs = json::array();
  for (const Column& c : columns) defs.push_back(columnJson(c));
  table["columnDefinitions"] = std::move(defs);
  json rows = json::array();
  for (const json& obj : objects) {
    json conditions;
    json row = {{"cells", cellsOf(obj, conditions)}};
    if (conditions.is_array()) row["conditions"] = std::move(conditions);
    if (includeObject != "None") row["object"] = rowObject(obj, includeObject);
    rows.push_back(std::move(row));
  }
  table["rows"] = std::move(rows);
  return table;
}

}  // namespace strait::minicluster
