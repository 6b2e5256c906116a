// Metrics benchmark: the cost of one /metrics scrape of the agent's registry after 10,000
// offloaded Pods.
//
//   1. A `strait minicluster` holds --pods Pods labelled strait.io/origin-cluster-id (the
//      Pods a provider agent runs for a consumer; they are created through kube::Client).
//   2. The agent's real AgentMetrics (cmd/agent_metrics.cpp) watches them and serves
//      /metrics; its reflection exporter is the process's sink, fed the stream traffic and
//      work of --pods offloads on both sides of the stream (per Pod: APPLY, REPLY and STATUS
//      messages of the forged remote Pod, one reflector work item), one work queue and one
//      virtual node holding the Pods.
//   3. Once a scrape shows strait_offloaded_pods = --pods, --scrapes GETs of /metrics over
//      HTTP/1.0 on loopback, one after the other: time per scrape (median, p99, max) and the
//      exposition's size; then the same number of in-process Registry::text() calls (the
//      serialization alone).
//
// Run: ./scripts/run-bench.sh <build-dir>, or metrics_bench --strait build/strait.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>
#include <vector>

#include "bench/bench_client.h"
#include "cmd/agent_metrics.h"
#include "kube/client.h"
#include "reflection/reflection_metrics.h"
#include "reflection/stream_messages.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace res = strait::kube::resources;
namespace refl = strait::reflection;

struct Flags {
  std::string strait = "build/strait";
  int pods = 10000;
  int scrapes = 200;
  int writers = 4;
  bool json = false;
};

// A Pod as the provider stores it for a consumer (labels and annotations of a reflected Pod,
// two containers).
json makePod(int i) {
  json container = {{"name", "app"},
                    {"image", "registry.example.com/team/app:1.4.2"},
                    {"ports", json::array({{{"containerPort", 8080}, {"protocol", "TCP"}}})},
                    {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}}}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", "web-" + std::to_string(i)},
            {"namespace", "default"},
            {"labels",
             {{"app", "web"},
              {"strait.io/origin-cluster-id", "consumer-bench"},
              {"strait.io/origin-uid", "uid-" + std::to_string(i)}}}}},
          {"spec",
           {{"containers", json::array({container})},
            {"nodeName", "provider-node-" + std::to_string(i % 16)},
            {"terminationGracePeriodSeconds", 30}}}};
}

std::unique_ptr<strait::kube::Client> clientFor(const std::string& kubeconfig) {
  auto cfg = strait::kube::loadKubeconfig({{kubeconfig}, ""});
  if (!cfg) {
    std::fprintf(stderr, "metrics_bench: %s\n", cfg.error().message.c_str());
    std::exit(1);
  }
  cfg->qps = 0;
  auto c = strait::kube::newClient(*cfg);
  if (!c) {
    std::fprintf(stderr, "metrics_bench: %s\n", c.error().message.c_str());
    std::exit(1);
  }
  return std::move(*c);
}

// GET /metrics on 127.0.0.1:`port` over HTTP/1.0; the body, or "" on failure.
std::string scrape(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (fd >= 0) ::close(fd);
    return "";
  }
  const std::string req = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (::write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return "";
  }
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  const size_t body = out.find("\r\n\r\n");
  if (out.rfind("HTTP/1.", 0) != 0 || out.find(" 200 ") == std::string::npos ||
      body == std::string::npos) {
    return "";
  }
  return out.substr(body + 4);
}

double sampleOf(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + series.size() + 2));
}

struct Stats {
  double medianMs = 0, p99Ms = 0, maxMs = 0;
};
Stats statsOf(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  Stats s;
  s.medianMs = ms[ms.size() / 2];
  s.p99Ms = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
  s.maxMs = ms.back();
  return s;
}

