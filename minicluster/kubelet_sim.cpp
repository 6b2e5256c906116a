// The simulated kubelets' loop. One thread serves every simulated node: it watches pods and
// nodes in the store, keeps each pod's simulated runtime state, and fires timers (pod start
// after the start latency, container exits and restarts, lease renewals, node status
// heartbeats) from one queue ordered by due time.
//
// Locking: only the loop thread changes pods_ and nodes_; it takes mu_ for those changes
// so that pod()/pods() (kubelet API threads) read consistent snapshots. Store writes happen
// outside mu_.
#include "minicluster/kubelet_sim.h"

#include <arpa/inet.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <map>
#include <mutex>
#include <queue>
#include <set>
#include <thread>

#include "kube/object.h"
#include "minicluster/event_recorder.h"
#include "minicluster/kubelet_status.h"
#include "minicluster/watch_gather.h"

namespace strait::minicluster {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;
using SysClock = std::chrono::system_clock;
using kube::Code;
using kube::makeError;

constexpr const char* kSimulateAnnotation = "strait.io/simulate";
const std::chrono::milliseconds kMaxBackoff{300000};

enum class TimerKind { PodStart, ContainerExit, ContainerRestart, LeaseRenew, NodeStatus };

struct Timer {
  Steady::time_point at;
  uint64_t seq;
  TimerKind kind;
  std::string key;  // pod key or node name
  uint64_t gen;
  bool operator>(const Timer& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

struct SimNode {
  std::string name, cidr, uid;
  const NodePool* pool = nullptr;
  uint32_t base = 0;
  uint32_t size = 0;
  std::set<uint32_t> used;  // host offsets in use
  bool stopped = false;
  std::set<std::string> deferred;  // pod keys seen while stopped
};

std::string fieldOf(const Object& o, const char* f) {
  auto it = o.fields.find(f);
  return it == o.fields.end() ? std::string() : it->second;
}

std::string ipString(uint32_t ip) {
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 255) + "." +
         std::to_string((ip >> 8) & 255) + "." + std::to_string(ip & 255);
}

PodRuntime snapshot(const SimPod& p) {
  PodRuntime r;
  r.ns = p.ns;
  r.name = p.name;
  r.uid = p.uid;
  r.node = p.node;
  r.podIP = p.podIP;
  r.hostIP = p.hostIP;
  r.pod = p.pod;
  for (const auto& c : p.containers) r.containers.push_back(c);
  return r;
}

class KubeletsImpl : public SimulatedKubelets {
 public:
  KubeletsImpl(Store& store, Registry& registry, Rest& rest, SimulationOptions opts)
      : store_(store),
        rest_(rest),
        opts_(std::move(opts)),
        podsInfo_(registry.find("", "v1", "pods")),
        nodesInfo_(registry.find("", "v1", "nodes")),
        leasesInfo_(registry.find("coordination.k8s.io", "v1", "leases")),
        recorder_(rest, registry, "kubelet") {}
  ~KubeletsImpl() override { stop(); }

  kube::Status start(uint16_t kubeletPort) override {
    port_ = kubeletPort;
    int total = 0;
    for (const auto& p : opts_.pools) total += p.count;
    auto cidrs = splitPodCidr(opts_.podCidr, opts_.nodeCidrMaskSize, total);
    if (!cidrs) return cidrs.error();
    int i = 0;
    for (const auto& pool : opts_.pools) {
      for (int j = 0; j < pool.count; ++j, ++i) {
        SimNode n;
        n.name = pool.namePrefix + "-" + std::to_string(j);
        n.pool = &pool;
        n.cidr = (*cidrs)[i];
        in_addr a{};
        inet_pton(AF_INET, n.cidr.substr(0, n.cidr.find('/')).c_str(), &a);
        n.base = ntohl(a.s_addr);
        n.size = uint32_t{1} << (32 - opts_.nodeCidrMaskSize);
        if (nodes_.count(n.name)) {
          return makeError(Code::Invalid, "two simulated nodes are named " + n.name);
        }
        nodes_[n.name] = std::move(n);
      }
    }
    for (auto& [name, n] : nodes_) {
      if (auto s = registerNode(n); !s) return s;
    }
    // Stagger heartbeats over one interval so 1,000 nodes do not renew in the same instant.
    size_t k = 0;
    auto now = Steady::now();
    for (const auto& [name, n] : nodes_) {
      auto offset = opts_.leaseRenewInterval * k / std::max<size_t>(nodes_.size(), 1);
      push(now + offset, TimerKind::LeaseRenew, name, 0);
      auto statusOffset = opts_.nodeStatusInterval * k / std::max<size_t>(nodes_.size(), 1);
      push(now + opts_.nodeStatusInterval / 2 + statusOffset, TimerKind::NodeStatus, name, 0);
      ++k;
    }
    stopping_ = false;
    thread_ = std::thread([this] { run(); });
    spdlog::info("event=kubelets_started nodes={} kubelet_port={} pod_cidr={}", nodes_.size(),
                 port_, opts_.podCidr);
    return kube::Status::OK();
  }

