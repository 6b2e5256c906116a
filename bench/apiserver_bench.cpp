// apiserver_bench: the minicluster API-server benchmark of the foundation issue.
//
// Starts `strait minicluster` as a separate process, then:
//   1. opens N watchers (default 20, each its own TLS connection) on the pods of "default"
//      from the resourceVersion of an initial list;
//   2. W writer threads (default 8, keep-alive TLS connections) POST `--pods` realistic pod
//      manifests (~1.8 KB JSON each), timing every request;
//   3. waits until every watcher has received one ADDED event per pod;
//   4. LISTs all pods once;
//   5. reads the server's VmRSS and CPU time before and after.
// Prints a table (or one JSON object with --json). Figures, never assertions: the README's
// "Benchmarks" section quotes them.

#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "bench/bench_client.h"
#include "kube/pki.h"

namespace strait::bench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Options {
  std::string strait;  // path of the strait binary
  int pods = 10000;
  int watchers = 20;
  int writers = 8;
  bool durable = false;
  bool json = false;
  int timeoutSeconds = 600;  // whole-run limit for the write and watch phases
  // --rbac: requests/s of a non-master user under RBAC against AlwaysAllow (runRbac()).
  bool rbac = false;
  int rbacObjects = 50;     // Roles + RoleBindings of other users present
  int rbacSeconds = 10;     // measuring time per round and mode
  int rbacRounds = 3;       // rounds, each mode once per round, alternating
};

struct Results {
  std::string mode;
  int pods = 0, watchers = 0, writers = 0;
  int writeErrors = 0;
  std::string firstError;
  double avgRequestBytes = 0;
  double writeSeconds = 0;
  double writesPerSecond = 0;
  double latP50Ms = 0, latP99Ms = 0, latMaxMs = 0;
  long eventsDelivered = 0;  // ADDED events summed over watchers
  bool watchersComplete = false;
  double watchSeconds = 0;  // first write to last watcher done
  double watchEventsPerSecond = 0;
  double listSeconds = 0;
  size_t listBytes = 0;
  size_t listItems = 0;
  double avgStoredPodBytes = 0;
  long rssStartupKiB = 0, rssBeforeKiB = 0, rssAfterKiB = 0, rssAfterListKiB = 0;
  double rssPerPodBytes = 0;
  double rssPerPodBeyondJsonBytes = 0;
  double serverCpuSeconds = 0;  // user+sys of the server during writes + watch delivery
  double benchCpuSeconds = 0;   // the same for this process
  double loadAverage1 = 0;
};

// ---------------------------------------------------------------------------------------
// Workload

