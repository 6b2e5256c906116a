// Offload benchmark: how fast and how cheaply Pods travel to one virtual node.
//
// Setup: two `strait minicluster` processes ("consumer" without nodes; "provider" with
// --provider-nodes simulated nodes of large capacity and zero pod start latency), a
// `strait agent` on each, one in-band peering (`strait peer`), namespace `bench` offloaded
// (`strait offload namespace`). The consumer agent dials the provider agent through a TCP
// forwarder in this process that counts the bytes of the reflection stream (and of the
// heartbeats on the same connection).
//
// Each wave creates Pods directly bound to the virtual node (spec.nodeName set at creation,
// so the consumer's scheduler is not involved) at --rate Pods/s from --writers connections,
// and records arrival times of watch events in this process, one clock for both clusters:
//   local ADDED (= local bind)      -> provider ADDED      : added latency on the way out
//   provider Running                -> local Running       : added latency on the way back
// plus the time from the first create until every Pod of the wave is Running locally, the
// consumer agent's peak RSS (VmHWM) and CPU seconds (/proc/<pid>/stat), and forwarded bytes
// per Pod, each way separately ("out": consumer to provider, "back": provider to consumer).
// After each wave (and again at the end) the agent-mode figures are printed beside their
// aims: both agents' peak RSS with the Pods on the node so far, and stream bytes per Pod.
// For 11,000 and 50,000 Pods: --waves 1000 10000 39000 --provider-nodes 55. --in-process replaces the agents, the peering and the stream by the consumer's
// PodReflector and the provider's ProviderApplier running in this process (the reflection
// logic alone; agent figures are then not measured). Waves run one after the other without deleting (the second wave of 10,000 adds to
// the 1,000 of the first). Prints a table (or JSON lines with --json). Run: make bench.
#include <CLI/CLI.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <sstream>
#include <thread>

#include "bench/bench_client.h"
#include "bench/inprocess_offload.h"
#include "bench/offload_compare.h"
#include "bench/proc_stats.h"
#include "e2e/peering_fixture.h"
#include "e2e/tcp_proxy.h"

using namespace strait;
using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// Aims of the agent-mode figures.
constexpr double kProviderPeakAimMiB = 200;
constexpr double kConsumerPeakAimMiB = 150;
constexpr double kStreamBytesPerPodAim = 3 * 1024;  // out + back

struct AgentFigures {
  int pods = 0;  // on the virtual node after the wave
  double providerPeakMiB = -1, consumerPeakMiB = -1, outPerPod = -1, backPerPod = -1;
};

void printAgentFigures(const std::vector<AgentFigures>& all) {
  auto verdict = [](double v, double aim) { return v < 0 ? "" : v <= aim ? "met" : "missed"; };
  std::printf("# agent-mode figures (peak RSS = VmHWM after the wave; bytes = TLS bytes through "
              "the forwarder during the wave / Pods of the wave)\n");
  std::printf("  %-8s %-26s %-26s %-22s %-22s %s\n", "pods", "provider agent peak RSS",
              "consumer agent peak RSS", "stream out B/Pod", "stream back B/Pod",
              "out+back B/Pod");
  for (const AgentFigures& a : all) {
    char p[64], c[64], o[64], b[64], t[64];
    std::snprintf(p, sizeof p, "%.0f MiB (%s)", a.providerPeakMiB,
                  verdict(a.providerPeakMiB, kProviderPeakAimMiB));
    std::snprintf(c, sizeof c, "%.0f MiB (%s)", a.consumerPeakMiB,
                  verdict(a.consumerPeakMiB, kConsumerPeakAimMiB));
    std::snprintf(o, sizeof o, "%.0f", a.outPerPod);
    std::snprintf(b, sizeof b, "%.0f", a.backPerPod);
    std::snprintf(t, sizeof t, "%.0f (%s)", a.outPerPod + a.backPerPod,
                  verdict(a.outPerPod + a.backPerPod, kStreamBytesPerPodAim));
    std::printf("  %-8d %-26s %-26s %-22s %-22s %s\n", a.pods, p, c, o, b, t);
  }
  std::printf("  aims: provider <= %.0f MiB, consumer <= %.0f MiB, out+back <= %.0f B/Pod\n",
              kProviderPeakAimMiB, kConsumerPeakAimMiB, kStreamBytesPerPodAim);
}