  void stop() override {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
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
    out.reserve(pods_.size());
    for (const auto& [k, p] : pods_) out.push_back(snapshot(p));
    return out;
  }

  std::vector<std::string> nodeNames() const override {
    std::vector<std::string> out;
    for (const auto& [name, n] : nodes_) out.push_back(name);
    return out;
  }

 private:
  // --- nodes ---------------------------------------------------------------------------------

  kube::Status registerNode(SimNode& n) {
    auto now = SysClock::now();
    json node = buildNode(n.name, *n.pool, n.cidr, "127.0.0.1", port_, now);
    auto uid = registerNodeObject(rest_, *nodesInfo_, node, now);
    if (!uid) return uid.error();
    n.uid = *uid;
    renewLease(n);
    return kube::Status::OK();
  }

  void renewLease(const SimNode& n) {
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
    } else if (!r) {
      spdlog::warn("event=lease_renew_failed node={} error=\"{}\"", n.name, r.error().message);
    }
  }

  void postNodeStatus(const SimNode& n) {
    auto now = SysClock::now();
    auto r = rest_.mutate(*nodesInfo_, "", n.name, "status", [&](json& cur) -> kube::Status {
      json& st = cur["status"];
      st["conditions"] = nodeConditions(st.value("conditions", json::array()), now);
      st["daemonEndpoints"] = {{"kubeletEndpoint", {{"Port", port_}}}};
      return kube::Status::OK();
    });
    if (!r) spdlog::warn("event=node_status_failed node={} error=\"{}\"", n.name, r.error().message);
  }

  void onNode(const Object& o) {
    std::string name = fieldOf(o, "metadata.name");
    auto it = nodes_.find(name);
    if (it == nodes_.end()) return;
    json obj = json::parse(o.json, nullptr, false);
    if (obj.is_discarded()) return;
    bool stop = kube::getAnnotations(obj)[kSimulateAnnotation] == "stop-heartbeat";
    SimNode& n = it->second;
    if (stop == n.stopped) return;
    {
      std::lock_guard<std::mutex> l(mu_);
      n.stopped = stop;
    }
    if (stop) {
      spdlog::info("event=kubelet_stopped node={} reason=annotation", name);
      return;
    }
    spdlog::info("event=kubelet_recovered node={}", name);
    renewLease(n);
    postNodeStatus(n);
    std::set<std::string> keys = std::move(n.deferred);
    n.deferred.clear();
    for (const auto& [key, p] : pods_) {
      if (p.node == name) keys.insert(key);
    }
    for (const auto& key : keys) {
      auto cur = store_.get(key);
      if (!cur) {
        forgetPod(key);
        continue;
      }
      auto known = pods_.find(key);
      if (known != pods_.end() && !kube::isBeingDeleted(known->second.pod)) {
        resume(known->second);
      }
      onPod(**cur);
    }
  }

  // --- pods ----------------------------------------------------------------------------------

