// Process-runtime benchmark (root): a `strait minicluster --runtime process` whose Pods are
// real processes in network namespaces. Reports
//   - Pods started per second, first create to every Pod Running and Ready, against the same
//     Pods on the simulated runtime (pod-start-latency 0) in the same run: the ratio is what
//     real processes, namespaces and veths cost;
//   - memory per idle Pod: the proportional set size (Pss) of the Pods' processes, and the
//     minicluster's own RSS growth, per Pod;
//   - time from a Service change to working rules: with S Services already in place, a new
//     Service is created and a thread in a node's network namespace connects to its
//     ClusterIP until the connection is answered (EndpointSlice controller, nftables
//     replacement and the Pod all in the path); p50/p99 over the samples;
//   - DNS answers per second from dnsmasq, asked from inside a Pod's network namespace
//     through the kube-dns Service (queries built and parsed with the resolver library).

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <resolv.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
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
  int nodes = 3;
  int pods = 100;
  int services = 1000;
  int samples = 100;
  int dnsSeconds = 5;
  bool json = false;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

json benchPod(int i) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", "bench-" + std::to_string(i)},
            {"labels", {{"app", "bench"}, {"group", std::to_string(i % 10)}}}}},
          {"spec",
           {{"containers",
             json::array({{{"name", "app"},
                           {"image", "registry.k8s.io/e2e-test-images/agnhost:2.47"},
                           {"args", {"netexec", "--http-port=8080"}},
                           {"ports", json::array({{{"containerPort", 8080}}})},
                           {"resources", {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}}}}})}}}};
}

json benchService(const std::string& name, int group) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"selector", {{"app", "bench"}, {"group", std::to_string(group)}}},
            {"ports", json::array({{{"port", 80}, {"targetPort", 8080}}})}}}};
}

// Pods of app=bench that are Running with condition Ready=True; -1 on error.
int readyPods(ApiConnection& c) {
  ApiResponse r;
  std::string err;
  if (!c.request("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dbench", "", &r,
                 &err) ||
      r.status != 200) {
    return -1;
  }
  json list = json::parse(r.body, nullptr, false);
  if (!list.is_object()) return -1;
  int n = 0;
  for (const auto& p : list.value("items", json::array())) {
    if (p.value("/status/phase"_json_pointer, "") != "Running") continue;
    for (const auto& cond : p.value("/status/conditions"_json_pointer, json::array())) {
      if (cond.value("type", "") == "Ready" && cond.value("status", "") == "True") ++n;
    }
  }
  return n;
}

