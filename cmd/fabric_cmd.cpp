// `strait fabric`: the per-node part of the network fabric (one per node: a DaemonSet with
// hostNetwork). Watches the fabric ConfigMap the agent writes (<namespace>/strait-fabric:
// gatewayNode, gatewayIP, cidrs) and keeps, in the network namespace it runs in, one route per
// remote CIDR via the gateway node, marked with rtnetlink protocol 199 (tunnel/route_table.h),
// so it removes exactly its own routes when a CIDR disappears or the ConfigMap is deleted. On
// the gateway node itself it installs nothing. Every change is logged; the routes are checked
// again every --resync so one removed by hand comes back. Routes stay in place when the
// process stops (a restarted fabric finds and keeps them).
#include <ifaddrs.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "cmd/cli_util.h"
#include "cmd/commands.h"
#include "cmd/fabric_config.h"
#include "kube/informer.h"
#include "tunnel/route_table.h"

namespace strait::cmd {
namespace {

std::atomic<bool> g_stopFabric{false};

// Wakes the loop on a ConfigMap event (the informer's thread calls notify()). A signal only
// sets g_stopFabric, which the loop reads at least every 200 ms. Thread-safe.
struct Wakeup {
  std::mutex mu;
  std::condition_variable cv;
  bool pending = true;  // the first pass runs at once

  void notify() {
    {
      std::lock_guard<std::mutex> l(mu);
      pending = true;
    }
    cv.notify_all();
  }
};

void onFabricSignal(int) { g_stopFabric = true; }

struct FabricFlags {
  std::string node;
  std::string kubeconfig;
  std::string ns = "strait-system";
  std::string configMap = kFabricConfigMap;
  std::string resync = "30s";
  std::string logLevel = "info";
};

// Whether `ip` is an address of an interface of this process's network namespace.
bool isLocalAddress(const tunnel::IpAddress& ip) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* a = list; a && !found; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != ip.family) continue;
    found = tunnel::Endpoint::fromSockaddr(a->ifa_addr).address == ip;
  }
  freeifaddrs(list);
  return found;
}

std::string joinRoutes(const std::vector<tunnel::Route>& routes) {
  std::string s;
  for (const auto& r : routes) s += (s.empty() ? "" : ",") + r.destination.toString();
  return s;
}

