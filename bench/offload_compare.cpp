// offload_bench --compare (see offload_compare.h).
#include "bench/offload_compare.h"

#include <signal.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "bench/bench_client.h"
#include "bench/proc_stats.h"
#include "e2e/peering_fixture.h"

namespace strait::bench {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

int fail(const std::string& what) {
  std::fprintf(stderr, "offload_bench --compare: %s\n", what.c_str());
  return 1;
}

json deployment(const std::string& name, int replicas) {
  json labels = {{"app", name}};
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"namespace", "bench"}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", labels}}},
            {"template",
             {{"metadata", {{"labels", labels}}},
              {"spec",
               {{"tolerations",
                 {{{"key", "virtual-node.strait.io/not-allowed"}, {"operator", "Exists"}}}},
                {"containers",
                 {{{"name", "app"},
                   {"image", "nginx:1.27"},
                   {"resources",
                    {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}}}}}}}}}}}}};
}

// Creates the Deployment and polls it (every 50 ms) until status.readyReplicas == replicas.
// Seconds from the create to that poll; -1 on failure (*error set). *polls counts the GETs.
double deployUntilReady(const ClusterAccess& access, const std::string& name, int replicas,
                        std::chrono::seconds timeout, int* polls, std::string* error) {
  ApiConnection c(access);
  if (!c.connect(error)) return -1;
  ApiResponse r;
  const auto t0 = Clock::now();
  if (!c.request("POST", "/apis/apps/v1/namespaces/bench/deployments",
                 deployment(name, replicas).dump(), &r, error)) {
    return -1;
  }
  if (r.status != 201) {
    *error = "create deployment " + name + ": HTTP " + std::to_string(r.status) + " " + r.body;
    return -1;
  }
  long ready = 0;
  while (Clock::now() - t0 < timeout) {
    std::this_thread::sleep_for(50ms);
    ++*polls;
    if (!c.request("GET", "/apis/apps/v1/namespaces/bench/deployments/" + name, "", &r, error)) {
      return -1;
    }
    json d = json::parse(r.body, nullptr, false);
    ready = d.is_object() ? d.value("/status/readyReplicas"_json_pointer, 0L) : 0;
    if (ready >= replicas) return msBetween(t0, Clock::now()) / 1000;
  }
  *error = "deployment " + name + ": " + std::to_string(ready) + " of " +
           std::to_string(replicas) + " Ready after " + std::to_string(timeout.count()) + " s";
  return -1;
}

std::vector<std::string> providerArgs(int nodes, uint16_t metricsPort) {
  return {"--log-level", "warn", "--watch-history", "300000", "--nodes", std::to_string(nodes),
          "--node-cpu", "1000", "--node-memory", "4000Gi", "--node-pods", "1000",
          "--pod-cidr", "10.0.0.0/8", "--node-cidr-mask-size", "20", "--pod-start-latency", "0s",
          "--metrics-listen", "127.0.0.1:" + std::to_string(metricsPort)};
}

// `perf record` on a set of processes for the duration of one offloaded run.
class PerfSet {
 public:
  // `event` empty: CPU samples at 199 Hz; else that perf event (e.g. sched:sched_switch).
  void start(const std::string& dir, const std::string& event, const std::string& tag,
             const std::vector<std::pair<std::string, pid_t>>& targets) {
    if (dir.empty()) return;
    for (const auto& [name, pid] : targets) {
      auto p = std::make_unique<e2e::BackgroundProcess>();
      std::string base = dir + "/" + tag + "-" + name;
      std::string err;
      std::vector<std::string> args = {"perf", "record", "-q", "-g", "-p", std::to_string(pid),
                                       "-o", base + ".data"};
      if (event.empty()) {
        args.insert(args.end(), {"-F", "199"});
      } else {
        args.insert(args.end(), {"-e", event});
      }
      if (!p->start(args, {}, base + ".out", base + ".err", &err)) {
        std::fprintf(stderr, "offload_bench --compare: perf on %s: %s\n", name.c_str(),
                     err.c_str());
        continue;
      }
      procs_.push_back(std::move(p));
    }
  }
  void stop() {
    for (auto& p : procs_) p->stop(20s);  // perf writes its file on SIGTERM
    procs_.clear();
  }
  ~PerfSet() { stop(); }

 private:
  std::vector<std::unique_ptr<e2e::BackgroundProcess>> procs_;
};

}  // namespace