struct Flags {
  std::string strait = e2e::straitBinary();
  std::vector<int> waves = {1000, 10000};
  double rate = 500;
  int writers = 8;
  int providerNodes = 25;
  int timeoutSeconds = 900;
  bool json = false;
  bool inProcess = false;
};

// /proc figures and a free port: bench/proc_stats.h.
using bench::cpuSeconds;
using bench::freePort;
using bench::loadavg;
using bench::procStatusKiB;

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// strait_stream_bytes_total of the consumer agent at 127.0.0.1:`port` (curl), as "sent TYPE"
// / "received TYPE" -> bytes; empty when the scrape failed.
std::map<std::string, double> streamBytesByType(uint16_t port) {
  std::map<std::string, double> out;
  std::istringstream in(bench::scrapeMetrics("127.0.0.1:" + std::to_string(port)));
  std::string line;
  auto label = [](const std::string& l, const std::string& key) {
    size_t at = l.find(key + "=\"");
    if (at == std::string::npos) return std::string();
    at += key.size() + 2;
    return l.substr(at, l.find('"', at) - at);
  };
  while (std::getline(in, line)) {
    if (line.rfind("strait_stream_bytes_total{", 0) != 0) continue;
    if (label(line, "side") != "consumer") continue;
    size_t close = line.rfind('}');
    if (close == std::string::npos) continue;
    out[label(line, "direction") + " " + label(line, "type")] += std::stod(line.substr(close + 1));
  }
  return out;
}

struct Percentiles {
  size_t n = 0;
  double p50 = -1, p99 = -1, max = -1;
};
Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  p.n = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  p.p50 = v[v.size() / 2];
  p.p99 = v[std::min(v.size() - 1, v.size() * 99 / 100)];
  p.max = v.back();
  return p;
}

// Arrival times of the watch events that matter, per local Pod uid.
struct PodTimes {
  Clock::time_point localAdded{}, localRunning{}, remoteAdded{}, remoteRunning{};
};

class Recorder {
 public:
  void localEvent(const json& pod, Clock::time_point at) {
    std::string uid = pod["metadata"].value("uid", "");
    std::lock_guard<std::mutex> lock(mu_);
    PodTimes& t = times_[uid];
    if (t.localAdded == Clock::time_point{}) t.localAdded = at;
    if (t.localRunning == Clock::time_point{} && phase(pod) == "Running") {
      t.localRunning = at;
      ++localRunning_;
    }
  }
  void remoteEvent(const json& pod, Clock::time_point at) {
    auto labels = pod["metadata"].value("labels", json::object());
    std::string uid = labels.value("strait.io/origin-uid", "");
    if (uid.empty()) return;
    std::lock_guard<std::mutex> lock(mu_);
    PodTimes& t = times_[uid];
    if (t.remoteAdded == Clock::time_point{}) t.remoteAdded = at;
    if (t.remoteRunning == Clock::time_point{} && phase(pod) == "Running") t.remoteRunning = at;
  }
  size_t localRunning() {
    std::lock_guard<std::mutex> lock(mu_);
    return localRunning_;
  }
  // Pods seen locally / in the provider / Running in the provider, over all waves.
  void counts(size_t* local, size_t* remote, size_t* remoteRunning) {
    std::lock_guard<std::mutex> lock(mu_);
    *local = *remote = *remoteRunning = 0;
    for (const auto& [uid, t] : times_) {
      if (t.localAdded != Clock::time_point{}) ++*local;
      if (t.remoteAdded != Clock::time_point{}) ++*remote;
      if (t.remoteRunning != Clock::time_point{}) ++*remoteRunning;
    }
  }
  std::map<std::string, PodTimes> snapshot() {
    std::lock_guard<std::mutex> lock(mu_);
    return times_;
  }

 private:
  static std::string phase(const json& pod) {
    auto s = pod.find("status");
    return s != pod.end() && s->is_object() ? s->value("phase", "") : "";
  }
  std::mutex mu_;
  std::map<std::string, PodTimes> times_;
  size_t localRunning_ = 0;
};