  void onPod(const Object& o) {
    std::string node = fieldOf(o, "spec.nodeName");
    auto n = nodes_.find(node);
    if (n == nodes_.end()) return;
    if (n->second.stopped) {
      n->second.deferred.insert(o.key);
      return;
    }
    json obj = json::parse(o.json, nullptr, false);
    if (obj.is_discarded()) return;
    auto it = pods_.find(o.key);
    if (it != pods_.end() && it->second.uid != kube::getUid(obj)) {
      forgetPod(o.key);
      it = pods_.end();
    }
    if (it == pods_.end()) {
      std::string phase = fieldOf(o, "status.phase");
      if (kube::isBeingDeleted(obj)) {
        deletePod(kube::getNamespace(obj), kube::getName(obj), kube::getUid(obj));
        return;
      }
      addPod(o.key, std::move(obj), n->second, phase == "Succeeded" || phase == "Failed");
      return;
    }
    SimPod& p = it->second;
    {
      std::lock_guard<std::mutex> l(mu_);
      p.pod = obj;
    }
    if (kube::isBeingDeleted(obj) && p.stage != PodStage::Terminating) terminate(p);
  }

  void addPod(const std::string& key, json obj, SimNode& node, bool terminal) {
    SimPod p;
    p.key = key;
    p.ns = kube::getNamespace(obj);
    p.name = kube::getName(obj);
    p.uid = kube::getUid(obj);
    p.node = node.name;
    p.hostIP = "127.0.0.1";
    const json& spec = obj.value("spec", json::object());
    p.restartPolicy = spec.value("restartPolicy", "Always");
    if (spec.contains("containers") && spec["containers"].is_array()) {
      for (const auto& c : spec["containers"]) {
        SimContainer sc;
        sc.name = c.value("name", "");
        sc.image = c.value("image", "");
        p.containers.push_back(sc);
      }
    }
    if (spec.contains("initContainers") && spec["initContainers"].is_array()) {
      for (const auto& c : spec["initContainers"]) p.initContainers.push_back(c.value("name", ""));
    }
    auto ann = kube::getAnnotations(obj);
    if (auto a = ann.find("strait.io/exit-after"); a != ann.end()) {
      if (auto d = parseDuration(a->second)) p.exitAfter = *d;
    }
    if (auto a = ann.find("strait.io/exit-code"); a != ann.end()) {
      try {
        p.exitCode = std::stoi(a->second);
      } catch (...) {
        p.exitCode = 1;
      }
    }
    if (auto a = ann.find("strait.io/restart-backoff"); a != ann.end()) {
      if (auto d = parseDuration(a->second)) p.backoff = *d;
    }
    // Keep the IP of a pod that already has one (minicluster restarted over its data).
    std::string oldIP;
    if (obj.contains("status") && obj["status"].is_object()) oldIP = obj["status"].value("podIP", "");
    p.podIP = allocateIP(node, oldIP);
    p.startTime = SysClock::now();
    p.pod = std::move(obj);
    if (terminal) {
      p.stage = PodStage::Finished;
      std::lock_guard<std::mutex> l(mu_);
      pods_[key] = std::move(p);
      return;
    }
    SimPod* stored;
    {
      std::lock_guard<std::mutex> l(mu_);
      stored = &(pods_[key] = std::move(p));
    }
    writeStatus(*stored);
    push(Steady::now() + opts_.podStartLatency, TimerKind::PodStart, key, stored->gen);
  }

  std::string allocateIP(SimNode& n, const std::string& wanted) {
    if (!wanted.empty()) {
      in_addr a{};
      if (inet_pton(AF_INET, wanted.c_str(), &a) == 1) {
        uint32_t ip = ntohl(a.s_addr);
        if (ip > n.base && ip < n.base + n.size - 1 && n.used.insert(ip - n.base).second) return wanted;
      }
    }
    for (uint32_t off = 2; off + 1 < n.size; ++off) {
      if (n.used.insert(off).second) return ipString(n.base + off);
    }
    return {};  // range exhausted: the pod runs without an IP, as a CNI failure would
  }

  void releaseIP(const SimPod& p) {
    auto n = nodes_.find(p.node);
    if (n == nodes_.end() || p.podIP.empty()) return;
    in_addr a{};
    if (inet_pton(AF_INET, p.podIP.c_str(), &a) == 1) n->second.used.erase(ntohl(a.s_addr) - n->second.base);
  }

