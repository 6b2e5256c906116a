// The process runtime's Pods (see runtime_process_kubelets.h): sandboxes and addresses,
// container processes and their environment, exits and restarts, terminations, probes, and
// the status written from the processes' real state.
#include "minicluster/runtime_process_kubelets.h"
#include "minicluster/runtime_process_logs.h"
#include "minicluster/runtime_process_podfiles.h"

namespace strait::minicluster::process_kubelets {

std::string ProcessKubeletsImpl::initLogPath(const ProcPod& p, size_t i) {
  return p.logDir + "/" + p.inits[i].value("name", "") + "/0.log";
}

std::string ProcessKubeletsImpl::allocateIP(Node& n, const std::string& wanted) {
  if (!wanted.empty()) {
    in_addr a{};
    if (inet_pton(AF_INET, wanted.c_str(), &a) == 1) {
      uint32_t ip = ntohl(a.s_addr);
      if (ip > n.base + 1 && ip < n.base + n.size - 1 && n.used.insert(ip - n.base).second) {
        return wanted;
      }
    }
  }
  for (uint32_t off = 2; off + 1 < n.size; ++off) {
    if (n.used.insert(off).second) return ipString(n.base + off);
  }
  return {};
}

void ProcessKubeletsImpl::onPod(const Object& o) {
  auto n = nodes_.find(fieldOf(o, "spec.nodeName"));
  if (n == nodes_.end()) return;
  json obj = json::parse(o.json, nullptr, false);
  if (obj.is_discarded()) return;
  auto it = pods_.find(o.key);
  if (it != pods_.end() && it->second.sim.uid != kube::getUid(obj)) {
    forgetPod(o.key);
    it = pods_.end();
  }
  if (it == pods_.end()) {
    if (kube::isBeingDeleted(obj)) {
      deletePod(kube::getNamespace(obj), kube::getName(obj), kube::getUid(obj));
      return;
    }
    std::string phase = fieldOf(o, "status.phase");
    addPod(o.key, std::move(obj), n->second, phase == "Succeeded" || phase == "Failed");
    return;
  }
  ProcPod& p = it->second;
  {
    std::lock_guard<std::mutex> l(mu_);
    p.sim.pod = obj;
  }
  if (kube::isBeingDeleted(obj) && p.sim.stage != PodStage::Terminating) terminate(p, obj);
}

void ProcessKubeletsImpl::addPod(const std::string& key, json obj, Node& node, bool terminal) {
  ProcPod p;
  SimPod& s = p.sim;
  s.key = key;
  s.ns = kube::getNamespace(obj);
  s.name = kube::getName(obj);
  s.uid = kube::getUid(obj);
  s.node = node.name;
  s.hostIP = node.address;
  const json& spec = obj.value("spec", json::object());
  s.restartPolicy = spec.value("restartPolicy", "Always");
  p.hostNetwork = spec.value("hostNetwork", false);
  for (const auto& c : spec.value("containers", json::array())) {
    SimContainer sc;
    sc.name = c.value("name", "");
    sc.image = c.value("image", "");
    s.containers.push_back(sc);
    Proc proc;
    proc.spec = c;
    p.procs.push_back(std::move(proc));
  }
  for (const auto& c : spec.value("initContainers", json::array())) {
    s.initContainers.push_back(c.value("name", ""));
    p.inits.push_back(c);
  }
  auto ann = kube::getAnnotations(obj);
  if (auto a = ann.find("strait.io/restart-backoff"); a != ann.end()) {
    if (auto d = parseDuration(a->second)) s.backoff = *d;
  }
  std::string oldIP;
  if (obj.contains("status") && obj["status"].is_object()) oldIP = obj["status"].value("podIP", "");
  s.podIP = p.hostNetwork ? node.address : allocateIP(node, oldIP);
  s.startTime = SysClock::now();
  s.pod = std::move(obj);
  p.logDir = runDir_ + "/pods/" + s.uid;
  if (terminal) s.stage = PodStage::Finished;
  ProcPod* stored;
  {
    std::lock_guard<std::mutex> l(mu_);
    stored = &(pods_[key] = std::move(p));
  }
  if (terminal) return;
  writeStatus(*stored);
  createSandbox(*stored);
}

void ProcessKubeletsImpl::createSandbox(ProcPod& p) {
  p.sandboxRetryAt.reset();
  std::error_code dirEc;
  fs::create_directories(p.logDir, dirEc);
  if (!p.volumesReady && !setUpVolumes(p)) return;  // retried in 2 s, as ContainerCreating
  std::string path;
  if (p.hostNetwork) {
    path = ClusterNetwork::netnsPath(network_.nodes().at(p.sim.node).netns);
  } else if (p.sim.podIP.empty()) {
    failSandbox(p, "no free address in the podCIDR of node " + p.sim.node);
    return;
  } else if (!p.network.valid()) {
    // The Pod's namespace and veth take a few `ip` runs: made off the loop thread, several
    // Pods at once, and picked up by finishSandbox() on a later tick.
    if (networksInFlight_ >= kMaxNetworksInFlight) {
      p.sandboxRetryAt = Steady::now();
      return;
    }
    ++networksInFlight_;
    p.network = std::async(std::launch::async, [this, node = p.sim.node, uid = p.sim.uid,
                                                ip = p.sim.podIP] {
      return network_.addPod(node, uid, ip);
    });
    return;
  } else {
    return;  // in flight
  }
  finishSandbox(p, path);
}

bool ProcessKubeletsImpl::networkPending() const { return networksInFlight_ > 0; }

void ProcessKubeletsImpl::pollNetwork(ProcPod& p) {
  if (!p.network.valid() || p.network.wait_for(0ms) != std::future_status::ready) return;
  --networksInFlight_;
  auto ns = p.network.get();
  if (p.sim.stage != PodStage::Creating) return;  // deleted meanwhile: forgetPod removes it
  if (!ns) {
    failSandbox(p, ns.error().message);
    return;
  }
  finishSandbox(p, ClusterNetwork::netnsPath(*ns));
}

void ProcessKubeletsImpl::finishSandbox(ProcPod& p, const std::string& path) {
  std::error_code ec;
  fs::create_directories(p.logDir, ec);
  std::vector<std::pair<std::string, std::string>> binds = podFiles(p);
  {
    std::lock_guard<std::mutex> l(mu_);
    p.netnsPath = path;
    p.bindFiles = binds;
  }
  spdlog::info("event=pod_sandbox_created pod={}/{} node={} pod_ip={}", p.sim.ns, p.sim.name,
               p.sim.node, p.sim.podIP);
  if (p.inits.empty()) {
    startContainers(p);
  } else {
    startInit(p);
  }
}

void ProcessKubeletsImpl::failSandbox(ProcPod& p, const std::string& why) {
  spdlog::warn("event=pod_sandbox_failed pod={}/{} error=\"{}\"", p.sim.ns, p.sim.name, why);
  recorder_.record(p.sim.pod, "Warning", "FailedCreatePodSandBox",
                   "Failed to create pod sandbox: " + why, p.sim.node);
  p.sandboxRetryAt = Steady::now() + 5s;
}

// The Service variables a kubelet adds for every Service of the Pod's namespace
// (enableServiceLinks, default true): FOO_SERVICE_HOST, FOO_SERVICE_PORT[_NAME], FOO_PORT...
std::vector<std::pair<std::string, std::string>> ProcessKubeletsImpl::serviceEnvironment(const ProcPod& p) {
  std::vector<std::pair<std::string, std::string>> env;
  if (!p.sim.pod.value("spec", json::object()).value("enableServiceLinks", true)) return env;
  for (const auto& o : store_.list("/core/services/" + p.sim.ns + "/").items) {
    json svc = json::parse(o->json, nullptr, false);
    if (svc.is_discarded()) continue;
    const json& spec = svc.value("spec", json::object());
    std::string ip = spec.value("clusterIP", "");
    if (ip.empty() || ip == "None") continue;
    std::string name = kube::getName(svc);
    if (p.sim.ns == "default" && name == "kubernetes") continue;  // already set
    for (auto& ch : name) ch = ch == '-' ? '_' : static_cast<char>(std::toupper(ch));
    const json& ports = spec.value("ports", json::array());
    if (ports.empty() || !ports[0].is_object()) continue;
    env.emplace_back(name + "_SERVICE_HOST", ip);
    env.emplace_back(name + "_SERVICE_PORT", std::to_string(ports[0].value("port", 0)));
    for (const auto& port : ports) {
      std::string pn = port.value("name", "");
      std::string num = std::to_string(port.value("port", 0));
      if (!pn.empty()) {
        for (auto& ch : pn) ch = ch == '-' ? '_' : static_cast<char>(std::toupper(ch));
        env.emplace_back(name + "_SERVICE_PORT_" + pn, num);
      }
    }
    auto proto = [](const json& port) {
      std::string pr = port.value("protocol", "TCP");
      std::string lower;
      for (char ch : pr) lower += static_cast<char>(std::tolower(ch));
      return std::make_pair(pr, lower);
    };
    env.emplace_back(name + "_PORT", proto(ports[0]).second + "://" + ip + ":" +
                                         std::to_string(ports[0].value("port", 0)));
    for (const auto& port : ports) {
      auto [upper, lower] = proto(port);
      std::string num = std::to_string(port.value("port", 0));
      std::string base = name + "_PORT_" + num + "_" + upper;
      env.emplace_back(base, lower + "://" + ip + ":" + num);
      env.emplace_back(base + "_PROTO", lower);
      env.emplace_back(base + "_PORT", num);
      env.emplace_back(base + "_ADDR", ip);
    }
  }
  return env;
}

// The environment of `container` (regular or init) as containerEnvironment() builds it.
std::vector<std::pair<std::string, std::string>> ProcessKubeletsImpl::environment(const ProcPod& p,
                                                             const std::string& container) {
  for (const auto& proc : p.procs) {
    if (proc.spec.value("name", "") == container) return containerEnvironment(p, proc.spec);
  }
  for (const auto& init : p.inits) {
    if (init.value("name", "") == container) return containerEnvironment(p, init);
  }
  return containerEnvironment(p, json::object());
}

// Starts one instance of `spec`; its pid, or -1 (the reason is in the log file).
pid_t ProcessKubeletsImpl::launch(ProcPod& p, const json& spec, const std::string& logPath) {
  std::string name = spec.value("name", "");
  std::error_code ec;
  fs::create_directories(fs::path(logPath).parent_path(), ec);
  int fd = ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  LaunchSpec ls;
  ls.argv = containerArgv(spec, opts_.straitBinary, opts_.localImages);
  ls.hostExecutable = !ls.argv.empty() &&
                      (ls.argv[0] == opts_.straitBinary ||
                       ls.argv[0] == localImageBinary(spec.value("image", ""), opts_.localImages));
  ls.env = environment(p, name);
  lastEnv_ = ls.env;
  ls.netnsPath = p.netnsPath;
  ls.hostname = p.hostNetwork ? p.sim.node : p.sim.name;
  ls.workingDir = spec.value("workingDir", "");
  ls.bindFiles = p.bindFiles;
  {
    std::map<std::string, std::string> vars(ls.env.begin(), ls.env.end());
    for (auto& a : ls.argv) a = expandEnvReferences(a, vars);
  }
  auto mounts = p.volumes.mountsFor(p.sim.pod, spec, createdMountPoints_);
  if (!mounts) {
    std::string msg = "Error: " + mounts.error().message + "\n";
    if (fd >= 0) (void)!::write(fd, msg.data(), msg.size());
    recorder_.record(p.sim.pod, "Warning", "Failed", mounts.error().message, p.sim.node);
    if (fd >= 0) ::close(fd);
    lastMounts_.clear();
    return -1;
  }
  ls.mounts = *mounts;
  lastMounts_ = *mounts;
  auto cgroupProcs = joinCgroups(p, spec);
  if (!cgroupProcs) {
    std::string msg = cgroupProcs.error().message + "\n";
    if (fd >= 0) (void)!::write(fd, msg.data(), msg.size());
    if (fd >= 0) ::close(fd);
    lastStdin_ = nullptr;
    return -1;
  }
  ls.cgroupProcs = std::move(*cgroupProcs);
  // Through a copier that notes when each line came (kubectl logs --timestamps, --since).
  int logPipe = startTimestampedLog(fd, logPath + ".times");
  ls.stdoutFd = logPipe >= 0 ? logPipe : fd;
  ls.stderrFd = ls.stdoutFd;
  // stdin: true keeps a pipe open for attach; tty: true runs the container on a terminal.
  auto flag = [&](const char* f) {
    return spec.contains(f) && spec[f].is_boolean() && spec[f].get<bool>();
  };
  std::shared_ptr<ContainerStdin> input;
  if (flag("stdin") || flag("tty")) {
    auto in = ContainerStdin::open(flag("stdin"), flag("stdinOnce"), flag("tty"), fd);
    if (in) {
      input = std::move(*in);
      ls.stdinFd = input->childFd();
      ls.ttyPath = input->ttyPath();
    }
  }
  auto pid = launchInSandbox(ls);
  if (logPipe >= 0) ::close(logPipe);
  if (input) input->releaseChildEnd();
  lastStdin_ = pid ? input : nullptr;
  if (!pid && fd >= 0) {
    std::string msg = pid.error().message + "\n";
    (void)!::write(fd, msg.data(), msg.size());
  }
  if (fd >= 0) ::close(fd);
  if (!pid) return -1;
  spdlog::info("event=container_started pod={}/{} container={} pid={} command={}", p.sim.ns,
               p.sim.name, name, *pid, ls.argv[0]);
  return *pid;
}

void ProcessKubeletsImpl::startInit(ProcPod& p) {
  p.init.spec = p.inits[p.initDone];
  p.init.logPath = initLogPath(p, p.initDone);
  p.init.restartAt.reset();
  pid_t pid = launch(p, p.init.spec, p.init.logPath);
  std::lock_guard<std::mutex> l(mu_);
  p.init.pid = pid;
  if (pid < 0) p.init.restartAt = Steady::now() + 1s;
}

void ProcessKubeletsImpl::startContainer(ProcPod& p, size_t i) {
  Proc& proc = p.procs[i];
  SimContainer& c = p.sim.containers[i];
  std::string log = p.logDir + "/" + c.name + "/" + std::to_string(c.restartCount) + ".log";
  if (c.restartCount >= 2) {  // as the kubelet: the current and the previous instance only
    std::error_code ec;
    fs::remove(p.logDir + "/" + c.name + "/" + std::to_string(c.restartCount - 2) + ".log", ec);
    fs::remove(p.logDir + "/" + c.name + "/" + std::to_string(c.restartCount - 2) + ".log.times", ec);
  }
  pid_t pid = launch(p, proc.spec, log);
  auto now = SysClock::now();
  std::lock_guard<std::mutex> l(mu_);
  proc.env = lastEnv_;
  proc.mounts = lastMounts_;
  proc.termSent = false;
  proc.stdin = std::move(lastStdin_);  // no second reference left behind
  proc.restartAt.reset();
  if (c.restartCount > 0) {
    proc.previousLogPath =
        p.logDir + "/" + c.name + "/" + std::to_string(c.restartCount - 1) + ".log";
  }
  proc.logPath = log;
  proc.pid = pid;
  armProbes(proc, c);
  startPostStart(p, i);
  c.startedAt = now;
  c.finishedAt.reset();
  c.waitingMessage.clear();
  if (pid < 0) {
    c.finishedAt = now;
    c.exitCode = 128;
  }
  p.dirty = true;
}

void ProcessKubeletsImpl::startContainers(ProcPod& p) {
  {
    std::lock_guard<std::mutex> l(mu_);
    p.sim.stage = PodStage::Running;
  }
  for (size_t i = 0; i < p.procs.size(); ++i) startContainer(p, i);
  writeStatus(p);
}

// A container (index i) exited with `code`.
void ProcessKubeletsImpl::onExit(ProcPod& p, size_t i, int code) {
  auto now = SysClock::now();
  SimContainer& c = p.sim.containers[i];
  Proc& proc = p.procs[i];
  bool terminating = p.sim.stage == PodStage::Terminating;
  bool restart = !terminating && (p.sim.restartPolicy == "Always" ||
                                  (p.sim.restartPolicy == "OnFailure" && code != 0));
  std::string event;
  disarmProbes(proc);
  std::string reason = exitReason(p, c.name);
  {
    std::lock_guard<std::mutex> l(mu_);
    proc.pid = -1;
    c.finishedAt = now;
    c.exitCode = code;
    c.terminatedReason = reason;
    if (restart) {
      c.prevStartedAt = c.startedAt;
      c.prevFinishedAt = now;
      c.prevExitCode = code;
      c.prevTerminatedReason = reason;
      c.terminatedReason.clear();
      c.startedAt.reset();
      c.finishedAt.reset();
      ++c.restartCount;
      auto delay = backoffFor(p.sim.backoff, c.restartCount);
      proc.restartAt = Steady::now() + delay;
      proc.previousLogPath = proc.logPath;
      c.waitingReason = "CrashLoopBackOff";
      c.waitingMessage = "back-off " + std::to_string(delay.count() / 1000) +
                         "s restarting failed container=" + c.name + " pod=" + p.sim.name +
                         "_" + p.sim.ns + "(" + p.sim.uid + ")";
      if (delay.count() > 0) event = "Back-off restarting failed container " + c.name;
    }
    bool allDone = std::all_of(p.sim.containers.begin(), p.sim.containers.end(),
                               [](const SimContainer& x) { return x.startedAt && x.finishedAt; });
    if (!terminating && allDone) p.sim.stage = PodStage::Finished;
  }
  spdlog::info("event=container_exited pod={}/{} container={} exit_code={} restart={}",
               p.sim.ns, p.sim.name, c.name, code, restart);
  if (!event.empty()) recorder_.record(p.sim.pod, "Warning", "BackOff", event, p.sim.node);
  if (p.sim.stage == PodStage::Finished && !p.hostNetwork) {
    network_.removePod(p.sim.uid);  // the sandbox of a finished pod is released
  }
  p.dirty = true;
}

void ProcessKubeletsImpl::terminate(ProcPod& p, const json& obj) {
  int64_t grace = 30;
  const json& md = obj.value("metadata", json::object());
  if (md.contains("deletionGracePeriodSeconds") && md["deletionGracePeriodSeconds"].is_number()) {
    grace = md["deletionGracePeriodSeconds"].get<int64_t>();
  } else if (obj.value("spec", json::object()).contains("terminationGracePeriodSeconds")) {
    grace = obj["spec"].value("terminationGracePeriodSeconds", int64_t{30});
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    p.sim.stage = PodStage::Terminating;
    p.killAt = Steady::now() + std::chrono::seconds(std::max<int64_t>(grace, 0));
  }
  // As the kubelet: each container's preStop hook runs first (within the grace period),
  // then SIGTERM (signalTermination, again on every tick until each hook ended).
  int signalled = 0;
  for (auto& proc : p.procs) {
    proc.restartAt.reset();
    if (proc.pid <= 0) continue;
    ++signalled;
    const json& hook = proc.spec.value("lifecycle", json::object()).value("preStop", json());
    if (hook.is_object()) {
      proc.preStop = runHook(p, proc, hook, std::chrono::seconds(std::max<int64_t>(grace, 1)));
    }
  }
  signalTermination(p);
  if (p.init.pid > 0) ::kill(-p.init.pid, SIGTERM);
  spdlog::info("event=pod_terminating pod={}/{} grace_seconds={} signalled={}", p.sim.ns,
               p.sim.name, grace, signalled);
  writeStatus(p);
}

bool ProcessKubeletsImpl::anyRunning(const ProcPod& p) const {
  if (p.init.pid > 0) return true;
  return std::any_of(p.procs.begin(), p.procs.end(), [](const Proc& c) { return c.pid > 0; });
}

// Kills what is left of the pod and releases its sandbox, IP and logs.
void ProcessKubeletsImpl::killAll(ProcPod& p) {
  for (auto& proc : p.procs) {
    for (auto* hook : {&proc.postStart, &proc.preStop}) {
      if (hook->valid()) abandoned_.push_back(std::move(*hook));
    }
  }
  std::vector<pid_t> pids;
  for (auto& proc : p.procs) {
    if (proc.pid > 0) pids.push_back(proc.pid);
  }
  if (p.init.pid > 0) pids.push_back(p.init.pid);
  for (pid_t pid : pids) ::kill(-pid, SIGKILL);
  for (size_t i = 0; i < p.procs.size(); ++i) {
    if (p.procs[i].pid <= 0) continue;
    int status = 0;
    ::waitpid(p.procs[i].pid, &status, 0);
    onExit(p, i, exitCodeOf(status));
  }
  if (p.init.pid > 0) ::waitpid(p.init.pid, nullptr, 0);
  p.init.pid = -1;
  if (!p.hostNetwork) network_.removePod(p.sim.uid);
  removeCgroups(p);
}

void ProcessKubeletsImpl::forgetPod(const std::string& key) {
  auto it = pods_.find(key);
  if (it == pods_.end()) return;
  ProcPod& p = it->second;
  if (p.network.valid()) {  // let the namespace be made before it is removed
    p.network.wait();
    --networksInFlight_;
  }
  killAll(p);
  p.volumes.tearDown();
  std::error_code ec;
  fs::remove_all(p.logDir, ec);
  auto n = nodes_.find(p.sim.node);
  if (n != nodes_.end() && !p.hostNetwork && !p.sim.podIP.empty()) {
    in_addr a{};
    if (inet_pton(AF_INET, p.sim.podIP.c_str(), &a) == 1) {
      n->second.used.erase(ntohl(a.s_addr) - n->second.base);
    }
  }
  std::lock_guard<std::mutex> l(mu_);
  pods_.erase(it);
}

void ProcessKubeletsImpl::writeStatus(ProcPod& p) {
  p.dirty = false;
  SimPod copy;
  {
    std::lock_guard<std::mutex> l(mu_);
    copy = p.sim;
  }
  // Creating until the sandbox exists; the status builder reports Pending then.
  auto now = SysClock::now();
  auto r = rest_.mutate(*podsInfo_, copy.ns, copy.name, "status", [&](json& cur) -> kube::Status {
    if (kube::getUid(cur) != copy.uid) return makeError(Code::Conflict, "pod was replaced");
    cur["status"] = buildPodStatus(copy, cur.value("status", json::object()), now);
    return kube::Status::OK();
  });
  if (!r && r.error().code != Code::NotFound && r.error().code != Code::Conflict) {
    spdlog::warn("event=pod_status_failed pod={}/{} error=\"{}\"", copy.ns, copy.name,
                 r.error().message);
  }
}

void ProcessKubeletsImpl::deletePod(const std::string& ns, const std::string& name, const std::string& uid) {
  DeleteOptions d;
  d.gracePeriodSeconds = 0;
  d.preconditionUid = uid;
  auto r = rest_.remove(*podsInfo_, ns, name, d);
  if (!r && r.error().code != Code::NotFound && r.error().code != Code::Conflict) {
    spdlog::warn("event=pod_delete_failed pod={}/{} error=\"{}\"", ns, name, r.error().message);
  }
}
// --- probes ---

// Arms the probes of a new container instance (caller holds mu_).
void ProcessKubeletsImpl::armProbes(Proc& proc, SimContainer& c) {
  disarmProbes(proc);
  auto now = Steady::now();
  auto arm = [&](const char* field, std::optional<Probe>& out) {
    if (!proc.spec.contains(field) || !proc.spec[field].is_object()) return;
    Probe pr;
    pr.spec = proc.spec[field];
    pr.timing = probeTiming(pr.spec);
    pr.next = now + pr.timing.initialDelay;
    out = std::move(pr);
  };
  arm("startupProbe", proc.startup);
  arm("livenessProbe", proc.liveness);
  arm("readinessProbe", proc.readiness);
  c.probeStarted = !proc.startup;
  c.probeReady = !proc.readiness;
}

// Drops the probes; runs in flight finish on their own (their futures wait in abandoned_).
void ProcessKubeletsImpl::disarmProbes(Proc& proc) {
  for (auto* pr : {&proc.startup, &proc.liveness, &proc.readiness}) {
    if (*pr && (*pr)->pending.valid()) abandoned_.push_back(std::move((*pr)->pending));
    pr->reset();
  }
}

ProbeTarget ProcessKubeletsImpl::probeTarget(const ProcPod& p, const Proc& proc) const {
  ProbeTarget t;
  t.netnsPath = p.netnsPath;
  t.hostname = p.hostNetwork ? p.sim.node : p.sim.name;
  t.workingDir = proc.spec.value("workingDir", "");
  t.podIP = p.sim.podIP;
  t.env = proc.env;
  t.bindFiles = p.bindFiles;
  t.mounts = proc.mounts;
  t.containerPorts = proc.spec.value("ports", json::array());
  return t;
}

// Advances one probe: collects a finished run, starts the next when due. Returns true or
// false when the run just collected makes the threshold (success or failure), else nullopt.
std::optional<bool> ProcessKubeletsImpl::stepProbe(const ProcPod& p, const Proc& proc, Probe& pr) {
  auto now = Steady::now();
  if (pr.pending.valid()) {
    if (pr.pending.wait_for(0ms) != std::future_status::ready) return std::nullopt;
    if (pr.pending.get()) {
      pr.failures = 0;
      if (++pr.successes >= pr.timing.successThreshold) return true;
    } else {
      pr.successes = 0;
      if (++pr.failures >= pr.timing.failureThreshold) return false;
    }
    return std::nullopt;
  }
  if (now >= pr.next) {
    pr.next = now + pr.timing.period;
    pr.pending = std::async(std::launch::async, [spec = pr.spec, t = probeTarget(p, proc)] {
      return runProbe(spec, t);
    });
  }
  return std::nullopt;
}

void ProcessKubeletsImpl::tickProbes(ProcPod& p, size_t i) {
  Proc& proc = p.procs[i];
  SimContainer& c = p.sim.containers[i];
  auto kill = [&](const std::string& probe) {
    recorder_.record(p.sim.pod, "Warning", "Unhealthy", probe + " probe failed", p.sim.node);
    recorder_.record(p.sim.pod, "Normal", "Killing",
                     "Container " + c.name + " failed " + probe + " probe, will be restarted",
                     p.sim.node);
    spdlog::info("event=probe_failed pod={}/{} container={} probe={} action=kill", p.sim.ns,
                 p.sim.name, c.name, probe);
    ::kill(-proc.pid, SIGKILL);  // reaped by the next tick, then restartPolicy applies
    disarmProbes(proc);
  };
  if (!c.probeStarted) {
    if (!proc.startup) return;
    auto r = stepProbe(p, proc, *proc.startup);
    if (r && *r) {
      std::lock_guard<std::mutex> l(mu_);
      c.probeStarted = true;
      proc.startup.reset();
      p.dirty = true;
    } else if (r) {
      kill("Startup");
    }
    return;
  }
  if (proc.liveness) {
    auto r = stepProbe(p, proc, *proc.liveness);
    if (r && !*r) {
      kill("Liveness");
      return;
    }
  }
  if (proc.readiness) {
    auto r = stepProbe(p, proc, *proc.readiness);
    if (r && *r != c.probeReady) {
      {
        std::lock_guard<std::mutex> l(mu_);
        c.probeReady = *r;
      }
      p.dirty = true;
      if (!*r) {
        recorder_.record(p.sim.pod, "Warning", "Unhealthy", "Readiness probe failed",
                         p.sim.node);
      }
      spdlog::info("event=readiness_changed pod={}/{} container={} ready={}", p.sim.ns,
                   p.sim.name, c.name, *r);
    }
  }
}
}  // namespace strait::minicluster::process_kubelets
