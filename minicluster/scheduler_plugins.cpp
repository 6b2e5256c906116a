// Filter and score plugins of the minicluster scheduler (see scheduler_plugins.h). Reason
// strings and weights follow kube-scheduler's default profile.
#include "minicluster/scheduler_plugins.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace strait::minicluster::sched {
namespace {

using kube::Code;
using kube::makeError;
using kube::Quantity;

std::map<std::string, std::string> stringMap(const json& j) {
  std::map<std::string, std::string> out;
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

Quantity plus(const Quantity& a, const Quantity& b) {
  auto r = a.add(b);
  return r ? *r : a;  // only fails beyond 36 digits: keep the larger operand
}

Quantity minus(const Quantity& a, const Quantity& b) {
  auto r = a.sub(b);
  return r ? *r : a;
}

void addList(ResourceList& into, const ResourceList& from) {
  for (const auto& [k, v] : from) into[k] = plus(into[k], v);
}

// Requests of one container: requests, else limits (the API server defaults requests from
// limits).
kube::Result<ResourceList> containerRequests(const json& c, const std::string& where) {
  ResourceList out;
  if (!c.is_object() || !c.contains("resources") || !c["resources"].is_object()) return out;
  const json& r = c["resources"];
  for (const char* part : {"limits", "requests"}) {
    if (!r.contains(part) || !r[part].is_object()) continue;
    auto l = kube::parseResourceList(r[part]);
    if (!l) {
      return makeError(Code::Invalid, where + ".resources." + part + ": " + l.error().message);
    }
    for (auto& [k, v] : *l) out[k] = v;  // requests (second) override limits
  }
  return out;
}

const Quantity& get(const ResourceList& l, const std::string& k) {
  static const Quantity zero;
  auto it = l.find(k);
  return it == l.end() ? zero : it->second;
}

bool matchRequirement(const json& req, const std::map<std::string, std::string>& labels,
                      const std::string& nodeName, bool field) {
  if (!req.is_object()) return false;
  std::string key = req.value("key", "");
  std::string op = req.value("operator", "");
  std::vector<std::string> values;
  if (req.contains("values") && req["values"].is_array()) {
    for (const auto& v : req["values"]) {
      if (v.is_string()) values.push_back(v);
    }
  }
  std::optional<std::string> actual;
  if (field) {
    if (key == "metadata.name") actual = nodeName;
  } else if (auto it = labels.find(key); it != labels.end()) {
    actual = it->second;
  }
  auto in = [&] { return actual && std::find(values.begin(), values.end(), *actual) != values.end(); };
  if (op == "In") return in();
  if (op == "NotIn") return !in();
  if (op == "Exists") return actual.has_value();
  if (op == "DoesNotExist") return !actual.has_value();
  if ((op == "Gt" || op == "Lt") && actual && values.size() == 1) {
    try {
      long long a = std::stoll(*actual), b = std::stoll(values[0]);
      return op == "Gt" ? a > b : a < b;
    } catch (...) {
      return false;
    }
  }
  return false;
}

bool matchTerm(const json& term, const std::map<std::string, std::string>& labels,
               const std::string& nodeName) {
  if (!term.is_object()) return false;
  bool any = false;
  for (const char* part : {"matchExpressions", "matchFields"}) {
    if (!term.contains(part) || !term[part].is_array()) continue;
    for (const auto& r : term[part]) {
      any = true;
      if (!matchRequirement(r, labels, nodeName, std::string(part) == "matchFields")) return false;
    }
  }
  return any;  // an empty term matches nothing
}

FilterStatus fail(std::string reason, bool unresolvable) {
  FilterStatus s;
  s.fits = false;
  s.unresolvable = unresolvable;
  s.reasons.push_back(std::move(reason));
  return s;
}

int64_t ratioScore(int64_t requested, int64_t capacity) {
  if (capacity <= 0 || requested > capacity) return 0;
  return (capacity - requested) * 100 / capacity;
}

}  // namespace

bool Toleration::tolerates(const Taint& t) const {
  if (!effect.empty() && effect != t.effect) return false;
  if (op == "Exists") return key.empty() || key == t.key;
  return key == t.key && value == t.value;
}

bool matchesNodeSelectorTerms(const json& terms, const std::map<std::string, std::string>& labels,
                              const std::string& nodeName) {
  if (!terms.is_array()) return false;
  for (const auto& t : terms) {
    if (matchTerm(t, labels, nodeName)) return true;
  }
  return false;
}

kube::Result<ResourceList> podRequests(const json& spec) {
  ResourceList sum;
  if (!spec.is_object()) return sum;
  if (spec.contains("containers") && spec["containers"].is_array()) {
    size_t i = 0;
    for (const auto& c : spec["containers"]) {
      auto r = containerRequests(c, "spec.containers[" + std::to_string(i++) + "]");
      if (!r) return r.error();
      addList(sum, *r);
    }
  }
  if (spec.contains("initContainers") && spec["initContainers"].is_array()) {
    // Sidecars (restartPolicy Always) keep running: they add to everything after them.
    ResourceList sidecars;
    size_t i = 0;
    for (const auto& c : spec["initContainers"]) {
      auto r = containerRequests(c, "spec.initContainers[" + std::to_string(i++) + "]");
      if (!r) return r.error();
      if (c.is_object() && c.value("restartPolicy", "") == "Always") {
        addList(sidecars, *r);
        continue;
      }
      ResourceList during = *r;
      addList(during, sidecars);
      for (const auto& [k, v] : during) {
        if (get(sum, k) < v) sum[k] = v;
      }
    }
    addList(sum, sidecars);
  }
  if (spec.contains("overhead") && spec["overhead"].is_object()) {
    auto o = kube::parseResourceList(spec["overhead"]);
    if (!o) return makeError(Code::Invalid, "spec.overhead: " + o.error().message);
    addList(sum, *o);
  }
  for (auto it = sum.begin(); it != sum.end();) {
    it = it->second.isZero() ? sum.erase(it) : std::next(it);
  }
  return sum;
}

kube::Result<PodInfo> parsePod(const json& pod) {
  PodInfo p;
  const json& meta = pod.contains("metadata") ? pod["metadata"] : json::object();
  const json& spec = pod.contains("spec") ? pod["spec"] : json::object();
  p.ns = meta.value("namespace", "");
  p.name = meta.value("name", "");
  p.uid = meta.value("uid", "");
  p.labels = stringMap(meta.value("labels", json::object()));
  p.deleting = meta.contains("deletionTimestamp");
  if (!spec.is_object()) return p;
  p.nodeName = spec.value("nodeName", "");
  p.schedulerName = spec.value("schedulerName", "default-scheduler");
  auto req = podRequests(spec);
  if (!req) return req.error();
  p.requests = std::move(*req);
  p.nodeSelector = stringMap(spec.value("nodeSelector", json::object()));
  if (spec.contains("affinity") && spec["affinity"].is_object()) {
    const json& na = spec["affinity"].value("nodeAffinity", json::object());
    if (na.is_object()) {
      const json& rq = na.value("requiredDuringSchedulingIgnoredDuringExecution", json::object());
      if (rq.is_object() && rq.contains("nodeSelectorTerms")) p.requiredTerms = rq["nodeSelectorTerms"];
      const json& pf = na.value("preferredDuringSchedulingIgnoredDuringExecution", json::array());
      if (pf.is_array()) p.preferredTerms = pf;
    }
  }
  if (spec.contains("tolerations") && spec["tolerations"].is_array()) {
    for (const auto& t : spec["tolerations"]) {
      if (!t.is_object()) continue;
      Toleration tol;
      tol.key = t.value("key", "");
      tol.op = t.value("operator", "Equal");
      tol.value = t.value("value", "");
      tol.effect = t.value("effect", "");
      if (t.contains("tolerationSeconds") && t["tolerationSeconds"].is_number_integer()) {
        tol.tolerationSeconds = t["tolerationSeconds"].get<int64_t>();
      }
      p.tolerations.push_back(tol);
    }
  }
  if (spec.contains("topologySpreadConstraints") && spec["topologySpreadConstraints"].is_array()) {
    size_t i = 0;
    for (const auto& c : spec["topologySpreadConstraints"]) {
      std::string where = "spec.topologySpreadConstraints[" + std::to_string(i++) + "]";
      if (!c.is_object()) continue;
      SpreadConstraint sc;
      sc.maxSkew = c.value("maxSkew", int64_t{1});
      sc.topologyKey = c.value("topologyKey", "");
      sc.doNotSchedule = c.value("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule";
      sc.minDomains = c.value("minDomains", int64_t{1});
      if (c.contains("labelSelector")) {
        auto sel = kube::LabelSelector::fromJson(c["labelSelector"]);
        if (!sel) return makeError(Code::Invalid, where + ".labelSelector: " + sel.error().message);
        sc.selector = *sel;
      } else {
        sc.selector = kube::LabelSelector::nothing();
      }
      p.spread.push_back(std::move(sc));
    }
  }
  std::string phase = pod.contains("status") && pod["status"].is_object()
                          ? pod["status"].value("phase", "")
                          : "";
  p.terminal = phase == "Succeeded" || phase == "Failed";
  return p;
}

NodeInfo parseNode(const json& node) {
  NodeInfo n;
  const json& meta = node.value("metadata", json::object());
  n.name = meta.value("name", "");
  n.labels = stringMap(meta.value("labels", json::object()));
  const json& spec = node.value("spec", json::object());
  if (spec.is_object()) {
    n.unschedulable = spec.value("unschedulable", false);
    if (spec.contains("taints") && spec["taints"].is_array()) {
      for (const auto& t : spec["taints"]) {
        if (!t.is_object()) continue;
        n.taints.push_back({t.value("key", ""), t.value("value", ""), t.value("effect", ""),
                            t.value("timeAdded", "")});
      }
    }
  }
  const json& status = node.value("status", json::object());
  if (status.is_object()) {
    const char* field = status.contains("allocatable") ? "allocatable" : "capacity";
    if (status.contains(field)) {
      auto l = kube::parseResourceList(status[field]);
      if (l) n.allocatable = std::move(*l);
    }
  }
  return n;
}

void addPod(NodeInfo& node, const PodInfo& pod) {
  addList(node.requested, pod.requests);
  ++node.podCount;
  node.podLabels.emplace_back(pod.ns, pod.labels);
}

void removePod(NodeInfo& node, const PodInfo& pod) {
  for (const auto& [k, v] : pod.requests) node.requested[k] = minus(node.requested[k], v);
  --node.podCount;
  for (auto it = node.podLabels.begin(); it != node.podLabels.end(); ++it) {
    if (it->first == pod.ns && it->second == pod.labels) {
      node.podLabels.erase(it);
      break;
    }
  }
}

FilterStatus filterNodeUnschedulable(const PodInfo& pod, const NodeInfo& node) {
  if (!node.unschedulable) return {};
  Taint t{"node.kubernetes.io/unschedulable", "", "NoSchedule", ""};
  for (const auto& tol : pod.tolerations) {
    if (tol.tolerates(t)) return {};
  }
  return fail("node(s) were unschedulable", true);
}

FilterStatus filterNodeName(const PodInfo& pod, const NodeInfo& node) {
  if (pod.nodeName.empty() || pod.nodeName == node.name) return {};
  return fail("node(s) didn't match the requested node name", true);
}

FilterStatus filterTaintToleration(const PodInfo& pod, const NodeInfo& node) {
  for (const auto& t : node.taints) {
    if (t.effect != "NoSchedule" && t.effect != "NoExecute") continue;
    bool ok = std::any_of(pod.tolerations.begin(), pod.tolerations.end(),
                          [&](const Toleration& tol) { return tol.tolerates(t); });
    if (!ok) return fail("node(s) had untolerated taint {" + t.key + ": " + t.value + "}", true);
  }
  return {};
}

FilterStatus filterNodeAffinity(const PodInfo& pod, const NodeInfo& node) {
  for (const auto& [k, v] : pod.nodeSelector) {
    auto it = node.labels.find(k);
    if (it == node.labels.end() || it->second != v) {
      return fail("node(s) didn't match Pod's node affinity/selector", true);
    }
  }
  if (pod.requiredTerms.is_array() && !pod.requiredTerms.empty() &&
      !matchesNodeSelectorTerms(pod.requiredTerms, node.labels, node.name)) {
    return fail("node(s) didn't match Pod's node affinity/selector", true);
  }
  return {};
}

FilterStatus filterNodeResourcesFit(const PodInfo& pod, const NodeInfo& node) {
  FilterStatus s;
  auto allowedPods = get(node.allocatable, "pods").value();
  if (node.podCount + 1 > allowedPods) s.reasons.push_back("Too many pods");
  // cpu, memory, ephemeral-storage first (upstream order), then extended resources sorted.
  std::vector<std::string> order = {"cpu", "memory", "ephemeral-storage"};
  for (const auto& [k, v] : pod.requests) {
    if (k != "cpu" && k != "memory" && k != "ephemeral-storage" && k != "pods") order.push_back(k);
  }
  for (const auto& k : order) {
    const Quantity& want = get(pod.requests, k);
    if (want.isZero()) continue;
    Quantity free = minus(get(node.allocatable, k), get(node.requested, k));
    if (free < want) s.reasons.push_back("Insufficient " + k);
  }
  s.fits = s.reasons.empty();
  return s;
}

SpreadState prepareTopologySpread(const PodInfo& pod, const std::vector<const NodeInfo*>& nodes) {
  SpreadState s;
  s.counts.resize(pod.spread.size());
  if (pod.spread.empty()) return s;
  for (const NodeInfo* n : nodes) {
    if (!filterNodeAffinity(pod, *n).fits) continue;
    bool hasAll = std::all_of(pod.spread.begin(), pod.spread.end(), [&](const SpreadConstraint& c) {
      return n->labels.count(c.topologyKey) > 0;
    });
    if (!hasAll) continue;
    for (size_t i = 0; i < pod.spread.size(); ++i) {
      const auto& c = pod.spread[i];
      int64_t& count = s.counts[i][n->labels.at(c.topologyKey)];
      for (const auto& [ns, labels] : n->podLabels) {
        if (ns == pod.ns && c.selector.matches(labels)) ++count;
      }
    }
  }
  return s;
}

FilterStatus filterTopologySpread(const PodInfo& pod, const NodeInfo& node, const SpreadState& s) {
  for (size_t i = 0; i < pod.spread.size(); ++i) {
    const auto& c = pod.spread[i];
    if (!c.doNotSchedule) continue;
    auto it = node.labels.find(c.topologyKey);
    if (it == node.labels.end()) {
      return fail("node(s) didn't match pod topology spread constraints (missing required label)",
                  true);
    }
    const auto& counts = s.counts[i];
    int64_t minCount = 0;
    if (!counts.empty() && static_cast<int64_t>(counts.size()) >= c.minDomains) {
      minCount = std::min_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
                   return a.second < b.second;
                 })->second;
    }
    auto here = counts.find(it->second);
    int64_t matchNum = here == counts.end() ? 0 : here->second;
    int64_t self = c.selector.matches(pod.labels) ? 1 : 0;
    if (matchNum + self - minCount > c.maxSkew) {
      return fail("node(s) didn't match pod topology spread constraints", false);
    }
  }
  return {};
}

