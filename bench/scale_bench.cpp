// Scale benchmark: peerings in numbers, with real processes (`strait minicluster` and
// `strait agent` per cluster, `strait peer` in-band, all on this machine, sim runtime).
//  - fan-out: one consumer peered with --providers providers. Time from the first
//    `strait peer` (all started at once) until every virtual node is Ready on the consumer;
//    then the consumer agent's RSS, CPU and context switches (wake-ups) while idle for
//    --idle-seconds.
//  - fan-in: one provider serving --consumers consumers under an explicit --budget, each
//    consumer asking --request. Time until every peering is answered; the sum of the grants
//    (the provider's ForeignCluster status, sampled every second from the first peer until
//    the end of the idle period) compared with the budget; the provider agent's RSS and CPU
//    while idle.
// Prints a table (or JSON lines with --json). Run: make bench, or
//   build/bench/scale_bench --strait build/strait [--providers 20 --consumers 20]
#include <CLI/CLI.hpp>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <thread>

#include "bench/proc_stats.h"
#include "bench/bench_kube.h"
#include "e2e/peering_fixture.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/quantity.h"
#include "peering/operations.h"

using namespace strait;
using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Flags {
  std::string strait = e2e::straitBinary();
  int providers = 20;
  int consumers = 20;
  int idleSeconds = 30;
  std::string budget = "cpu=10,memory=20Gi,pods=100";
  std::string request = "cpu=1,memory=2Gi,pods=10";
  bool json = false;
  bool skipFanOut = false;
  bool skipFanIn = false;
};

// "cpu=1,memory=2Gi" -> {cpu: 1, memory: 2Gi}; empty map when a part does not parse.
std::map<std::string, kube::Quantity> parseResources(const std::string& text) {
  std::map<std::string, kube::Quantity> out;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    std::string part = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    size_t eq = part.find('=');
    if (eq == std::string::npos) return {};
    auto q = kube::Quantity::parse(part.substr(eq + 1));
    if (!q.ok()) return {};
    out.emplace(part.substr(0, eq), *q);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

std::vector<std::string> peerArgs(const std::string& resources) {
  std::vector<std::string> out;
  for (const auto& [k, q] : parseResources(resources)) {
    out.push_back("--" + k);
    out.push_back(q.toString());
  }
  return out;
}

// Runs `strait peer` from each consumer to each provider of `pairs` at once. Returns the
// seconds until all returned and the failures' descriptions.
double peerAll(const std::string& strait,
               const std::vector<std::pair<const e2e::Minicluster*, const e2e::Minicluster*>>& pairs,
               const std::string& resources, std::vector<std::string>* failures) {
  std::mutex mu;
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (const auto& [consumer, provider] : pairs) {
    threads.emplace_back([&, consumer, provider] {
      std::vector<std::string> args = {strait, "peer", "--kubeconfig", consumer->kubeconfig(),
                                       "--remote-kubeconfig", provider->kubeconfig()};
      for (const std::string& a : peerArgs(resources)) args.push_back(a);
      e2e::CommandResult r = e2e::runCommand(args, {}, 180s);
      if (r.exitCode != 0) {
        std::lock_guard<std::mutex> l(mu);
        failures->push_back(r.describe());
      }
    });
  }
  for (auto& t : threads) t.join();
  return bench::msBetween(t0, Clock::now()) / 1000;
}

// Virtual nodes with Ready=True on `c`.
int readyVirtualNodes(kube::Client& c) {
  auto nodes = c.list(kube::resources::kNodes, "", {});
  if (!nodes.ok()) return -1;
  int ready = 0;
  for (const json& n : nodes->value("items", json::array())) {
    if (n.value("/metadata/labels/type"_json_pointer, "") != "virtual-kubelet") continue;
    for (const json& cond : n.value("/status/conditions"_json_pointer, json::array())) {
      if (cond.value("type", "") == "Ready" && cond.value("status", "") == "True") ++ready;
    }
  }
  return ready;
}

// Context switches of all threads of `pid` (voluntary + involuntary: each one a wake-up of a
// sleeping thread or a preemption) and the number of threads; {-1, -1} when unreadable.
std::pair<long, long> contextSwitches(pid_t pid) {
  std::error_code ec;
  long switches = 0, threads = 0;
  for (const auto& task : std::filesystem::directory_iterator(
           "/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0 ||
          line.rfind("nonvoluntary_ctxt_switches:", 0) == 0) {
        switches += std::stol(line.substr(line.find(':') + 1));
      }
    }
    ++threads;
  }
  if (ec) return {-1, -1};
  return {switches, threads};
}