// Creates the Pods from `writers` threads and waits until all are Running and Ready.
// Returns seconds from the first create, or a negative value on failure.
double startPods(const ClusterAccess& access, int pods, std::chrono::seconds timeout) {
  std::atomic<int> next{0}, failed{0};
  auto t0 = Clock::now();
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&] {
      ApiConnection c(access);
      std::string err;
      if (!c.connect(&err)) {
        ++failed;
        return;
      }
      for (int i = next++; i < pods; i = next++) {
        ApiResponse r;
        if (!c.request("POST", "/api/v1/namespaces/default/pods", benchPod(i).dump(), &r, &err) ||
            r.status != 201) {
          ++failed;
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  if (failed > 0) {
    std::fprintf(stderr, "process_runtime_bench: %d pod creations failed\n", failed.load());
    return -1;
  }
  ApiConnection c(access);
  std::string err;
  if (!c.connect(&err)) return -1;
  while (readyPods(c) < pods) {
    if (Clock::now() - t0 > timeout) return -1;
    std::this_thread::sleep_for(50ms);
  }
  return secondsBetween(t0, Clock::now());
}

// Every descendant of `root` (children's children...), from /proc.
std::vector<pid_t> descendants(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(stat.substr(paren + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    children[ppid].push_back(static_cast<pid_t>(std::stol(name)));
  }
  std::vector<pid_t> out, unvisited = {root};
  while (!unvisited.empty()) {
    pid_t p = unvisited.back();
    unvisited.pop_back();
    for (pid_t c : children[p]) {
      out.push_back(c);
      unvisited.push_back(c);
    }
  }
  return out;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// Pss of a process in KiB (smaps_rollup); 0 if unreadable.
long pssKiB(pid_t pid) {
  std::istringstream in(readFile("/proc/" + std::to_string(pid) + "/smaps_rollup"));
  std::string key;
  long value = 0;
  while (in >> key) {
    if (key == "Pss:") {
      in >> value;
      return value;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

// The container processes: descendants of the server whose command line runs agnhost.
std::vector<pid_t> podProcesses(pid_t server) {
  std::vector<pid_t> out;
  for (pid_t p : descendants(server)) {
    std::string cmd = readFile("/proc/" + std::to_string(p) + "/cmdline");
    if (cmd.find("agnhost") != std::string::npos) out.push_back(p);
  }
  return out;
}

// The network namespace (under /run/netns) whose name ends with `suffix`, e.g.
// "-bench-node-0"; "" if none.
std::string netnsEndingWith(const std::string& suffix) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/run/netns", ec)) {
    std::string n = e.path().filename();
    if (n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return e.path().string();
    }
  }
  return {};
}

// Runs `fn` on a thread that has entered the network namespace at `path`. False if it
// could not enter.
bool inNetns(const std::string& path, const std::function<void()>& fn) {
  bool ok = false;
  std::thread t([&] {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    if (::setns(fd, CLONE_NEWNET) == 0) {
      ok = true;
      fn();
    }
    ::close(fd);
  });
  t.join();
  return ok;
}

// One TCP connect to ip:port that must complete within `timeout`.
bool connects(const std::string& ip, uint16_t port, std::chrono::milliseconds timeout) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    ok = true;
  } else if (errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) == 1) {
      int e = 0;
      socklen_t len = sizeof(e);
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len);
      ok = e == 0;
    }
  }
  ::close(fd);
  return ok;
}

struct ServiceFigures {
  double createAllSeconds = 0;
  std::vector<double> latencies;  // seconds, change to answered connection
  int failed = 0;
};

ServiceFigures measureServices(const ClusterAccess& access, const Options& o,
                               const std::string& netns) {
  ServiceFigures f;
  ApiConnection c(access);
  std::string err;
  if (!c.connect(&err)) {
    f.failed = o.samples;
    return f;
  }
  auto t0 = Clock::now();
  for (int i = 0; i < o.services; ++i) {
    ApiResponse r;
    if (!c.request("POST", "/api/v1/namespaces/default/services",
                   benchService("svc-" + std::to_string(i), i % 10).dump(), &r, &err) ||
        r.status != 201) {
      ++f.failed;
    }
  }
  f.createAllSeconds = secondsBetween(t0, Clock::now());
  std::this_thread::sleep_for(3s);  // let the initial 1,000 settle
  for (int i = 0; i < o.samples; ++i) {
    std::string name = "probe-" + std::to_string(i);
    ApiResponse r;
    auto start = Clock::now();
    if (!c.request("POST", "/api/v1/namespaces/default/services",
                   benchService(name, i % 10).dump(), &r, &err) ||
        r.status != 201) {
      ++f.failed;
      continue;
    }
    std::string ip = json::parse(r.body, nullptr, false).value("/spec/clusterIP"_json_pointer, "");
    bool answered = false;
    inNetns(netns, [&] {
      while (!answered && Clock::now() - start < 10s) {
        answered = connects(ip, 80, 100ms);
        if (!answered) std::this_thread::sleep_for(2ms);
      }
    });
    if (answered) {
      f.latencies.push_back(secondsBetween(start, Clock::now()));
    } else {
      ++f.failed;
    }
    c.request("DELETE", "/api/v1/namespaces/default/services/" + name, "", &r, &err);
  }
  return f;
}