FilterStatus runFilters(const PodInfo& pod, const NodeInfo& node, const SpreadState& s) {
  FilterStatus r = filterNodeUnschedulable(pod, node);
  if (!r.fits) return r;
  if (r = filterNodeName(pod, node); !r.fits) return r;
  if (r = filterTaintToleration(pod, node); !r.fits) return r;
  if (r = filterNodeAffinity(pod, node); !r.fits) return r;
  if (r = filterNodeResourcesFit(pod, node); !r.fits) return r;
  return filterTopologySpread(pod, node, s);
}

namespace {
// Requests used for scoring: upstream gives request-less pods 100m CPU and 200Mi memory.
std::pair<int64_t, int64_t> scoringRequest(const PodInfo& pod) {
  int64_t cpu = get(pod.requests, "cpu").milliValue();
  int64_t mem = get(pod.requests, "memory").value();
  if (cpu == 0) cpu = 100;
  if (mem == 0) mem = 200LL * 1024 * 1024;
  return {cpu, mem};
}
}  // namespace

int64_t scoreLeastAllocated(const PodInfo& pod, const NodeInfo& node) {
  auto [cpu, mem] = scoringRequest(pod);
  int64_t c = ratioScore(get(node.requested, "cpu").milliValue() + cpu,
                         get(node.allocatable, "cpu").milliValue());
  int64_t m = ratioScore(get(node.requested, "memory").value() + mem,
                         get(node.allocatable, "memory").value());
  return (c + m) / 2;
}

