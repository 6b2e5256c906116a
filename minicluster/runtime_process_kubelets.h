#pragma once
// The process runtime's kubelets, private to the minicluster: the ProcessKubeletsImpl class
// and the structures it keeps per node, Pod and container instance. Its members are defined
// in runtime_process.cpp (start/stop, nodes, the loop) and runtime_process_pods.cpp (Pod
// sandboxes, containers, restarts, terminations, probes, status).
//
// One loop thread serves every node, as in the simulated
// runtime: it watches pods and nodes in the store and, every tick (≤ 200 ms), reaps exited
// containers, starts due restarts, finishes terminations and renews leases. Pod status is
// written with the same builder as the simulated runtime (kubelet_status.h), from the real
// state of the processes.
//
// Locking: only the loop thread changes pods_; it holds mu_ while doing so, and API threads
// (pod(), pods(), sandbox()) read under mu_. Store writes and `ip` calls happen outside mu_.

#include "minicluster/runtime_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <future>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include "kube/object.h"
#include "minicluster/cluster_dns.h"
#include "minicluster/container_stdin.h"
#include "minicluster/event_recorder.h"
#include "minicluster/kubelet_exec.h"
#include "minicluster/kubelet_status.h"
#include "minicluster/runtime_process_cgroup.h"
#include "minicluster/runtime_process_launch.h"
#include "minicluster/runtime_process_probe.h"
#include "minicluster/runtime_process_volumes.h"
#include "minicluster/service_proxy.h"
#include "minicluster/stats_summary.h"

namespace strait::minicluster::process_kubelets {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;
using SysClock = std::chrono::system_clock;
using kube::Code;
using kube::makeError;
using nlohmann::json;
namespace fs = std::filesystem;

inline const std::chrono::milliseconds kMaxBackoff{300000};
inline const std::chrono::milliseconds kShutdownGrace{3000};

inline std::string runDirOf(const std::string& cluster) {
  std::string p = namespacePrefix(cluster);
  return "/run/strait/" + p.substr(0, p.size() - 1);
}

// Holds /run/strait/<prefix>.lock (flock) while a cluster of that name runs here.
class ClusterLock {
 public:
  ~ClusterLock() { release(); }
  kube::Status acquire(const std::string& cluster) {
    std::error_code ec;
    fs::create_directories("/run/strait", ec);
    path_ = runDirOf(cluster) + ".lock";
    const std::string& path = path_;
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) return makeError(Code::Unavailable, "cannot open " + path);
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      release();
      return makeError(Code::Conflict, "a minicluster named \"" + cluster +
                                           "\" with the process runtime already runs on this "
                                           "machine (" + path + " is locked)");
    }
    return kube::Status::OK();
  }
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Removes the lock file, then releases the lock (a clean stop leaves no file behind).
  void releaseAndRemove() {
    if (fd_ >= 0) ::unlink(path_.c_str());
    release();
  }

 private:
  int fd_ = -1;
  std::string path_;
};

inline std::string fieldOf(const Object& o, const char* f) {
  auto it = o.fields.find(f);
  return it == o.fields.end() ? std::string() : it->second;
}

inline std::string ipString(uint32_t ip) {
  in_addr a{};
  a.s_addr = htonl(ip);
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a, buf, sizeof(buf));
  return buf;
}

// One probe of a container instance: consecutive results and the run in flight.
struct Probe {
  json spec;
  ProbeTiming timing;
  int successes = 0, failures = 0;
  Steady::time_point next;
  std::future<bool> pending;
};

// A container instance's process and files, beside its SimContainer status.
struct Proc {
  json spec;
  pid_t pid = -1;
  std::string logPath, previousLogPath;
  std::optional<Steady::time_point> restartAt;
  std::vector<std::pair<std::string, std::string>> env;  // of the current instance
  std::shared_ptr<ContainerStdin> stdin;  // stdin/tty of the current instance, or null
  std::optional<Probe> startup, liveness, readiness;
  std::vector<BindMount> mounts;   // volumeMounts of the current instance
  std::future<bool> postStart;     // the postStart hook in flight
  std::future<bool> preStop;       // the preStop hook in flight (terminating)
  bool termSent = false;           // SIGTERM sent (terminating)
};

struct ProcPod {
  SimPod sim;
  std::vector<Proc> procs;   // parallel to sim.containers
  std::vector<json> inits;   // init container specs, run in order before the containers
  size_t initDone = 0;
  Proc init;                 // the init container running now
  int initRestarts = 0;
  bool hostNetwork = false;
  std::string netnsPath;     // "" until the sandbox exists
  std::vector<std::pair<std::string, std::string>> bindFiles;  // resolv.conf, hosts
  std::string logDir;
  PodVolumes volumes;        // under logDir/volumes
  bool volumesReady = false;
  Steady::time_point nextVolumeSync;
  std::optional<Steady::time_point> killAt;  // terminating: SIGKILL then
  std::optional<Steady::time_point> sandboxRetryAt;
  std::future<kube::Result<std::string>> network;  // the Pod's namespace being made
  bool dirty = false;
};

