// Network-fabric benchmark (root): two process-runtime miniclusters with the same pod CIDR,
// each agent running its gateway in its node's namespace, peered, namespace demo offloaded.
// Reports
//   - peering-to-first-packet: from the start of `strait peer` until a ping from the home
//     node's namespace to the cloud gateway node's pod-bridge address, as home sees it
//     (the remap read from the ForeignCluster), is answered through the tunnel (aim < 3 s);
//   - throughput home Pod -> cloud Pod through the integrated path (iperf3 client in a home
//     Pod, iperf3 server in a Pod offloaded to the cloud), and the CPU seconds both agents
//     (which host the gateways) spent per Gbit sent;
//   - tunnel recovery after `kill -9` of the home agent: from the restarted agent's start
//     until a ping from the home Pod to the offloaded Pod is answered again (aim < 5 s).
// The standalone `strait gateway` and wireguard-go figures of the same machine come from
// bench/tunnel_bench.sh. Prints a table (or JSON lines with --json); every figure is
// wall-clock on a shared machine, with the load average beside it.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "bench/proc_stats.h"
#include "e2e/cluster_fixture.h"
#include "e2e/peering_fixture.h"

using namespace strait;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {

constexpr const char* kPodCidr = "10.244.0.0/16";
constexpr const char* kAgnhost = "registry.k8s.io/e2e-test-images/agnhost:2.47";

struct Options {
  std::string strait;
  int seconds = 10;  // iperf3 duration
  bool json = false;
};

struct Side {
  std::string name, netns, node, interface;
  int port = 0;
  e2e::Minicluster cluster;
  e2e::AgentProcess agent;
};

std::string scratch() {
  static e2e::TempDir dir("strait-fabric-bench");
  return dir.path();
}

e2e::CommandResult kubectl(const Side& s, const std::vector<std::string>& args,
                           std::chrono::milliseconds timeout = 60s, const std::string& in = "") {
  static int calls = 0;
  std::vector<std::string> argv = {"kubectl", "--kubeconfig", s.cluster.kubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  return e2e::runCommand(argv,
                         {{"KUBECACHEDIR", scratch() + "/kc" + std::to_string(++calls)},
                          {"HOME", scratch()}},
                         timeout, in);
}

// "<marker>-<cluster>-<node>" from `ip netns list`; "" if none.
std::string nodeNetns(const std::string& cluster, const std::string& node) {
  std::stringstream in(e2e::runCommand({"ip", "netns", "list"}).out);
  std::string suffix = "-" + cluster + "-" + node;
  for (std::string l; std::getline(in, l);) {
    std::string name = l.substr(0, l.find(' '));
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return name;
    }
  }
  return "";
}

uint32_t ipv4(const std::string& t) {
  unsigned a, b, c, d;
  return std::sscanf(t.c_str(), "%u.%u.%u.%u", &a, &b, &c, &d) == 4
             ? (a << 24) | (b << 16) | (c << 8) | d
             : 0;
}
std::string ipv4Text(uint32_t v) {
  return std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 255) + "." +
         std::to_string((v >> 8) & 255) + "." + std::to_string(v & 255);
}
// `ip` of prefix `from` moved into `to` (same length).
std::string translate(const std::string& ip, const std::string& from, const std::string& to) {
  int bits = std::stoi(from.substr(from.find('/') + 1));
  uint32_t mask = bits == 0 ? 0 : ~uint32_t(0) << (32 - bits);
  return ipv4Text((ipv4(to.substr(0, to.find('/'))) & mask) | (ipv4(ip) & ~mask));
}

std::string foreignClusterField(const Side& s, const std::string& path) {
  return kubectl(s, {"get", "foreignclusters", "-o", "jsonpath={.items[0]" + path + "}"}).out;
}

// A Pod from (name, node or "", command), Running with a podIP; its podIP or "".
std::string runPod(const Side& s, const std::string& ns, const std::string& name,
                   const std::string& nodeName, const json& command) {
  json spec = {{"containers", json::array({{{"name", "main"}, {"image", kAgnhost},
                                            {"command", command}}})}};
  if (!nodeName.empty()) {
    spec["nodeName"] = nodeName;
    spec["tolerations"] = json::array({{{"operator", "Exists"}}});
  }
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}}}, {"spec", spec}};
  if (kubectl(s, {"apply", "-f", "-"}, 60s, pod.dump()).exitCode != 0) return "";
  std::string ip;
  e2e::waitFor([&] {
    e2e::CommandResult r = kubectl(s, {"get", "pod", "-n", ns, name, "-o",
                                       "jsonpath={.status.phase} {.status.podIP}"});
    if (r.out.rfind("Running ", 0) != 0) return false;
    ip = r.out.substr(8);
    return !ip.empty();
  }, 120s, 500ms);
  return ip;
}

