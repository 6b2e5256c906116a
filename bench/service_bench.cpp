// Service reflection benchmark: how fast and how cheaply Services and their EndpointSlices
// travel to a provider, and what an endpoint change costs.
//
// Setup (as offload_bench): two `strait minicluster` processes with the simulated runtime
// ("consumer" without nodes, "provider" with one node), both with --metrics-listen, a
// `strait agent` on each, one peering (`strait peer`), namespace `bench` offloaded to the
// provider (`strait offload namespace`). A warm-up Service is created and awaited in the
// provider first, so the timing starts with reflection already running.
//
// The endpoints are not real Pods: each Service has no selector, and this program writes its
// one EndpointSlice (10 endpoints, addresses 10.64.0.0/10, no nodeName, managed-by
// `service-bench`) with the same discovery.k8s.io/v1 requests the EndpointSlice controller
// makes (POST once, then a PUT per change). The minicluster's own controller leaves
// selector-less Services alone, so every slice write on the consumer is this program's.
//
// Phases, each timed by watch events arriving in this process (one clock for both clusters):
//  1. --services Services and their slices created from --writers connections: seconds from
//     the first create until every Service and every slice exists in the provider;
//  2. --changes endpoint changes, one after the other: change k toggles the ready (and
//     serving) condition of endpoint k%10 of Service (k/10)%N and waits until the provider's
//     slice says so (the first --services*10 changes all turn an endpoint not ready). The
//     API writes of each side during the phase come from the two API servers'
//     apiserver_request_total (POST/PUT/PATCH/DELETE), the consumer's minus this program's
//     own PUTs; the provider's slice MODIFIED watch events are counted beside them. Aim: one
//     EndpointSlice write per change per side;
//  3. latency from the consumer's PUT answer (the endpoint is not ready at home) to the
//     provider's watch event with the endpoint not ready: p50/p99/max over the changes;
//  4. both agents' VmRSS before the Services and after phases 1 and 2 (aim: <= 50 MB more).
// Prints a table (or one JSON object with -o json), the load average beside the figures.
// Run: build/bench/service_bench [--services 1000] [--changes 200] [-o json].
#include <CLI/CLI.hpp>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <spdlog/spdlog.h>
#include <thread>

#include "bench/bench_client.h"
#include "bench/proc_stats.h"
#include "e2e/peering_fixture.h"

using namespace strait;
using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kEndpointsPerSlice = 10;
constexpr double kRssGrowthAimMiB = 50;
constexpr double kLatencyP99AimMs = 1000;
constexpr double kWritesPerChangeAim = 1;
constexpr const char* kSlicePath = "/apis/discovery.k8s.io/v1/namespaces/bench/endpointslices";

struct Flags {
  std::string strait = e2e::straitBinary();
  int services = 1000;
  int changes = 200;
  int writers = 4;
  int timeoutSeconds = 600;
  std::string output = "table";
};

using bench::apiRequestCounts;
using bench::freePort;
using bench::loadavg;
using bench::msBetween;
using bench::procStatusKiB;

std::string serviceName(int i) { return "svc-" + std::to_string(i); }
std::string sliceName(int i) { return "svc-" + std::to_string(i) + "-bench"; }

std::string endpointAddress(int service, int endpoint) {
  const int idx = service * kEndpointsPerSlice + endpoint;
  return "10." + std::to_string(64 + (idx >> 16)) + "." + std::to_string((idx >> 8) & 255) +
         "." + std::to_string(idx & 255);
}

json makeService(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", {{"name", name}, {"namespace", "bench"}}},
          {"spec",
           {{"ports", {{{"name", "http"}, {"protocol", "TCP"}, {"port", 80},
                        {"targetPort", 8080}}}}}}};
}