// One watch stream in a thread; each event's object goes to `sink` with its arrival time.
class WatchThread {
 public:
  WatchThread(const bench::ClusterAccess& access, std::string path,
              std::function<void(const json&, Clock::time_point)> sink)
      : conn_(access), path_(std::move(path)), sink_(std::move(sink)) {}
  std::string start() {
    std::string err;
    if (!conn_.connect(&err)) return err;
    thread_ = std::thread([this] { run(); });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, 30s, [&] { return started_; });
    return started_ ? "" : "watch " + path_ + " did not start";
  }
  void stop() {
    stopping_ = true;
    conn_.abort();
    if (thread_.joinable()) thread_.join();
  }
  ~WatchThread() { stop(); }

 private:
  void run() {
    std::string buf, err;
    conn_.stream(
        path_,
        [&](std::string_view data) {
          if (data.empty()) {
            std::lock_guard<std::mutex> lock(mu_);
            started_ = true;
            cv_.notify_all();
            return !stopping_;
          }
          auto at = Clock::now();
          buf.append(data);
          size_t nl;
          while ((nl = buf.find('\n')) != std::string::npos) {
            json ev = json::parse(buf.substr(0, nl), nullptr, false);
            buf.erase(0, nl + 1);
            if (ev.is_object() && ev.contains("object") && ev["object"].contains("metadata")) {
              sink_(ev["object"], at);
            }
          }
          return !stopping_;
        },
        &err);
  }
  bench::ApiConnection conn_;
  std::string path_;
  std::function<void(const json&, Clock::time_point)> sink_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;
};

json makePod(const std::string& name, const std::string& node) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "bench"}, {"labels", {{"app", "bench"}}}}},
          {"spec",
           {{"nodeName", node},
            {"tolerations",
             {{{"key", "virtual-node.strait.io/not-allowed"}, {"operator", "Exists"},
               {"effect", "NoExecute"}}}},
            {"containers",
             {{{"name", "app"},
               {"image", "nginx:1.27"},
               {"resources", {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}}}}}}}}};
}

