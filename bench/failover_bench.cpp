// Placement benchmarks: where offloaded Pods go and what placement rules cost, with real
// `strait minicluster` and `strait agent` processes (sim runtime).
//
// --mode failover (default): one consumer ("home") peered with two providers ("cloud-a",
// "cloud-b"), namespace "web" offloaded with the Remote strategy, a Deployment of --replicas
// spread over both virtual nodes (topology spread on kubernetes.io/hostname). Then cloud-a's
// agent is killed with SIGKILL and this program measures, on one clock, kill -> virtual node
// strait-cloud-a NotReady (the home agent's stream grace) and kill -> every replica Running
// and Ready on another node (the node lifecycle controller's eviction once the Pods'
// tolerationSeconds for not-ready/unreachable run out, then the scheduler and cloud-b). The
// knobs are the home agent's --vnode-stream-grace (--stream-grace; unset: the agent's
// default) and the Pods' tolerationSeconds (--toleration-seconds; unset: none in the
// template, so the API server's DefaultTolerationSeconds gives 300 s).
//
// --mode override: one consumer and one provider; namespaces "plain" and "over" offloaded,
// "over" with an OffloadingOverride (image registry docker.io -> mirror.example.com and a
// toleration). --pods Pods in each, created interleaved (one in each namespace in turn) at
// --rate Pods/s, bound to the virtual node at creation; the latency of each is local create
// (just before the POST) -> its copy Running in the provider (the provider watch event),
// p50/p99 for each namespace and their ratio (with / without). Every overridden copy is
// checked to carry the rewritten image and the toleration.
//
// Prints a table with each figure beside its aim, or one JSON line (--json / -o json).
// Load average before and after. Run: make bench (scripts/run-bench.sh), or alone:
//   failover_bench --strait build/strait [--stream-grace 10s] [--toleration-seconds 10]
//   failover_bench --strait build/strait --mode override --pods 200
#include <CLI/CLI.hpp>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <spdlog/spdlog.h>
#include <thread>

#include "bench/bench_client.h"
#include "e2e/cluster_fixture.h"
#include "e2e/peering_fixture.h"

using namespace strait;
using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// The agent's --vnode-stream-grace default (docs/offloading.md, "The virtual node") and the
// API server's DefaultTolerationSeconds, for the aims of a run that leaves them unset.
constexpr double kDefaultStreamGraceSeconds = 40;
constexpr double kDefaultTolerationSeconds = 300;
// Aims: Strait's own share of a failover, beyond the waits the knobs configure.
constexpr double kNotReadySlackSeconds = 5;
constexpr double kReplacedSlackSeconds = 30;
// Aim of the override mode: an override costs at most 10% of the offload latency.
constexpr double kOverrideRatioAim = 1.10;

struct Flags {
  std::string strait;
  std::string mode = "failover";
  int replicas = 20;
  std::string streamGrace;      // "" = the agent's default
  int tolerationSeconds = -1;   // -1 = none in the template (API server default)
  int pods = 200;
  double rate = 20;
  int timeoutSeconds = 900;
  bool json = false;
  std::string output = "table";
};

int fail(const std::string& what) {
  std::fprintf(stderr, "failover_bench: %s\n", what.c_str());
  return 1;
}

std::string loadavg() { return e2e::loadAverage(); }