struct Idle {
  double rssMiB = -1, peakRssMiB = -1, cpuPercent = -1, switchesPerSecond = -1;
  long threads = -1;
};
// RSS, CPU and context switches of `pid` over `seconds`; `each` runs every second meanwhile.
Idle idleFor(pid_t pid, int seconds, const std::function<void()>& each) {
  const double c0 = bench::cpuSeconds(pid);
  const long s0 = contextSwitches(pid).first;
  const auto t0 = Clock::now();
  for (int i = 0; i < seconds; ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::seconds(i + 1));
    if (each) each();
  }
  Idle out;
  const double elapsedS = bench::msBetween(t0, Clock::now()) / 1000;
  out.cpuPercent = (bench::cpuSeconds(pid) - c0) / elapsedS * 100;
  const auto [s1, threads] = contextSwitches(pid);
  out.switchesPerSecond = (s1 - s0) / elapsedS;
  out.threads = threads;
  out.rssMiB = bench::procStatusKiB(pid, "VmRSS") / 1024.0;
  out.peakRssMiB = bench::procStatusKiB(pid, "VmHWM") / 1024.0;
  return out;
}

void print(const Flags& f, const json& row) {
  if (f.json) {
    std::printf("%s\n", row.dump().c_str());
  } else {
    std::printf("scale_bench %s\n", row.value("scenario", "").c_str());
    for (auto it = row.begin(); it != row.end(); ++it) {
      if (it.key() == "scenario") continue;
      std::printf("  %-32s %s\n", it.key().c_str(), it.value().dump().c_str());
    }
  }
  std::fflush(stdout);
}

const std::vector<std::string> kClusterArgs = {"--log-level", "warn", "--nodes", "1",
                                               "--node-cpu", "64", "--node-memory", "256Gi",
                                               "--node-pods", "500"};

// Starts `n` miniclusters and an agent on each (names prefix1..prefixN).
std::string startMany(const std::string& prefix, int n, const std::vector<std::string>& agentArgs,
                      std::vector<std::unique_ptr<e2e::Minicluster>>* clusters,
                      std::vector<std::unique_ptr<e2e::AgentProcess>>* agents) {
  for (int i = 1; i <= n; ++i) {
    auto c = std::make_unique<e2e::Minicluster>();
    std::string name = prefix + std::to_string(i);
    if (std::string err = c->start(name, 120s, kClusterArgs); !err.empty()) {
      return name + ": " + err;
    }
    auto a = std::make_unique<e2e::AgentProcess>();
    if (std::string err = a->start(c->kubeconfig(), name, agentArgs); !err.empty()) {
      return name + " agent: " + err;
    }
    clusters->push_back(std::move(c));
    agents->push_back(std::move(a));
  }
  return {};
}

