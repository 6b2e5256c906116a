// Pool resize benchmark: two `strait minicluster` processes and two `strait agent` processes
// on loopback, a peering with one pool (`strait peer --pool general:...`), then `--resizes`
// times `strait pool resize` alternating the pool's cpu between two values, each timed from
// the command's start until the pool's virtual node (strait-provider-general) advertises the
// new allocatable cpu (polled every 5 ms, in process). The path measured: the CLI's update of
// spec.pools, the consumer agent's next heartbeat carrying it, the provider's grant, the
// heartbeat answer, and the pool node controller's next poll and Node write.
// Prints min/median/p99/max (or one JSON line with --json). Wall-clock on a shared machine.
#include <CLI/CLI.hpp>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>

#include "bench/bench_kube.h"
#include "bench/proc_stats.h"
#include "e2e/peering_fixture.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

using namespace strait;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

std::string allocatableCpu(kube::Client& c, const std::string& node) {
  auto n = c.get(kube::resources::kNodes, "", node);
  if (!n.ok()) return "";
  return n->value("/status/allocatable"_json_pointer, nlohmann::json::object()).value("cpu", "");
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(std::ceil(p * sorted.size())) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pool resize benchmark"};
  int resizes = 10;
  bool json = false;
  std::string strait = e2e::straitBinary();
  std::string heartbeat = "1s";
  app.add_option("--resizes", resizes, "resizes timed (1 to 1000)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--strait", strait, "strait binary");
  app.add_option("--heartbeat-interval", heartbeat, "agents' --heartbeat-interval")
      ->capture_default_str();
  app.add_flag("--json", json, "one JSON line");
  CLI11_PARSE(app, argc, argv);
  setenv("STRAIT_BIN", strait.c_str(), 1);
  signal(SIGPIPE, SIG_IGN);

  const std::string loadBefore = bench::loadavg();
  e2e::Minicluster consumer, provider;
  e2e::AgentProcess consumerAgent, providerAgent;
  const std::vector<std::string> args = {"--heartbeat-interval", heartbeat, "--budget",
                                         "cpu=100,memory=200Gi,pods=1000"};
  for (const std::string& err : {consumer.start("consumer"),
                                 provider.start("provider", 60s, {"--nodes", "2", "--node-cpu", "4"})}) {
    if (!err.empty()) {
      std::cerr << err << "\n";
      return 1;
    }
  }
  for (const std::string& err : {providerAgent.start(provider.kubeconfig(), "provider", args),
                                 consumerAgent.start(consumer.kubeconfig(), "consumer", args)}) {
    if (!err.empty()) {
      std::cerr << err << "\n";
      return 1;
    }
  }
  auto home = bench::kubeClient(consumer.kubeconfig());
  if (!home) {
    std::cerr << "cannot read " << consumer.kubeconfig() << "\n";
    return 1;
  }
  auto run = [&](std::vector<std::string> a) {
    a.insert(a.begin(), strait);
    return e2e::runCommand(a, {}, 60s);
  };
  const std::string node = "strait-provider-general";
  e2e::CommandResult peered =
      run({"peer", "--kubeconfig", consumer.kubeconfig(), "--remote-kubeconfig",
           provider.kubeconfig(), "--pool", "general:cpu=1,memory=1Gi,pods=10"});
  if (peered.exitCode != 0) {
    std::cerr << "peer failed: " << peered.describe() << "\n";
    return 1;
  }
  if (!e2e::waitFor([&] { return allocatableCpu(*home, node) == "1"; }, 60s, 10ms)) {
    const std::string logs = consumerAgent.logs();
    std::cerr << "pool node " << node << " never advertised cpu=1; consumer agent log tail:\n"
              << logs.substr(logs.size() > 3000 ? logs.size() - 3000 : 0) << "\n";
    return 1;
  }
  std::vector<double> seconds;
  for (int i = 0; i < resizes; ++i) {
    const std::string cpu = i % 2 == 0 ? "2" : "1";
    const auto t0 = Clock::now();
    e2e::CommandResult r = run({"pool", "resize", "provider", "general:cpu=" + cpu,
                                "--kubeconfig", consumer.kubeconfig()});
    if (r.exitCode != 0) {
      std::cerr << "resize failed: " << r.describe() << "\n";
      return 1;
    }
    if (!e2e::waitFor([&] { return allocatableCpu(*home, node) == cpu; }, 30s, 5ms)) {
      std::cerr << "node " << node << " did not reach cpu=" << cpu << " in 30 s\n";
      return 1;
    }
    seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double p50 = percentile(seconds, 0.5), p99 = percentile(seconds, 0.99);
  const std::string loadAfter = bench::loadavg();
  if (json) {
    std::cout << nlohmann::json{{"bench", "pool_resize"},
                                {"resizes", resizes},
                                {"heartbeatInterval", heartbeat},
                                {"minSeconds", seconds.front()},
                                {"p50Seconds", p50},
                                {"p99Seconds", p99},
                                {"maxSeconds", seconds.back()},
                                {"loadBefore", loadBefore},
                                {"loadAfter", loadAfter}}
                     .dump()
              << "\n";
  } else {
    std::printf("pool resize -> virtual node capacity (%d resizes, heartbeat %s)\n", resizes,
                heartbeat.c_str());
    std::printf("  min %.3f s  median %.3f s  p99 %.3f s  max %.3f s\n", seconds.front(), p50,
                p99, seconds.back());
    std::printf("  load average before %s, after %s\n", loadBefore.c_str(), loadAfter.c_str());
  }
  return 0;
}
