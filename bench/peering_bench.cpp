// Peering benchmark: two `strait minicluster` processes and two `strait agent` processes on
// loopback.
//  - time for `strait peer` (in-band: issues a token on the provider and peers; out-of-band:
//    `strait peer --token` with a token issued beforehand) to return success, i.e. until the
//    consumer agent holds a signed certificate and the ForeignCluster says Authenticated;
//  - the same for `strait peer --mode pull` (in-band; the provider agent dials the consumer);
//  - time to notice a lost peer: the provider agent is SIGKILLed and the consumer's
//    ForeignCluster is polled (every 5 ms, in process) until Connected=False.
// Prints a table (or JSON lines with --json). Figures are wall-clock on a shared machine.
#include <CLI/CLI.hpp>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include "bench/bench_kube.h"
#include "bench/proc_stats.h"
#include "e2e/peering_fixture.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "peering/operations.h"

using namespace strait;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Stats {
  double min = 0, p50 = 0, max = 0;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return {};
  return {v.front(), v[v.size() / 2], v.back()};
}

std::string connected(kube::Client& c) {
  auto rows = peering::peeringStatus(c);
  if (!rows.ok() || rows->size() != 1) return "";
  return (*rows)[0].value("connected", "");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"peering benchmark"};
  int runs = 5;
  bool json = false;
  std::string strait = e2e::straitBinary();
  std::string lostAfter = "1s";
  std::string heartbeat = "200ms";
  app.add_option("--runs", runs, "peer/unpeer cycles per mode")->capture_default_str();
  app.add_option("--strait", strait, "strait binary");
  app.add_option("--lost-after", lostAfter, "agents' --lost-after")->capture_default_str();
  app.add_option("--heartbeat-interval", heartbeat, "agents' --heartbeat-interval")
      ->capture_default_str();
  app.add_flag("--json", json, "JSON lines");
  CLI11_PARSE(app, argc, argv);
  setenv("STRAIT_BIN", strait.c_str(), 1);
  signal(SIGPIPE, SIG_IGN);

  std::string loadBefore = bench::loadavg();
  e2e::Minicluster consumer, provider;
  e2e::AgentProcess consumerAgent, providerAgent;
  std::vector<std::string> args = {"--heartbeat-interval", heartbeat, "--lost-after", lostAfter,
                                   "--budget", "cpu=100,memory=200Gi,pods=1000"};
  for (auto err : {consumer.start("consumer"), provider.start("provider")}) {
    if (!err.empty()) {
      std::cerr << err << "\n";
      return 1;
    }
  }
  for (auto err : {providerAgent.start(provider.kubeconfig(), "provider", args),
                   consumerAgent.start(consumer.kubeconfig(), "consumer", args)}) {
    if (!err.empty()) {
      std::cerr << err << "\n";
      return 1;
    }
  }
  auto consumerClient = bench::kubeClient(consumer.kubeconfig());
  if (!consumerClient) return 1;
  auto run = [&](std::vector<std::string> a) {
    a.insert(a.begin(), strait);
    return e2e::runCommand(a, {}, 60s);
  };
  auto unpeer = [&] {
    auto r = run({"unpeer", "--kubeconfig", consumer.kubeconfig(), "--remote-name", "provider"});
    if (r.exitCode != 0) std::cerr << "unpeer failed: " << r.describe() << "\n";
    return r.exitCode == 0;
  };

  std::vector<double> inBand, outOfBand;
  for (int i = 0; i < runs; ++i) {
    auto t0 = Clock::now();
    auto r = run({"peer", "--kubeconfig", consumer.kubeconfig(), "--remote-kubeconfig",
                  provider.kubeconfig()});
    auto t1 = Clock::now();
    if (r.exitCode != 0) {
      std::cerr << "peer failed: " << r.describe() << "\n";
      return 1;
    }
    inBand.push_back(ms(t1 - t0));
    if (!unpeer()) return 1;
  }
  // Pull mode: the provider agent dials the consumer agent's link port (here it could also
  // be dialed, but the consumer goes through the link for every call).
  std::vector<double> pullInBand;
  for (int i = 0; i < runs; ++i) {
    auto t0 = Clock::now();
    auto r = run({"peer", "--kubeconfig", consumer.kubeconfig(), "--remote-kubeconfig",
                  provider.kubeconfig(), "--mode", "pull"});
    auto t1 = Clock::now();
    if (r.exitCode != 0) {
      std::cerr << "pull peer failed: " << r.describe() << "\n";
      return 1;
    }
    pullInBand.push_back(ms(t1 - t0));
    e2e::waitFor([&] { return connected(*consumerClient) == "True"; }, 30s, 10ms);
    if (!unpeer()) return 1;
  }
  for (int i = 0; i < runs; ++i) {
    auto tok = run({"token", "--kubeconfig", provider.kubeconfig()});
    std::string token = tok.out.substr(0, tok.out.find('\n'));
    auto t0 = Clock::now();
    auto r = run({"peer", "--kubeconfig", consumer.kubeconfig(), "--token", token});
    auto t1 = Clock::now();
    if (r.exitCode != 0) {
      std::cerr << "peer failed: " << r.describe() << "\n";
      return 1;
    }
    outOfBand.push_back(ms(t1 - t0));
    if (i + 1 < runs && !unpeer()) return 1;
  }
  // Lost peer: peered now (last out-of-band run).
  e2e::waitFor([&] { return connected(*consumerClient) == "True"; }, 30s, 10ms);
  std::vector<double> lost;
  for (int i = 0; i < std::max(1, runs / 2); ++i) {
    auto t0 = Clock::now();
    providerAgent.kill();
    bool noticed = e2e::waitFor([&] { return connected(*consumerClient) == "False"; }, 30s, 5ms);
    auto t1 = Clock::now();
    if (!noticed) {
      std::cerr << "lost peer not noticed in 30 s\n";
      return 1;
    }
    lost.push_back(ms(t1 - t0));
    if (auto e = providerAgent.restart(); !e.empty()) {
      std::cerr << e << "\n";
      return 1;
    }
    e2e::waitFor([&] { return connected(*consumerClient) == "True"; }, 30s, 10ms);
  }
  unpeer();
  std::string loadAfter = bench::loadavg();

  Stats a = stats(inBand), b = stats(outOfBand), c = stats(lost), d = stats(pullInBand);
  if (json) {
    auto line = [&](const char* name, const Stats& s, size_t n) {
      std::printf("{\"figure\":\"%s\",\"runs\":%zu,\"min_ms\":%.1f,\"p50_ms\":%.1f,\"max_ms\":%.1f}\n",
                  name, n, s.min, s.p50, s.max);
    };
    line("peer_in_band", a, inBand.size());
    line("peer_out_of_band", b, outOfBand.size());
    line("peer_pull_in_band", d, pullInBand.size());
    line("lost_peer_noticed", c, lost.size());
  } else {
    std::printf("# load average before: %s, after: %s; %u cores\n", loadBefore.c_str(),
                loadAfter.c_str(), std::thread::hardware_concurrency());
    std::printf("%-44s %6s %9s %9s %9s\n", "figure", "runs", "min ms", "p50 ms", "max ms");
    std::printf("%-44s %6zu %9.1f %9.1f %9.1f\n", "strait peer, in-band (incl. token issue)",
                inBand.size(), a.min, a.p50, a.max);
    std::printf("%-44s %6zu %9.1f %9.1f %9.1f\n", "strait peer --token (out-of-band)",
                outOfBand.size(), b.min, b.p50, b.max);
    std::printf("%-44s %6zu %9.1f %9.1f %9.1f\n", "strait peer --mode pull (in-band)",
                pullInBand.size(), d.min, d.p50, d.max);
    std::printf("%-44s %6zu %9.1f %9.1f %9.1f\n",
                ("lost provider noticed (lost-after " + lostAfter + ")").c_str(), lost.size(),
                c.min, c.p50, c.max);
  }
  return 0;
}