// A typical Deployment-made pod: labels, annotations, an app container with resources,
// env, ports, probe and mounts, a log-shipper sidecar, volumes, tolerations.
std::string podManifest(int i) {
  char name[32];
  std::snprintf(name, sizeof name, "bench-%05d", i);
  static const char* apps[] = {"checkout", "catalog", "payments", "frontend", "search"};
  const std::string app = apps[i % 5];
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", "default"},
        {"labels",
         {{"app", app},
          {"tier", i % 2 ? "backend" : "frontend"},
          {"release", "stable"},
          {"pod-template-hash", "7d4b9c8f6d"},
          {"bench-shard", std::to_string(i % 16)}}},
        {"annotations",
         {{"prometheus.io/scrape", "true"},
          {"prometheus.io/port", "9090"},
          {"kubectl.kubernetes.io/default-container", "app"}}}}},
      {"spec",
       {{"containers",
         json::array(
             {{{"name", "app"},
               {"image", "registry.example.com/shop/" + app + ":1.14.2"},
               {"imagePullPolicy", "IfNotPresent"},
               {"command", {"/usr/local/bin/" + app}},
               {"args", {"--port=8080", "--metrics-port=9090", "--log-level=info"}},
               {"ports",
                json::array({{{"name", "http"}, {"containerPort", 8080}, {"protocol", "TCP"}},
                             {{"name", "metrics"}, {"containerPort", 9090}, {"protocol", "TCP"}}})},
               {"env",
                json::array(
                    {{{"name", "POD_NAME"},
                      {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}},
                     {{"name", "DB_HOST"}, {"value", "postgres.shop.svc.cluster.local"}},
                     {{"name", "CACHE_TTL_SECONDS"}, {"value", "300"}},
                     {{"name", "FEATURE_FLAGS"}, {"value", "new-cart,fast-search"}}})},
               {"resources",
                {{"requests", {{"cpu", "250m"}, {"memory", "256Mi"}}},
                 {"limits", {{"cpu", "1"}, {"memory", "512Mi"}}}}},
               {"readinessProbe",
                {{"httpGet", {{"path", "/healthz"}, {"port", 8080}}},
                 {"initialDelaySeconds", 5},
                 {"periodSeconds", 10}}},
               {"volumeMounts",
                json::array({{{"name", "config"}, {"mountPath", "/etc/" + app}, {"readOnly", true}},
                             {{"name", "varlog"}, {"mountPath", "/var/log/" + app}}})}},
              {{"name", "log-shipper"},
               {"image", "fluent/fluent-bit:2.2.0"},
               {"resources",
                {{"requests", {{"cpu", "50m"}, {"memory", "64Mi"}}},
                 {"limits", {{"memory", "128Mi"}}}}},
               {"volumeMounts",
                json::array({{{"name", "varlog"}, {"mountPath", "/var/log/" + app},
                              {"readOnly", true}}})}}})},
        {"volumes",
         json::array({{{"name", "config"}, {"configMap", {{"name", app + "-config"}}}},
                      {{"name", "varlog"}, {"emptyDir", json::object()}}})},
        {"restartPolicy", "Always"},
        {"terminationGracePeriodSeconds", 30},
        {"serviceAccountName", "default"},
        {"nodeSelector", {{"kubernetes.io/os", "linux"}}},
        {"tolerations",
         json::array({{{"key", "node.kubernetes.io/not-ready"},
                       {"operator", "Exists"},
                       {"effect", "NoExecute"},
                       {"tolerationSeconds", 300}}})}}}};
  return pod.dump();
}

// ---------------------------------------------------------------------------------------
// Measurements of the server process and this one

double processCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = stat.rfind(')');  // the command name may contain spaces
  if (close == std::string::npos) {
    return 0;
  }
  std::istringstream fields(stat.substr(close + 2));
  std::string f;
  double utime = 0, stime = 0;
  // Fields after the name start at 3 (state); utime is 14, stime 15.
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stod(f);
    if (i == 15) stime = std::stod(f);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double selfCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

double loadAverage1() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// ---------------------------------------------------------------------------------------
// Watchers

// One watch stream on its own thread; counts ADDED events until it has `expected`.
class Watcher {
 public:
  Watcher(const ClusterAccess& access, std::string target, long expected)
      : conn_(access), target_(std::move(target)), expected_(expected) {}

  void start() {
    thread_ = std::thread([this] { run(); });
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  // Unblocks a stream that will never complete (used only when the deadline passed).
  void abort() {
    if (established_) conn_.abort();
  }

  bool established() const { return established_; }
  bool done() const { return done_; }
  long added() const { return added_; }
  long other() const { return other_; }
  Clock::time_point doneAt() const { return doneAt_; }
  const std::string& error() const { return error_; }

 private:
  void run() {
    std::string pending;
    int status = conn_.stream(
        target_,
        [&](std::string_view data) {
          if (data.empty()) {
            established_ = true;
            return true;
          }
          pending.append(data);
          size_t start = 0;
          for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
            std::string_view line(pending.data() + start, nl - start);
            // The server writes {"type":"ADDED","object":...} per line.
            if (line.substr(0, 16) == R"({"type":"ADDED",)") {
              ++added_;
            } else {
              ++other_;
              if (line.substr(0, 16) == R"({"type":"ERROR",)" && error_.empty()) {
                error_ = std::string(line.substr(0, 300));
              }
            }
          }
          pending.erase(0, start);
          if (added_ >= expected_) {
            doneAt_ = Clock::now();
            done_ = true;
            return false;
          }
          return true;
        },
        &error_);
    if (status != 200 && error_.empty()) {
      error_ = "watch status " + std::to_string(status);
    }
    established_ = true;  // also when it failed: nobody should wait for it
  }

