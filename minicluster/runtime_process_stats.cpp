// The process runtime's resource usage (see runtime_process_kubelets.h): each node's kubelet
// stats Summary from its running containers' cgroups (or /proc when cgroups are unusable),
// and the cgroup hooks the Pod lifecycle calls.
#include "minicluster/runtime_process_kubelets.h"

namespace strait::minicluster::process_kubelets {

namespace {
// A CPU rate needs two samples this far apart; a request without one waits this long once.
constexpr std::chrono::milliseconds kRateInterval{500};

std::string instanceKey(const std::string& uid, const std::string& name, int restart) {
  return uid + "/" + name + "/" + std::to_string(restart);
}
}  // namespace

kube::Result<std::vector<std::string>> ProcessKubeletsImpl::joinCgroups(const ProcPod& p,
                                                                         const json& spec) {
  if (!cgroups_) return std::vector<std::string>{};
  const std::string name = spec.value("name", "");
  auto procs = cgroups_->prepareContainer(p.sim.uid, name, containerLimits(spec));
  if (!procs) {
    spdlog::warn("event=cgroup_failed pod={}/{} container={} error=\"{}\"", p.sim.ns, p.sim.name,
                 name, procs.error().message);
  }
  return procs;
}

std::string ProcessKubeletsImpl::exitReason(const ProcPod& p, const std::string& container) const {
  if (cgroups_ && cgroups_->oomKills(p.sim.uid, container) > 0) return "OOMKilled";
  return {};
}

void ProcessKubeletsImpl::removeCgroups(const ProcPod& p) {
  if (cgroups_) cgroups_->removePod(p.sim.uid);
}

kube::Result<json> ProcessKubeletsImpl::statsSummary(const std::string& nodeAddress) {
  const Node* node = nullptr;
  for (const auto& [name, n] : nodes_) {
    if (n.address == nodeAddress || (nodeAddress.empty() && nodes_.size() == 1)) node = &n;
  }
  if (!node) {
    return makeError(Code::NotFound, "no process-runtime node serves at \"" + nodeAddress + "\"");
  }
  struct Running {
    size_t pod;
    std::string container;
    pid_t pid;
  };
  std::vector<PodStats> pods;
  std::vector<Running> running;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [key, p] : pods_) {
      if (p.sim.node != node->name) continue;
      PodStats ps;
      ps.ns = p.sim.ns;
      ps.name = p.sim.name;
      ps.uid = p.sim.uid;
      ps.startTime = p.sim.startTime;
      for (size_t i = 0; i < p.procs.size() && i < p.sim.containers.size(); ++i) {
        const SimContainer& c = p.sim.containers[i];
        if (p.procs[i].pid <= 0 || !c.startedAt || c.finishedAt) continue;
        ContainerStats cs;
        cs.name = c.name;
        cs.instance = instanceKey(p.sim.uid, c.name, c.restartCount);
        cs.startTime = *c.startedAt;
        ps.containers.push_back(std::move(cs));
        running.push_back({pods.size(), c.name, p.procs[i].pid});
      }
      pods.push_back(std::move(ps));
    }
  }
  auto sample = [&] {
    std::vector<size_t> next(pods.size(), 0);
    for (const Running& r : running) {
      PodStats& ps = pods[r.pod];
      ContainerStats& cs = ps.containers[next[r.pod]++];
      cs.usage = cgroups_ && cgroups_->mode() != CgroupMode::None
                     ? cgroups_->sampleContainer(ps.uid, r.container)
                     : sampleSession(r.pid);
    }
  };
  sample();
  auto steadyNow = Steady::now();
  bool waited = false;
  for (const auto& ps : pods) {
    for (const auto& cs : ps.containers) {
      if (waited || !cs.usage.cpuNs || rates_.hasBaseline(cs.instance, steadyNow)) continue;
      // The first request for this instance: record a sample and take the next one later.
      for (const auto& ps2 : pods) {
        for (const auto& cs2 : ps2.containers) {
          if (cs2.usage.cpuNs) rates_.rate(cs2.instance, steadyNow, *cs2.usage.cpuNs);
        }
      }
      std::this_thread::sleep_for(kRateInterval);
      sample();
      steadyNow = Steady::now();
      waited = true;
    }
  }
  rates_.forgetOlderThan(steadyNow - std::chrono::minutes(10));
  return buildStatsSummary(node->name, startedAt_, pods, SysClock::now(), steadyNow, rates_);
}

}  // namespace strait::minicluster::process_kubelets