int fanOut(const Flags& f) {
  std::vector<std::unique_ptr<e2e::Minicluster>> consumers, providers;
  std::vector<std::unique_ptr<e2e::AgentProcess>> consumerAgents, providerAgents;
  const std::string load0 = bench::loadavg();
  if (std::string err = startMany("consumer", 1, {}, &consumers, &consumerAgents); !err.empty()) {
    std::fprintf(stderr, "scale_bench: %s\n", err.c_str());
    return 1;
  }
  if (std::string err = startMany("provider", f.providers, {}, &providers, &providerAgents);
      !err.empty()) {
    std::fprintf(stderr, "scale_bench: %s\n", err.c_str());
    return 1;
  }
  auto c = bench::kubeClient(consumers[0]->kubeconfig());
  if (!c) return 1;
  std::vector<std::pair<const e2e::Minicluster*, const e2e::Minicluster*>> pairs;
  for (auto& p : providers) pairs.emplace_back(consumers[0].get(), p.get());
  std::vector<std::string> failures;
  const auto t0 = Clock::now();
  const double peerS = peerAll(f.strait, pairs, f.request, &failures);
  int ready = 0;
  e2e::waitFor([&] { return (ready = readyVirtualNodes(*c)) >= f.providers; }, 120s, 100ms);
  const double allReadyS = bench::msBetween(t0, Clock::now()) / 1000;
  const pid_t agent = consumerAgents[0]->pid();
  const Idle idle = idleFor(agent, f.idleSeconds, nullptr);
  print(f, {{"scenario", "fan-out: 1 consumer, " + std::to_string(f.providers) + " providers"},
            {"peer_commands_s", peerS},
            {"peer_failures", failures.size()},
            {"virtual_nodes_ready", ready},
            {"all_ready_s", ready >= f.providers ? allReadyS : -1},
            {"all_ready_aim_s", "< 60"},
            {"consumer_agent_rss_mib", idle.rssMiB},
            {"consumer_agent_peak_rss_mib", idle.peakRssMiB},
            {"rss_aim_mib", "<= 300"},
            {"consumer_agent_idle_cpu_percent", idle.cpuPercent},
            {"idle_cpu_aim_percent", "<= 5"},
            {"consumer_agent_idle_switches_per_s", idle.switchesPerSecond},
            {"consumer_agent_threads", idle.threads},
            {"idle_seconds", f.idleSeconds},
            {"load_before", load0},
            {"load_after", bench::loadavg()}});
  for (const std::string& e : failures) std::fprintf(stderr, "scale_bench: peer: %s\n", e.c_str());
  return failures.empty() && ready >= f.providers ? 0 : 1;
}

