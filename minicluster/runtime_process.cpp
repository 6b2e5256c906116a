// The process runtime's kubelets (see runtime_process_kubelets.h): start and stop, the
// nodes (registration, leases, status), and the loop that drives every Pod.
#include "minicluster/runtime_process_kubelets.h"

namespace strait::minicluster {
namespace process_kubelets {

kube::Status ProcessKubeletsImpl::start(uint16_t) {
  if (opts_.straitBinary.empty()) {
    std::error_code ec;
    opts_.straitBinary = fs::read_symlink("/proc/self/exe", ec).string();
  }
  if (auto s = lock_.acquire(opts_.clusterName); !s) return s;
  SweepReport left = sweepClusterNetwork(opts_.clusterName);
  if (!left.namespaces.empty() || !left.links.empty() || !left.processes.empty()) {
    spdlog::info("event=process_runtime_swept cluster={} namespaces={} links={} processes={}",
                 opts_.clusterName, left.namespaces.size(), left.links.size(),
                 left.processes.size());
  }
  cgroups_ = ProcessCgroups::open(opts_.clusterName);
  startedAt_ = SysClock::now();
  if (cgroups_->mode() == CgroupMode::None) {
    spdlog::warn("event=resource_limits_not_enforced cluster={} reason=\"{}\"", opts_.clusterName,
                 cgroups_->reason());
  } else {
    spdlog::info("event=resource_limits cluster={} cgroups=\"{}\"", opts_.clusterName,
                 cgroups_->describe());
  }
  runDir_ = runDirOf(opts_.clusterName);
  sweepMountPoints(runDir_ + ".lock");  // left by a killed minicluster
  std::error_code ec;
  fs::remove_all(runDir_, ec);
  fs::create_directories(runDir_ + "/pods", ec);
  started_ = true;
  if (auto s = startNodes(); !s) {
    stop();
    return s;
  }
  std::vector<std::string> nodeNetns;
  for (const auto& [name, n] : network_.nodes()) nodeNetns.push_back(n.netns);
  proxy_ = newServiceProxy(store_, nodeNetns, sim_.podCidr);
  if (auto s = proxy_->start(); !s) {
    stop();
    return s;
  }
  if (!network_.nodes().empty()) {
    const NodeNetwork& first = network_.nodes().begin()->second;
    ClusterDnsOptions d;
    d.netnsPath = ClusterNetwork::netnsPath(first.netns);
    d.address = first.address;
    d.dir = runDir_ + "/dns";
    dns_ = newClusterDns(store_, registry_, rest_, d);
    if (auto s = dns_->start(); !s) {
      stop();
      return s;
    }
  }
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
  spdlog::info("event=kubelets_started runtime=process nodes={} pod_cidr={} marker={}",
               nodes_.size(), sim_.podCidr, networkMarker(opts_.clusterName));
  return kube::Status::OK();
}

void ProcessKubeletsImpl::stop() {
  if (!started_) return;
  started_ = false;
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  for (auto& [name, n] : nodes_) {
    if (n.kubeletApi) n.kubeletApi->stop();
  }
  if (dns_) dns_->stop();
  if (proxy_) proxy_->stop();
  network_.destroy();
  if (cgroups_) cgroups_->sweep(true);
  std::error_code ec;
  for (auto& [key, p] : pods_) p.volumes.tearDown();
  sweepMountPoints(runDir_ + ".lock");  // the mount points made for volumeMounts
  createdMountPoints_.clear();
  fs::remove_all(runDir_, ec);
  lock_.releaseAndRemove();
  std::lock_guard<std::mutex> l(mu_);
  pods_.clear();
  spdlog::info("event=kubelets_stopped runtime=process");
}

std::optional<PodRuntime> ProcessKubeletsImpl::pod(const std::string& ns, const std::string& name) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = pods_.find("/core/pods/" + ns + "/" + name);
  if (it == pods_.end()) return std::nullopt;
  return snapshot(it->second);
}

std::vector<PodRuntime> ProcessKubeletsImpl::pods() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<PodRuntime> out;
  for (const auto& [k, p] : pods_) out.push_back(snapshot(p));
  return out;
}

std::vector<std::string> ProcessKubeletsImpl::nodeNames() const {
  std::vector<std::string> out;
  for (const auto& [name, n] : nodes_) out.push_back(name);
  return out;
}