// Queries `name` (A) at `server`:53 over UDP with up to `window` outstanding, for
// `duration`. Returns answers with NOERROR and at least one record per second.
double dnsAnswersPerSecond(const std::string& server, const std::string& name,
                           std::chrono::seconds duration, int* bad) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(53);
  ::inet_pton(AF_INET, server.c_str(), &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return 0;
  }
  unsigned char query[NS_PACKETSZ];
  int qlen = res_mkquery(ns_o_query, name.c_str(), ns_c_in, ns_t_a, nullptr, 0, nullptr, query,
                         sizeof(query));
  if (qlen <= 0) {
    ::close(fd);
    return 0;
  }
  constexpr int kWindow = 32;
  uint16_t id = 0;
  int outstanding = 0;
  long answers = 0;
  auto send = [&] {
    ++id;
    query[0] = static_cast<unsigned char>(id >> 8);
    query[1] = static_cast<unsigned char>(id & 0xff);
    if (::send(fd, query, static_cast<size_t>(qlen), 0) == qlen) ++outstanding;
  };
  auto start = Clock::now();
  while (Clock::now() - start < duration) {
    while (outstanding < kWindow) send();
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) != 1) {
      outstanding = 0;  // lost in flight: refill the window
      continue;
    }
    unsigned char reply[NS_MAXMSG];
    ssize_t n = ::recv(fd, reply, sizeof(reply), 0);
    if (n <= 0) continue;
    --outstanding;
    ns_msg msg;
    if (ns_initparse(reply, static_cast<int>(n), &msg) == 0 && ns_msg_getflag(msg, ns_f_rcode) == 0 &&
        ns_msg_count(msg, ns_s_an) > 0) {
      ++answers;
    } else {
      ++*bad;
    }
  }
  ::close(fd);
  return static_cast<double>(answers) / secondsBetween(start, Clock::now());
}