struct Node {
  std::string name, cidr, uid, address;
  const NodePool* pool = nullptr;
  uint32_t base = 0, size = 0;
  std::set<uint32_t> used;
  std::unique_ptr<kube::HttpServer> kubeletApi;
};

inline PodRuntime snapshot(const ProcPod& p) {
  PodRuntime r;
  r.ns = p.sim.ns;
  r.name = p.sim.name;
  r.uid = p.sim.uid;
  r.node = p.sim.node;
  r.podIP = p.sim.podIP;
  r.hostIP = p.sim.hostIP;
  r.pod = p.sim.pod;
  for (const auto& c : p.sim.containers) r.containers.push_back(c);
  return r;
}

inline std::chrono::milliseconds backoffFor(std::chrono::milliseconds initial, int restarts) {
  // As the kubelet: the first restart is immediate, then initial, doubling, capped at 5 min.
  if (restarts <= 1) return 0ms;
  return std::min(kMaxBackoff,
                  std::chrono::milliseconds(initial.count() * (int64_t{1} << std::min(restarts - 2, 10))));
}

class ProcessKubeletsImpl : public ProcessKubelets {
 public:
  ProcessKubeletsImpl(Store& store, Registry& registry, Rest& rest, SimulationOptions sim,
                      ProcessRuntimeOptions opts)
      : store_(store),
        registry_(registry),
        rest_(rest),
        sim_(std::move(sim)),
        opts_(std::move(opts)),
        network_(opts_.clusterName),
        podsInfo_(registry.find("", "v1", "pods")),
        nodesInfo_(registry.find("", "v1", "nodes")),
        leasesInfo_(registry.find("coordination.k8s.io", "v1", "leases")),
        recorder_(rest, registry, "kubelet") {}
  ~ProcessKubeletsImpl() override { stop(); }

  void setKubeletApi(kube::Handler& handler) override { handler_ = &handler; }

  std::string hostAddress() const override { return hostAddress_; }

  ContainerProcesses* processes() override { return this; }

  kube::Status start(uint16_t) override;

  void stop() override;

  std::optional<PodRuntime> pod(const std::string& ns, const std::string& name) const override;

  std::vector<PodRuntime> pods() const override;

  std::vector<std::string> nodeNames() const override;

  std::optional<ContainerSandbox> sandbox(const std::string& ns, const std::string& name,
                                          const std::string& container) const override;

  kube::Result<json> statsSummary(const std::string& nodeAddress) override;

 private:
  // --- nodes ---------------------------------------------------------------------------------

  kube::Status startNodes();

  kube::Status registerNode(Node& n);

  void renewLease(const Node& n);

  void postNodeStatus(const Node& n);

  // --- pods ----------------------------------------------------------------------------------

  static std::string initLogPath(const ProcPod& p, size_t i);

  std::string allocateIP(Node& n, const std::string& wanted);

  void onPod(const Object& o);

  void addPod(const std::string& key, json obj, Node& node, bool terminal);

  void createSandbox(ProcPod& p);
  // The rest of createSandbox once the Pod's network namespace exists at `path`.
  void finishSandbox(ProcPod& p, const std::string& path);
  // Finishes (or fails) the sandbox whose network was being made, once it is done.
  void pollNetwork(ProcPod& p);
  bool networkPending() const;

  void failSandbox(ProcPod& p, const std::string& why);

  // The Service variables a kubelet adds for every Service of the Pod's namespace
  // (enableServiceLinks, default true): FOO_SERVICE_HOST, FOO_SERVICE_PORT[_NAME], FOO_PORT...
  std::vector<std::pair<std::string, std::string>> serviceEnvironment(const ProcPod& p);

  // Service variables first, then what execContextFor builds (the container's env wins).
  std::vector<std::pair<std::string, std::string>> environment(const ProcPod& p,
                                                               const std::string& container);

  // Starts one instance of `spec`; its pid, or -1 (the reason is in the log file).
  pid_t launch(ProcPod& p, const json& spec, const std::string& logPath);

  void startInit(ProcPod& p);

  void startContainer(ProcPod& p, size_t i);

  void startContainers(ProcPod& p);

  // A container (index i) exited with `code`.
  void onExit(ProcPod& p, size_t i, int code);

  void terminate(ProcPod& p, const json& obj);

  bool anyRunning(const ProcPod& p) const;

  // Kills what is left of the pod and releases its sandbox, IP and logs.
  void killAll(ProcPod& p);

  void forgetPod(const std::string& key);

  void writeStatus(ProcPod& p);

  void deletePod(const std::string& ns, const std::string& name, const std::string& uid);

