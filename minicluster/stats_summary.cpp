// The kubelet stats Summary from usage samples (see stats_summary.h).
#include "minicluster/stats_summary.h"

#include "kube/time.h"

namespace strait::minicluster {
namespace {

using nlohmann::json;
using Steady = std::chrono::steady_clock;

// Sums of optional figures: known only when every part is known.
struct Totals {
  std::optional<uint64_t> nanoCores = 0, cpuNs = 0, usage = 0, workingSet = 0, rss = 0;
  void add(const std::optional<uint64_t>& v, std::optional<uint64_t>& total) {
    if (total && v) {
      *total += *v;
    } else {
      total.reset();
    }
  }
  void add(const Totals& o) {
    add(o.nanoCores, nanoCores);
    add(o.cpuNs, cpuNs);
    add(o.usage, usage);
    add(o.workingSet, workingSet);
    add(o.rss, rss);
  }
};

json cpuJson(const Totals& t, const std::string& time) {
  json cpu = {{"time", time}};
  if (t.nanoCores) cpu["usageNanoCores"] = *t.nanoCores;
  if (t.cpuNs) cpu["usageCoreNanoSeconds"] = *t.cpuNs;
  return cpu;
}

json memoryJson(const Totals& t, const std::string& time) {
  json m = {{"time", time}};
  if (t.usage) m["usageBytes"] = *t.usage;
  if (t.workingSet) m["workingSetBytes"] = *t.workingSet;
  if (t.rss) m["rssBytes"] = *t.rss;
  return m;
}

}  // namespace

bool CpuRateTracker::hasBaseline(const std::string& instance, Steady::time_point now) const {
  base::MutexLock l(mu_);
  auto it = history_.find(instance);
  if (it == history_.end()) return false;
  for (const auto& s : {it->second.newer, it->second.older}) {
    if (s && now - s->at >= minInterval_) return true;
  }
  return false;
}

std::optional<uint64_t> CpuRateTracker::rate(const std::string& instance, Steady::time_point now,
                                             uint64_t cpuNs) {
  base::MutexLock l(mu_);
  History& h = history_[instance];
  std::optional<Sample> base;
  if (h.newer && now - h.newer->at >= minInterval_) {
    base = h.newer;
  } else if (h.older && now - h.older->at >= minInterval_) {
    base = h.older;
  }
  // Keep the newest sample, and the one before it only while it is the usable baseline.
  if (!h.newer || now - h.newer->at >= minInterval_) {
    h.older = h.newer;
    h.newer = Sample{now, cpuNs};
  }
  if (!base || cpuNs < base->cpuNs) return std::nullopt;
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - base->at).count();
  if (ns <= 0) return std::nullopt;
  long double r = static_cast<long double>(cpuNs - base->cpuNs) * 1e9L / static_cast<long double>(ns);
  return static_cast<uint64_t>(r);
}

void CpuRateTracker::forgetOlderThan(Steady::time_point before) {
  base::MutexLock l(mu_);
  for (auto it = history_.begin(); it != history_.end();) {
    if (!it->second.newer || it->second.newer->at < before) {
      it = history_.erase(it);
    } else {
      ++it;
    }
  }
}

json buildStatsSummary(const std::string& nodeName, std::chrono::system_clock::time_point nodeStart,
                       const std::vector<PodStats>& pods, std::chrono::system_clock::time_point now,
                       Steady::time_point steadyNow, CpuRateTracker& rates) {
  const std::string time = kube::rfc3339(now);
  json podsJson = json::array();
  Totals node;
  for (const PodStats& p : pods) {
    Totals pod;
    json containers = json::array();
    for (const ContainerStats& c : p.containers) {
      Totals t;
      t.cpuNs = c.usage.cpuNs;
      t.nanoCores = c.usage.cpuNs ? rates.rate(c.instance, steadyNow, *c.usage.cpuNs)
                                  : std::nullopt;
      t.usage = c.usage.memoryUsage;
      t.workingSet = c.usage.workingSet;
      t.rss = c.usage.rss;
      pod.add(t);
      containers.push_back(json{{"name", c.name},
                                {"startTime", kube::rfc3339(c.startTime)},
                                {"cpu", cpuJson(t, time)},
                                {"memory", memoryJson(t, time)}});
    }
    node.add(pod);
    podsJson.push_back(json{{"podRef", {{"name", p.name}, {"namespace", p.ns}, {"uid", p.uid}}},
                            {"startTime", kube::rfc3339(p.startTime)},
                            {"containers", std::move(containers)},
                            {"cpu", cpuJson(pod, time)},
                            {"memory", memoryJson(pod, time)}});
  }
  return json{{"node",
               {{"nodeName", nodeName},
                {"startTime", kube::rfc3339(nodeStart)},
                {"cpu", cpuJson(node, time)},
                {"memory", memoryJson(node, time)}}},
              {"pods", std::move(podsJson)}};
}

}  // namespace strait::minicluster