int run(const Options& o) {
  char tmpl[] = "/tmp/strait-process-bench-XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    return 1;
  }
  std::string work = tmpl;
  fs::create_directories(work + "/sim");
  fs::create_directories(work + "/process");
  std::string error;
  std::vector<std::string> common = {"--nodes", std::to_string(o.nodes), "--node-cpu", "16",
                                     "--node-memory", "64Gi", "--log-level", "warn"};

  // Baseline: the same Pods on the simulated runtime.
  double simSeconds = -1;
  {
    ServerProcess sim;
    std::vector<std::string> args = common;
    args.insert(args.end(), {"--runtime", "sim", "--pod-start-latency", "0s"});
    auto access = sim.start(o.strait, work + "/sim", false, 120s, &error, args);
    if (!access) {
      std::fprintf(stderr, "process_runtime_bench: sim cluster: %s\n", error.c_str());
      return 1;
    }
    std::this_thread::sleep_for(2s);
    simSeconds = startPods(*access, o.pods, 300s);
  }

  ServerProcess server;
  std::vector<std::string> args = common;
  args.insert(args.end(), {"--runtime", "process"});
  auto access = server.start(o.strait, work + "/process", false, 120s, &error, args);
  if (!access) {
    std::fprintf(stderr, "process_runtime_bench: process cluster: %s\n", error.c_str());
    return 1;
  }
  std::this_thread::sleep_for(3s);
  long rssBefore = server.rssKiB();
  double procSeconds = startPods(*access, o.pods, 300s);
  if (procSeconds < 0 || simSeconds < 0) {
    std::fprintf(stderr, "process_runtime_bench: not every Pod became Ready\n");
    return 1;
  }
  std::this_thread::sleep_for(5s);  // idle
  std::vector<pid_t> procs = podProcesses(server.pid());
  long pss = 0;
  for (pid_t p : procs) pss += pssKiB(p);
  long rssAfter = server.rssKiB();

  // Services and DNS are measured from inside the Pod bench-0 (the Pod path).
  ApiConnection c(*access);
  ApiResponse r;
  c.connect(&error);
  c.request("GET", "/api/v1/namespaces/default/pods/bench-0", "", &r, &error);
  std::string uid = json::parse(r.body, nullptr, false).value("/metadata/uid"_json_pointer, "");
  uid.erase(std::remove(uid.begin(), uid.end(), '-'), uid.end());
  std::string podNetns = netnsEndingWith("-pod-" + uid.substr(0, 16));
  if (uid.empty() || podNetns.empty()) {
    std::fprintf(stderr, "process_runtime_bench: no network namespace for Pod bench-0\n");
    return 1;
  }
  ServiceFigures svc = measureServices(*access, o, podNetns);
  double qps = 0;
  int bad = 0;
  inNetns(podNetns, [&] {
    qps = dnsAnswersPerSecond("10.96.0.10", "svc-1.default.svc.cluster.local",
                              std::chrono::seconds(o.dnsSeconds), &bad);
  });

  double p50 = percentile(svc.latencies, 0.5) * 1000, p99 = percentile(svc.latencies, 0.99) * 1000;
  double podsPerSec = o.pods / procSeconds, simPerSec = o.pods / simSeconds;
  double pssPerPod = procs.empty() ? 0 : static_cast<double>(pss) / o.pods;
  double rssPerPod = static_cast<double>(rssAfter - rssBefore) / o.pods;
  if (o.json) {
    json out = {{"pods", o.pods},
                {"nodes", o.nodes},
                {"pods_per_second", podsPerSec},
                {"sim_pods_per_second", simPerSec},
                {"process_vs_sim_time", procSeconds / simSeconds},
                {"pod_processes", procs.size()},
                {"pss_kib_per_pod", pssPerPod},
                {"minicluster_rss_kib_per_pod", rssPerPod},
                {"services", o.services},
                {"services_create_seconds", svc.createAllSeconds},
                {"service_to_rules_p50_ms", p50},
                {"service_to_rules_p99_ms", p99},
                {"service_samples", svc.latencies.size()},
                {"service_failures", svc.failed},
                {"dns_answers_per_second", qps},
                {"dns_bad_answers", bad}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("process runtime, %d nodes, %d Pods (agnhost netexec)\n", o.nodes, o.pods);
    std::printf("  %-44s %8.1f /s  (%.2f s)\n", "Pods to Running and Ready", podsPerSec, procSeconds);
    std::printf("  %-44s %8.1f /s  (%.2f s)  ratio %.2fx\n", "same Pods, sim runtime (baseline)",
                simPerSec, simSeconds, procSeconds / simSeconds);
    std::printf("  %-44s %8.0f KiB (%zu processes)\n", "Pss of the Pods' processes per Pod",
                pssPerPod, procs.size());
    std::printf("  %-44s %8.0f KiB\n", "minicluster RSS growth per Pod", rssPerPod);
    std::printf("  %-44s %8.1f s\n", ("create " + std::to_string(o.services) + " Services").c_str(),
                svc.createAllSeconds);
    std::printf("  %-44s p50 %.0f ms, p99 %.0f ms (%zu samples, %d failed)\n",
                "new Service to answered ClusterIP", p50, p99, svc.latencies.size(), svc.failed);
    std::printf("  %-44s %8.0f /s (%d bad)\n", "DNS answers from a Pod (dnsmasq)", qps, bad);
  }
  server.stop();
  std::error_code ec;
  fs::remove_all(work, ec);
  return svc.failed > 0 || qps <= 0 ? 1 : 0;
}

}  // namespace
}  // namespace strait::bench

int main(int argc, char** argv) {
  strait::bench::Options o;
  CLI::App app("process-runtime benchmark (root): Pods/s, memory per Pod, Service rules, DNS");
  app.add_option("--strait", o.strait, "the strait binary (default: found beside this one)");
  app.add_option("--nodes", o.nodes, "nodes")->capture_default_str()->check(CLI::Range(1, 20));
  app.add_option("--pods", o.pods, "Pods")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--services", o.services, "Services in place before sampling")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000));
  app.add_option("--samples", o.samples, "Service changes timed")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--dns-seconds", o.dnsSeconds, "DNS load duration")
      ->capture_default_str()
      ->check(CLI::Range(1, 600));
  app.add_flag("--json", o.json, "one JSON line instead of the table");
  CLI11_PARSE(app, argc, argv);
  if (::geteuid() != 0) {
    std::fprintf(stderr, "process_runtime_bench: needs root (network namespaces)\n");
    return 2;
  }
  if (o.strait.empty()) o.strait = strait::bench::straitBesideThisBinary(argv[0]);
  if (o.strait.empty()) {
    std::fprintf(stderr, "process_runtime_bench: cannot find strait; pass --strait\n");
    return 2;
  }
  return strait::bench::run(o);
}