  // --- cgroups (runtime_process_stats.cpp) ---------------------------------------------------

  // Creates the cgroups of a new instance of container `spec`; the cgroup.procs files its
  // process joins (empty without cgroups), or the error that keeps it from starting.
  kube::Result<std::vector<std::string>> joinCgroups(const ProcPod& p, const json& spec);

  // "OOMKilled" when the container's last instance was OOM-killed, else "".
  std::string exitReason(const ProcPod& p, const std::string& container) const;

  // Removes the Pod's cgroups (its processes are gone).
  void removeCgroups(const ProcPod& p);

  // --- volumes, environment and lifecycle hooks (runtime_process_podsetup.cpp) -------------

  VolumeSources volumeSources(const ProcPod& p);

  // Sets up the Pod's volumes; false (FailedMount event, retry in 2 s) when one cannot be.
  bool setUpVolumes(ProcPod& p);

  // Every 2 s: rewrites volumes whose ConfigMap, Secret or downward values changed.
  void syncVolumes(ProcPod& p);

  // The resolv.conf and hosts bind-mounted into the Pod's containers.
  std::vector<std::pair<std::string, std::string>> podFiles(const ProcPod& p);

  // The environment of container `spec` as a kubelet builds it: PATH, HOSTNAME, the
  // kubernetes Service's variables, Service links, envFrom, env (valueFrom and $(VAR)).
  std::vector<std::pair<std::string, std::string>> containerEnvironment(const ProcPod& p,
                                                                        const json& spec);

  // Runs `handler` (a core/v1 LifecycleHandler) for `proc` off the loop thread.
  std::future<bool> runHook(const ProcPod& p, const Proc& proc, const json& handler,
                            std::chrono::seconds timeout);

  // After a start: the postStart hook; collects it and kills the container on failure.
  void startPostStart(ProcPod& p, size_t i);
  void tickHooks(ProcPod& p, size_t i);

  // Terminating: preStop hooks first, SIGTERM to each container when its hook ended.
  void signalTermination(ProcPod& p);

  // --- probes --------------------------------------------------------------------------------

  // Arms the probes of a new container instance (caller holds mu_).
  void armProbes(Proc& proc, SimContainer& c);

  // Drops the probes; runs in flight finish on their own (their futures wait in abandoned_).
  void disarmProbes(Proc& proc);

  ProbeTarget probeTarget(const ProcPod& p, const Proc& proc) const;

  // Advances one probe: collects a finished run, starts the next when due. Returns true or
  // false when the run just collected makes the threshold (success or failure), else nullopt.
  std::optional<bool> stepProbe(const ProcPod& p, const Proc& proc, Probe& pr);

  void tickProbes(ProcPod& p, size_t i);

  // --- loop ----------------------------------------------------------------------------------

  void tickPod(ProcPod& p);

  void tick();

  void handle(const Event& ev);

  void run();

  // SIGTERM to every container, up to kShutdownGrace for them to exit, then SIGKILL. Runs on
  // the loop thread: the containers die with the thread that started them.
  void shutdownContainers();

  Store& store_;
  Registry& registry_;
  Rest& rest_;
  SimulationOptions sim_;
  ProcessRuntimeOptions opts_;
  ClusterNetwork network_;
  ResourceInfoPtr podsInfo_, nodesInfo_, leasesInfo_;
  EventRecorder recorder_;
  kube::Handler* handler_ = nullptr;
  ClusterLock lock_;
  std::unique_ptr<ServiceProxy> proxy_;
  std::unique_ptr<ClusterDns> dns_;
  std::string runDir_;
  std::string hostAddress_;  // set by start()
  // Set by start() before the kubelet APIs serve; never reset while they may.
  std::unique_ptr<ProcessCgroups> cgroups_;
  SysClock::time_point startedAt_;
  CpuRateTracker rates_;  // thread-safe
  bool started_ = false;
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  // Set by start() before the loop runs; read-only afterwards (the kubelet servers are
  // stopped by stop()).
  std::map<std::string, Node> nodes_;

  // Changed only by the loop thread (and stop() after it ended), under mu_.
  mutable std::mutex mu_;
  std::map<std::string, ProcPod> pods_;

  // Loop thread only.
  int networksInFlight_ = 0;  // Pod networks being made off the loop thread
  static constexpr int kMaxNetworksInFlight = 8;
  Steady::time_point nextLease_, nextStatus_;
  std::vector<std::pair<std::string, std::string>> lastEnv_;  // of the last launch()
  std::shared_ptr<ContainerStdin> lastStdin_;  // of the last launch()
  std::vector<std::future<bool>> abandoned_;
  std::vector<std::string> createdMountPoints_;  // on the host, removed by stop()
  std::vector<BindMount> lastMounts_;  // of the last launch()  // probe runs of gone container instances
};

}  // namespace strait::minicluster::process_kubelets