std::string loadAverage() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app("The cost of one agent /metrics scrape after many offloaded Pods");
  app.add_option("--strait", f.strait, "the strait binary")->capture_default_str();
  app.add_option("--pods", f.pods, "offloaded Pods")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("--scrapes", f.scrapes, "scrapes timed")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--writers", f.writers, "Pod creation threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_flag("--json", f.json, "print one JSON line");
  CLI11_PARSE(app, argc, argv);

  const std::string loadBefore = loadAverage();
  std::string work =
      std::filesystem::temp_directory_path() / ("strait-metrics-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(work);
  strait::bench::ServerProcess server;
  std::string error;
  if (!server.start(f.strait, work, false, std::chrono::seconds(60), &error)) {
    std::fprintf(stderr, "metrics_bench: %s\n", error.c_str());
    return 1;
  }
  const std::string kubeconfig = work + "/kubeconfig";

  // 1. The provider's Pods for its consumer.
  auto writer = clientFor(kubeconfig);
  std::atomic<int> next{0}, failed{0};
  std::vector<std::thread> threads;
  const auto createStart = Clock::now();
  for (int t = 0; t < f.writers; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < f.pods; i = next++) {
        if (!writer->create(res::kPods, "default", makePod(i)).ok()) ++failed;
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failed > 0) {
    std::fprintf(stderr, "metrics_bench: %d Pod creations failed\n", failed.load());
    return 1;
  }
  const double createSecs = std::chrono::duration<double>(Clock::now() - createStart).count();

  // 2. The agent's metrics, and the reflection of --pods offloads through its sink.
  strait::cmd::AgentMetrics agent(clientFor(kubeconfig));
  if (auto s = agent.start("127.0.0.1", 0); !s.ok()) {
    std::fprintf(stderr, "metrics_bench: %s\n", s.error().message.c_str());
    return 1;
  }
  std::shared_ptr<refl::ReflectionMetrics> sink = refl::reflectionMetrics();
  if (!sink) {
    std::fprintf(stderr, "metrics_bench: AgentMetrics installed no reflection sink\n");
    return 1;
  }
  const size_t pods = static_cast<size_t>(f.pods);
  sink->queueAdded("strait-bench", "Pod", [] { return size_t{0}; });
  sink->podsAdded("strait-bench", [pods] { return pods; });
  using refl::StreamDirection;
  using refl::StreamSide;
  for (int i = 0; i < f.pods; ++i) {
    const auto began = Clock::now();
    json pod = makePod(i);
    refl::StreamMessage apply = refl::StreamMessage::apply(pod, "uid-" + std::to_string(i));
    apply.seq = static_cast<uint64_t>(i) + 1;
    auto applyWire = refl::encodeStreamMessage(apply);
    auto replyWire = refl::encodeStreamMessage(refl::StreamMessage::reply(apply.seq, pod));
    auto statusWire = refl::encodeStreamMessage(refl::StreamMessage::status(pod, apply.originUid));
    refl::countStreamMessage(StreamSide::Consumer, StreamDirection::Sent, applyWire);
    refl::countStreamMessage(StreamSide::Provider, StreamDirection::Received, applyWire);
    for (const auto* w : {&replyWire, &statusWire}) {
      refl::countStreamMessage(StreamSide::Provider, StreamDirection::Sent, *w);
      refl::countStreamMessage(StreamSide::Consumer, StreamDirection::Received, *w);
    }
    refl::countWork("Pod", refl::WorkResult::Done, began);
  }

  // 3. Scrapes, once the agent's informer holds every Pod.
  const int port = agent.port();
  const auto syncDeadline = Clock::now() + std::chrono::seconds(120);
  std::string text;
  while (Clock::now() < syncDeadline) {
    text = scrape(port);
    if (sampleOf(text, "strait_offloaded_pods") == f.pods) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (sampleOf(text, "strait_offloaded_pods") != f.pods ||
      sampleOf(text, "strait_virtual_node_pods{node=\"strait-bench\"}") != f.pods) {
    std::fprintf(stderr, "metrics_bench: the agent never exposed %d offloaded Pods:\n%s\n", f.pods,
                 text.c_str());
    return 1;
  }
  size_t series = 0;
  for (size_t p = 0; (p = text.find('\n', p)) != std::string::npos; ++p) {
    if (p + 1 < text.size() && text[p + 1] != '#') ++series;
  }
  std::vector<double> httpMs, textMs;
  size_t bytes = 0;
  for (int i = 0; i < f.scrapes; ++i) {
    const auto t0 = Clock::now();
    std::string body = scrape(port);
    httpMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (body.empty()) {
      std::fprintf(stderr, "metrics_bench: scrape %d failed\n", i);
      return 1;
    }
    bytes = std::max(bytes, body.size());
  }
  for (int i = 0; i < f.scrapes; ++i) {
    const auto t0 = Clock::now();
    std::string body = agent.registry().text();
    textMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  agent.stop();
  server.stop();
  std::filesystem::remove_all(work);

  const Stats h = statsOf(httpMs), t = statsOf(textMs);
  const std::string loadAfter = loadAverage();
  if (f.json) {
    json out = {{"bench", "metrics"},
                {"pods", f.pods},
                {"scrapes", f.scrapes},
                {"series", series},
                {"bytes", bytes},
                {"scrape_median_ms", h.medianMs},
                {"scrape_p99_ms", h.p99Ms},
                {"scrape_max_ms", h.maxMs},
                {"text_median_ms", t.medianMs},
                {"text_p99_ms", t.p99Ms},
                {"create_seconds", createSecs},
                {"load_before", loadBefore},
                {"load_after", loadAfter}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf(
        "# metrics_bench: %d offloaded Pods (created in %.1f s), %d scrapes, load "
        "average before %s, after %s\n",
        f.pods, createSecs, f.scrapes, loadBefore.c_str(), loadAfter.c_str());
    std::printf("%-36s %10s %10s %10s\n", "", "median", "p99", "max");
    std::printf("%-36s %8.2fms %8.2fms %8.2fms\n", "GET /metrics (HTTP, loopback)", h.medianMs,
                h.p99Ms, h.maxMs);
    std::printf("%-36s %8.2fms %8.2fms %8.2fms\n", "Registry::text() (in process)", t.medianMs,
                t.p99Ms, t.maxMs);
    std::printf("exposition: %zu bytes, %zu samples\n", bytes, series);
  }
  return 0;
}