json makeSlice(int service, const std::vector<bool>& ready) {
  json endpoints = json::array();
  for (int e = 0; e < kEndpointsPerSlice; ++e) {
    endpoints.push_back({{"addresses", {endpointAddress(service, e)}},
                         {"conditions",
                          {{"ready", static_cast<bool>(ready[e])},
                           {"serving", static_cast<bool>(ready[e])},
                           {"terminating", false}}}});
  }
  return {{"apiVersion", "discovery.k8s.io/v1"},
          {"kind", "EndpointSlice"},
          {"metadata",
           {{"name", sliceName(service)},
            {"namespace", "bench"},
            {"labels",
             {{"kubernetes.io/service-name", serviceName(service)},
              {"endpointslice.kubernetes.io/managed-by", "service-bench"}}}}},
          {"addressType", "IPv4"},
          {"ports", {{{"name", "http"}, {"protocol", "TCP"}, {"port", 8080}}}},
          {"endpoints", endpoints}};
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

// What the provider holds of this consumer's Services and slices, from its watch events.
// Thread-safe: the two watch threads write, the main thread reads and waits.
class ProviderView {
 public:
  void serviceEvent(const std::string& type, const json& svc, Clock::time_point at) {
    std::lock_guard<std::mutex> lock(mu_);
    if (type != "DELETED" && services_.insert(name(svc)).second) lastService_ = at;
    cv_.notify_all();
  }
  void sliceEvent(const std::string& type, const json& slice, Clock::time_point at) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string n = name(slice);
    if (type != "DELETED" && slices_.insert(n).second) lastSlice_ = at;
    if (type == "MODIFIED") ++sliceModified_;
    if (!waiting_ || matchedAt_ != Clock::time_point{} || n != waitSlice_) return;
    auto eps = slice.find("endpoints");
    if (eps == slice.end() || !eps->is_array()) return;
    for (const json& e : *eps) {
      if (!e.is_object() || !e.contains("addresses") || !e["addresses"].is_array() ||
          e["addresses"].empty() || e["addresses"][0] != waitAddress_) {
        continue;
      }
      auto c = e.find("conditions");
      const bool ready = c != e.end() && c->is_object() && c->value("ready", true);
      if (ready == waitReady_) {
        matchedAt_ = at;
        cv_.notify_all();
      }
    }
  }
  // Waits until the provider holds `services` of the bench Services and `slices` slices.
  bool waitCounts(size_t services, size_t slices, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      return services_.size() >= services && slices_.size() >= slices;
    });
  }
  std::string counts() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::to_string(services_.size()) + " Services, " + std::to_string(slices_.size()) +
           " slices";
  }
  bool hasService(const std::string& n) {
    std::lock_guard<std::mutex> lock(mu_);
    return services_.count(n) > 0;
  }
  Clock::time_point lastArrival() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::max(lastService_, lastSlice_);
  }
  // Arms the wait for the provider's slice `slice` showing `address` with ready == `ready`;
  // call before the consumer write.
  void expect(const std::string& slice, const std::string& address, bool ready) {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_ = true;
    waitSlice_ = slice;
    waitAddress_ = address;
    waitReady_ = ready;
    matchedAt_ = {};
  }
  // The arrival time of the expected event; nullopt after `timeout`.
  std::optional<Clock::time_point> awaitExpected(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    bool ok = cv_.wait_for(lock, timeout, [&] { return matchedAt_ != Clock::time_point{}; });
    waiting_ = false;
    if (!ok) return std::nullopt;
    return matchedAt_;
  }
  uint64_t sliceModified() {
    std::lock_guard<std::mutex> lock(mu_);
    return sliceModified_;
  }

 private:
  static std::string name(const json& o) { return o["metadata"].value("name", ""); }
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> services_, slices_;
  Clock::time_point lastService_{}, lastSlice_{};
  uint64_t sliceModified_ = 0;
  bool waiting_ = false;
  std::string waitSlice_, waitAddress_;
  bool waitReady_ = false;
  Clock::time_point matchedAt_{};
};

// One watch stream (ApiConnection::stream) in a thread; each event's type and object go to
// `sink` with the arrival time of the chunk that completed it.
class Watch {
 public:
  using Sink = std::function<void(const std::string&, const json&, Clock::time_point)>;
  Watch(const bench::ClusterAccess& access, std::string path, Sink sink)
      : conn_(access), path_(std::move(path)), sink_(std::move(sink)) {}
  ~Watch() { stop(); }
  std::string start() {
    std::string err;
    if (!conn_.connect(&err)) return err;
    thread_ = std::thread([this] {
      std::string buf, e;
      conn_.stream(
          path_,
          [&](std::string_view data) {
            if (data.empty()) {
              std::lock_guard<std::mutex> lock(mu_);
              started_ = true;
              cv_.notify_all();
              return !stopping_;
            }
            const auto at = Clock::now();
            buf.append(data);
            size_t nl;
            while ((nl = buf.find('\n')) != std::string::npos) {
              json ev = json::parse(buf.substr(0, nl), nullptr, false);
              buf.erase(0, nl + 1);
              if (ev.is_object() && ev.contains("object") && ev["object"].is_object() &&
                  ev["object"].contains("metadata")) {
                sink_(ev.value("type", ""), ev["object"], at);
              }
            }
            return !stopping_;
          },
          &e);
    });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, 30s, [&] { return started_; });
    return started_ ? "" : "watch " + path_ + " did not start";
  }
  void stop() {
    stopping_ = true;
    conn_.abort();
    if (thread_.joinable()) thread_.join();
  }

 private:
  bench::ApiConnection conn_;
  std::string path_;
  Sink sink_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;
};