  ApiConnection conn_;
  std::string target_;
  long expected_;
  std::thread thread_;
  std::atomic<bool> established_{false};
  std::atomic<bool> done_{false};
  std::atomic<long> added_{0};
  std::atomic<long> other_{0};
  Clock::time_point doneAt_{};
  std::string error_;
};

// ---------------------------------------------------------------------------------------
// The run

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t idx = static_cast<size_t>(p * static_cast<double>(sorted.size()));
  return sorted[std::min(idx, sorted.size() - 1)];
}

int run(const Options& o) {
  const char* tmp = getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/strait-bench-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "mkdtemp %s: %s\n", tmpl.c_str(), strerror(errno));
    return 1;
  }
  const std::string workDir = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{workDir};

  Results r;
  r.mode = o.durable ? "durable" : "memory";
  r.pods = o.pods;
  r.watchers = o.watchers;
  r.writers = o.writers;

  ServerProcess server;
  std::string error;
  auto access = server.start(o.strait, workDir, o.durable, 60s, &error);
  if (!access) {
    std::fprintf(stderr, "start server: %s\n", error.c_str());
    return 1;
  }
  r.rssStartupKiB = server.rssKiB();

  // Initial list for the watch resourceVersion.
  ApiConnection control(*access);
  ApiResponse res;
  if (!control.request("GET", "/api/v1/namespaces/default/pods", "", &res, &error) ||
      res.status != 200) {
    std::fprintf(stderr, "initial list failed: %s status=%d %s\n", error.c_str(), res.status,
                 res.body.substr(0, 500).c_str());
    return 1;
  }
  std::string rv;
  try {
    rv = json::parse(res.body).at("metadata").at("resourceVersion").get<std::string>();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "initial list: no metadata.resourceVersion: %s\n", e.what());
    return 1;
  }

  // 1. Watchers.
  const std::string watchTarget = "/api/v1/namespaces/default/pods?watch=true&resourceVersion=" +
                                  rv + "&timeoutSeconds=" + std::to_string(o.timeoutSeconds);
  std::vector<std::unique_ptr<Watcher>> watchers;
  for (int i = 0; i < o.watchers; ++i) {
    watchers.push_back(std::make_unique<Watcher>(*access, watchTarget, o.pods));
    watchers.back()->start();
  }
  const auto establishDeadline = Clock::now() + 30s;
  while (Clock::now() < establishDeadline &&
         !std::all_of(watchers.begin(), watchers.end(),
                      [](const auto& w) { return w->established(); })) {
    std::this_thread::sleep_for(5ms);
  }
  for (const auto& w : watchers) {
    if (!w->established() || !w->error().empty()) {
      std::fprintf(stderr, "watcher not established: %s\n", w->error().c_str());
      for (auto& x : watchers) x->abort();
      for (auto& x : watchers) x->join();
      return 1;
    }
  }

  // 2. Writers. Bodies are made up front so that the timing holds only the requests.
  std::vector<std::string> bodies;
  bodies.reserve(o.pods);
  size_t requestBytes = 0;
  for (int i = 0; i < o.pods; ++i) {
    bodies.push_back(podManifest(i));
    requestBytes += bodies.back().size();
  }
  r.avgRequestBytes = static_cast<double>(requestBytes) / o.pods;

  std::vector<std::unique_ptr<ApiConnection>> writerConns;
  for (int i = 0; i < o.writers; ++i) {
    writerConns.push_back(std::make_unique<ApiConnection>(*access));
    if (!writerConns.back()->connect(&error)) {
      std::fprintf(stderr, "writer connect: %s\n", error.c_str());
      return 1;
    }
  }
  std::this_thread::sleep_for(500ms);  // let the watch and connection threads settle
  r.rssBeforeKiB = server.rssKiB();
  const double serverCpu0 = processCpuSeconds(server.pid());
  const double selfCpu0 = selfCpuSeconds();

  std::atomic<int> next{0};
  std::atomic<int> errors{0};
  std::mutex errMu;
  std::string firstError;
  std::vector<std::vector<double>> latencies(o.writers);
  std::vector<std::thread> writers;
  const auto writeStart = Clock::now();
  for (int w = 0; w < o.writers; ++w) {
    writers.emplace_back([&, w] {
      ApiConnection& conn = *writerConns[w];
      auto& lat = latencies[w];
      lat.reserve(o.pods / o.writers + 1);
      ApiResponse resp;
      std::string err;
      for (int i; (i = next.fetch_add(1)) < o.pods;) {
        auto t0 = Clock::now();
        bool ok = conn.request("POST", "/api/v1/namespaces/default/pods", bodies[i], &resp, &err);
        auto t1 = Clock::now();
        lat.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        if (!ok || resp.status != 201) {
          errors.fetch_add(1);
          std::lock_guard<std::mutex> lock(errMu);
          if (firstError.empty()) {
            firstError = ok ? "status " + std::to_string(resp.status) + ": " +
                                  resp.body.substr(0, 300)
                            : err;
          }
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  const auto writeEnd = Clock::now();
  r.writeErrors = errors.load();
  r.firstError = firstError;
  r.writeSeconds = seconds(writeEnd - writeStart);
  r.writesPerSecond = (o.pods - r.writeErrors) / r.writeSeconds;
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  r.latP50Ms = percentile(all, 0.50);
  r.latP99Ms = percentile(all, 0.99);
  r.latMaxMs = all.empty() ? 0 : all.back();

  // 3. Every watcher has every event (or the deadline passed).
  const auto watchDeadline = writeStart + std::chrono::seconds(o.timeoutSeconds);
  while (Clock::now() < watchDeadline &&
         !std::all_of(watchers.begin(), watchers.end(),
                      [](const auto& w) { return w->done() || !w->error().empty(); })) {
    std::this_thread::sleep_for(2ms);
  }
  Clock::time_point lastDone = writeStart;
  r.watchersComplete = true;
  for (auto& w : watchers) {
    if (!w->done()) {
      r.watchersComplete = false;
      w->abort();
    } else {
      lastDone = std::max(lastDone, w->doneAt());
    }
  }
  for (auto& w : watchers) {
    w->join();
    r.eventsDelivered += w->added();
    if (!w->error().empty()) {
      std::fprintf(stderr, "watcher: %s\n", w->error().c_str());
    }
  }
  if (!r.watchersComplete) lastDone = Clock::now();
  r.watchSeconds = seconds(lastDone - writeStart);
  r.watchEventsPerSecond = r.watchSeconds > 0 ? r.eventsDelivered / r.watchSeconds : 0;
  r.serverCpuSeconds = processCpuSeconds(server.pid()) - serverCpu0;
  r.benchCpuSeconds = selfCpuSeconds() - selfCpu0;
  std::this_thread::sleep_for(500ms);  // watch threads of the server wind down
  r.rssAfterKiB = server.rssKiB();

  // 4. One LIST of everything.
  const auto listStart = Clock::now();
  if (!control.request("GET", "/api/v1/namespaces/default/pods", "", &res, &error) ||
      res.status != 200) {
    std::fprintf(stderr, "list failed: %s status=%d\n", error.c_str(), res.status);
    return 1;
  }
  r.listSeconds = seconds(Clock::now() - listStart);
  r.listBytes = res.body.size();
  try {
    r.listItems = json::parse(res.body).at("items").size();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "list body: %s\n", e.what());
    return 1;
  }
  r.rssAfterListKiB = server.rssKiB();
  r.avgStoredPodBytes = r.listItems ? static_cast<double>(r.listBytes) / r.listItems : 0;
  r.rssPerPodBytes = (r.rssAfterKiB - r.rssBeforeKiB) * 1024.0 / o.pods;
  r.rssPerPodBeyondJsonBytes = r.rssPerPodBytes - r.avgStoredPodBytes;
  r.loadAverage1 = loadAverage1();
  server.stop();

  if (o.json) {
    json j = {{"mode", r.mode},
              {"pods", r.pods},
              {"watchers", r.watchers},
              {"writers", r.writers},
              {"write_errors", r.writeErrors},
              {"avg_request_bytes", r.avgRequestBytes},
              {"write_seconds", r.writeSeconds},
              {"writes_per_second", r.writesPerSecond},
              {"write_latency_ms", {{"p50", r.latP50Ms}, {"p99", r.latP99Ms}, {"max", r.latMaxMs}}},
              {"watch_events_delivered", r.eventsDelivered},
              {"watchers_complete", r.watchersComplete},
              {"watch_seconds", r.watchSeconds},
              {"watch_events_per_second", r.watchEventsPerSecond},
              {"list_seconds", r.listSeconds},
              {"list_bytes", r.listBytes},
              {"list_items", r.listItems},
              {"avg_stored_pod_bytes", r.avgStoredPodBytes},
              {"rss_kib",
               {{"startup", r.rssStartupKiB},
                {"before_writes", r.rssBeforeKiB},
                {"after_watch", r.rssAfterKiB},
                {"after_list", r.rssAfterListKiB}}},
              {"rss_per_pod_bytes", r.rssPerPodBytes},
              {"rss_per_pod_beyond_json_bytes", r.rssPerPodBeyondJsonBytes},
              {"server_cpu_seconds", r.serverCpuSeconds},
              {"bench_cpu_seconds", r.benchCpuSeconds},
              {"load_average_1m_end", r.loadAverage1}};
    if (!r.firstError.empty()) j["first_error"] = r.firstError;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("apiserver_bench mode=%s pods=%d watchers=%d writers=%d\n", r.mode.c_str(),
                r.pods, r.watchers, r.writers);
    std::printf("  %-34s %12.0f  (%.2f s, %d errors)\n", "writes/s", r.writesPerSecond,
                r.writeSeconds, r.writeErrors);
    std::printf("  %-34s %12.2f / %.2f / %.2f\n", "write latency p50/p99/max ms", r.latP50Ms,
                r.latP99Ms, r.latMaxMs);
    std::printf("  %-34s %12.0f  (%ld events in %.2f s%s)\n", "watch events/s delivered",
                r.watchEventsPerSecond, r.eventsDelivered, r.watchSeconds,
                r.watchersComplete ? "" : ", INCOMPLETE");
    std::printf("  %-34s %12.1f  (%zu items, %zu bytes)\n", "list all ms", r.listSeconds * 1e3,
                r.listItems, r.listBytes);
    std::printf("  %-34s %12.0f  (request %.0f)\n", "avg stored pod JSON bytes",
                r.avgStoredPodBytes, r.avgRequestBytes);
    std::printf("  %-34s %ld / %ld / %ld / %ld\n", "RSS KiB startup/before/after/list",
                r.rssStartupKiB, r.rssBeforeKiB, r.rssAfterKiB, r.rssAfterListKiB);
    std::printf("  %-34s %12.0f\n", "RSS bytes per pod", r.rssPerPodBytes);
    std::printf("  %-34s %12.0f\n", "RSS bytes per pod beyond JSON", r.rssPerPodBeyondJsonBytes);
    std::printf("  %-34s %12.2f / %.2f\n", "CPU s server / bench", r.serverCpuSeconds,
                r.benchCpuSeconds);
    if (!r.firstError.empty()) std::printf("  first error: %s\n", r.firstError.c_str());
  }
  return r.writeErrors == 0 && r.watchersComplete ? 0 : 1;
}

// ---------------------------------------------------------------------------------------
// --rbac: the cost of RBAC enforcement
//
// Two servers in turn (durable, so the CA key is on disk): one with --authorization-mode
// RBAC, one with AlwaysAllow. Each gets a namespace with `rbacObjects` Roles and
// RoleBindings of other users, and one Role + RoleBinding letting "bench-user" (a client
// certificate from the cluster CA, not in system:masters) read ConfigMaps. Then `writers`
// threads GET one ConfigMap as bench-user for `rbacSeconds`; rounds alternate the modes.

struct RbacServer {
  std::unique_ptr<ServerProcess> process;
  ClusterAccess user;
};

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool post(ApiConnection& c, const std::string& target, const json& body, std::string* error) {
  ApiResponse resp;
  if (!c.request("POST", target, body.dump(), &resp, error)) return false;
  if (resp.status != 201 && resp.status != 200) {
    *error = "POST " + target + ": " + std::to_string(resp.status) + " " + resp.body.substr(0, 300);
    return false;
  }
  return true;
}

std::optional<RbacServer> startRbacServer(const Options& o, const std::string& dir,
                                          const std::string& mode, std::string* error) {
  RbacServer s;
  s.process = std::make_unique<ServerProcess>();
  fs::create_directories(dir);
  auto admin = s.process->start(o.strait, dir, /*durable=*/true, 60s, error,
                                {"--authorization-mode", mode});
  if (!admin) return std::nullopt;
  ApiConnection c(*admin);
  if (!c.connect(error)) return std::nullopt;
  const std::string ns = "bench-rbac";
  const std::string rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns;
  if (!post(c, "/api/v1/namespaces", {{"metadata", {{"name", ns}}}}, error)) return std::nullopt;
  auto role = [](const std::string& name, const std::string& resource) {
    return json{{"metadata", {{"name", name}}},
                {"rules", json::array({{{"verbs", {"get", "list", "watch"}},
                                        {"apiGroups", {""}},
                                        {"resources", {resource}}}})}};
  };
  auto binding = [](const std::string& name, const std::string& user) {
    return json{{"metadata", {{"name", name}}},
                {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"},
                             {"name", name}}},
                {"subjects", json::array({{{"apiGroup", "rbac.authorization.k8s.io"},
                                           {"kind", "User"},
                                           {"name", user}}})}};
  };
  for (int i = 0; i < o.rbacObjects; ++i) {
    const std::string name = "other-" + std::to_string(i);
    if (!post(c, rbac + "/roles", role(name, "secrets"), error) ||
        !post(c, rbac + "/rolebindings", binding(name, "user-" + std::to_string(i)), error)) {
      return std::nullopt;
    }
  }
  if (!post(c, rbac + "/roles", role("bench", "configmaps"), error) ||
      !post(c, rbac + "/rolebindings", binding("bench", "bench-user"), error) ||
      !post(c, "/api/v1/namespaces/" + ns + "/configmaps",
            {{"metadata", {{"name", "target"}}}, {"data", {{"k", "v"}}}}, error)) {
    return std::nullopt;
  }
  kube::KeyPair ca{readAll(dir + "/data/pki/ca.crt"), readAll(dir + "/data/pki/ca.key")};
  auto cert = kube::issueCert(ca, "bench-user", {}, {}, {}, false);
  if (!cert) {
    *error = "issuing bench-user's certificate: " + cert.error().message;
    return std::nullopt;
  }
  s.user = *admin;
  s.user.certPem = cert->certPem;
  s.user.keyPem = cert->keyPem;
  return s;
}

struct RbacMeasure {
  double requestsPerSecond = 0;
  long ok = 0, failed = 0;
  std::string firstError;
};

RbacMeasure measureGets(const ClusterAccess& user, int threads, int durationSeconds) {
  RbacMeasure m;
  std::atomic<long> ok{0}, failed{0};
  std::mutex mu;
  const auto end = Clock::now() + std::chrono::seconds(durationSeconds);
  const auto start = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      ApiConnection c(user);
      std::string error;
      if (!c.connect(&error)) {
        ++failed;
        std::lock_guard lk(mu);
        if (m.firstError.empty()) m.firstError = error;
        return;
      }
      ApiResponse resp;
      while (Clock::now() < end) {
        if (c.request("GET", "/api/v1/namespaces/bench-rbac/configmaps/target", "", &resp,
                      &error) &&
            resp.status == 200) {
          ++ok;
        } else {
          ++failed;
          std::lock_guard lk(mu);
          if (m.firstError.empty()) {
            m.firstError = error.empty() ? std::to_string(resp.status) + " " + resp.body : error;
          }
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  m.ok = ok;
  m.failed = failed;
  m.requestsPerSecond = static_cast<double>(m.ok) / seconds(Clock::now() - start);
  return m;
}

int runRbac(const Options& o) {
  const char* tmp = getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/strait-bench-rbac-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "mkdtemp %s: %s\n", tmpl.c_str(), strerror(errno));
    return 1;
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{tmpl};
  std::string error;
  auto rbac = startRbacServer(o, tmpl + "/rbac", "RBAC", &error);
  if (!rbac) {
    std::fprintf(stderr, "RBAC server: %s\n", error.c_str());
    return 1;
  }
  auto allow = startRbacServer(o, tmpl + "/allow", "AlwaysAllow", &error);
  if (!allow) {
    std::fprintf(stderr, "AlwaysAllow server: %s\n", error.c_str());
    return 1;
  }
  // A denied request proves the RBAC server enforces: bench-user may not list secrets.
  {
    ApiConnection c(rbac->user);
    ApiResponse resp;
    if (!c.connect(&error) ||
        !c.request("GET", "/api/v1/namespaces/bench-rbac/secrets", "", &resp, &error) ||
        resp.status != 403) {
      std::fprintf(stderr, "the RBAC server did not refuse bench-user (status %d %s)\n",
                   resp.status, error.c_str());
      return 1;
    }
  }
  std::vector<double> rbacRps, allowRps;
  long failures = 0;
  std::string firstError;
  for (int round = 0; round < o.rbacRounds; ++round) {
    // Alternate which mode goes first, so drift in machine load hits both alike.
    for (int k = 0; k < 2; ++k) {
      bool rbacTurn = (round % 2 == 0) == (k == 0);
      RbacMeasure m = measureGets(rbacTurn ? rbac->user : allow->user, o.writers, o.rbacSeconds);
      (rbacTurn ? rbacRps : allowRps).push_back(m.requestsPerSecond);
      failures += m.failed;
      if (firstError.empty()) firstError = m.firstError;
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double r = median(rbacRps), a = median(allowRps);
  const double load = loadAverage1();
  if (o.json) {
    json j = {{"mode", "rbac"},
              {"rbacObjects", o.rbacObjects},
              {"threads", o.writers},
              {"secondsPerRound", o.rbacSeconds},
              {"rounds", o.rbacRounds},
              {"rbacRequestsPerSecond", rbacRps},
              {"alwaysAllowRequestsPerSecond", allowRps},
              {"rbacMedian", r},
              {"alwaysAllowMedian", a},
              {"ratio", a > 0 ? r / a : 0},
              {"failures", failures},
              {"loadAverage1", load}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("apiserver_bench mode=rbac objects=%d (Roles+RoleBindings of other users) "
                "threads=%d rounds=%d x %ds\n",
                o.rbacObjects, o.writers, o.rbacRounds, o.rbacSeconds);
    std::printf("  GET configmap as a non-master user, requests/s (median of rounds)\n");
    std::printf("    RBAC         %10.0f\n", r);
    std::printf("    AlwaysAllow  %10.0f\n", a);
    std::printf("    ratio        %10.3f  (RBAC / AlwaysAllow)\n", a > 0 ? r / a : 0);
    std::printf("  failed requests %ld, load average (1 min) %.2f\n", failures, load);
    if (!firstError.empty()) std::printf("  first error: %s\n", firstError.c_str());
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace strait::bench

int main(int argc, char** argv) {
  strait::bench::Options o;
  CLI::App app{"Benchmark the minicluster API server: writes, watch fan-out, list, RSS"};
  app.add_option("--strait", o.strait, "strait binary (default: found next to this binary)");
  app.add_option("--pods", o.pods, "pods to create")->capture_default_str()->check(
      CLI::Range(1, 10000000));
  app.add_option("--watchers", o.watchers, "concurrent watch streams")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  app.add_option("--writers", o.writers, "writer threads (one connection each)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_flag("--durable", o.durable, "give the server a data dir (fsync'd write-ahead log)");
  app.add_flag("--json", o.json, "print one JSON object instead of a table");
  app.add_option("--timeout", o.timeoutSeconds, "limit for the write+watch phases, seconds")
      ->capture_default_str()
      ->check(CLI::Range(10, 86400));
  app.add_flag("--rbac", o.rbac,
               "instead: requests/s of a non-master user under RBAC vs AlwaysAllow (uses "
               "--writers threads)");
  app.add_option("--rbac-objects", o.rbacObjects, "Roles and RoleBindings of other users")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  app.add_option("--rbac-seconds", o.rbacSeconds, "measuring time per round and mode")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  app.add_option("--rbac-rounds", o.rbacRounds, "rounds (each runs both modes)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);
  if (o.strait.empty()) o.strait = strait::bench::straitBesideThisBinary(argv[0]);
  if (o.strait.empty() || access(o.strait.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "strait binary not found; pass --strait PATH\n");
    return 2;
  }
  return o.rbac ? strait::bench::runRbac(o) : strait::bench::run(o);
}