int64_t scoreBalancedAllocation(const PodInfo& pod, const NodeInfo& node) {
  auto [cpu, mem] = scoringRequest(pod);
  double capC = static_cast<double>(get(node.allocatable, "cpu").milliValue());
  double capM = static_cast<double>(get(node.allocatable, "memory").value());
  if (capC <= 0 || capM <= 0) return 0;
  double fc = std::min(1.0, (get(node.requested, "cpu").milliValue() + cpu) / capC);
  double fm = std::min(1.0, (get(node.requested, "memory").value() + mem) / capM);
  double std = std::abs(fc - fm) / 2;  // standard deviation of two fractions
  return static_cast<int64_t>((1 - std) * 100);
}

int64_t countIntolerablePreferNoSchedule(const PodInfo& pod, const NodeInfo& node) {
  int64_t n = 0;
  for (const auto& t : node.taints) {
    if (t.effect != "PreferNoSchedule") continue;
    bool ok = std::any_of(pod.tolerations.begin(), pod.tolerations.end(), [&](const Toleration& tol) {
      return (tol.effect.empty() || tol.effect == "PreferNoSchedule") && tol.tolerates(t);
    });
    if (!ok) ++n;
  }
  return n;
}

int64_t scoreNodeAffinityRaw(const PodInfo& pod, const NodeInfo& node) {
  int64_t sum = 0;
  if (!pod.preferredTerms.is_array()) return 0;
  for (const auto& p : pod.preferredTerms) {
    if (!p.is_object() || !p.contains("preference")) continue;
    if (matchTerm(p["preference"], node.labels, node.name)) sum += p.value("weight", int64_t{0});
  }
  return sum;
}

