#include "minicluster/pod_util.h"

#include "kube/json_access.h"
#include "kube/object.h"

namespace strait::minicluster {
namespace {

using json = nlohmann::json;
using kube::child;
using kube::stringOf;

const json* readyCondition(const json& pod) {
  const json& st = child(pod, "status");
  auto it = st.find("conditions");
  if (it == st.end() || !it->is_array()) return nullptr;
  for (const auto& c : *it) {
    if (c.is_object() && stringOf(c, "type") == "Ready") return &c;
  }
  return nullptr;
}

int phaseRank(const json& pod) {
  std::string phase = stringOf(child(pod, "status"), "phase");
  if (phase == "Pending" || phase.empty()) return 0;
  if (phase == "Unknown") return 1;
  if (phase == "Running") return 2;
  return 3;
}

}  // namespace

bool isPodActive(const json& pod) {
  std::string phase = stringOf(child(pod, "status"), "phase");
  return phase != "Succeeded" && phase != "Failed" && !kube::isBeingDeleted(pod);
}

bool isPodReady(const json& pod) {
  const json* c = readyCondition(pod);
  return c && stringOf(*c, "status") == "True";
}

std::optional<std::chrono::system_clock::time_point> podReadySince(const json& pod) {
  const json* c = readyCondition(pod);
  if (!c || stringOf(*c, "status") != "True") return std::nullopt;
  auto t = kube::parseRfc3339(stringOf(*c, "lastTransitionTime"));
  if (!t) return std::chrono::system_clock::time_point{};  // ready, time unknown: long ago
  return *t;
}

bool isPodAvailable(const json& pod, int64_t minReadySeconds,
                    std::chrono::system_clock::time_point now) {
  auto since = podReadySince(pod);
  if (!since) return false;
  if (minReadySeconds <= 0) return true;
  return *since + std::chrono::seconds(minReadySeconds) <= now;
}

int64_t podRestarts(const json& pod) {
  const json& st = child(pod, "status");
  auto it = st.find("containerStatuses");
  int64_t n = 0;
  if (it == st.end() || !it->is_array()) return 0;
  for (const auto& c : *it) {
    if (c.is_object() && c.contains("restartCount") && c["restartCount"].is_number_integer()) {
      n += c["restartCount"].get<int64_t>();
    }
  }
  return n;
}

bool deleteBefore(const json& a, const json& b) {
  bool aAssigned = !stringOf(child(a, "spec"), "nodeName").empty();
  bool bAssigned = !stringOf(child(b, "spec"), "nodeName").empty();
  if (aAssigned != bAssigned) return !aAssigned;
  int pa = phaseRank(a), pb = phaseRank(b);
  if (pa != pb) return pa < pb;
  bool ra = isPodReady(a), rb = isPodReady(b);
  if (ra != rb) return !ra;
  if (ra && rb) {
    auto ta = podReadySince(a), tb = podReadySince(b);
    if (ta && tb && *ta != *tb) return *ta > *tb;  // ready for less time first
  }
  int64_t xa = podRestarts(a), xb = podRestarts(b);
  if (xa != xb) return xa > xb;
  std::string ca = kube::getCreationTimestamp(a).value_or("");
  std::string cb = kube::getCreationTimestamp(b).value_or("");
  if (ca != cb) return ca > cb;  // RFC 3339 in UTC sorts as text: newer first
  return kube::getName(a) < kube::getName(b);
}

}  // namespace strait::minicluster
