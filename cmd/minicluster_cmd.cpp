// `strait minicluster`: the composition root of the embedded Kubernetes API server.
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <chrono>
#include <thread>

#include "cmd/cli_util.h"
#include "cmd/commands.h"
#include "minicluster/apiserver.h"
#include "minicluster/netns.h"
#include "minicluster/runtime_process.h"
#include "metrics/registry.h"

namespace strait::cmd {
namespace {

int g_exit = 0;
std::atomic<bool> g_stop{false};

void onSignal(int) { g_stop = true; }

struct MiniclusterFlags {
  std::string name = "minicluster";
  std::string listen = "127.0.0.1:6443";
  std::string metricsListen;  // "" = no /metrics
  std::string kubeconfigOut;
  std::string dataDir;
  size_t maxBodyBytes = 3 * 1024 * 1024;
  std::string logLevel = "info";
  size_t watchHistory = 100000;
  std::string tokenAuthFile;
  std::string authorizationMode = "RBAC";
  // Simulated data plane.
  int nodes = 0;
  std::string nodeCpu = "4", nodeMemory = "8Gi", nodePods = "110", nodeEphemeral = "100Gi";
  std::string nodePools;
  std::string podCidr = "10.244.0.0/16";
  int nodeCidrMaskSize = 24;
  std::string podStartLatency = "500ms";
  std::string nodeMonitorGracePeriod = "40s";
  int64_t defaultTolerationSeconds = 300;
  bool noScheduler = false;
  std::string runtime = "sim";  // sim | process
  std::vector<std::string> localImages;  // REPO[:TAG]=/path/to/binary
  std::string cleanup;          // --cleanup NAME
};

// Fills the simulation options from the flags; logs and returns false on a bad value.
bool simulationFromFlags(const MiniclusterFlags& f, minicluster::SimulationOptions& sim) {
  auto bad = [](const std::string& flag, const std::string& msg) {
    spdlog::error("event=bad_flag flag={} error=\"{}\"", flag, msg);
    return false;
  };
  if (f.nodes > 0) {
    auto pool = minicluster::poolFromFlags(f.nodes, f.nodeCpu, f.nodeMemory, f.nodePods,
                                           f.nodeEphemeral);
    if (!pool) return bad("--nodes", pool.error().message);
    sim.pools.push_back(std::move(*pool));
  }
  if (!f.nodePools.empty()) {
    std::ifstream in(f.nodePools);
    if (!in) return bad("--node-pools", "cannot read " + f.nodePools);
    std::stringstream ss;
    ss << in.rdbuf();
    auto pools = minicluster::parseNodePools(ss.str(), f.nodePools);
    if (!pools) return bad("--node-pools", pools.error().message);
    for (auto& p : *pools) {
      for (const auto& q : sim.pools) {
        if (q.namePrefix == p.namePrefix) {
          return bad("--node-pools", "pool name \"" + p.namePrefix + "\" clashes with --nodes");
        }
      }
      sim.pools.push_back(std::move(p));
    }
  }
  int total = 0;
  for (const auto& p : sim.pools) total += p.count;
  auto cidrs = minicluster::splitPodCidr(f.podCidr, f.nodeCidrMaskSize, total);
  if (!cidrs) return bad("--pod-cidr", cidrs.error().message);
  sim.podCidr = f.podCidr;
  sim.nodeCidrMaskSize = f.nodeCidrMaskSize;
  auto latency = minicluster::parseDuration(f.podStartLatency);
  if (!latency) return bad("--pod-start-latency", latency.error().message);
  sim.podStartLatency = *latency;
  auto grace = minicluster::parseDuration(f.nodeMonitorGracePeriod);
  if (!grace || grace->count() <= 0) {
    return bad("--node-monitor-grace-period", "expected a positive duration such as 40s");
  }
  sim.nodeMonitorGracePeriod = *grace;
  if (f.defaultTolerationSeconds < 0) {
    return bad("--default-toleration-seconds", "must be >= 0");
  }
  sim.defaultTolerationSeconds = f.defaultTolerationSeconds;
  sim.runScheduler = !f.noScheduler;
  sim.runtime = f.runtime == "process" ? minicluster::RuntimeKind::Process
                                       : minicluster::RuntimeKind::Simulated;
  if (!f.localImages.empty() && f.runtime != "process") {
    return bad("--local-image", "needs --runtime process (simulated Pods run nothing)");
  }
  for (const auto& text : f.localImages) {
    auto mapping = minicluster::parseLocalImage(text);
    if (!mapping) return bad("--local-image", mapping.error().message);
    if (!sim.localImages.emplace(mapping->first, mapping->second).second) {
      return bad("--local-image", "image " + mapping->first + " is mapped twice");
    }
  }
  return true;
}

int runMinicluster(const MiniclusterFlags& f) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("strait"));
  spdlog::set_level(spdlog::level::from_str(f.logLevel));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  minicluster::ApiServerOptions o;
  o.name = f.name;
  auto colon = f.listen.rfind(':');
  if (colon == std::string::npos) {
    spdlog::error("event=bad_flag flag=--listen value={} error=\"expected HOST:PORT\"", f.listen);
    return 2;
  }
  o.listenHost = f.listen.substr(0, colon);
  try {
    int port = std::stoi(f.listen.substr(colon + 1));
    if (port < 0 || port > 65535) throw std::out_of_range("port");
    o.listenPort = static_cast<uint16_t>(port);
  } catch (...) {
    spdlog::error("event=bad_flag flag=--listen value={} error=\"port must be 0-65535\"",
                  f.listen);
    return 2;
  }
  if (!f.kubeconfigOut.empty()) o.kubeconfigOut = f.kubeconfigOut;
  if (!f.dataDir.empty()) o.dataDir = f.dataDir;
  o.maxBodyBytes = f.maxBodyBytes;
  o.historyLimit = f.watchHistory;
  if (!f.tokenAuthFile.empty()) o.tokenAuthFile = f.tokenAuthFile;
  o.authorizationMode = f.authorizationMode;
  if (!simulationFromFlags(f, o.simulation)) return 2;
  if (!f.cleanup.empty() || f.runtime == "process") {
    auto missing = minicluster::missingProcessRuntimePrerequisites(true, true);
    for (const auto& m : missing) {
      spdlog::error("event=process_runtime_unavailable missing=\"{}\"", m);
    }
    if (!missing.empty()) return 2;
  }
  if (!f.cleanup.empty()) {
    auto swept = minicluster::cleanupProcessRuntime(f.cleanup);
    if (!swept) {
      spdlog::error("event=cleanup_failed cluster={} error=\"{}\"", f.cleanup,
                    swept.error().message);
      return 1;
    }
    spdlog::info("event=cleanup_done cluster={} namespaces={} links={} processes={}", f.cleanup,
                 swept->namespaces.size(), swept->links.size(), swept->processes.size());
    return 0;
  }

  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  metrics::Registry metricsRegistry;
  std::unique_ptr<metrics::MetricsServer> metricsServer;
  if (!f.metricsListen.empty()) {
    kube::Result<HostPort> hp = parseHostPort(f.metricsListen, true);
    if (!hp.ok()) {
      spdlog::error("event=bad_flag flag=--metrics-listen error=\"{}\"", hp.error().message);
      return 2;
    }
    o.metrics = &metricsRegistry;
    base::Result<std::unique_ptr<metrics::MetricsServer>> ms =
        metrics::MetricsServer::start(hp->host, hp->port, metricsRegistry);
    if (!ms.ok()) {
      spdlog::error("event=start_failed component=metrics error=\"{}\"", ms.error().message);
      return 1;
    }
    metricsServer = std::move(*ms);
    spdlog::info("event=metrics_serving address={}:{}", hp->host, metricsServer->port());
  }
  auto server = minicluster::newApiServer(o);
  if (auto s = server->start(); !s) {
    spdlog::error("event=start_failed error=\"{}\"", s.error().message);
    return 1;
  }
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  spdlog::info("event=stopping");
  server->stop();
  return 0;
}

}  // namespace