// Seconds in a duration flag ("10s", "2m", "1500ms"); nullopt when malformed.
std::optional<double> parseSeconds(const std::string& text) {
  size_t end = 0;
  double v = 0;
  try {
    v = std::stod(text, &end);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string unit = text.substr(end);
  if (v < 0) return std::nullopt;
  if (unit == "s") return v;
  if (unit == "ms") return v / 1000;
  if (unit == "m") return v * 60;
  return std::nullopt;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::string verdict(double value, double aim) {
  if (value < 0) return "not measured";
  return value <= aim ? "met" : "missed";
}

// GET `path` on `c` as JSON (null on any failure).
json getJson(bench::ApiConnection& c, const std::string& path) {
  bench::ApiResponse r;
  std::string err;
  if (!c.request("GET", path, "", &r, &err) || r.status != 200) return json();
  return json::parse(r.body, nullptr, false);
}

// POSTs `body` to `path`; "" or what failed.
std::string post(bench::ApiConnection& c, const std::string& path, const json& body,
                 json* created = nullptr) {
  bench::ApiResponse r;
  std::string err;
  if (!c.request("POST", path, body.dump(), &r, &err)) return "POST " + path + ": " + err;
  if (r.status != 201 && r.status != 200) {
    return "POST " + path + ": HTTP " + std::to_string(r.status) + " " + r.body;
  }
  if (created) *created = json::parse(r.body, nullptr, false);
  return "";
}

bool nodeReady(bench::ApiConnection& c, const std::string& node) {
  json n = getJson(c, "/api/v1/nodes/" + node);
  if (!n.is_object()) return false;
  for (const json& cond : n.value("/status/conditions"_json_pointer, json::array())) {
    if (cond.value("type", "") == "Ready") return cond.value("status", "") == "True";
  }
  return false;
}

bool podReady(const json& p) {
  if (p.value("/status/phase"_json_pointer, std::string()) != "Running") return false;
  for (const json& cond : p.value("/status/conditions"_json_pointer, json::array())) {
    if (cond.value("type", "") == "Ready") return cond.value("status", "") == "True";
  }
  return false;
}

// Running and Ready, not terminating, Pods of namespace `ns` by node.
std::map<std::string, int> placement(bench::ApiConnection& c, const std::string& ns) {
  std::map<std::string, int> byNode;
  json l = getJson(c, "/api/v1/namespaces/" + ns + "/pods");
  if (!l.is_object()) return byNode;
  for (const json& p : l.value("items", json::array())) {
    if (p["metadata"].contains("deletionTimestamp") || !podReady(p)) continue;
    ++byNode[p.value("/spec/nodeName"_json_pointer, std::string())];
  }
  return byNode;
}

std::string describe(const std::map<std::string, int>& m) {
  std::string s;
  for (const auto& [node, count] : m) s += node + "=" + std::to_string(count) + " ";
  return s;
}

// `strait <args>` with a 120 s limit; "" or what failed.
std::string strait(const Flags& f, std::vector<std::string> args) {
  args.insert(args.begin(), f.strait);
  e2e::CommandResult r = e2e::runCommand(args, {}, 120s);
  return r.exitCode == 0 ? "" : r.describe();
}

json makeDeployment(const Flags& f) {
  json spec = {{"terminationGracePeriodSeconds", 1},
               {"topologySpreadConstraints",
                json::array({{{"maxSkew", 1},
                              {"topologyKey", "kubernetes.io/hostname"},
                              {"whenUnsatisfiable", "ScheduleAnyway"},
                              {"labelSelector", {{"matchLabels", {{"app", "web"}}}}}}})},
               {"containers", json::array({{{"name", "c"},
                                            {"image", "busybox"},
                                            {"resources", {{"requests", {{"cpu", "100m"}}}}}}})}};
  if (f.tolerationSeconds >= 0) {
    json tolerate = json::array();
    for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
      tolerate.push_back({{"key", key},
                          {"operator", "Exists"},
                          {"effect", "NoExecute"},
                          {"tolerationSeconds", f.tolerationSeconds}});
    }
    spec["tolerations"] = tolerate;
  }
  json d = {{"apiVersion", "apps/v1"},
            {"kind", "Deployment"},
            {"metadata", {{"name", "web"}, {"namespace", "web"}}}};
  d["spec"]["replicas"] = f.replicas;
  d["spec"]["selector"]["matchLabels"]["app"] = "web";
  d["spec"]["template"]["metadata"]["labels"]["app"] = "web";
  d["spec"]["template"]["spec"] = spec;
  return d;
}

void printRows(const std::string& title, const std::vector<std::vector<std::string>>& rows) {
  std::printf("# %s\n", title.c_str());
  std::vector<size_t> width;
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], r[i].size());
    }
  }
  for (const auto& r : rows) {
    std::string line = " ";
    for (size_t i = 0; i < r.size(); ++i) {
      line += " " + r[i] + std::string(width[i] - r[i].size() + 1, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::printf("%s\n", line.c_str());
  }
}

std::string seconds(double s) {
  if (s < 0) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f s", s);
  return b;
}

std::string millis(double s) {
  if (s < 0) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f ms", s * 1000);
  return b;
}

int runFailover(const Flags& f) {
  const std::string loadBefore = loadavg();
  std::optional<double> grace = f.streamGrace.empty() ? std::optional<double>(
                                                            kDefaultStreamGraceSeconds)
                                                      : parseSeconds(f.streamGrace);
  if (!grace) return fail("--stream-grace: expected a duration like 10s, got " + f.streamGrace);
  const double toleration =
      f.tolerationSeconds >= 0 ? f.tolerationSeconds : kDefaultTolerationSeconds;

  e2e::Minicluster home, cloudA, cloudB;
  if (auto e = home.start("home", 60s, {"--log-level", "warn", "--nodes", "1", "--node-cpu", "1"});
      !e.empty()) {
    return fail("home: " + e);
  }
  const std::vector<std::string> cloudArgs = {
      "--log-level", "warn", "--nodes", "1", "--node-cpu", "64", "--node-memory", "256Gi",
      "--node-pods", std::to_string(2 * f.replicas + 100)};
  for (auto [cluster, name] : {std::pair{&cloudA, "cloud-a"}, std::pair{&cloudB, "cloud-b"}}) {
    if (auto e = cluster->start(name, 60s, cloudArgs); !e.empty()) {
      return fail(std::string(name) + ": " + e);
    }
  }
  e2e::AgentProcess homeAgent, agentA, agentB;
  std::vector<std::string> homeArgs = {"--kubelet-port", "0"};
  if (!f.streamGrace.empty()) homeArgs.insert(homeArgs.end(), {"--vnode-stream-grace", f.streamGrace});
  const std::vector<std::string> providerArgs = {"--share", "1", "--kubelet-port", "0"};
  if (auto e = agentA.start(cloudA.kubeconfig(), "cloud-a", providerArgs); !e.empty()) {
    return fail("cloud-a agent: " + e);
  }
  if (auto e = agentB.start(cloudB.kubeconfig(), "cloud-b", providerArgs); !e.empty()) {
    return fail("cloud-b agent: " + e);
  }
  if (auto e = homeAgent.start(home.kubeconfig(), "home", homeArgs); !e.empty()) {
    return fail("home agent: " + e);
  }
  // Each provider holds every replica (100m each) with room to spare, and no more: the
  // scheduler's least-allocated scoring then spreads the replicas over both.
  const std::string pods = std::to_string(2 * f.replicas + 10);
  const std::string cpu = std::to_string(f.replicas / 10 + 2);
  for (const e2e::Minicluster* cloud : {&cloudA, &cloudB}) {
    if (auto e = strait(f, {"peer", "--kubeconfig", home.kubeconfig(), "--remote-kubeconfig",
                            cloud->kubeconfig(), "--cpu", cpu, "--memory", "128Gi", "--pods",
                            pods});
        !e.empty()) {
      return fail("strait peer: " + e);
    }
  }
  std::string err;
  auto access = bench::loadKubeconfig(home.kubeconfig(), &err);
  if (!access) return fail("kubeconfig: " + err);
  bench::ApiConnection api(*access);
  if (!api.connect(&err)) return fail("connect: " + err);
  for (const char* node : {"strait-cloud-a", "strait-cloud-b"}) {
    if (!bench::waitForNodeReady(api, node, 60s)) {
      return fail(std::string(node) + " not Ready:\n" + homeAgent.logs());
    }
  }
  if (auto e = post(api, "/api/v1/namespaces",
                    {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "web"}}}});
      !e.empty()) {
    return fail(e);
  }
  if (auto e = strait(f, {"offload", "namespace", "web", "--kubeconfig", home.kubeconfig(),
                          "--pod-offloading-strategy", "Remote"});
      !e.empty()) {
    return fail("strait offload: " + e);
  }
  if (auto e = post(api, "/apis/apps/v1/namespaces/web/deployments", makeDeployment(f));
      !e.empty()) {
    return fail(e);
  }
  std::map<std::string, int> before;
  const bool spread = e2e::waitFor(
      [&] {
        before = placement(api, "web");
        return before["strait-cloud-a"] + before["strait-cloud-b"] == f.replicas;
      },
      std::chrono::seconds(f.timeoutSeconds), 200ms);
  if (!spread) return fail("the Deployment did not run on the virtual nodes: " + describe(before));
  if (before["strait-cloud-a"] == 0 || before["strait-cloud-b"] == 0) {
    return fail("not spread over both virtual nodes: " + describe(before));
  }

  const auto killed = Clock::now();
  agentA.kill();  // SIGKILL
  double notReadyAfter = -1, replacedAfter = -1;
  std::map<std::string, int> after;
  e2e::waitFor(
      [&] {
        if (notReadyAfter < 0 && !nodeReady(api, "strait-cloud-a")) {
          notReadyAfter = bench::secondsBetween(killed, Clock::now());
        }
        after = placement(api, "web");
        int elsewhere = 0;
        for (const auto& [node, n] : after) {
          if (node != "strait-cloud-a") elsewhere += n;
        }
        if (elsewhere == f.replicas && after["strait-cloud-a"] == 0) {
          replacedAfter = bench::secondsBetween(killed, Clock::now());
        }
        return replacedAfter >= 0;
      },
      std::chrono::seconds(f.timeoutSeconds), 200ms);
  const std::string loadAfter = loadavg();
  const double notReadyAim = *grace + kNotReadySlackSeconds;
  const double replacedAim = *grace + toleration + kReplacedSlackSeconds;
  const std::string graceText =
      f.streamGrace.empty() ? "default (" + seconds(*grace) + ")" : f.streamGrace;
  const std::string tolerationText =
      f.tolerationSeconds >= 0 ? std::to_string(f.tolerationSeconds) + " s"
                               : "default (300 s, DefaultTolerationSeconds)";
  if (f.json) {
    json out = {{"bench", "failover"},
                {"replicas", f.replicas},
                {"movedFromKilledProvider", before["strait-cloud-a"]},
                {"streamGraceSeconds", *grace},
                {"streamGraceDefault", f.streamGrace.empty()},
                {"tolerationSeconds", toleration},
                {"tolerationDefault", f.tolerationSeconds < 0},
                {"killToNotReadySeconds", notReadyAfter < 0 ? json() : json(notReadyAfter)},
                {"killToNotReadyAimSeconds", notReadyAim},
                {"killToReplacedSeconds", replacedAfter < 0 ? json() : json(replacedAfter)},
                {"killToReplacedAimSeconds", replacedAim},
                {"loadBefore", loadBefore},
                {"loadAfter", loadAfter}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    char title[512];
    std::snprintf(title, sizeof title,
                  "failover: %d replicas (%d on strait-cloud-a, %d on strait-cloud-b), cloud-a's "
                  "agent killed (SIGKILL); stream grace %s, tolerationSeconds %s; load %s -> %s",
                  f.replicas, before["strait-cloud-a"], before["strait-cloud-b"],
                  graceText.c_str(), tolerationText.c_str(), loadBefore.c_str(),
                  loadAfter.c_str());
    printRows(title, {{"figure", "value", "aim", ""},
                      {"kill -> strait-cloud-a NotReady", seconds(notReadyAfter),
                       "<= grace + 5 s = " + seconds(notReadyAim),
                       verdict(notReadyAfter, notReadyAim)},
                      {"kill -> every replica Running and Ready elsewhere", seconds(replacedAfter),
                       "<= grace + tolerationSeconds + 30 s = " + seconds(replacedAim),
                       verdict(replacedAfter, replacedAim)}});
  }
  if (replacedAfter < 0) {
    return fail("the replicas did not all run elsewhere within " +
                std::to_string(f.timeoutSeconds) + " s: " + describe(after));
  }
  return 0;
}