std::optional<ContainerSandbox> ProcessKubeletsImpl::sandbox(const std::string& ns, const std::string& name,
                                        const std::string& container) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = pods_.find("/core/pods/" + ns + "/" + name);
  if (it == pods_.end() || it->second.netnsPath.empty()) return std::nullopt;
  const ProcPod& p = it->second;
  ContainerSandbox s;
  s.netnsPath = p.netnsPath;
  s.hostname = p.hostNetwork ? p.sim.node : p.sim.name;
  s.bindFiles = p.bindFiles;
  const Proc* proc = nullptr;
  for (const auto& c : p.procs) {
    if (c.spec.value("name", "") == container) proc = &c;
  }
  for (size_t i = 0; i < p.inits.size() && !proc; ++i) {
    if (p.inits[i].value("name", "") != container) continue;
    s.workingDir = p.inits[i].value("workingDir", "");
    s.logPath = initLogPath(p, i);
    if (!fs::exists(s.logPath)) s.logPath.clear();
    return s;
  }
  if (!proc) return std::nullopt;
  s.workingDir = proc->spec.value("workingDir", "");
  s.mounts = proc->mounts;
  s.logPath = proc->logPath;
  s.previousLogPath = proc->previousLogPath;
  s.env = proc->env;
  s.input = proc->stdin;
  return s;
}
kube::Status ProcessKubeletsImpl::startNodes() {
  int total = 0;
  for (const auto& p : sim_.pools) total += p.count;
  auto cidrs = splitPodCidr(sim_.podCidr, sim_.nodeCidrMaskSize, total);
  if (!cidrs) return cidrs.error();
  std::vector<std::pair<std::string, std::string>> spec;
  int i = 0;
  for (const auto& pool : sim_.pools) {
    for (int j = 0; j < pool.count; ++j, ++i) {
      Node n;
      n.name = pool.namePrefix + "-" + std::to_string(j);
      n.pool = &pool;
      n.cidr = (*cidrs)[i];
      in_addr a{};
      inet_pton(AF_INET, n.cidr.substr(0, n.cidr.find('/')).c_str(), &a);
      n.base = ntohl(a.s_addr);
      n.size = uint32_t{1} << (32 - sim_.nodeCidrMaskSize);
      if (nodes_.count(n.name)) return makeError(Code::Invalid, "two nodes are named " + n.name);
      spec.emplace_back(n.name, n.cidr);
      nodes_[n.name] = std::move(n);
    }
  }
  if (auto s = network_.create(spec); !s) return s;
  hostAddress_ = network_.hostAddress();
  for (auto& [name, n] : nodes_) {
    const NodeNetwork& net = network_.nodes().at(name);
    n.address = net.address;
    if (handler_) {
      kube::HttpServerOptions ko;
      ko.listenHost = n.address;
      ko.listenPort = opts_.kubeletPort;
      ko.tls = opts_.kubeletTls;
      n.kubeletApi = kube::newHttpServer(ko, *handler_);
      kube::Status st = kube::Status::OK();
      bool entered = runInNetns(ClusterNetwork::netnsPath(net.netns),
                                [&] { st = n.kubeletApi->start(); });
      if (!entered) st = makeError(Code::Internal, "cannot enter " + net.netns);
      if (!st) return st;
    }
    if (auto s = registerNode(n); !s) return s;
  }
  auto now = Steady::now();
  nextLease_ = now;
  nextStatus_ = now + sim_.nodeStatusInterval / 2;
  return kube::Status::OK();
}