int runFabric(const FabricFlags& f) {
  setupLogging(f.logLevel);
  std::optional<std::chrono::milliseconds> resync = parseDuration(f.resync);
  if (!resync) {
    spdlog::error("event=bad_flag flag=--resync value=\"{}\"", f.resync);
    return kExitUsage;
  }
  auto table = tunnel::RouteTable::open("");
  if (!table) {
    spdlog::error("event=start_failed error=\"{}\"", table.error().message);
    return kExitFailure;
  }
  auto client = clientFor(f.kubeconfig);
  if (!client) {
    spdlog::error("event=start_failed error=\"{}\"", client.error().message);
    return kExitFailure;
  }
  Wakeup wakeup;
  struct sigaction sa {};
  sa.sa_handler = onFabricSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  kube::InformerOptions io;
  io.resource = kube::resources::kConfigMaps;
  io.ns = f.ns;
  io.fieldSelector = "metadata.name=" + f.configMap;
  kube::Informer informer(**client, io);
  kube::EventHandlers h;
  h.onAdd = [&](const kube::ObjectPtr&) { wakeup.notify(); };
  h.onUpdate = [&](const kube::ObjectPtr&, const kube::ObjectPtr&) { wakeup.notify(); };
  h.onDelete = [&](const kube::ObjectPtr&) { wakeup.notify(); };
  informer.addHandlers(std::move(h));
  informer.start();
  spdlog::info("event=fabric_started node={} configmap={}/{} protocol={}", f.node, f.ns,
               f.configMap, (*table)->protocol());

  std::string lastState;  // what the last pass logged, so an unchanged state is not repeated
  while (!g_stopFabric) {
    {
      std::unique_lock<std::mutex> l(wakeup.mu);
      // Short waits so a signal (which cannot notify safely) is seen within 200 ms.
      auto until = std::chrono::steady_clock::now() + *resync;
      while (!wakeup.pending && !g_stopFabric && std::chrono::steady_clock::now() < until) {
        wakeup.cv.wait_for(l, std::chrono::milliseconds(200));
      }
      wakeup.pending = false;
    }
    if (g_stopFabric) break;
    if (!informer.hasSynced()) {
      // Until the first LIST the ConfigMap's absence means nothing: keep the routes.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      wakeup.notify();
      continue;
    }
    kube::ObjectPtr cm = informer.cache().get(f.ns + "/" + f.configMap);
    FabricPlan plan = planFabric(cm.get(), f.node, isLocalAddress);
    std::string state = "absent";
    if (cm) state = "rv " + cm->value("metadata", nlohmann::json::object()).value("resourceVersion", "");
    bool fresh = state != lastState;
    lastState = state;
    if (fresh) {
      for (const std::string& w : plan.warnings) {
        spdlog::warn("event=bad_entry configmap={}/{} error=\"{}\"", f.ns, f.configMap, w);
      }
    }
    if (!plan.usable) {
      if (fresh) {
        spdlog::error("event=bad_configmap configmap={}/{} error=\"{}\" routes=unchanged", f.ns,
                      f.configMap, plan.error);
      }
      continue;
    }
    if (fresh) {
      spdlog::info("event=configmap_seen present={} gateway_node={} gateway_ip={} "
                   "this_node_is_gateway={} routes_wanted={}",
                   cm != nullptr, plan.gatewayNode,
                   cm ? plan.gatewayIp.toString() : std::string(), plan.isGatewayNode,
                   plan.routes.size());
    }
    base::Result<tunnel::RouteSyncResult> r = (*table)->sync(plan.routes);
    if (!r) {
      spdlog::error("event=sync_failed error=\"{}\"", r.error().message);
      continue;
    }
    for (const auto& x : r->added) spdlog::info("event=route_added route=\"{}\"", x.toString());
    for (const auto& x : r->changed) spdlog::info("event=route_changed route=\"{}\"", x.toString());
    for (const auto& x : r->removed) spdlog::info("event=route_removed route=\"{}\"", x.toString());
    for (const auto& [route, why] : r->failed) {
      spdlog::warn("event=route_failed route=\"{}\" error=\"{}\"", route.toString(), why);
    }
    if (r->changedAnything()) {
      spdlog::info("event=routes_synced node={} routes=\"{}\"", f.node, joinRoutes(plan.routes));
    }
  }
  spdlog::info("event=stopping routes=kept");
  informer.stop();
  return kExitOk;
}

}  // namespace

void addFabricCommand(CLI::App& app) {
  auto flags = std::make_shared<FabricFlags>();
  auto* sub = app.add_subcommand(
      "fabric", "keep this node's routes to the remote clusters' CIDRs via the gateway node");
  sub->add_option("--node", flags->node, "name of the Node this runs on (the downward API's "
                                         "spec.nodeName)")
      ->required()
      ->check(CLI::Validator(
          [](std::string& v) { return v.empty() ? std::string("must not be empty") : ""; },
          "NODE"));
  sub->add_option("--kubeconfig", flags->kubeconfig,
                  "kubeconfig file (default: the Pod's service account)");
  sub->add_option("--namespace", flags->ns, "namespace of the fabric ConfigMap")
      ->capture_default_str();
  sub->add_option("--configmap", flags->configMap, "name of the fabric ConfigMap")
      ->capture_default_str();
  sub->add_option("--resync", flags->resync,
                  "how often the routes are checked again without a change (1s to 1h)")
      ->capture_default_str()
      ->check(durationValidator(std::chrono::seconds(1), std::chrono::hours(1)));
  sub->add_option("--log-level", flags->logLevel, kLogLevelHelp)
      ->capture_default_str()
      ->check(logLevelValidator());
  sub->callback([flags] { setExitCode(runFabric(*flags)); });
}

}  // namespace strait::cmd
