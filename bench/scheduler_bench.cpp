// Scheduler benchmark: a `strait minicluster` with N simulated nodes; W writer
// threads create P pods (100m CPU, 128Mi each) over HTTPS while the built-in scheduler binds
// them and the simulated kubelets start them. Reports the creation rate, pods bound per
// second (first create to last bind), the lag of the last bind behind the last create, the
// time until every pod is Running, and the server's RSS before and after.
//
// Bound and Running counts are polled with `fieldSelector` + `limit=1` lists
// (metadata.remainingItemCount), so the benchmark does not stream 100k watch events itself.

#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "bench/bench_client.h"

namespace strait::bench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Options {
  std::string strait;
  int nodes = 1000;
  int pods = 30000;
  int writers = 4;
  std::string startLatency = "500ms";
  int timeoutSeconds = 900;
  bool json = false;
};

// Number of objects a list matches, from one limit=1 page; -1 on error.
long long countMatching(ApiConnection& c, const std::string& path) {
  ApiResponse r;
  std::string err;
  if (!c.request("GET", path, "", &r, &err) || r.status != 200) return -1;
  json j = json::parse(r.body, nullptr, false);
  if (!j.is_object()) return -1;
  long long n = j["items"].size();
  if (j["metadata"].contains("remainingItemCount")) n += j["metadata"]["remainingItemCount"].get<long long>();
  return n;
}

int run(const Options& o) {
  char tmpl[] = "/tmp/strait-sched-bench-XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    return 1;
  }
  std::string work = tmpl;
  ServerProcess server;
  std::string error;
  auto access = server.start(o.strait, work, false, 120s, &error,
                             {"--nodes", std::to_string(o.nodes), "--node-cpu", "32",
                              "--node-memory", "256Gi", "--node-pods", "110", "--pod-cidr",
                              "10.0.0.0/8", "--pod-start-latency", o.startLatency, "--log-level",
                              "warn"});
  if (!access) {
    std::fprintf(stderr, "scheduler_bench: %s\n", error.c_str());
    return 1;
  }
  ApiConnection probe(*access);
  if (!probe.connect(&error)) {
    std::fprintf(stderr, "scheduler_bench: connect: %s\n", error.c_str());
    return 1;
  }
  auto nodesStart = Clock::now();
  while (countMatching(probe, "/api/v1/nodes?limit=1") < o.nodes) {
    if (Clock::now() - nodesStart > 120s) {
      std::fprintf(stderr, "scheduler_bench: nodes did not register\n");
      return 1;
    }
    std::this_thread::sleep_for(100ms);
  }
  double nodesReady = secondsBetween(nodesStart, Clock::now());
  std::this_thread::sleep_for(2s);  // let the first lease renewals pass
  long rssIdle = server.rssKiB();

  std::atomic<int> next{0}, created{0}, failed{0};
  auto t0 = Clock::now();
  std::vector<std::thread> writers;
  std::vector<Clock::time_point> doneAt(o.writers);
  for (int w = 0; w < o.writers; ++w) {
    writers.emplace_back([&, w] {
      ApiConnection c(*access);
      std::string err;
      if (!c.connect(&err)) {
        failed += 1;
        return;
      }
      for (int i = next++; i < o.pods; i = next++) {
        json pod = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata", {{"name", "bench-" + std::to_string(i)}, {"labels", {{"app", "bench"}}}}},
                    {"spec", {{"containers", json::array({{{"name", "app"}, {"image", "nginx:1.27"},
                                                           {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}}}}})}}}};
        ApiResponse r;
        if (c.request("POST", "/api/v1/namespaces/default/pods", pod.dump(), &r, &err) && r.status == 201) {
          ++created;
        } else {
          ++failed;
        }
      }
      doneAt[w] = Clock::now();
    });
  }
  // Poll bound / running while the writers run.
  const auto deadline = t0 + std::chrono::seconds(o.timeoutSeconds);
  Clock::time_point allBound{}, allRunning{};
  long long bound = 0, running = 0;
  bool writersDone = false;
  while (Clock::now() < deadline) {
    long long unbound = countMatching(probe, "/api/v1/namespaces/default/pods?limit=1&fieldSelector=spec.nodeName%3D");
    running = countMatching(probe, "/api/v1/namespaces/default/pods?limit=1&fieldSelector=status.phase%3DRunning");
    bound = created.load() - unbound;
    if (!writersDone && next.load() >= o.pods + o.writers) writersDone = true;
    if (created.load() + failed.load() >= o.pods && unbound == 0 && allBound == Clock::time_point{}) {
      allBound = Clock::now();
    }
    if (created.load() + failed.load() >= o.pods && running >= created.load()) {
      allRunning = Clock::now();
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  for (auto& t : writers) t.join();
  auto lastCreate = *std::max_element(doneAt.begin(), doneAt.end());
  long rssAfter = server.rssKiB();
  double createSecs = secondsBetween(t0, lastCreate);
  double bindSecs = allBound == Clock::time_point{} ? -1 : secondsBetween(t0, allBound);
  double runSecs = allRunning == Clock::time_point{} ? -1 : secondsBetween(t0, allRunning);
  double lag = bindSecs < 0 ? -1 : bindSecs - createSecs;
  json out = {{"nodes", o.nodes},
              {"pods", o.pods},
              {"writers", o.writers},
              {"pod_start_latency", o.startLatency},
              {"nodes_registered_s", nodesReady},
              {"created", created.load()},
              {"create_errors", failed.load()},
              {"create_per_s", created.load() / createSecs},
              {"all_bound_s", bindSecs},
              {"bound_per_s", bindSecs > 0 ? created.load() / bindSecs : 0},
              {"bind_lag_after_last_create_s", lag},
              {"all_running_s", runSecs},
              {"rss_idle_mib", rssIdle / 1024.0},
              {"rss_after_mib", rssAfter / 1024.0}};
  if (o.json) {
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("scheduler_bench: %d nodes, %d pods, %d writers, start latency %s\n", o.nodes,
                o.pods, o.writers, o.startLatency.c_str());
    for (auto it = out.begin(); it != out.end(); ++it) {
      std::printf("  %-32s %s\n", it.key().c_str(), it.value().dump().c_str());
    }
  }
  server.stop();
  std::error_code ec;
  fs::remove_all(work, ec);
  bool ok = failed.load() == 0 && bindSecs > 0 && runSecs > 0;
  if (!ok) std::fprintf(stderr, "scheduler_bench: incomplete (bound=%lld running=%lld)\n", bound, running);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace strait::bench

int main(int argc, char** argv) {
  strait::bench::Options o;
  CLI::App app{"Benchmark the minicluster scheduler and simulated kubelets"};
  app.add_option("--strait", o.strait, "strait binary (default: found next to this binary)");
  app.add_option("--nodes", o.nodes, "simulated nodes")->capture_default_str()->check(CLI::Range(1, 65536));
  app.add_option("--pods", o.pods, "pods to create")->capture_default_str()->check(CLI::Range(1, 10000000));
  app.add_option("--writers", o.writers, "writer threads")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--pod-start-latency", o.startLatency, "simulated start latency")->capture_default_str();
  app.add_option("--timeout", o.timeoutSeconds, "limit, seconds")->capture_default_str();
  app.add_flag("--json", o.json, "print one JSON object");
  CLI11_PARSE(app, argc, argv);
  if (o.strait.empty()) o.strait = strait::bench::straitBesideThisBinary(argv[0]);
  if (o.strait.empty() || access(o.strait.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "strait binary not found; pass --strait PATH\n");
    return 2;
  }
  return strait::bench::run(o);
}