kube::Status ProcessKubeletsImpl::registerNode(Node& n) {
  auto now = SysClock::now();
  json node = buildNode(n.name, *n.pool, n.cidr, n.address, opts_.kubeletPort, now);
  node["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "strait-process";
  node["status"]["nodeInfo"]["osImage"] = "Strait process-runtime node";
  auto uid = registerNodeObject(rest_, *nodesInfo_, node, now);
  if (!uid) return uid.error();
  n.uid = *uid;
  // How resource limits are enforced on this node (kResourceLimitsAnnotation), and a Warning
  // event when they are not.
  auto a = rest_.mutate(*nodesInfo_, "", n.name, "", [&](json& cur) -> kube::Status {
    cur["metadata"]["annotations"][kResourceLimitsAnnotation] = cgroups_->describe();
    return kube::Status::OK();
  });
  if (!a) spdlog::warn("event=node_annotate_failed node={} error=\"{}\"", n.name, a.error().message);
  if (cgroups_->mode() == CgroupMode::None) {
    recorder_.record(json{{"kind", "Node"}, {"apiVersion", "v1"},
                          {"metadata", {{"name", n.name}, {"uid", n.uid}}}},
                     "Warning", "ResourceLimitsNotEnforced",
                     "resources.limits are not enforced on this node: " + cgroups_->reason(),
                     n.name);
  }
  renewLease(n);
  return kube::Status::OK();
}

void ProcessKubeletsImpl::renewLease(const Node& n) {
  auto now = SysClock::now();
  auto r = rest_.mutate(*leasesInfo_, "kube-node-lease", n.name, "", [&](json& l) -> kube::Status {
    l["spec"]["renewTime"] = kube::rfc3339Micro(now);
    l["spec"]["holderIdentity"] = n.name;
    l["spec"]["leaseDurationSeconds"] = 40;
    return kube::Status::OK();
  });
  if (!r && r.error().code == Code::NotFound) {
    WriteOptions wo;
    wo.fieldValidation = FieldValidation::Ignore;
    auto c = rest_.create(*leasesInfo_, "kube-node-lease", buildLease(n.name, n.uid, now), wo,
                          nullptr);
    if (!c) spdlog::warn("event=lease_create_failed node={} error=\"{}\"", n.name, c.error().message);
  }
}

void ProcessKubeletsImpl::postNodeStatus(const Node& n) {
  auto now = SysClock::now();
  auto r = rest_.mutate(*nodesInfo_, "", n.name, "status", [&](json& cur) -> kube::Status {
    json& st = cur["status"];
    st["conditions"] = nodeConditions(st.value("conditions", json::array()), now);
    return kube::Status::OK();
  });
  if (!r) spdlog::warn("event=node_status_failed node={} error=\"{}\"", n.name, r.error().message);
}
void ProcessKubeletsImpl::tickPod(ProcPod& p) {
  auto now = Steady::now();
  pollNetwork(p);
  if (p.sandboxRetryAt && now >= *p.sandboxRetryAt && p.sim.stage == PodStage::Creating) {
    createSandbox(p);
  }
  if (p.sim.stage == PodStage::Running) syncVolumes(p);
  if (p.sim.stage == PodStage::Terminating) signalTermination(p);
  if (p.init.pid > 0) {
    int status = 0;
    if (::waitpid(p.init.pid, &status, WNOHANG) == p.init.pid) {
      int code = exitCodeOf(status);
      {
        std::lock_guard<std::mutex> l(mu_);
        p.init.pid = -1;
      }
      if (p.sim.stage == PodStage::Creating) {
        if (code == 0) {
          ++p.initDone;
          if (p.initDone < p.inits.size()) {
            startInit(p);
          } else {
            startContainers(p);
          }
        } else {
          ++p.initRestarts;
          p.init.restartAt = now + std::max<std::chrono::milliseconds>(
                                       1s, backoffFor(p.sim.backoff, p.initRestarts));
          spdlog::info("event=init_container_failed pod={}/{} exit_code={}", p.sim.ns,
                       p.sim.name, code);
        }
      }
    }
  } else if (p.init.restartAt && now >= *p.init.restartAt &&
             p.sim.stage == PodStage::Creating) {
    startInit(p);
  }
  for (size_t i = 0; i < p.procs.size(); ++i) {
    Proc& proc = p.procs[i];
    if (proc.pid > 0) {
      int status = 0;
      if (::waitpid(proc.pid, &status, WNOHANG) == proc.pid) {
        onExit(p, i, exitCodeOf(status));
      } else if (p.sim.stage == PodStage::Running) {
        tickHooks(p, i);
        tickProbes(p, i);
      }
    } else if (proc.restartAt && now >= *proc.restartAt && p.sim.stage == PodStage::Running) {
      startContainer(p, i);
    }
  }
  if (p.sim.stage == PodStage::Terminating && (!anyRunning(p) || (p.killAt && now >= *p.killAt))) {
    killAll(p);
    writeStatus(p);
    deletePod(p.sim.ns, p.sim.name, p.sim.uid);
    p.killAt.reset();
    return;
  }
  if (p.dirty) writeStatus(p);
}

void ProcessKubeletsImpl::tick() {
  for (auto& [key, p] : pods_) tickPod(p);
  abandoned_.erase(std::remove_if(abandoned_.begin(), abandoned_.end(),
                                  [](std::future<bool>& f) {
                                    return f.wait_for(0ms) == std::future_status::ready;
                                  }),
                   abandoned_.end());
  auto now = Steady::now();
  if (now >= nextLease_) {
    for (const auto& [name, n] : nodes_) renewLease(n);
    nextLease_ = now + sim_.leaseRenewInterval;
  }
  if (now >= nextStatus_) {
    for (const auto& [name, n] : nodes_) postNodeStatus(n);
    nextStatus_ = now + sim_.nodeStatusInterval;
  }
}

void ProcessKubeletsImpl::handle(const Event& ev) {
  const std::string& key = ev.object->key;
  if (key.rfind("/core/pods/", 0) != 0) return;
  if (ev.type == EventType::Deleted) {
    auto it = pods_.find(key);
    if (it != pods_.end() &&
        it->second.sim.uid == kube::getUid(json::parse(ev.object->json, nullptr, false))) {
      forgetPod(key);
    }
  } else {
    onPod(*ev.object);
  }
}

void ProcessKubeletsImpl::run() {
  auto pods = store_.list("/core/pods/");
  for (const auto& o : pods.items) onPod(*o);
  auto w = store_.watch("/core/pods/", pods.rv);
  if (!w) {
    spdlog::error("event=kubelets_watch_failed error=\"{}\"", w.error().message);
    return;
  }
  while (!stopping_) {
    // While Pod networks are being made, come back soon to start their containers.
    auto ev = (*w)->next(networkPending() ? 5ms : 200ms);
    if ((*w)->ended()) {
      spdlog::warn("event=kubelets_watch_ended action=rewatch");
      auto again = store_.watch("/core/pods/", store_.revision());
      if (!again) return;
      w = std::move(again);
      continue;
    }
    int n = 0;
    while (ev && n++ < 2000) {
      handle(**ev);
      ev = (*w)->next(0ms);
    }
    if (ev) handle(**ev);
    tick();
  }
  for (auto& [key, p] : pods_) {
    if (p.network.valid()) p.network.wait();  // made before the network is torn down
  }
  shutdownContainers();
}

// SIGTERM to every container, up to kShutdownGrace for them to exit, then SIGKILL. Runs on
// the loop thread: the containers die with the thread that started them.
void ProcessKubeletsImpl::shutdownContainers() {
  std::vector<pid_t> pids;
  for (auto& [key, p] : pods_) {
    for (auto& c : p.procs) {
      if (c.pid > 0) pids.push_back(c.pid);
    }
    if (p.init.pid > 0) pids.push_back(p.init.pid);
  }
  for (pid_t pid : pids) ::kill(-pid, SIGTERM);
  auto deadline = Steady::now() + kShutdownGrace;
  for (pid_t pid : pids) {
    while (::waitpid(pid, nullptr, WNOHANG) == 0 && Steady::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  spdlog::info("event=containers_stopped count={}", pids.size());
}
}  // namespace process_kubelets

using process_kubelets::ClusterLock;
using process_kubelets::ProcessKubeletsImpl;
namespace fs = std::filesystem;


std::unique_ptr<ProcessKubelets> newProcessKubelets(Store& store, Registry& registry, Rest& rest,
                                                    SimulationOptions sim,
                                                    ProcessRuntimeOptions opts) {
  return std::make_unique<ProcessKubeletsImpl>(store, registry, rest, std::move(sim),
                                               std::move(opts));
}

kube::Result<SweepReport> cleanupProcessRuntime(const std::string& clusterName) {
  ClusterLock lock;
  if (auto s = lock.acquire(clusterName); !s) return s.error();
  SweepReport r = sweepClusterNetwork(clusterName);
  if (int n = ProcessCgroups::sweepCluster(clusterName); n > 0) {
    spdlog::info("event=cgroups_swept cluster={} cgroups={}", clusterName, n);
  }
  std::error_code ec;
  fs::remove_all(process_kubelets::runDirOf(clusterName), ec);
  sweepMountPoints(process_kubelets::runDirOf(clusterName) + ".lock");
  lock.releaseAndRemove();
  return r;
}

}  // namespace strait::minicluster