int64_t scoreTopologySpreadRaw(const PodInfo& pod, const NodeInfo& node, const SpreadState& s) {
  int64_t sum = 0;
  for (size_t i = 0; i < pod.spread.size(); ++i) {
    const auto& c = pod.spread[i];
    if (c.doNotSchedule) continue;
    auto it = node.labels.find(c.topologyKey);
    if (it == node.labels.end()) continue;
    auto here = s.counts[i].find(it->second);
    if (here != s.counts[i].end()) sum += here->second;
  }
  return sum;
}

std::vector<int64_t> scoreNodes(const PodInfo& pod, const std::vector<const NodeInfo*>& feasible,
                                const SpreadState& s) {
  const size_t n = feasible.size();
  std::vector<int64_t> taint(n), affinity(n), spread(n), total(n);
  int64_t maxTaint = 0, maxAffinity = 0, maxSpread = 0;
  for (size_t i = 0; i < n; ++i) {
    taint[i] = countIntolerablePreferNoSchedule(pod, *feasible[i]);
    affinity[i] = scoreNodeAffinityRaw(pod, *feasible[i]);
    spread[i] = scoreTopologySpreadRaw(pod, *feasible[i], s);
    maxTaint = std::max(maxTaint, taint[i]);
    maxAffinity = std::max(maxAffinity, affinity[i]);
    maxSpread = std::max(maxSpread, spread[i]);
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t t = maxTaint == 0 ? 100 : 100 - taint[i] * 100 / maxTaint;
    int64_t a = maxAffinity == 0 ? 0 : affinity[i] * 100 / maxAffinity;
    int64_t sp = maxSpread == 0 ? 100 : 100 - spread[i] * 100 / maxSpread;
    total[i] = scoreLeastAllocated(pod, *feasible[i]) + scoreBalancedAllocation(pod, *feasible[i]) +
               3 * t + 2 * a + 2 * sp;
  }
  return total;
}