bool isWrite(const std::string& key) {
  for (const char* v : {"POST ", "PUT ", "PATCH ", "DELETE ", "DELETECOLLECTION "}) {
    if (key.rfind(v, 0) == 0) return true;
  }
  return false;
}

// Writes between two scrapes: all of them, and those on endpointslices, plus the delta
// of every written "VERB resource[ CODE]" key.
struct Writes {
  double all = 0, slices = 0;
  json byKey = json::object();
};
Writes writesBetween(const std::map<std::string, double>& a,
                     const std::map<std::string, double>& b) {
  Writes w;
  for (const auto& [k, v] : b) {
    if (!isWrite(k)) continue;
    auto it = a.find(k);
    const double d = v - (it == a.end() ? 0 : it->second);
    if (d <= 0) continue;
    w.all += d;
    if (k.find(" endpointslices") != std::string::npos) w.slices += d;
    w.byKey[k] = d;
  }
  return w;
}

int fail(const std::string& what) {
  std::fprintf(stderr, "service_bench: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"Service reflection benchmark: Services and EndpointSlices to one provider"};
  app.add_option("--strait", f.strait, "strait binary");
  app.add_option("-n,--services", f.services, "Services, 10 endpoints each")
      ->capture_default_str()->check(CLI::Range(1, 400000));
  app.add_option("-k,--changes", f.changes, "endpoint ready changes, one after the other")
      ->capture_default_str()->check(CLI::Range(1, 1000000));
  app.add_option("--writers", f.writers, "writer connections for the Services")
      ->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--timeout", f.timeoutSeconds, "seconds for the Services to arrive")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("-o,--output", f.output, "table or json")
      ->capture_default_str()->check(CLI::IsMember({"table", "json"}));
  CLI11_PARSE(app, argc, argv);
  if (f.strait.empty()) f.strait = bench::straitBesideThisBinary(argv[0]);
  if (f.strait.empty()) return fail("no strait binary (--strait or $STRAIT_BIN)");
  setenv("STRAIT_BIN", f.strait.c_str(), 1);
  signal(SIGPIPE, SIG_IGN);
  spdlog::set_level(spdlog::level::warn);
  const std::string loadBefore = loadavg();

  const uint16_t cm = freePort(), pm = freePort();
  e2e::Minicluster consumer, provider;
  std::string err =
      consumer.start("consumer", 60s,
                     {"--log-level", "warn", "--metrics-listen", "127.0.0.1:" + std::to_string(cm)});
  if (!err.empty()) return fail("consumer: " + err);
  err = provider.start("provider", 60s,
                       {"--log-level", "warn", "--metrics-listen",
                        "127.0.0.1:" + std::to_string(pm), "--nodes", "1"});
  if (!err.empty()) return fail("provider: " + err);
  const std::string cmetrics = "127.0.0.1:" + std::to_string(cm);
  const std::string pmetrics = "127.0.0.1:" + std::to_string(pm);

  std::string access;
  auto caccess = bench::loadKubeconfig(consumer.kubeconfig(), &access);
  auto paccess = bench::loadKubeconfig(provider.kubeconfig(), &access);
  if (!caccess || !paccess) return fail("kubeconfig: " + access);
  bench::ApiConnection probe(*caccess);
  if (!probe.connect(&err)) return fail("connect: " + err);
  bench::ApiResponse r;
  if (!probe.request("POST", "/api/v1/namespaces",
                     json{{"apiVersion", "v1"}, {"kind", "Namespace"},
                          {"metadata", {{"name", "bench"}}}}.dump(),
                     &r, &err) ||
      r.status != 201) {
    return fail("namespace bench: " + err + r.body);
  }

  e2e::AgentProcess providerAgent, consumerAgent;
  err = providerAgent.start(provider.kubeconfig(), "provider", {"--share", "1"});
  if (!err.empty()) return fail(err);
  err = consumerAgent.start(consumer.kubeconfig(), "consumer", {});
  if (!err.empty()) return fail(err);
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), f.strait);
    return e2e::runCommand(args, {}, 120s);
  };
  e2e::CommandResult peer = run({"peer", "--kubeconfig", consumer.kubeconfig(),
                                 "--remote-kubeconfig", provider.kubeconfig(), "--cpu", "2",
                                 "--memory", "4Gi", "--pods", "20"});
  if (peer.exitCode != 0) return fail("strait peer: " + peer.describe());
  if (!bench::waitForNodeReady(probe, "strait-provider", 60s)) {
    return fail("virtual node strait-provider not Ready:\n" + consumerAgent.logs());
  }
  e2e::CommandResult offload = run({"offload", "namespace", "bench", "--kubeconfig",
                                    consumer.kubeconfig(), "--remote-name", "provider"});
  if (offload.exitCode != 0) return fail("strait offload: " + offload.describe());

  ProviderView view;
  const std::string origin = "?watch=1&labelSelector=strait.io%2Forigin-cluster-id";
  Watch serviceWatch(*paccess, "/api/v1/services" + origin,
                     [&](const std::string& t, const json& o, Clock::time_point at) {
                       view.serviceEvent(t, o, at);
                     });
  Watch sliceWatch(*paccess, "/apis/discovery.k8s.io/v1/endpointslices" + origin,
                   [&](const std::string& t, const json& o, Clock::time_point at) {
                     view.sliceEvent(t, o, at);
                   });
  if (err = serviceWatch.start(); !err.empty()) return fail(err);
  if (err = sliceWatch.start(); !err.empty()) return fail(err);

  // Warm-up: reflection of the namespace is running once this Service is in the provider.
  if (!probe.request("POST", "/api/v1/namespaces/bench/services",
                     makeService("warmup").dump(), &r, &err) ||
      r.status != 201) {
    return fail("warm-up Service: " + err + r.body);
  }
  if (!e2e::waitFor([&] { return view.hasService("warmup"); }, 60s)) {
    return fail("warm-up Service not in the provider after 60 s:\n" + consumerAgent.logs());
  }

  const pid_t cpid = consumerAgent.pid(), ppid = providerAgent.pid();
  const double crss0 = procStatusKiB(cpid, "VmRSS") / 1024.0;
  const double prss0 = procStatusKiB(ppid, "VmRSS") / 1024.0;
  const std::string load0 = loadavg();

  // Phase 1: N Services and their slices.
  const int n = f.services;
  std::vector<std::vector<bool>> ready(n, std::vector<bool>(kEndpointsPerSlice, true));
  std::vector<std::string> sliceVersion(n);
  std::atomic<int> next{0}, failed{0};
  std::mutex errMu;
  std::string firstError;
  auto cCreate0 = apiRequestCounts(cmetrics);
  auto pCreate0 = apiRequestCounts(pmetrics);
  if (cCreate0.empty() || pCreate0.empty()) return fail("cannot scrape the API servers' /metrics");
  const auto t0 = Clock::now();
  std::vector<std::thread> writers;
  for (int w = 0; w < std::min(f.writers, n); ++w) {
    writers.emplace_back([&] {
      bench::ApiConnection c(*caccess);
      std::string e;
      auto note = [&](const std::string& what) {
        ++failed;
        std::lock_guard<std::mutex> lock(errMu);
        if (firstError.empty()) firstError = what;
      };
      if (!c.connect(&e)) return note("connect: " + e);
      for (int i = next++; i < n; i = next++) {
        bench::ApiResponse resp;
        if (!c.request("POST", "/api/v1/namespaces/bench/services",
                       makeService(serviceName(i)).dump(), &resp, &e) ||
            resp.status != 201) {
          note("Service " + serviceName(i) + ": " + e + resp.body);
          continue;
        }
        if (!c.request("POST", kSlicePath, makeSlice(i, ready[i]).dump(), &resp, &e) ||
            resp.status != 201) {
          note("EndpointSlice " + sliceName(i) + ": " + e + resp.body);
          continue;
        }
        json created = json::parse(resp.body, nullptr, false);
        if (created.is_object()) {
          sliceVersion[i] = created["metadata"].value("resourceVersion", "");
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  const auto createdAt = Clock::now();
  if (failed > 0) return fail(std::to_string(failed.load()) + " creates failed, first: " + firstError);
  // +1: the warm-up Service.
  // Progress on stderr every 5 s while waiting (minutes at 1,000 Services on a busy host).
  bool arrived = false;
  for (auto deadline = t0 + std::chrono::seconds(f.timeoutSeconds);
       !arrived && Clock::now() < deadline;) {
    arrived = view.waitCounts(static_cast<size_t>(n) + 1, static_cast<size_t>(n), 5s);
    if (!arrived) {
      std::fprintf(stderr, "service_bench: t=%.0fs provider has %s (of %d + warm-up, %d) "
                   "consumer agent rss_mib=%.0f load=%s\n",
                   msBetween(t0, Clock::now()) / 1000, view.counts().c_str(), n, n,
                   procStatusKiB(cpid, "VmRSS") / 1024.0, loadavg().c_str());
    }
  }
  if (!arrived) {
    return fail("not every Service and slice reached the provider within " +
                std::to_string(f.timeoutSeconds) + " s: the provider's watches saw " +
                view.counts());
  }
  const double allInProviderS = msBetween(t0, view.lastArrival()) / 1000;
  // Writes while the Services arrived: this program's 2 per Service at home, the agents'.
  Writes cCreate = writesBetween(cCreate0, apiRequestCounts(cmetrics));
  Writes pCreate = writesBetween(pCreate0, apiRequestCounts(pmetrics));
  const double createS = msBetween(t0, createdAt) / 1000;
  const std::string load1 = loadavg();
  const double crss1 = procStatusKiB(cpid, "VmRSS") / 1024.0;
  const double prss1 = procStatusKiB(ppid, "VmRSS") / 1024.0;

  // Phases 2 and 3: K endpoint changes, one at a time.
  auto c0 = apiRequestCounts(cmetrics);
  auto p0 = apiRequestCounts(pmetrics);
  if (c0.empty() || p0.empty()) return fail("cannot scrape the API servers' /metrics");
  const uint64_t modified0 = view.sliceModified();
  std::vector<double> toNotReady, toReady;
  for (int k = 0; k < f.changes; ++k) {
    const int s = (k / kEndpointsPerSlice) % n, e = k % kEndpointsPerSlice;
    ready[s][e] = !ready[s][e];
    json slice = makeSlice(s, ready[s]);
    slice["metadata"]["resourceVersion"] = sliceVersion[s];
    view.expect(sliceName(s), endpointAddress(s, e), ready[s][e]);
    if (!probe.request("PUT", std::string(kSlicePath) + "/" + sliceName(s), slice.dump(), &r,
                       &err) ||
        r.status != 200) {
      return fail("PUT " + sliceName(s) + ": " + err + r.body);
    }
    const auto written = Clock::now();
    sliceVersion[s] = json::parse(r.body)["metadata"].value("resourceVersion", "");
    auto seen = view.awaitExpected(30s);
    if (!seen) return fail("change " + std::to_string(k) + " not in the provider after 30 s");
    (ready[s][e] ? toReady : toNotReady).push_back(msBetween(written, *seen));
  }
  // The last change's write may still be counted after its watch event: let it land.
  std::this_thread::sleep_for(500ms);
  auto c1 = apiRequestCounts(cmetrics);
  auto p1 = apiRequestCounts(pmetrics);
  const uint64_t modified = view.sliceModified() - modified0;
  const std::string load2 = loadavg();
  const double crss2 = procStatusKiB(cpid, "VmRSS") / 1024.0;
  const double prss2 = procStatusKiB(ppid, "VmRSS") / 1024.0;
  Writes cw = writesBetween(c0, c1), pw = writesBetween(p0, p1);
  const double k = f.changes;
  // The consumer's slice writes include this program's own PUT per change (the
  // EndpointSlice controller's write at home); the agents' writes are the rest.
  const double consumerAgentWrites = cw.all - k;
  Percentiles nr = percentiles(toNotReady), rd = percentiles(toReady);

  json out = {
      {"services", n},
      {"endpoints_per_slice", kEndpointsPerSlice},
      {"endpoints_source", "EndpointSlices written by the benchmark (no Pods)"},
      {"create_s", createS},
      {"all_in_provider_s", allInProviderS},
      {"provider_writes_per_service", pCreate.all / n},
      {"consumer_writes_while_creating", cCreate.byKey},
      {"provider_writes_while_creating", pCreate.byKey},
      {"load_after_services", load1},
      {"changes", f.changes},
      {"consumer_slice_writes_per_change", cw.slices / k},
      {"consumer_agent_writes_per_change", consumerAgentWrites / k},
      {"provider_slice_writes_per_change", pw.slices / k},
      {"provider_writes_per_change", pw.all / k},
      {"provider_slice_modified_events_per_change", modified / k},
      {"consumer_writes", cw.byKey},
      {"provider_writes", pw.byKey},
      {"not_ready_latency_n", nr.n},
      {"not_ready_latency_p50_ms", nr.p50},
      {"not_ready_latency_p99_ms", nr.p99},
      {"not_ready_latency_max_ms", nr.max},
      {"ready_latency_n", rd.n},
      {"ready_latency_p50_ms", rd.p50},
      {"ready_latency_p99_ms", rd.p99},
      {"load_after_changes", load2},
      {"consumer_agent_rss_mib", {crss0, crss1, crss2}},
      {"provider_agent_rss_mib", {prss0, prss1, prss2}},
      {"rss_points", {"before Services", "after Services", "after changes"}},
      {"load_before_services", load0},
      {"load_at_start", loadBefore},
      {"load_at_end", loadavg()}};
  if (f.output == "json") {
    std::printf("%s\n", out.dump().c_str());
  } else {
    auto verdict = [](bool met) { return met ? "met" : "missed"; };
    std::printf("service_bench: %d Services x %d endpoints (slices written by the benchmark, no "
                "Pods), %d endpoint changes\n",
                n, kEndpointsPerSlice, f.changes);
    std::printf("  %-58s %-16s %s\n", "figure", "value", "aim / load");
    std::printf("  %-58s %-16.2f load %s\n", "create Services + slices at home (s)", createS,
                load1.c_str());
    std::printf("  %-58s %-16.2f load %s\n", "first create -> all in provider (s)",
                allInProviderS, load1.c_str());
    std::printf("  %-58s %-16.2f (Service + slice = 2)\n",
                "provider writes / Service while creating (all kinds)", pCreate.all / n);
    std::printf("  %-58s %-16.2f %.0f (%s)\n", "consumer slice writes / change (incl. home's)",
                cw.slices / k, kWritesPerChangeAim, verdict(cw.slices / k <= 1.0));
    std::printf("  %-58s %-16.2f\n", "consumer agent writes / change (all kinds)",
                consumerAgentWrites / k);
    std::printf("  %-58s %-16.2f %.0f (%s)\n", "provider slice writes / change", pw.slices / k,
                kWritesPerChangeAim, verdict(pw.slices / k <= 1.0));
    std::printf("  %-58s %-16.2f\n", "provider writes / change (all kinds)", pw.all / k);
    std::printf("  %-58s %-16.2f\n", "provider slice MODIFIED events / change",
                static_cast<double>(modified) / k);
    char lat[64];
    std::snprintf(lat, sizeof lat, "%.0f / %.0f / %.0f", nr.p50, nr.p99, nr.max);
    std::printf("  %-58s %-16s p99 <= %.0f (%s), load %s\n",
                "not ready at home -> in provider p50/p99/max (ms)", lat, kLatencyP99AimMs,
                verdict(nr.n > 0 && nr.p99 <= kLatencyP99AimMs), load2.c_str());
    if (rd.n > 0) {
      std::snprintf(lat, sizeof lat, "%.0f / %.0f / %.0f", rd.p50, rd.p99, rd.max);
      std::printf("  %-58s %s\n", "ready at home -> in provider p50/p99/max (ms)", lat);
    }
    for (const auto& [who, a, b, c] :
         {std::tuple{"consumer agent", crss0, crss1, crss2},
          std::tuple{"provider agent", prss0, prss1, prss2}}) {
      char label[80], v[64];
      std::snprintf(label, sizeof label, "%s RSS before / after / after changes (MiB)", who);
      std::snprintf(v, sizeof v, "%.0f / %.0f / %.0f", a, b, c);
      std::printf("  %-58s %-16s +%.0f MiB <= %.0f (%s)\n", label, v, std::max(b, c) - a,
                  kRssGrowthAimMiB, verdict(std::max(b, c) - a <= kRssGrowthAimMiB));
    }
    std::printf("  writes by kind while creating, provider: %s\n", pCreate.byKey.dump().c_str());
    std::printf("  writes by kind during the changes, consumer: %s\n", cw.byKey.dump().c_str());
    std::printf("  writes by kind during the changes, provider: %s\n", pw.byKey.dump().c_str());
    std::printf("# load average at start %s, before the Services %s, at end %s\n",
                loadBefore.c_str(), load0.c_str(), loadavg().c_str());
  }
  std::fflush(stdout);
  serviceWatch.stop();
  sliceWatch.stop();
  consumerAgent.stop();
  providerAgent.stop();
  return 0;
}