// Arrival time of the first provider watch event showing each copy Running, by the origin
// (local) Pod uid, and the copies' specs as they were then.
class RemoteRunningWatch {
 public:
  explicit RemoteRunningWatch(const bench::ClusterAccess& access) : conn_(access) {}
  ~RemoteRunningWatch() { stop(); }

  std::string start() {
    std::string err;
    if (!conn_.connect(&err)) return err;
    thread_ = std::thread([this] { run(); });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, 30s, [&] { return started_; });
    return started_ ? "" : "the provider's Pod watch did not start";
  }
  void stop() {
    stopping_ = true;
    conn_.abort();
    if (thread_.joinable()) thread_.join();
  }
  // Origin uid -> (arrival, the copy's spec).
  std::map<std::string, std::pair<Clock::time_point, json>> running() {
    std::lock_guard<std::mutex> lock(mu_);
    return running_;
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return running_.size();
  }

 private:
  void run() {
    std::string buf, err;
    conn_.stream(
        "/api/v1/pods?watch=1&labelSelector=strait.io%2Forigin-cluster-id",
        [&](std::string_view data) {
          if (data.empty()) {
            std::lock_guard<std::mutex> lock(mu_);
            started_ = true;
            cv_.notify_all();
            return !stopping_;
          }
          const auto at = Clock::now();
          buf.append(data);
          for (size_t nl; (nl = buf.find('\n')) != std::string::npos;) {
            json ev = json::parse(buf.substr(0, nl), nullptr, false);
            buf.erase(0, nl + 1);
            if (!ev.is_object() || !ev.contains("object")) continue;
            const json& p = ev["object"];
            if (p.value("/status/phase"_json_pointer, std::string()) != "Running") continue;
            const std::string uid =
                p.value("/metadata/labels/strait.io~1origin-uid"_json_pointer, std::string());
            if (uid.empty()) continue;
            std::lock_guard<std::mutex> lock(mu_);
            running_.try_emplace(uid, at, p.value("spec", json::object()));
          }
          return !stopping_;
        },
        &err);
  }

  bench::ApiConnection conn_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;
  std::map<std::string, std::pair<Clock::time_point, json>> running_;
};