int runOffloadCompare(const CompareFlags& f) {
  setenv("STRAIT_BIN", f.strait.c_str(), 1);
  const std::string loadBefore = loadavg();
  int total = 0;
  for (int n : f.replicas) total += n;

  const uint16_t cm = freePort(), pm = freePort(), dm = freePort();
  e2e::Minicluster consumer, provider, direct;
  std::string err = consumer.start(
      "consumer", 60s,
      {"--log-level", "warn", "--watch-history", "300000", "--metrics-listen",
       "127.0.0.1:" + std::to_string(cm)});
  if (!err.empty()) return fail("consumer: " + err);
  if (err = provider.start("provider", 60s, providerArgs(f.providerNodes, pm)); !err.empty()) {
    return fail("provider: " + err);
  }
  if (err = direct.start("direct", 60s, providerArgs(f.providerNodes, dm)); !err.empty()) {
    return fail("direct: " + err);
  }
  auto caccess = loadKubeconfig(consumer.kubeconfig(), &err);
  auto daccess = loadKubeconfig(direct.kubeconfig(), &err);
  if (!caccess || !daccess) return fail("kubeconfig: " + err);
  ApiResponse r;
  for (const ClusterAccess* a : {&*caccess, &*daccess}) {
    ApiConnection c(*a);
    if (!c.connect(&err)) return fail("connect: " + err);
    c.request("POST", "/api/v1/namespaces",
              json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "bench"}}}}
                  .dump(),
              &r, &err);
  }

  e2e::AgentProcess providerAgent, consumerAgent;
  err = providerAgent.start(provider.kubeconfig(), "provider", {"--share", "1"});
  if (!err.empty()) return fail(err);
  err = consumerAgent.start(consumer.kubeconfig(), "consumer", f.consumerAgentArgs);
  if (!err.empty()) return fail(err);
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), f.strait);
    return e2e::runCommand(args, {}, 120s);
  };
  const auto peerStart = Clock::now();
  e2e::CommandResult peer =
      run({"peer", "--kubeconfig", consumer.kubeconfig(), "--remote-kubeconfig",
           provider.kubeconfig(), "--cpu", "20000", "--memory", "80000Gi", "--pods",
           std::to_string(total + 1000)});
  if (peer.exitCode != 0) return fail("strait peer: " + peer.describe());
  ApiConnection probe(*caccess);
  if (!probe.connect(&err)) return fail("connect: " + err);
  const std::string vnode = "strait-provider";
  bool ready = waitForNodeReady(probe, vnode, 60s);
  if (!ready) return fail("virtual node " + vnode + " not Ready:\n" + consumerAgent.logs());
  const double peerSeconds = msBetween(peerStart, Clock::now()) / 1000;
  e2e::CommandResult offload = run({"offload", "namespace", "bench", "--kubeconfig",
                                    consumer.kubeconfig(), "--remote-name", "provider"});
  if (offload.exitCode != 0) return fail("strait offload: " + offload.describe());
  std::this_thread::sleep_for(2s);  // the namespace offload reaches the agent

  if (!f.json) {
    std::printf("offload_bench --compare: Deployment of N replicas to all Ready, offloaded "
                "(consumer without nodes + virtual node) vs created directly in an identical "
                "provider cluster; peer to virtual node Ready %.1f s\n",
                peerSeconds);
  }
  int status = 0;
  for (int n : f.replicas) {
    int polls = 0;
    const std::string name = "d" + std::to_string(n);
    double directS = deployUntilReady(*daccess, name, n, std::chrono::seconds(f.timeoutSeconds),
                                      &polls, &err);
    if (directS < 0) return fail("direct: " + err);

    polls = 0;
    auto c0 = apiRequestCounts("127.0.0.1:" + std::to_string(cm));
    auto p0 = apiRequestCounts("127.0.0.1:" + std::to_string(pm));
    const double ca0 = cpuSeconds(consumerAgent.pid()), pa0 = cpuSeconds(providerAgent.pid());
    const double cs0 = cpuSeconds(consumer.pid()), ps0 = cpuSeconds(provider.pid());
    const std::vector<std::pair<std::string, pid_t>> procs = {
        {"consumer_agent", consumerAgent.pid()},
        {"provider_agent", providerAgent.pid()},
        {"consumer_apiserver", consumer.pid()},
        {"provider_apiserver", provider.pid()}};
    std::vector<std::map<pid_t, ThreadSwitches>> sw0;
    for (const auto& [what, pid] : procs) sw0.push_back(threadContextSwitches(pid));
    PerfSet perf;
    perf.start(f.perfDir, f.perfEvent, std::to_string(n),
               {{"consumer-apiserver", consumer.pid()},
                {"provider-apiserver", provider.pid()},
                {"consumer-agent", consumerAgent.pid()},
                {"provider-agent", providerAgent.pid()}});
    double offloadS = deployUntilReady(*caccess, name, n, std::chrono::seconds(f.timeoutSeconds),
                                       &polls, &err);
    perf.stop();
    const double ca1 = cpuSeconds(consumerAgent.pid()), pa1 = cpuSeconds(providerAgent.pid());
    const double cs1 = cpuSeconds(consumer.pid()), ps1 = cpuSeconds(provider.pid());
    // Context switches per offloaded Pod of each process, and of the consumer agent's
    // threads by name (the hand-offs the Pods cost it).
    json switchesPerPod = json::object();
    json agentSwitchesByThread = json::object();
    for (size_t i = 0; i < procs.size(); ++i) {
      std::map<std::string, long long> d =
          contextSwitchesBetween(sw0[i], threadContextSwitches(procs[i].second));
      switchesPerPod[procs[i].first] = std::round(static_cast<double>(d["all"]) / n * 10) / 10;
      if (i != 0) continue;
      for (const auto& [thread, count] : d) {
        if (thread != "all" && count >= n / 10) {
          agentSwitchesByThread[thread] = std::round(static_cast<double>(count) / n * 10) / 10;
        }
      }
    }
    auto c1 = apiRequestCounts("127.0.0.1:" + std::to_string(cm));
    auto p1 = apiRequestCounts("127.0.0.1:" + std::to_string(pm));
    if (offloadS < 0) {
      std::fprintf(stderr, "offload_bench --compare: offloaded: %s\n", err.c_str());
      status = 1;
    }
    // Requests per offloaded Pod on each side, the benchmark's own create and polls removed.
    c1["POST deployments"] -= 1;
    c1["GET deployments"] -= polls;
    auto perPod = [n](const std::map<std::string, double>& a,
                      const std::map<std::string, double>& b) {
      json out = json::object();
      double sum = 0;
      for (const auto& [k, v] : b) {
        auto it = a.find(k);
        double d = v - (it == a.end() ? 0 : it->second);
        if (d > 0.5) {
          out[k] = std::round(d / n * 100) / 100;
          sum += d;
        }
      }
      out["all"] = std::round(sum / n * 100) / 100;
      return out;
    };
    json row = {{"replicas", n},
                {"direct_s", directS},
                {"offloaded_s", offloadS},
                {"ratio", offloadS > 0 ? offloadS / directS : -1},
                {"ratio_aim", "<= 1.5"},
                {"offloaded_pods_per_s", offloadS > 0 ? n / offloadS : -1},
                {"pods_per_s_aim", ">= 300"},
                {"consumer_agent_cpu_s", ca1 - ca0},
                {"provider_agent_cpu_s", pa1 - pa0},
                {"consumer_apiserver_cpu_s", cs1 - cs0},
                {"provider_apiserver_cpu_s", ps1 - ps0},
                {"context_switches_per_pod", switchesPerPod},
                {"consumer_agent_switches_per_pod_by_thread", agentSwitchesByThread},
                {"consumer_agent_rss_mib", procStatusKiB(consumerAgent.pid(), "VmRSS") / 1024.0},
                {"provider_agent_rss_mib", procStatusKiB(providerAgent.pid(), "VmRSS") / 1024.0},
                {"consumer_requests_per_pod", perPod(c0, c1)},
                {"provider_requests_per_pod", perPod(p0, p1)},
                {"load", loadavg()}};
    if (f.json) {
      std::printf("%s\n", row.dump().c_str());
    } else {
      std::printf("N=%d: direct %.2f s, offloaded %.2f s, ratio %.2fx (aim <= 1.5x), "
                  "offloaded %.0f Pods/s (aim >= 300)\n",
                  n, directS, offloadS, offloadS > 0 ? offloadS / directS : -1.0,
                  offloadS > 0 ? n / offloadS : -1.0);
      for (auto it = row.begin(); it != row.end(); ++it) {
        std::printf("  %-28s %s\n", it.key().c_str(), it.value().dump().c_str());
      }
    }
    std::fflush(stdout);
    if (status != 0) break;
  }
  if (!f.json) {
    std::printf("# load average before %s, after %s\n", loadBefore.c_str(), loadavg().c_str());
  }
  consumerAgent.stop();
  providerAgent.stop();
  return status;
}

}  // namespace strait::bench
