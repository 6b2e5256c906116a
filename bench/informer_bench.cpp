// Informer benchmark: one kube::Informer on the pods of a `strait minicluster`.
//
//   1. A writer process (this program re-executed with --writer-fds, so that its CPU is not
//      counted here) creates --pods pods through kube::Client.
//   2. This process starts an Informer and waits for it to sync: heap in use (mallinfo2)
//      before and after, divided by the pods cached, against the pods' JSON size.
//   3. The writer applies --updates merge patches (--writers threads) while the informer
//      watches: informer CPU per event (getrusage of this whole process, which does nothing
//      else) and the event rate it sustained (events / time until it had seen all of them).
//   4. Replay: one Client::watch from the resourceVersion before the updates, counting the
//      replayed events as fast as the server sends them (the client's decode ceiling).
//
// Run: ./scripts/run-bench.sh <build-dir>, or informer_bench --strait build/strait.
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "bench/bench_client.h"
#include "kube/client.h"
#include "kube/informer.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace res = strait::kube::resources;

struct Flags {
  std::string strait = "build/strait";
  int pods = 5000;
  int updates = 20000;
  int writers = 8;
  bool json = false;
  std::vector<int> writerFds;  // set in the writer process: command in, reply out
  std::string kubeconfig;      // writer process only
};

json makePod(int i) {
  std::string app = std::vector<std::string>{"cart", "search", "ledger", "web"}[i % 4];
  json container = {{"name", "main"},
                    {"image", "registry.example.com/team/" + app + ":2.3.1"},
                    {"args", {"--listen=:8080", "--verbose=false"}},
                    {"ports", json::array({{{"containerPort", 8080}, {"protocol", "TCP"}}})},
                    {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}},
                                   {"limits", {{"cpu", "500m"}, {"memory", "256Mi"}}}}},
                    {"env", json::array()}};
  for (int e = 0; e < 6; ++e) {
    container["env"].push_back(
        {{"name", "SETTING_" + std::to_string(e)}, {"value", "value-number-" + std::to_string(e)}});
  }
  json sidecar = {{"name", "proxy"},
                  {"image", "registry.example.com/mesh/proxy:1.20.0"},
                  {"resources", {{"requests", {{"cpu", "10m"}, {"memory", "32Mi"}}}}}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", "inf-" + std::to_string(i)},
            {"namespace", "default"},
            {"labels", {{"app", app}, {"shard", std::to_string(i % 32)}, {"release", "canary"}}},
            {"annotations", {{"owner", "team-" + app}, {"revision", "1"}}}}},
          {"spec",
           {{"containers", json::array({container, sidecar})},
            {"restartPolicy", "Always"},
            {"terminationGracePeriodSeconds", 30},
            {"nodeSelector", {{"kubernetes.io/os", "linux"}}}}}};
}

std::unique_ptr<strait::kube::Client> clientFor(const std::string& kubeconfig) {
  auto cfg = strait::kube::loadKubeconfig({{kubeconfig}, ""});
  if (!cfg) {
    std::fprintf(stderr, "informer_bench: %s\n", cfg.error().message.c_str());
    std::exit(1);
  }
  cfg->qps = 0;
  auto c = strait::kube::newClient(*cfg);
  if (!c) {
    std::fprintf(stderr, "informer_bench: %s\n", c.error().message.c_str());
    std::exit(1);
  }
  return std::move(*c);
}

// Runs fn(i) for i in [0, n) on `threads` threads; returns the failures.
int parallel(int n, int threads, const std::function<bool(int)>& fn) {
  std::atomic<int> next{0}, failed{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      for (int i = next++; i < n; i = next++) {
        if (!fn(i)) ++failed;
      }
    });
  }
  for (auto& t : ts) t.join();
  return failed.load();
}

// The writer process: 'C' creates the pods, 'U' applies the updates; answers one byte each.
[[noreturn]] void writer(const Flags& f, const std::string& kubeconfig, int in, int out) {
  auto c = clientFor(kubeconfig);
  char cmd;
  while (read(in, &cmd, 1) == 1) {
    int failed = 0;
    if (cmd == 'C') {
      failed = parallel(f.pods, f.writers, [&](int i) {
        return c->create(res::kPods, "default", makePod(i)).ok();
      });
    } else if (cmd == 'U') {
      failed = parallel(f.updates, f.writers, [&](int i) {
        json patch = {{"metadata", {{"annotations", {{"revision", std::to_string(i + 2)}}}}}};
        return c->patch(res::kPods, "default", "inf-" + std::to_string(i % f.pods),
                        strait::kube::PatchType::Merge, patch)
            .ok();
      });
    }
    char reply = failed == 0 ? 'k' : 'f';
    if (failed) std::fprintf(stderr, "informer_bench: %d writes failed\n", failed);
    if (write(out, &reply, 1) != 1) break;
  }
  std::_Exit(0);
}

double cpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

size_t heapInUse() {
  malloc_trim(0);
  return mallinfo2().uordblks;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app("kube::Informer benchmark against a strait minicluster");
  app.add_option("--strait", f.strait, "the strait binary")->capture_default_str();
  app.add_option("--pods", f.pods, "pods to create and cache")->capture_default_str();
  app.add_option("--updates", f.updates, "pod updates to watch")->capture_default_str();
  app.add_option("--writers", f.writers, "writer threads")->capture_default_str();
  app.add_flag("--json", f.json, "print one JSON line");
  app.add_option("--writer-fds", f.writerFds, "internal: run as the writer process")
      ->expected(2);
  app.add_option("--writer-kubeconfig", f.kubeconfig, "internal: the writer's kubeconfig");
  CLI11_PARSE(app, argc, argv);
  if (f.writerFds.size() == 2) writer(f, f.kubeconfig, f.writerFds[0], f.writerFds[1]);

  std::string work = std::filesystem::temp_directory_path() /
                     ("strait-informer-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(work);
  strait::bench::ServerProcess server;
  std::string error;
  if (!server.start(f.strait, work, false, std::chrono::seconds(60), &error)) {
    std::fprintf(stderr, "informer_bench: %s\n", error.c_str());
    return 1;
  }
  std::string kubeconfig = work + "/kubeconfig";

  int toChild[2], toParent[2];
  if (pipe(toChild) != 0 || pipe(toParent) != 0) return 1;
  // fork + exec at once: cpprestsdk's thread pool does not survive a bare fork.
  std::vector<std::string> args = {"/proc/self/exe",     "--pods",
                                   std::to_string(f.pods), "--updates",
                                   std::to_string(f.updates), "--writers",
                                   std::to_string(f.writers), "--writer-fds",
                                   std::to_string(toChild[0]), std::to_string(toParent[1]),
                                   "--writer-kubeconfig",  kubeconfig};
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  pid_t child = fork();
  if (child == 0) {
    close(toChild[1]);  // else the writer never sees EOF on its command pipe
    close(toParent[0]);
    execv(cargs[0], cargs.data());
    std::_Exit(127);
  }
  close(toChild[0]);
  close(toParent[1]);
  auto ask = [&](char cmd) {
    char r = 0;
    if (write(toChild[1], &cmd, 1) != 1 || read(toParent[0], &r, 1) != 1 || r != 'k') {
      std::fprintf(stderr, "informer_bench: writer step %c failed\n", cmd);
      std::exit(1);
    }
  };

  auto t0 = Clock::now();
  ask('C');
  double createSecs = seconds(Clock::now() - t0);

  auto client = clientFor(kubeconfig);
  // Compact cache (CBOR): memory only, measured first and dropped.
  double compactPerPod = 0;
  double compactListMs = 0;
  {
    size_t before = heapInUse();
    strait::kube::InformerOptions co;
    co.resource = res::kPods;
    co.ns = "default";
    co.compactCache = true;
    strait::kube::Informer compact(*client, co);
    compact.start();
    if (!compact.waitForSync(std::chrono::minutes(5))) return 1;
    compact.stop();
    compactPerPod = static_cast<double>(heapInUse() - before) /
                    static_cast<double>(std::max<size_t>(compact.cache().size(), 1));
    auto l0 = Clock::now();
    size_t n = compact.cache().list().size();
    compactListMs = seconds(Clock::now() - l0) * 1000;
    if (n != compact.cache().size()) return 1;
  }
  size_t heapBefore = heapInUse();
  strait::kube::InformerOptions o;
  o.resource = res::kPods;
  o.ns = "default";
  strait::kube::Informer informer(*client, o);
  std::atomic<int> updates{0};
  std::mutex mu;
  std::condition_variable cv;
  informer.addHandlers({nullptr,
                        [&](const strait::kube::ObjectPtr&, const strait::kube::ObjectPtr&) {
                          if (++updates == f.updates) cv.notify_all();
                        },
                        nullptr});
  double cpu0 = cpuSeconds();
  auto s0 = Clock::now();
  informer.start();
  if (!informer.waitForSync(std::chrono::minutes(5))) {
    std::fprintf(stderr, "informer_bench: no sync\n");
    return 1;
  }
  double syncSecs = seconds(Clock::now() - s0);
  double syncCpu = cpuSeconds() - cpu0;
  size_t heapAfter = heapInUse();
  size_t cached = informer.cache().size();
  double cachedJson = 0;
  for (const auto& p : informer.cache().list()) cachedJson += static_cast<double>(p->dump().size());
  cachedJson /= static_cast<double>(std::max<size_t>(cached, 1));
  auto full = client->get(res::kPods, "default", "inf-0");
  double serverJson = full ? static_cast<double>(full->dump().size()) : 0;
  double perPod = static_cast<double>(heapAfter - heapBefore) / static_cast<double>(cached);
  std::string rvBefore = informer.lastResourceVersion();

  double cpu1 = cpuSeconds();
  auto u0 = Clock::now();
  ask('U');
  double writeSecs = seconds(Clock::now() - u0);
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::minutes(5), [&] { return updates.load() >= f.updates; });
  }
  double watchSecs = seconds(Clock::now() - u0);
  double watchCpu = cpuSeconds() - cpu1;
  int seen = updates.load();
  informer.stop();

  // Replay: everything after rvBefore, as fast as one watch stream delivers it.
  strait::kube::WatchOptions wo;
  wo.resourceVersion = rvBefore;
  int replayed = 0;
  double cpu2 = cpuSeconds();
  auto r0 = Clock::now();
  auto rs = client->watch(res::kPods, "default", wo, [&](strait::kube::WatchEvent&& e) {
    if (e.type != strait::kube::WatchEventType::Bookmark) ++replayed;
    return replayed < f.updates;
  });
  double replaySecs = seconds(Clock::now() - r0);
  double replayCpu = cpuSeconds() - cpu2;

  close(toChild[1]);
  waitpid(child, nullptr, 0);
  server.stop();
  std::filesystem::remove_all(work);

  json out = {{"pods", cached},
              {"create_s", createSecs},
              {"sync_s", syncSecs},
              {"sync_cpu_s", syncCpu},
              {"heap_per_cached_pod_bytes", perPod},
              {"cached_pod_json_bytes", cachedJson},
              {"server_pod_json_bytes", serverJson},
              {"heap_to_json_ratio", perPod / cachedJson},
              {"compact_heap_per_cached_pod_bytes", compactPerPod},
              {"compact_heap_to_json_ratio", compactPerPod / cachedJson},
              {"compact_list_ms", compactListMs},
              {"updates", f.updates},
              {"updates_seen", seen},
              {"writers_s", writeSecs},
              {"informer_s", watchSecs},
              {"informer_events_per_s", seen / watchSecs},
              {"informer_cpu_us_per_event", watchCpu * 1e6 / std::max(seen, 1)},
              {"replay_events", replayed},
              {"replay_events_per_s", replayed / replaySecs},
              {"replay_cpu_us_per_event", replayCpu * 1e6 / std::max(replayed, 1)},
              {"replay_ok", rs.ok()}};
  if (f.json) {
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("informer_bench: %d pods, %d updates, %d writer threads (separate process)\n",
                f.pods, f.updates, f.writers);
    std::printf("  sync (paginated LIST of %zu pods)   %.2f s, %.2f CPU-s\n", cached, syncSecs,
                syncCpu);
    std::printf("  heap per cached pod                 %.0f B\n", perPod);
    std::printf("  pod JSON cached / from the server    %.0f B / %.0f B (managedFields dropped)\n",
                cachedJson, serverJson);
    std::printf("  heap / cached JSON                  %.2fx (aim <= 2x)\n", perPod / cachedJson);
    std::printf("  compact cache (CBOR): heap per pod  %.0f B, %.2fx the JSON; list() of all: "
                "%.0f ms\n",
                compactPerPod, compactPerPod / cachedJson, compactListMs);
    std::printf("  events seen during the writes       %d of %d in %.2f s (writers took %.2f s)\n",
                seen, f.updates, watchSecs, writeSecs);
    std::printf("  sustained events/s                  %.0f\n", seen / watchSecs);
    std::printf("  informer CPU per event              %.1f us\n",
                watchCpu * 1e6 / std::max(seen, 1));
    std::printf("  replay: one watch from an old RV    %d events, %.0f events/s, %.1f us CPU/event\n",
                replayed, replayed / replaySecs, replayCpu * 1e6 / std::max(replayed, 1));
  }
  return seen == f.updates && rs.ok() ? 0 : 1;
}