int fanIn(const Flags& f) {
  const auto budget = parseResources(f.budget);
  std::vector<std::unique_ptr<e2e::Minicluster>> consumers, providers;
  std::vector<std::unique_ptr<e2e::AgentProcess>> consumerAgents, providerAgents;
  const std::string load0 = bench::loadavg();
  if (std::string err =
          startMany("provider", 1, {"--budget", f.budget}, &providers, &providerAgents);
      !err.empty()) {
    std::fprintf(stderr, "scale_bench: %s\n", err.c_str());
    return 1;
  }
  if (std::string err = startMany("consumer", f.consumers, {}, &consumers, &consumerAgents);
      !err.empty()) {
    std::fprintf(stderr, "scale_bench: %s\n", err.c_str());
    return 1;
  }
  auto p = bench::kubeClient(providers[0]->kubeconfig());
  if (!p) return 1;
  // The sum of the grants the provider recorded, checked against the budget every 100 ms
  // from the first `strait peer` on.
  std::atomic<int> overBudget{0}, samples{0};
  std::map<std::string, kube::Quantity> maxSum;
  std::mutex maxMu;
  auto sample = [&] {
    auto rows = peering::peeringStatus(*p);
    if (!rows.ok()) return;
    std::map<std::string, kube::Quantity> sum;
    for (const json& r : *rows) {
      const json granted = r.value("granted", json::object());
      for (const auto& [k, v] : granted.items()) {
        if (!v.is_string()) continue;
        auto q = kube::Quantity::parse(v.get<std::string>());
        if (!q.ok()) continue;
        auto it = sum.find(k);
        if (it == sum.end()) {
          sum.emplace(k, *q);
        } else {
          it->second = kube::Quantity::fromMilli(it->second.milliValue() + q->milliValue());
        }
      }
    }
    ++samples;
    std::lock_guard<std::mutex> l(maxMu);
    for (const auto& [k, q] : sum) {
      auto b = budget.find(k);
      if (b != budget.end() && q.milliValue() > b->second.milliValue()) ++overBudget;
      auto m = maxSum.find(k);
      if (m == maxSum.end() || m->second.milliValue() < q.milliValue()) maxSum[k] = q;
    }
  };
  std::atomic<bool> sampling{true};
  std::thread sampler([&] {
    while (sampling) {
      sample();
      std::this_thread::sleep_for(100ms);
    }
  });
  std::vector<std::pair<const e2e::Minicluster*, const e2e::Minicluster*>> pairs;
  for (auto& c : consumers) pairs.emplace_back(c.get(), providers[0].get());
  std::vector<std::string> failures;
  const double peerS = peerAll(f.strait, pairs, f.request, &failures);
  const pid_t agent = providerAgents[0]->pid();
  const Idle idle = idleFor(agent, f.idleSeconds, nullptr);
  sampling = false;
  sampler.join();
  json granted = json::object();
  for (const auto& [k, q] : maxSum) granted[k] = q.toString();
  print(f, {{"scenario", "fan-in: 1 provider, " + std::to_string(f.consumers) + " consumers"},
            {"peer_commands_s", peerS},
            {"peer_failures", failures.size()},
            {"budget", f.budget},
            {"requested_each", f.request},
            {"max_sum_of_grants", granted},
            {"grant_samples", samples.load()},
            {"samples_over_budget", overBudget.load()},
            {"provider_agent_rss_mib", idle.rssMiB},
            {"provider_agent_peak_rss_mib", idle.peakRssMiB},
            {"rss_aim_mib", "<= 300"},
            {"provider_agent_idle_cpu_percent", idle.cpuPercent},
            {"idle_cpu_aim_percent", "<= 5"},
            {"provider_agent_idle_switches_per_s", idle.switchesPerSecond},
            {"provider_agent_threads", idle.threads},
            {"idle_seconds", f.idleSeconds},
            {"load_before", load0},
            {"load_after", bench::loadavg()}});
  for (const std::string& e : failures) std::fprintf(stderr, "scale_bench: peer: %s\n", e.c_str());
  return overBudget.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"scale benchmark: one consumer with many providers, one provider with many "
               "consumers"};
  app.add_option("--strait", f.strait, "strait binary");
  app.add_option("--providers", f.providers, "providers of the one consumer")
      ->capture_default_str()->check(CLI::Range(1, 100));
  app.add_option("--consumers", f.consumers, "consumers of the one provider")
      ->capture_default_str()->check(CLI::Range(1, 100));
  app.add_option("--idle-seconds", f.idleSeconds, "idle measurement")
      ->capture_default_str()->check(CLI::Range(1, 3600));
  app.add_option("--budget", f.budget, "fan-in: the provider agent's --budget")
      ->capture_default_str();
  app.add_option("--request", f.request, "what each consumer asks")->capture_default_str();
  app.add_flag("--skip-fan-out", f.skipFanOut, "only the fan-in scenario");
  app.add_flag("--skip-fan-in", f.skipFanIn, "only the fan-out scenario");
  app.add_flag("--json", f.json, "JSON lines");
  CLI11_PARSE(app, argc, argv);
  if (parseResources(f.budget).empty()) {
    std::fprintf(stderr, "scale_bench: --budget \"%s\": expected name=quantity,...\n",
                 f.budget.c_str());
    return 2;
  }
  if (parseResources(f.request).empty()) {
    std::fprintf(stderr, "scale_bench: --request \"%s\": expected name=quantity,...\n",
                 f.request.c_str());
    return 2;
  }
  setenv("STRAIT_BIN", f.strait.c_str(), 1);
  signal(SIGPIPE, SIG_IGN);
  spdlog::set_level(spdlog::level::warn);
  int status = 0;
  if (!f.skipFanOut) status |= fanOut(f);
  if (!f.skipFanIn) status |= fanIn(f);
  if (!f.json) std::printf("# load average at the end: %s\n", bench::loadavg().c_str());
  return status;
}