std::string fitErrorMessage(size_t numNodes, const std::vector<FilterStatus>& statuses) {
  std::map<std::string, int64_t> reasons;
  int64_t noVictims = 0, notHelpful = 0;
  for (const auto& s : statuses) {
    for (const auto& r : s.reasons) ++reasons[r];
    (s.unresolvable ? notHelpful : noVictims) += 1;
  }
  std::vector<std::string> parts;
  for (const auto& [r, n] : reasons) parts.push_back(std::to_string(n) + " " + r);
  std::sort(parts.begin(), parts.end());
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& p : v) out += (out.empty() ? "" : ", ") + p;
    return out;
  };
  std::string head = "0/" + std::to_string(numNodes) + " nodes are available:";
  std::string msg = head;
  if (!parts.empty()) msg += " " + join(parts) + ".";
  std::vector<std::string> pre;
  if (noVictims) pre.push_back(std::to_string(noVictims) + " No preemption victims found for incoming pod");
  if (notHelpful) pre.push_back(std::to_string(notHelpful) + " Preemption is not helpful for scheduling");
  std::sort(pre.begin(), pre.end());
  std::string post = "preemption: " + head;
  if (!pre.empty()) post += " " + join(pre) + ".";
  msg += " " + post + ".";
  return msg;
}

}  // namespace strait::minicluster::sched