  void forgetPod(const std::string& key) {
    auto it = pods_.find(key);
    if (it == pods_.end()) return;
    releaseIP(it->second);
    std::lock_guard<std::mutex> l(mu_);
    pods_.erase(it);
  }

  void writeStatus(SimPod& p) {
    auto now = SysClock::now();
    auto r = rest_.mutate(*podsInfo_, p.ns, p.name, "status", [&](json& cur) -> kube::Status {
      if (kube::getUid(cur) != p.uid) return makeError(Code::Conflict, "pod was replaced");
      cur["status"] = buildPodStatus(p, cur.value("status", json::object()), now);
      return kube::Status::OK();
    });
    if (!r && r.error().code != Code::NotFound && r.error().code != Code::Conflict) {
      spdlog::warn("event=pod_status_failed pod={}/{} error=\"{}\"", p.ns, p.name, r.error().message);
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

  void terminate(SimPod& p) {
    auto now = SysClock::now();
    {
      std::lock_guard<std::mutex> l(mu_);
      bool wasRunning = p.stage == PodStage::Running;
      p.stage = PodStage::Terminating;
      ++p.gen;
      for (auto& c : p.containers) {
        if (c.startedAt && !c.finishedAt) {
          c.finishedAt = now;
          c.exitCode = 0;  // exited on SIGTERM within the grace period
        }
      }
      (void)wasRunning;
    }
    writeStatus(p);
    deletePod(p.ns, p.name, p.uid);
  }

  // Re-arms a pod's timers after its node recovers (timers fired while stopped were dropped).
  void resume(SimPod& p) {
    ++p.gen;
    if (p.stage == PodStage::Creating) {
      push(Steady::now() + opts_.podStartLatency, TimerKind::PodStart, p.key, p.gen);
    } else if (p.stage == PodStage::Running) {
      bool waiting = std::any_of(p.containers.begin(), p.containers.end(),
                                 [](const SimContainer& c) { return !c.startedAt; });
      if (waiting) {
        push(Steady::now(), TimerKind::ContainerRestart, p.key, p.gen);
      } else if (p.exitAfter) {
        push(Steady::now() + *p.exitAfter, TimerKind::ContainerExit, p.key, p.gen);
      }
    }
    writeStatus(p);
  }

  void onPodTimer(const Timer& t) {
    auto it = pods_.find(t.key);
    if (it == pods_.end() || it->second.gen != t.gen) return;
    SimPod& p = it->second;
    auto n = nodes_.find(p.node);
    if (n != nodes_.end() && n->second.stopped) return;  // resume() re-arms on recovery
    auto now = SysClock::now();
    std::string event;
    {
      std::lock_guard<std::mutex> l(mu_);
      switch (t.kind) {
        case TimerKind::PodStart:
          if (p.stage != PodStage::Creating) return;
          p.stage = PodStage::Running;
          for (auto& c : p.containers) c.startedAt = now;
          break;
        case TimerKind::ContainerRestart:
          for (auto& c : p.containers) {
            if (!c.startedAt) {
              c.startedAt = now;
              c.waitingMessage.clear();
            }
          }
          break;
        case TimerKind::ContainerExit: {
          bool restart = p.restartPolicy == "Always" ||
                         (p.restartPolicy == "OnFailure" && p.exitCode != 0);
          for (auto& c : p.containers) {
            if (!c.startedAt || c.finishedAt) continue;
            if (!restart) {
              c.finishedAt = now;
              c.exitCode = p.exitCode;
              continue;
            }
            c.prevStartedAt = c.startedAt;
            c.prevFinishedAt = now;
            c.prevExitCode = p.exitCode;
            c.startedAt.reset();
            c.finishedAt.reset();
            ++c.restartCount;
            auto delay = std::min(kMaxBackoff, std::chrono::milliseconds(p.backoff.count() * (int64_t{1} << std::min(c.restartCount - 1, 10))));
            c.waitingReason = "CrashLoopBackOff";
            c.waitingMessage = "back-off " + std::to_string(delay.count() / 1000) +
                               "s restarting failed container=" + c.name + " pod=" + p.name + "_" +
                               p.ns + "(" + p.uid + ")";
          }
          if (!restart) {
            p.stage = PodStage::Finished;
          } else {
            int rc = p.containers.empty() ? 1 : p.containers[0].restartCount;
            auto delay = std::min(kMaxBackoff, std::chrono::milliseconds(p.backoff.count() * (int64_t{1} << std::min(rc - 1, 10))));
            push(Steady::now() + delay, TimerKind::ContainerRestart, p.key, p.gen);
            event = "Back-off restarting failed container";
          }
          break;
        }
        default:
          return;
      }
    }
    writeStatus(p);
    if (!event.empty()) recorder_.record(p.pod, "Warning", "BackOff", event, p.node);
    if ((t.kind == TimerKind::PodStart || t.kind == TimerKind::ContainerRestart) && p.exitAfter) {
      push(Steady::now() + *p.exitAfter, TimerKind::ContainerExit, p.key, p.gen);
    }
  }

  // --- loop ----------------------------------------------------------------------------------

  void push(Steady::time_point at, TimerKind kind, const std::string& key, uint64_t gen) {
    timers_.push(Timer{at, seq_++, kind, key, gen});
  }

  void runTimers() {
    auto now = Steady::now();
    int budget = 5000;
    while (!timers_.empty() && timers_.top().at <= now && budget-- > 0) {
      Timer t = timers_.top();
      timers_.pop();
      if (t.kind == TimerKind::LeaseRenew || t.kind == TimerKind::NodeStatus) {
        auto n = nodes_.find(t.key);
        if (n == nodes_.end()) continue;
        if (!n->second.stopped) {
          t.kind == TimerKind::LeaseRenew ? renewLease(n->second) : postNodeStatus(n->second);
        }
        auto every = t.kind == TimerKind::LeaseRenew ? opts_.leaseRenewInterval : opts_.nodeStatusInterval;
        push(t.at + every, t.kind, t.key, 0);
        continue;
      }
      onPodTimer(t);
    }
  }

  void run() {
    auto pods = store_.list("/core/pods/");
    for (const auto& o : pods.items) onPod(*o);
    auto w = store_.watch("/core/", pods.rv);
    if (!w) {
      spdlog::error("event=kubelets_watch_failed error=\"{}\"", w.error().message);
      return;
    }
    while (!stopping_) {
      auto wait = 200ms;
      if (!timers_.empty()) {
        auto until = std::chrono::duration_cast<std::chrono::milliseconds>(timers_.top().at - Steady::now());
        wait = std::clamp(until, 0ms, 200ms);
      }
      auto ev = nextGathered(**w, wait);
      if ((*w)->ended()) {
        spdlog::warn("event=kubelets_watch_ended action=rewatch");
        auto again = store_.watch("/core/", store_.revision());
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
      runTimers();
    }
  }

  void handle(const Event& ev) {
    const std::string& key = ev.object->key;
    if (key.rfind("/core/pods/", 0) == 0) {
      if (ev.type == EventType::Deleted) {
        auto it = pods_.find(key);
        if (it != pods_.end() && it->second.uid == kube::getUid(json::parse(ev.object->json, nullptr, false))) {
          forgetPod(key);
        }
      } else {
        onPod(*ev.object);
      }
    } else if (key.rfind("/core/nodes/", 0) == 0 && ev.type != EventType::Deleted) {
      onNode(*ev.object);
    }
  }

  Store& store_;
  Rest& rest_;
  SimulationOptions opts_;
  ResourceInfoPtr podsInfo_, nodesInfo_, leasesInfo_;
  EventRecorder recorder_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  // Changed only by the loop thread (and start() before it runs); mu_ guards changes so
  // API threads can read.
  mutable std::mutex mu_;
  std::map<std::string, SimPod> pods_;
  std::map<std::string, SimNode> nodes_;

  // Loop thread only.
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  uint64_t seq_ = 0;
};

}  // namespace

std::unique_ptr<SimulatedKubelets> newSimulatedKubelets(Store& store, Registry& registry,
                                                        Rest& rest, SimulationOptions opts) {
  return std::make_unique<KubeletsImpl>(store, registry, rest, std::move(opts));
}

}  // namespace strait::minicluster