void report(const Options& o, const std::string& name, double value, const std::string& unit,
            const std::string& note) {
  if (o.json) {
    std::cout << json{{"metric", name}, {"value", value}, {"unit", unit}, {"note", note},
                      {"loadavg", bench::loadavg()}}
                     .dump()
              << "\n";
  } else {
    std::printf("%-40s %12.2f %-8s %s (load %s)\n", name.c_str(), value, unit.c_str(),
                note.c_str(), bench::loadavg().c_str());
  }
}

int fail(const std::string& what) {
  std::cerr << "fabric_bench: " << what << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"network fabric: peering-to-first-packet, Pod-to-Pod throughput, recovery"};
  Options o;
  app.add_option("--strait", o.strait, "the strait binary (default: beside this one)");
  app.add_option("--seconds", o.seconds, "iperf3 duration (1 to 600)")
      ->check(CLI::Range(1, 600))
      ->capture_default_str();
  app.add_flag("--json", o.json, "JSON lines instead of a table");
  CLI11_PARSE(app, argc, argv);
  if (geteuid() != 0) return fail("needs root (the process runtime)");
  if (!o.strait.empty()) setenv("STRAIT_BIN", o.strait.c_str(), 1);
  if (e2e::straitBinary().empty()) return fail("no strait binary (--strait)");
  if (std::string why = e2e::processRuntimeUnavailable(); !why.empty()) return fail(why);
  for (const char* tool : {"iperf3", "ping"}) {
    if (e2e::runCommand({"sh", "-c", std::string("command -v ") + tool}).exitCode != 0) {
      return fail(std::string(tool) + " not installed (scripts/install-deps.sh)");
    }
  }

  std::string pid = std::to_string(getpid());
  Side home, cloud;
  home.name = "fbh-" + pid;
  cloud.name = "fbc-" + pid;
  home.interface = "sbh" + pid;
  cloud.interface = "sbc" + pid;
  home.port = 45000 + (getpid() % 5000) * 2;
  cloud.port = home.port + 1;
  for (Side* s : {&home, &cloud}) {
    std::string e = s->cluster.start(s->name, 60s,
                                     {"--runtime", "process", "--nodes", "1", "--node-cpu", "4",
                                      "--pod-cidr", kPodCidr, "--local-image",
                                      "strait=" + e2e::straitBinary()});
    if (!e.empty()) return fail(s->name + ": " + e);
    e2e::waitFor([&] {
      s->node = kubectl(*s, {"get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"}).out;
      return !s->node.empty();
    }, 30s, 200ms);
    s->netns = nodeNetns(s->name, s->node);
    if (s->netns.empty()) return fail(s->name + ": no node namespace");
    std::vector<std::string> args = {"--heartbeat-interval", "300ms", "--lost-after", "3s",
                                     "--kubelet-port", "0", "--gateway", "--gateway-netns",
                                     "/run/netns/" + s->netns, "--gateway-node", s->node,
                                     "--gateway-port", std::to_string(s->port),
                                     "--gateway-interface", s->interface, "--pod-cidr", kPodCidr};
    if (s == &cloud) args.insert(args.end(), {"--share", "1"});
    e = s->agent.start(s->cluster.kubeconfig(), s == &home ? "home" : "cloud", args);
    if (!e.empty()) return fail(s->name + " agent: " + e);
  }

  // Peering to first packet: `strait peer` in the background, the remap polled, then pings
  // from the home node's namespace to the cloud gateway node's pod-bridge address (the
  // first address of the pod CIDR plan) as home sees it.
  auto peerStart = Clock::now();
  e2e::BackgroundProcess peer;
  std::string err;
  if (!peer.start({e2e::straitBinary(), "peer", "--kubeconfig", home.cluster.kubeconfig(),
                   "--remote-kubeconfig", cloud.cluster.kubeconfig(), "--cpu", "2", "--memory",
                   "4Gi", "--pods", "20"},
                  {}, scratch() + "/peer.out", scratch() + "/peer.err", &err)) {
    return fail("strait peer: " + err);
  }
  std::string seenHere;
  if (!e2e::waitFor([&] {
        seenHere = foreignClusterField(home, ".status.network.remoteCIDRSeenHere");
        return !seenHere.empty();
      }, 60s, 20ms)) {
    return fail("no remap for the cloud's pod CIDR: " + home.agent.logs());
  }
  std::string probe = translate("10.244.0.1", kPodCidr, seenHere);
  if (!e2e::waitFor([&] {
        // From the home gateway node's own pod-bridge address: only pod addresses cross
        // the tunnel (the node's underlay address is not in the peer's allowed IPs).
        return e2e::runCommand({"ip", "netns", "exec", home.netns, "ping", "-c", "1", "-W", "1",
                                "-I", "10.244.0.1", probe})
                   .exitCode == 0;
      }, 60s, 10ms)) {
    return fail("no answer from " + probe + " through the tunnel");
  }
  report(o, "peering_to_first_packet", bench::msBetween(peerStart, Clock::now()), "ms",
         "strait peer start -> ping " + probe + " answered");
  e2e::waitFor([&] { return !peer.running(); }, 60s, 100ms);
  if (peer.exitCode() != 0) return fail("strait peer: " + peer.stderrText());

  // Throughput: an iperf3 server offloaded to the cloud, a client Pod at home.
  if (kubectl(home, {"create", "namespace", "demo"}).exitCode != 0 ||
      e2e::runCommand({e2e::straitBinary(), "offload", "namespace", "demo", "--kubeconfig",
                       home.cluster.kubeconfig()})
              .exitCode != 0) {
    return fail("offload namespace demo");
  }
  std::string serverIp = runPod(home, "demo", "iperf-server", "strait-cloud",
                                json::array({"iperf3", "-s", "-p", "5201"}));
  std::string clientIp = runPod(home, "default", "iperf-client", "",
                                json::array({"sleep", "100000"}));
  if (serverIp.empty() || clientIp.empty()) return fail("iperf3 Pods not Running");
  double cpuBefore = bench::cpuSeconds(home.agent.pid()) + bench::cpuSeconds(cloud.agent.pid());
  e2e::CommandResult ip3;
  e2e::waitFor([&] {
    ip3 = kubectl(home, {"exec", "-n", "default", "iperf-client", "--", "iperf3", "-c", serverIp,
                         "-p", "5201", "-t", std::to_string(o.seconds), "-J"},
                  std::chrono::seconds(o.seconds + 60));
    return ip3.exitCode == 0;
  }, std::chrono::seconds(o.seconds * 3 + 60), 1s);
  double cpu =
      bench::cpuSeconds(home.agent.pid()) + bench::cpuSeconds(cloud.agent.pid()) - cpuBefore;
  json result = json::parse(ip3.out, nullptr, false);
  if (ip3.exitCode != 0 || result.is_discarded()) return fail("iperf3: " + ip3.describe());
  double bps = result["end"]["sum_received"].value("bits_per_second", 0.0);
  double gbits = result["end"]["sum_received"].value("bytes", 0.0) * 8 / 1e9;
  report(o, "throughput_home_pod_to_cloud_pod", bps / 1e6, "Mbit/s",
         "iperf3 -t " + std::to_string(o.seconds) + " through both gateways");
  if (gbits > 0) {
    report(o, "agent_cpu_per_gbit", cpu / gbits, "cpu-s",
           "both agents' CPU seconds per Gbit received");
  }

  // Recovery after kill -9 of the home agent (the gateway dies with it).
  home.agent.kill();
  auto restartAt = Clock::now();
  if (std::string e = home.agent.restart(); !e.empty()) return fail("agent restart: " + e);
  if (!e2e::waitFor([&] {
        return kubectl(home, {"exec", "-n", "default", "iperf-client", "--", "ping", "-c", "1",
                              "-W", "1", serverIp},
                       10s)
                   .exitCode == 0;
      }, 120s, 50ms)) {
    return fail("the tunnel did not come back after the agent's restart");
  }
  report(o, "recovery_after_agent_kill9", bench::msBetween(restartAt, Clock::now()), "ms",
         "agent restart -> home Pod ping to the offloaded Pod answered");
  return 0;
}