json makePod(const std::string& ns, const std::string& name, const std::string& node) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"app", "bench"}}}}},
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

bool overridden(const json& spec) {
  bool image = false, toleration = false;
  for (const json& c : spec.value("containers", json::array())) {
    image = c.value("image", "") == "mirror.example.com/library/nginx:1.27";
  }
  for (const json& t : spec.value("tolerations", json::array())) {
    if (t.value("key", "") == "example.com/gpu") toleration = true;
  }
  return image && toleration;
}

int runOverride(const Flags& f) {
  const std::string loadBefore = loadavg();
  e2e::Minicluster consumer, provider;
  if (auto e = consumer.start("consumer", 60s, {"--log-level", "warn", "--watch-history", "100000"});
      !e.empty()) {
    return fail("consumer: " + e);
  }
  if (auto e = provider.start("provider", 60s,
                              {"--log-level", "warn", "--watch-history", "100000", "--nodes", "1",
                               "--node-cpu", "1000", "--node-memory", "4000Gi", "--node-pods",
                               std::to_string(2 * f.pods + 100), "--pod-start-latency", "0s"});
      !e.empty()) {
    return fail("provider: " + e);
  }
  e2e::AgentProcess providerAgent, consumerAgent;
  if (auto e = providerAgent.start(provider.kubeconfig(), "provider", {"--share", "1"});
      !e.empty()) {
    return fail(e);
  }
  if (auto e = consumerAgent.start(consumer.kubeconfig(), "consumer", {}); !e.empty()) {
    return fail(e);
  }
  if (auto e = strait(f, {"peer", "--kubeconfig", consumer.kubeconfig(), "--remote-kubeconfig",
                          provider.kubeconfig(), "--cpu", "1000", "--memory", "4000Gi", "--pods",
                          std::to_string(2 * f.pods + 50)});
      !e.empty()) {
    return fail("strait peer: " + e);
  }
  std::string err;
  auto caccess = bench::loadKubeconfig(consumer.kubeconfig(), &err);
  auto paccess = bench::loadKubeconfig(provider.kubeconfig(), &err);
  if (!caccess || !paccess) return fail("kubeconfig: " + err);
  bench::ApiConnection api(*caccess);
  if (!api.connect(&err)) return fail("connect: " + err);
  const std::string vnode = "strait-provider";
  if (!bench::waitForNodeReady(api, vnode, 60s)) {
    return fail(vnode + " not Ready:\n" + consumerAgent.logs());
  }
  for (const char* ns : {"plain", "over"}) {
    if (auto e = post(api, "/api/v1/namespaces",
                      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
        !e.empty()) {
      return fail(e);
    }
    if (auto e = strait(f, {"offload", "namespace", ns, "--kubeconfig", consumer.kubeconfig()});
        !e.empty()) {
      return fail("strait offload: " + e);
    }
  }
  json override = json::parse(R"({"apiVersion":"strait.io/v1alpha1",
    "kind":"OffloadingOverride","metadata":{"name":"bench","namespace":"over"},
    "spec":{"rules":{"imageRegistry":{"from":"docker.io","to":"mirror.example.com"},
      "tolerations":[{"key":"example.com/gpu","operator":"Exists","effect":"NoSchedule"}]}}})");
  if (auto e = post(api, "/apis/strait.io/v1alpha1/namespaces/over/offloadingoverrides", override);
      !e.empty()) {
    return fail(e);
  }
  RemoteRunningWatch watch(*paccess);
  if (auto e = watch.start(); !e.empty()) return fail(e);
  // The override is in the agent's cache once a probe Pod's copy carries it.
  json probe;
  if (auto e = post(api, "/api/v1/namespaces/over/pods", makePod("over", "probe", vnode), &probe);
      !e.empty()) {
    return fail(e);
  }
  const std::string probeUid = probe.value("/metadata/uid"_json_pointer, std::string());
  if (!e2e::waitFor(
          [&] {
            auto r = watch.running();
            auto it = r.find(probeUid);
            return it != r.end() && overridden(it->second.second);
          },
          60s, 100ms)) {
    return fail("the probe Pod's copy did not run with the override:\n" + consumerAgent.logs());
  }

  // Interleaved creations: one Pod in each namespace in turn, at --rate Pods/s.
  std::map<std::string, std::pair<std::string, Clock::time_point>> created;  // uid -> ns, at
  const auto begin = Clock::now();
  for (int i = 0; i < 2 * f.pods; ++i) {
    std::this_thread::sleep_until(begin + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(i / f.rate)));
    const std::string ns = i % 2 == 0 ? "plain" : "over";
    json pod;
    const auto at = Clock::now();
    if (auto e = post(api, "/api/v1/namespaces/" + ns + "/pods",
                      makePod(ns, "p-" + std::to_string(i / 2), vnode), &pod);
        !e.empty()) {
      return fail(e);
    }
    created[pod.value("/metadata/uid"_json_pointer, std::string())] = {ns, at};
  }
  const bool all = e2e::waitFor(
      [&] {
        auto r = watch.running();
        size_t n = 0;
        for (const auto& [uid, c] : created) n += r.count(uid);
        return n == created.size();
      },
      std::chrono::seconds(f.timeoutSeconds), 100ms);
  watch.stop();
  const std::string loadAfter = loadavg();
  std::map<std::string, std::vector<double>> latency;
  int notOverridden = 0, missing = 0;
  auto running = watch.running();
  for (const auto& [uid, c] : created) {
    auto it = running.find(uid);
    if (it == running.end()) {
      ++missing;
      continue;
    }
    latency[c.first].push_back(bench::secondsBetween(c.second, it->second.first));
    if (c.first == "over" && !overridden(it->second.second)) ++notOverridden;
  }
  const double p50Plain = quantile(latency["plain"], 0.5), p99Plain = quantile(latency["plain"], 0.99);
  const double p50Over = quantile(latency["over"], 0.5), p99Over = quantile(latency["over"], 0.99);
  const double ratio50 = p50Plain > 0 && p50Over >= 0 ? p50Over / p50Plain : -1;
  const double ratio99 = p99Plain > 0 && p99Over >= 0 ? p99Over / p99Plain : -1;
  if (f.json) {
    auto num = [](double v) { return v < 0 ? json() : json(v); };
    json out = {{"bench", "override_latency"},
                {"podsPerNamespace", f.pods},
                {"ratePodsPerSecond", f.rate},
                {"withoutP50Seconds", num(p50Plain)},
                {"withoutP99Seconds", num(p99Plain)},
                {"withP50Seconds", num(p50Over)},
                {"withP99Seconds", num(p99Over)},
                {"ratioP50", num(ratio50)},
                {"ratioP99", num(ratio99)},
                {"ratioAim", kOverrideRatioAim},
                {"notRunning", missing},
                {"notOverridden", notOverridden},
                {"loadBefore", loadBefore},
                {"loadAfter", loadAfter}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    auto ratioText = [](double r) {
      if (r < 0) return std::string("-");
      char b[32];
      std::snprintf(b, sizeof b, "%.3f", r);
      return std::string(b);
    };
    char title[512];
    std::snprintf(title, sizeof title,
                  "override latency: local create -> copy Running in the provider, %d Pods with "
                  "an OffloadingOverride (image registry + toleration) and %d without, "
                  "interleaved at %.0f Pods/s; load %s -> %s",
                  f.pods, f.pods, f.rate, loadBefore.c_str(), loadAfter.c_str());
    printRows(title,
              {{"figure", "without", "with", "with / without", "aim", ""},
               {"p50", millis(p50Plain), millis(p50Over), ratioText(ratio50), "<= 1.10",
                verdict(ratio50, kOverrideRatioAim)},
               {"p99", millis(p99Plain), millis(p99Over), ratioText(ratio99), "<= 1.10",
                verdict(ratio99, kOverrideRatioAim)}});
  }
  if (!all || missing > 0) return fail(std::to_string(missing) + " Pods never ran in the provider");
  if (notOverridden > 0) {
    return fail(std::to_string(notOverridden) + " copies in namespace over lack the override");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"placement benchmarks: failover to another provider, cost of an override"};
  app.add_option("--strait", f.strait, "strait binary (default: the one beside this program)");
  app.add_option("--mode", f.mode, "failover or override")
      ->capture_default_str()
      ->check(CLI::IsMember({"failover", "override"}));
  app.add_option("--replicas", f.replicas, "failover: Deployment replicas")
      ->capture_default_str()
      ->check(CLI::Range(2, 10000));
  app.add_option("--stream-grace", f.streamGrace,
                 "failover: the home agent's --vnode-stream-grace (default: the agent's)");
  app.add_option("--toleration-seconds", f.tolerationSeconds,
                 "failover: tolerationSeconds of the Pods for not-ready/unreachable (default: "
                 "none in the template; the API server adds 300)")
      ->check(CLI::Range(0, 86400));
  app.add_option("--pods", f.pods, "override: Pods per namespace (with and without)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--rate", f.rate, "override: Pods created per second")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 10000.0));
  app.add_option("--timeout", f.timeoutSeconds, "seconds to wait for each phase")
      ->capture_default_str()
      ->check(CLI::Range(10, 86400));
  app.add_flag("--json", f.json, "one JSON line");
  app.add_option("-o,--output", f.output, "table or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  CLI11_PARSE(app, argc, argv);
  if (f.output == "json") f.json = true;
  if (f.strait.empty()) f.strait = bench::straitBesideThisBinary(argv[0]);
  if (f.strait.empty()) return fail("no strait binary found; pass --strait");
  if (f.mode == "failover" && !f.streamGrace.empty() && !parseSeconds(f.streamGrace)) {
    return fail("--stream-grace: expected a duration like 10s, got " + f.streamGrace);
  }
  setenv("STRAIT_BIN", f.strait.c_str(), 1);
  signal(SIGPIPE, SIG_IGN);
  spdlog::set_level(spdlog::level::warn);
  return f.mode == "failover" ? runFailover(f) : runOverride(f);
}