int exitCode() { return g_exit; }
void setExitCode(int code) { g_exit = code; }

void addMiniclusterCommand(CLI::App& app) {
  auto flags = std::make_shared<MiniclusterFlags>();
  auto* sub = app.add_subcommand("minicluster",
                                 "run an embedded Kubernetes API server (the test/demo cluster)");
  sub->add_option("--name", flags->name, "cluster name (kubeconfig cluster and context)")
      ->capture_default_str();
  sub->add_option("--listen", flags->listen, "HOST:PORT to serve HTTPS on (PORT 0 = any free)")
      ->capture_default_str()
      ->check(hostPortValidator(true));
  sub->add_option("--metrics-listen", flags->metricsListen,
                  "HOST:PORT serving Prometheus metrics on /metrics over plain HTTP (PORT 0 = "
                  "any; default: none)")
      ->check(hostPortValidator(true));
  sub->add_option("--kubeconfig-out", flags->kubeconfigOut,
                  "write an admin kubeconfig here once serving");
  sub->add_option("--data-dir", flags->dataDir,
                  "keep state here (write-ahead log, snapshots, PKI); default: memory only");
  sub->add_option("--max-body-bytes", flags->maxBodyBytes,
                  "largest accepted request body (1024 to 1073741824)")
      ->capture_default_str()
      ->check(numberRange(1024, 1 << 30));
  sub->add_option("--watch-history", flags->watchHistory,
                  "watch events kept for resuming watches; older resourceVersions get 410 (1 to "
                  "100000000)")
      ->capture_default_str()
      ->check(numberRange(1, 100'000'000));
  sub->add_option("--token-auth-file", flags->tokenAuthFile,
                  "CSV of token,user,uid,\"group1,group2\" accepted as bearer tokens");
  sub->add_option("--authorization-mode", flags->authorizationMode,
                  "RBAC (Roles and bindings are enforced) or AlwaysAllow")
      ->capture_default_str()
      ->check(CLI::IsMember({"RBAC", "AlwaysAllow"}));
  sub->add_option("--log-level", flags->logLevel, kLogLevelHelp)
      ->capture_default_str()
      ->check(logLevelValidator());
  sub->add_option("--nodes", flags->nodes,
                  "number of simulated nodes (node-0, node-1, ...; 0 to 5000)")
      ->capture_default_str()
      ->check(numberRange(0, 5000));
  sub->add_option("--node-cpu", flags->nodeCpu, "CPU capacity of each --nodes node")
      ->capture_default_str()
      ->check(positiveQuantityValidator());
  sub->add_option("--node-memory", flags->nodeMemory, "memory capacity of each --nodes node")
      ->capture_default_str()
      ->check(positiveQuantityValidator());
  sub->add_option("--node-pods", flags->nodePods, "pod capacity of each --nodes node")
      ->capture_default_str()
      ->check(positiveQuantityValidator());
  sub->add_option("--node-ephemeral-storage", flags->nodeEphemeral,
                  "ephemeral-storage capacity of each --nodes node")
      ->capture_default_str()
      ->check(positiveQuantityValidator());
  sub->add_option("--node-pools", flags->nodePools,
                  "YAML file of node pools (name, count, capacity, labels, taints)");
  sub->add_option("--pod-cidr", flags->podCidr, "cluster pod CIDR, split into one range per node")
      ->capture_default_str();
  sub->add_option("--node-cidr-mask-size", flags->nodeCidrMaskSize,
                  "prefix length of each node's podCIDR (8 to 30)")
      ->capture_default_str()
      ->check(numberRange(8, 30));
  sub->add_option("--pod-start-latency", flags->podStartLatency,
                  "time from binding to Running on a simulated node (0s to 1h)")
      ->capture_default_str()
      ->check(durationValidator(std::chrono::milliseconds(0), std::chrono::hours(1)));
  sub->add_option("--node-monitor-grace-period", flags->nodeMonitorGracePeriod,
                  "time without heartbeats before a node's conditions go Unknown (1s to 24h)")
      ->capture_default_str()
      ->check(durationValidator(std::chrono::seconds(1), std::chrono::hours(24)));
  sub->add_option("--default-toleration-seconds", flags->defaultTolerationSeconds,
                  "tolerationSeconds of the not-ready/unreachable tolerations added to pods "
                  "(0 to 31536000)")
      ->capture_default_str()
      ->check(numberRange(0, 31'536'000));
  sub->add_flag("--no-scheduler", flags->noScheduler, "do not run the built-in scheduler");
  sub->add_option("--runtime", flags->runtime,
                  "what runs Pods: sim (simulated) or process (real processes in network "
                  "namespaces; needs root)")
      ->capture_default_str()
      ->check(CLI::IsMember({"sim", "process"}));
  sub->add_option("--local-image", flags->localImages,
                  "REPO[:TAG]=/path/to/binary (repeatable; process runtime): a container of "
                  "that image runs the binary with the container's command after its first "
                  "word, then its args; without a tag every tag of REPO matches");
  sub->add_option("--cleanup", flags->cleanup,
                  "remove what a killed process-runtime minicluster named NAME left (processes, "
                  "network namespaces, links), then exit");
  sub->callback([flags] { setExitCode(runMinicluster(*flags)); });
}

}  // namespace strait::cmd