int fail(const std::string& what) {
  std::fprintf(stderr, "offload_bench: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"offload benchmark: Pods to one virtual node"};
  app.add_option("--strait", f.strait, "strait binary");
  app.add_option("--waves", f.waves, "Pods per wave, in order")->capture_default_str();
  app.add_option("--rate", f.rate, "Pods created per second")->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--writers", f.writers, "writer connections")->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--provider-nodes", f.providerNodes, "provider nodes (1000 pods each)")
      ->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--timeout", f.timeoutSeconds, "seconds per wave")->capture_default_str();
  app.add_flag("--json", f.json, "JSON lines");
  app.add_flag("--in-process", f.inProcess,
               "reflector and applier in this process instead of agents and the stream");
  bench::CompareFlags cf;
  bool compare = false, compare10k = false;
  app.add_flag("--compare", compare,
               "Deployment to all Ready offloaded vs created directly in an identical provider "
               "cluster (offload_compare.h)");
  app.add_option("--replicas", cf.replicas, "--compare: Deployment sizes, in order (default "
                 "1000 3000)");
  app.add_flag("--with-10k", compare10k, "--compare: add a Deployment of 10,000 replicas");
  app.add_option("--perf-dir", cf.perfDir,
                 "--compare: perf record both API servers and agents into this directory");
  app.add_option("--perf-event", cf.perfEvent,
                 "--compare: with --perf-dir, record this perf event (e.g. sched:sched_switch) "
                 "instead of CPU samples");
  app.add_option("--consumer-agent-arg", cf.consumerAgentArgs,
                 "--compare: extra flag for the consumer agent (repeatable)")
      ->allow_extra_args(false);
  CLI11_PARSE(app, argc, argv);
  if (compare) {
    cf.strait = f.strait;
    if (cf.replicas.empty()) cf.replicas = {1000, 3000};
    if (compare10k) cf.replicas.push_back(10000);
    cf.providerNodes = f.providerNodes;
    cf.timeoutSeconds = f.timeoutSeconds;
    cf.json = f.json;
    signal(SIGPIPE, SIG_IGN);
    spdlog::set_level(spdlog::level::warn);
    return bench::runOffloadCompare(cf);
  }
  setenv("STRAIT_BIN", f.strait.c_str(), 1);
  signal(SIGPIPE, SIG_IGN);
  spdlog::set_level(spdlog::level::warn);  // the in-process reflector logs each Pod at info
  std::string loadBefore = loadavg();

  e2e::Minicluster consumer, provider;
  std::string err = consumer.start("consumer", 60s, {"--log-level", "warn", "--watch-history",
                                                     "300000"});
  if (!err.empty()) return fail("consumer: " + err);
  err = provider.start(
      "provider", 60s,
      {"--log-level", "warn", "--watch-history", "300000", "--nodes",
       std::to_string(f.providerNodes), "--node-cpu", "1000", "--node-memory", "4000Gi",
       "--node-pods", "1000", "--pod-cidr", "10.0.0.0/8", "--node-cidr-mask-size", "20",
       "--pod-start-latency", "0s"});
  if (!err.empty()) return fail("provider: " + err);

  std::string access;
  auto caccess = bench::loadKubeconfig(consumer.kubeconfig(), &access);
  auto paccess = bench::loadKubeconfig(provider.kubeconfig(), &access);
  if (!caccess || !paccess) return fail("kubeconfig: " + access);
  const std::string vnode = f.inProcess ? "strait-bench" : "strait-provider";
  bench::ApiConnection probe(*caccess);
  if (!probe.connect(&err)) return fail("connect: " + err);
  bench::ApiResponse r;
  probe.request("POST", "/api/v1/namespaces",
                json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "bench"}}}}
                    .dump(),
                &r, &err);
  // Default mode: the counting forwarder sits between the two agents.
  uint16_t providerPort = freePort();
  e2e::TcpProxy proxy(providerPort);
  e2e::AgentProcess providerAgent, consumerAgent;
  // The consumer agent's /metrics: its stream bytes by direction and message type.
  const uint16_t metricsPort = freePort();
  std::unique_ptr<bench::InProcessOffload> inProcess;
  int total = 0;
  for (int w : f.waves) total += w;
  if (f.inProcess) {
    inProcess = bench::InProcessOffload::start(consumer.kubeconfig(), provider.kubeconfig(),
                                               "0c0ffee0-1111-4222-8333-444455556666", vnode,
                                               10, &err);
    if (!inProcess) return fail("in-process reflector: " + err);
  } else {
    if (err = proxy.start(); !err.empty()) return fail("proxy: " + err);
    err = providerAgent.start(provider.kubeconfig(), "provider",
                              {"--share", "1", "--advertise",
                               "127.0.0.1:" + std::to_string(proxy.port())},
                              "127.0.0.1:" + std::to_string(providerPort));
    if (!err.empty()) return fail(err);
    err = consumerAgent.start(consumer.kubeconfig(), "consumer",
                              {"--metrics-listen", "127.0.0.1:" + std::to_string(metricsPort)});
    if (!err.empty()) return fail(err);
    auto run = [&](std::vector<std::string> args) {
      args.insert(args.begin(), f.strait);
      return e2e::runCommand(args, {}, 120s);
    };
    e2e::CommandResult peer =
        run({"peer", "--kubeconfig", consumer.kubeconfig(), "--remote-kubeconfig",
             provider.kubeconfig(), "--cpu", "20000", "--memory", "80000Gi", "--pods",
             std::to_string(total + 1000)});
    if (peer.exitCode != 0) return fail("strait peer: " + peer.describe());
    bool ready = bench::waitForNodeReady(probe, vnode, 60s);
    if (!ready) return fail("virtual node " + vnode + " not Ready:\n" + consumerAgent.logs());
    e2e::CommandResult offload = run({"offload", "namespace", "bench", "--kubeconfig",
                                      consumer.kubeconfig(), "--remote-name", "provider"});
    if (offload.exitCode != 0) return fail("strait offload: " + offload.describe());
  }
  Recorder rec;
  WatchThread localWatch(*caccess, "/api/v1/namespaces/bench/pods?watch=1",
                         [&](const json& p, Clock::time_point at) { rec.localEvent(p, at); });
  WatchThread remoteWatch(*paccess,
                          "/api/v1/pods?watch=1&labelSelector=strait.io%2Forigin-cluster-id",
                          [&](const json& p, Clock::time_point at) { rec.remoteEvent(p, at); });
  if (err = localWatch.start(); !err.empty()) return fail(err);
  if (err = remoteWatch.start(); !err.empty()) return fail(err);

  pid_t agentPid = f.inProcess ? -1 : consumerAgent.pid();
  pid_t providerAgentPid = f.inProcess ? -1 : providerAgent.pid();
  int status = 0;
  int created = 0;
  std::vector<AgentFigures> figures;
  for (size_t wave = 0; wave < f.waves.size(); ++wave) {
    int n = f.waves[wave];
    double cpu0 = cpuSeconds(agentPid), pcpu0 = cpuSeconds(providerAgentPid);
    uint64_t bytes0 = proxy.bytesForwarded();
    uint64_t out0 = proxy.bytesToUpstream(), back0 = proxy.bytesFromUpstream();
    const std::map<std::string, double> byType0 =
        f.inProcess ? std::map<std::string, double>() : streamBytesByType(metricsPort);
    std::atomic<int> next{0}, failed{0}, posted{0};
    const int before = created;
    auto t0 = Clock::now();
    std::vector<std::thread> writers;
    for (int w = 0; w < f.writers; ++w) {
      writers.emplace_back([&, wave] {
        bench::ApiConnection c(*caccess);
        std::string e;
        if (!c.connect(&e)) {
          failed += n;
          return;
        }
        for (int i = next++; i < n; i = next++) {
          std::this_thread::sleep_until(t0 + std::chrono::microseconds(
                                                 static_cast<long long>(i * 1e6 / f.rate)));
          bench::ApiResponse resp;
          std::string name = "w" + std::to_string(wave) + "-" + std::to_string(i);
          if (!c.request("POST", "/api/v1/namespaces/bench/pods", makePod(name, vnode).dump(),
                         &resp, &e) ||
              resp.status != 201) {
            ++failed;
          } else {
            ++posted;
          }
        }
      });
    }
    // Progress on stderr every 5 s while the wave runs (it takes minutes at 10,000 Pods).
    std::atomic<bool> waveOver{false};
    std::thread progress([&, wave, before] {
      auto tick = t0 + 5s;
      while (!waveOver) {
        if (Clock::now() < tick) {
          std::this_thread::sleep_for(50ms);
          continue;
        }
        tick += 5s;
        size_t local = 0, remote = 0, remoteRunning = 0;
        rec.counts(&local, &remote, &remoteRunning);
        std::fprintf(stderr,
                     "offload_bench: wave %zu t=%.0fs created=%d seen_locally=%zu remote=%zu "
                     "remote_running=%zu local_running=%zu agent_rss_mib=%.0f agent_cpu_s=%.1f "
                     "load=%s\n",
                     wave + 1, ms(Clock::now() - t0) / 1000, before + posted.load(),
                     local, remote, remoteRunning, rec.localRunning(),
                     procStatusKiB(agentPid, "VmRSS") / 1024.0, cpuSeconds(agentPid) - cpu0,
                     loadavg().c_str());
      }
    });
    for (auto& t : writers) t.join();
    auto createdAt = Clock::now();
    created += n - failed.load();
    bool done = e2e::waitFor([&] { return rec.localRunning() >= static_cast<size_t>(created); },
                             std::chrono::seconds(f.timeoutSeconds), 20ms);
    waveOver = true;
    progress.join();
    auto t1 = Clock::now();
    double cpu1 = cpuSeconds(agentPid), pcpu1 = cpuSeconds(providerAgentPid);
    uint64_t bytes1 = proxy.bytesForwarded();
    uint64_t out1 = proxy.bytesToUpstream(), back1 = proxy.bytesFromUpstream();
    // Latencies of this wave's Pods (those first seen locally after t0).
    std::vector<double> out, back;
    Clock::time_point lastRunning{};
    size_t running = 0;
    for (const auto& [uid, t] : rec.snapshot()) {
      if (t.localAdded < t0) continue;
      if (t.remoteAdded != Clock::time_point{}) out.push_back(ms(t.remoteAdded - t.localAdded));
      if (t.localRunning != Clock::time_point{} && t.remoteRunning != Clock::time_point{}) {
        back.push_back(ms(t.localRunning - t.remoteRunning));
      }
      if (t.localRunning != Clock::time_point{}) {
        ++running;
        lastRunning = std::max(lastRunning, t.localRunning);
      }
    }
    Percentiles po = percentiles(out), pb = percentiles(back);
    // Per message type, protobuf bytes before gRPC compression ("sent": consumer to provider).
    json byType = json::object();
    if (!f.inProcess) {
      for (const auto& [k, v] : streamBytesByType(metricsPort)) {
        auto it = byType0.find(k);
        const double d = v - (it == byType0.end() ? 0 : it->second);
        if (d > 0 && n > 0) byType[k] = std::round(d / n);
      }
    }
    json row = {{"wave", wave + 1},
                {"mode", f.inProcess ? "in-process reflector, no agents" : "agents + stream"},
                {"pods", n},
                {"pods_on_vnode", created},
                {"rate_target", f.rate},
                {"create_s", ms(createdAt - t0) / 1000},
                {"create_errors", failed.load()},
                {"running_locally", running},
                {"all_running_s", done ? ms(lastRunning - t0) / 1000 : -1},
                {"out_p50_ms", po.p50},
                {"out_p99_ms", po.p99},
                {"out_max_ms", po.max},
                {"back_p50_ms", pb.p50},
                {"back_p99_ms", pb.p99},
                {"back_max_ms", pb.max},
                {"agent_rss_mib", procStatusKiB(agentPid, "VmRSS") / 1024.0},
                {"agent_peak_rss_mib", procStatusKiB(agentPid, "VmHWM") / 1024.0},
                {"agent_cpu_s", cpu1 - cpu0},
                {"provider_agent_cpu_s", pcpu1 - pcpu0},
                {"provider_agent_peak_rss_mib", procStatusKiB(providerAgentPid, "VmHWM") / 1024.0},
                {"stream_bytes_per_pod", n > 0 ? static_cast<double>(bytes1 - bytes0) / n : 0},
                {"stream_bytes_out_per_pod", n > 0 ? static_cast<double>(out1 - out0) / n : 0},
                {"stream_bytes_back_per_pod", n > 0 ? static_cast<double>(back1 - back0) / n : 0},
                {"stream_uncompressed_bytes_per_pod_by_type", byType},
                {"provider_agent_peak_rss_aim_mib", kProviderPeakAimMiB},
                {"agent_peak_rss_aim_mib", kConsumerPeakAimMiB},
                {"stream_bytes_per_pod_aim", kStreamBytesPerPodAim},
                {"wall_s", ms(t1 - t0) / 1000},
                {"load", loadavg()}};
    if (f.inProcess) {
      for (const char* k : {"agent_rss_mib", "agent_peak_rss_mib", "agent_cpu_s",
                            "provider_agent_cpu_s", "provider_agent_peak_rss_mib",
                            "stream_bytes_per_pod", "stream_bytes_out_per_pod",
                            "stream_bytes_back_per_pod",
                            "stream_uncompressed_bytes_per_pod_by_type"}) {
        row[k] = nullptr;  // no agents, no stream in this mode
      }
    }
    if (!f.inProcess) {
      figures.push_back({created, row["provider_agent_peak_rss_mib"].get<double>(),
                         row["agent_peak_rss_mib"].get<double>(),
                         row["stream_bytes_out_per_pod"].get<double>(),
                         row["stream_bytes_back_per_pod"].get<double>()});
    }
    if (f.json) {
      std::printf("%s\n", row.dump().c_str());
    } else {
      std::printf("offload_bench wave %zu: %d Pods bound to %s at %.0f/s (%d on the node now)\n",
                  wave + 1, n, vnode.c_str(), f.rate, created);
      for (auto it = row.begin(); it != row.end(); ++it) {
        std::printf("  %-28s %s\n", it.key().c_str(), it.value().dump().c_str());
      }
    }
    std::fflush(stdout);
    if (!done || failed.load() > 0) {
      std::fprintf(stderr, "offload_bench: wave %zu incomplete: %zu of %d Running locally\n",
                   wave + 1, running, n);
      status = 1;
      break;
    }
  }
  if (!f.json && !figures.empty()) printAgentFigures(figures);
  if (!f.json) std::printf("# load average before %s, after %s\n", loadBefore.c_str(), loadavg().c_str());
  localWatch.stop();
  remoteWatch.stop();
  consumerAgent.stop();
  providerAgent.stop();
  proxy.stop();
  return status;
}
