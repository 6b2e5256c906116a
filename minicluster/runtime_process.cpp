// The process runtime's kubelets. One loop thread serves every node, as in the simulated
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
#include "minicluster/event_recorder.h"
#include "minicluster/kubelet_exec.h"
#include "minicluster/kubelet_status.h"
#include "minicluster/runtime_process_launch.h"
#include "minicluster/runtime_process_probe.h"
#include "minicluster/service_proxy.h"

namespace strait::minicluster {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;
using SysClock = std::chrono::system_clock;
using kube::Code;
using kube::makeError;
using nlohmann::json;
namespace fs = std::filesystem;

const std::chrono::milliseconds kMaxBackoff{300000};
const std::chrono::milliseconds kShutdownGrace{3000};

std::string runDirOf(const std::string& cluster) {
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

std::string fieldOf(const Object& o, const char* f) {
  auto it = o.fields.find(f);
  return it == o.fields.end() ? std::string() : it->second;
}

std::string ipString(uint32_t ip) {
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
  std::optional<Probe> startup, liveness, readiness;
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
  std::optional<Steady::time_point> killAt;  // terminating: SIGKILL then
  std::optional<Steady::time_point> sandboxRetryAt;
  bool dirty = false;
};

struct Node {
  std::string name, cidr, uid, address;
  const NodePool* pool = nullptr;
  uint32_t base = 0, size = 0;
  std::set<uint32_t> used;
  std::unique_ptr<kube::HttpServer> kubeletApi;
};

PodRuntime snapshot(const ProcPod& p) {
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

std::chrono::milliseconds backoffFor(std::chrono::milliseconds initial, int restarts) {
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

  ContainerProcesses* processes() override { return this; }

  kube::Status start(uint16_t) override {
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
    runDir_ = runDirOf(opts_.clusterName);
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

  void stop() override {
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
    std::error_code ec;
    fs::remove_all(runDir_, ec);
    lock_.releaseAndRemove();
    std::lock_guard<std::mutex> l(mu_);
    pods_.clear();
    spdlog::info("event=kubelets_stopped runtime=process");
  }

  std::optional<PodRuntime> pod(const std::string& ns, const std::string& name) const override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = pods_.find("/core/pods/" + ns + "/" + name);
    if (it == pods_.end()) return std::nullopt;
    return snapshot(it->second);
  }

  std::vector<PodRuntime> pods() const override {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<PodRuntime> out;
    for (const auto& [k, p] : pods_) out.push_back(snapshot(p));
    return out;
  }

  std::vector<std::string> nodeNames() const override {
    std::vector<std::string> out;
    for (const auto& [name, n] : nodes_) out.push_back(name);
    return out;
  }

  std::optional<ContainerSandbox> sandbox(const std::string& ns, const std::string& name,
                                          const std::string& container) const override {
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
    s.logPath = proc->logPath;
    s.previousLogPath = proc->previousLogPath;
    s.env = proc->env;
    return s;
  }

 private:
  // --- nodes ---------------------------------------------------------------------------------

  kube::Status startNodes() {
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

  kube::Status registerNode(Node& n) {
    auto now = SysClock::now();
    json node = buildNode(n.name, *n.pool, n.cidr, n.address, opts_.kubeletPort, now);
    node["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "strait-process";
    node["status"]["nodeInfo"]["osImage"] = "Strait process-runtime node";
    WriteOptions wo;
    wo.fieldValidation = FieldValidation::Ignore;
    auto created = rest_.create(*nodesInfo_, "", node, wo, nullptr);
    ObjectPtr obj;
    if (created) {
      obj = *created;
    } else if (created.error().code == Code::AlreadyExists) {
      auto r = rest_.mutate(*nodesInfo_, "", n.name, "", [&](json& cur) -> kube::Status {
        for (const auto& [k, v] : node["metadata"]["labels"].items()) cur["metadata"]["labels"][k] = v;
        cur["spec"]["podCIDR"] = n.cidr;
        cur["spec"]["podCIDRs"] = json::array({n.cidr});
        return kube::Status::OK();
      });
      if (!r) return r.error();
      auto s = rest_.mutate(*nodesInfo_, "", n.name, "status", [&](json& cur) -> kube::Status {
        json conds = cur["status"].value("conditions", json::array());
        cur["status"] = node["status"];
        cur["status"]["conditions"] = nodeConditions(conds, now);
        return kube::Status::OK();
      });
      if (!s) return s.error();
      obj = *s;
    } else {
      return makeError(created.error().code,
                       "registering node " + n.name + ": " + created.error().message);
    }
    n.uid = kube::getUid(json::parse(obj->json, nullptr, false));
    renewLease(n);
    return kube::Status::OK();
  }

  void renewLease(const Node& n) {
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

  void postNodeStatus(const Node& n) {
    auto now = SysClock::now();
    auto r = rest_.mutate(*nodesInfo_, "", n.name, "status", [&](json& cur) -> kube::Status {
      json& st = cur["status"];
      st["conditions"] = nodeConditions(st.value("conditions", json::array()), now);
      return kube::Status::OK();
    });
    if (!r) spdlog::warn("event=node_status_failed node={} error=\"{}\"", n.name, r.error().message);
  }

  // --- pods ----------------------------------------------------------------------------------

  static std::string initLogPath(const ProcPod& p, size_t i) {
    return p.logDir + "/" + p.inits[i].value("name", "") + "/0.log";
  }

  std::string allocateIP(Node& n, const std::string& wanted) {
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

  void onPod(const Object& o) {
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

  void addPod(const std::string& key, json obj, Node& node, bool terminal) {
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

  void createSandbox(ProcPod& p) {
    p.sandboxRetryAt.reset();
    std::string path;
    if (p.hostNetwork) {
      path = ClusterNetwork::netnsPath(network_.nodes().at(p.sim.node).netns);
    } else if (p.sim.podIP.empty()) {
      failSandbox(p, "no free address in the podCIDR of node " + p.sim.node);
      return;
    } else {
      auto ns = network_.addPod(p.sim.node, p.sim.uid, p.sim.podIP);
      if (!ns) {
        failSandbox(p, ns.error().message);
        return;
      }
      path = ClusterNetwork::netnsPath(*ns);
    }
    std::error_code ec;
    fs::create_directories(p.logDir, ec);
    std::vector<std::pair<std::string, std::string>> binds;
    std::string dnsPolicy = p.sim.pod.value("spec", json::object()).value("dnsPolicy", "ClusterFirst");
    if (!p.hostNetwork && dnsPolicy == "ClusterFirst") {
      std::ofstream(p.logDir + "/resolv.conf") << podResolvConf(p.sim.ns);
      std::ofstream(p.logDir + "/hosts")
          << "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"
             "::1\tlocalhost ip6-localhost ip6-loopback\n"
          << p.sim.podIP << "\t" << p.sim.name << "\n";
      binds = {{p.logDir + "/resolv.conf", "/etc/resolv.conf"}, {p.logDir + "/hosts", "/etc/hosts"}};
    }
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

  void failSandbox(ProcPod& p, const std::string& why) {
    spdlog::warn("event=pod_sandbox_failed pod={}/{} error=\"{}\"", p.sim.ns, p.sim.name, why);
    recorder_.record(p.sim.pod, "Warning", "FailedCreatePodSandBox",
                     "Failed to create pod sandbox: " + why, p.sim.node);
    p.sandboxRetryAt = Steady::now() + 5s;
  }

  // The Service variables a kubelet adds for every Service of the Pod's namespace
  // (enableServiceLinks, default true): FOO_SERVICE_HOST, FOO_SERVICE_PORT[_NAME], FOO_PORT...
  std::vector<std::pair<std::string, std::string>> serviceEnvironment(const ProcPod& p) {
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

  // Service variables first, then what execContextFor builds (the container's env wins).
  std::vector<std::pair<std::string, std::string>> environment(const ProcPod& p,
                                                               const std::string& container) {
    auto env = serviceEnvironment(p);
    auto own = execContextFor(snapshot(p), container, registry_, rest_).env;
    env.insert(env.end(), own.begin(), own.end());
    std::map<std::string, size_t> last;
    for (size_t i = 0; i < env.size(); ++i) last[env[i].first] = i;
    std::vector<std::pair<std::string, std::string>> out;
    for (size_t i = 0; i < env.size(); ++i) {
      if (last[env[i].first] == i) out.push_back(env[i]);
    }
    return out;
  }

  // Starts one instance of `spec`; its pid, or -1 (the reason is in the log file).
  pid_t launch(ProcPod& p, const json& spec, const std::string& logPath) {
    std::string name = spec.value("name", "");
    std::error_code ec;
    fs::create_directories(fs::path(logPath).parent_path(), ec);
    int fd = ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    LaunchSpec ls;
    ls.argv = containerArgv(spec, opts_.straitBinary);
    ls.env = environment(p, name);
    lastEnv_ = ls.env;
    ls.netnsPath = p.netnsPath;
    ls.hostname = p.hostNetwork ? p.sim.node : p.sim.name;
    ls.workingDir = spec.value("workingDir", "");
    ls.bindFiles = p.bindFiles;
    ls.stdoutFd = fd;
    ls.stderrFd = fd;
    auto pid = launchInSandbox(ls);
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

  void startInit(ProcPod& p) {
    p.init.spec = p.inits[p.initDone];
    p.init.logPath = initLogPath(p, p.initDone);
    p.init.restartAt.reset();
    pid_t pid = launch(p, p.init.spec, p.init.logPath);
    std::lock_guard<std::mutex> l(mu_);
    p.init.pid = pid;
    if (pid < 0) p.init.restartAt = Steady::now() + 1s;
  }

  void startContainer(ProcPod& p, size_t i) {
    Proc& proc = p.procs[i];
    SimContainer& c = p.sim.containers[i];
    std::string log = p.logDir + "/" + c.name + "/" + std::to_string(c.restartCount) + ".log";
    if (c.restartCount >= 2) {  // as the kubelet: the current and the previous instance only
      std::error_code ec;
      fs::remove(p.logDir + "/" + c.name + "/" + std::to_string(c.restartCount - 2) + ".log", ec);
    }
    pid_t pid = launch(p, proc.spec, log);
    auto now = SysClock::now();
    std::lock_guard<std::mutex> l(mu_);
    proc.env = lastEnv_;
    proc.restartAt.reset();
    if (c.restartCount > 0) {
      proc.previousLogPath =
          p.logDir + "/" + c.name + "/" + std::to_string(c.restartCount - 1) + ".log";
    }
    proc.logPath = log;
    proc.pid = pid;
    armProbes(proc, c);
    c.startedAt = now;
    c.finishedAt.reset();
    c.waitingMessage.clear();
    if (pid < 0) {
      c.finishedAt = now;
      c.exitCode = 128;
    }
    p.dirty = true;
  }

  void startContainers(ProcPod& p) {
    {
      std::lock_guard<std::mutex> l(mu_);
      p.sim.stage = PodStage::Running;
    }
    for (size_t i = 0; i < p.procs.size(); ++i) startContainer(p, i);
    writeStatus(p);
  }

  // A container (index i) exited with `code`.
  void onExit(ProcPod& p, size_t i, int code) {
    auto now = SysClock::now();
    SimContainer& c = p.sim.containers[i];
    Proc& proc = p.procs[i];
    bool terminating = p.sim.stage == PodStage::Terminating;
    bool restart = !terminating && (p.sim.restartPolicy == "Always" ||
                                    (p.sim.restartPolicy == "OnFailure" && code != 0));
    std::string event;
    disarmProbes(proc);
    {
      std::lock_guard<std::mutex> l(mu_);
      proc.pid = -1;
      c.finishedAt = now;
      c.exitCode = code;
      if (restart) {
        c.prevStartedAt = c.startedAt;
        c.prevFinishedAt = now;
        c.prevExitCode = code;
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

  void terminate(ProcPod& p, const json& obj) {
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
    int signalled = 0;
    for (auto& proc : p.procs) {
      if (proc.pid > 0 && ::kill(-proc.pid, SIGTERM) == 0) ++signalled;
      proc.restartAt.reset();
    }
    if (p.init.pid > 0) ::kill(-p.init.pid, SIGTERM);
    spdlog::info("event=pod_terminating pod={}/{} grace_seconds={} signalled={}", p.sim.ns,
                 p.sim.name, grace, signalled);
    writeStatus(p);
  }

  bool anyRunning(const ProcPod& p) const {
    if (p.init.pid > 0) return true;
    return std::any_of(p.procs.begin(), p.procs.end(), [](const Proc& c) { return c.pid > 0; });
  }

  // Kills what is left of the pod and releases its sandbox, IP and logs.
  void killAll(ProcPod& p) {
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
  }

  void forgetPod(const std::string& key) {
    auto it = pods_.find(key);
    if (it == pods_.end()) return;
    ProcPod& p = it->second;
    killAll(p);
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

  void writeStatus(ProcPod& p) {
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

  void deletePod(const std::string& ns, const std::string& name, const std::string& uid) {
    DeleteOptions d;
    d.gracePeriodSeconds = 0;
    d.preconditionUid = uid;
    auto r = rest_.remove(*podsInfo_, ns, name, d);
    if (!r && r.error().code != Code::NotFound && r.error().code != Code::Conflict) {
      spdlog::warn("event=pod_delete_failed pod={}/{} error=\"{}\"", ns, name, r.error().message);
    }
  }

  // --- probes --------------------------------------------------------------------------------

  // Arms the probes of a new container instance (caller holds mu_).
  void armProbes(Proc& proc, SimContainer& c) {
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
  void disarmProbes(Proc& proc) {
    for (auto* pr : {&proc.startup, &proc.liveness, &proc.readiness}) {
      if (*pr && (*pr)->pending.valid()) abandoned_.push_back(std::move((*pr)->pending));
      pr->reset();
    }
  }

  ProbeTarget probeTarget(const ProcPod& p, const Proc& proc) const {
    ProbeTarget t;
    t.netnsPath = p.netnsPath;
    t.hostname = p.hostNetwork ? p.sim.node : p.sim.name;
    t.workingDir = proc.spec.value("workingDir", "");
    t.podIP = p.sim.podIP;
    t.env = proc.env;
    t.bindFiles = p.bindFiles;
    t.containerPorts = proc.spec.value("ports", json::array());
    return t;
  }

  // Advances one probe: collects a finished run, starts the next when due. Returns true or
  // false when the run just collected makes the threshold (success or failure), else nullopt.
  std::optional<bool> stepProbe(const ProcPod& p, const Proc& proc, Probe& pr) {
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

  void tickProbes(ProcPod& p, size_t i) {
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

  // --- loop ----------------------------------------------------------------------------------

  void tickPod(ProcPod& p) {
    auto now = Steady::now();
    if (p.sandboxRetryAt && now >= *p.sandboxRetryAt && p.sim.stage == PodStage::Creating) {
      createSandbox(p);
    }
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

  void tick() {
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

  void handle(const Event& ev) {
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

  void run() {
    auto pods = store_.list("/core/pods/");
    for (const auto& o : pods.items) onPod(*o);
    auto w = store_.watch("/core/pods/", pods.rv);
    if (!w) {
      spdlog::error("event=kubelets_watch_failed error=\"{}\"", w.error().message);
      return;
    }
    while (!stopping_) {
      auto ev = (*w)->next(200ms);
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
    shutdownContainers();
  }

  // SIGTERM to every container, up to kShutdownGrace for them to exit, then SIGKILL. Runs on
  // the loop thread: the containers die with the thread that started them.
  void shutdownContainers() {
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
  Steady::time_point nextLease_, nextStatus_;
  std::vector<std::pair<std::string, std::string>> lastEnv_;  // of the last launch()
  std::vector<std::future<bool>> abandoned_;  // probe runs of gone container instances
};

}  // namespace

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
  std::error_code ec;
  fs::remove_all(runDirOf(clusterName), ec);
  lock.releaseAndRemove();
  return r;
}

}  // namespace strait::minicluster
