// `strait pool add|resize|remove|list`: flag parsing and printing only; the work is in
// peering/pool_operations.
//
//   strait pool add PEERING NAME[:RESOURCES][@SELECTOR] [--resources R] [--node-selector S]
//   strait pool resize PEERING NAME[:RESOURCES] [--resources R]
//   strait pool remove PEERING NAME [--drain] [--timeout 5m]
//   strait pool list [PEERING] [-o table|json]
#include <iostream>

#include "cmd/cli_util.h"
#include "cmd/commands.h"
#include "peering/pool_operations.h"

namespace strait::cmd {
namespace {

struct PoolFlags {
  std::string kubeconfig;
  std::string peering;
  std::string pool;  // NAME[:RESOURCES][@SELECTOR]
  std::string resources;
  std::string nodeSelector;
  bool drain = false;
  std::string timeout = "5m";
  std::string output;
};

// The pool of the positional argument, with --resources / --node-selector folded in (each
// given once: in the argument or as a flag). Usage error naming the problem.
kube::Result<peering::PoolSpec> poolOf(const PoolFlags& f) {
  kube::Result<peering::PoolSpec> p = peering::parsePoolArg(f.pool);
  if (!p.ok()) return p.error();
  if (!f.resources.empty()) {
    if (!p->requested.empty()) {
      return kube::makeError(kube::Code::Invalid,
                             "resources given twice (in \"" + f.pool + "\" and --resources)");
    }
    kube::Result<peering::ResourceMap> r = peering::parseResourceArg(f.resources);
    if (!r.ok()) return kube::makeError(kube::Code::Invalid, "--resources: " + r.error().message);
    p->requested = std::move(*r);
  }
  if (!f.nodeSelector.empty()) {
    if (!p->nodeSelector.empty()) {
      return kube::makeError(kube::Code::Invalid, "node selector given twice (in \"" + f.pool +
                                                      "\" and --node-selector)");
    }
    kube::Result<peering::NodeSelector> s = peering::parseNodeSelectorArg(f.nodeSelector);
    if (!s.ok()) return kube::makeError(kube::Code::Invalid, "--node-selector: " + s.error().message);
    p->nodeSelector = std::move(*s);
  }
  return p;
}

int runAdd(const PoolFlags& f) {
  setupLogging("warn");
  kube::Result<peering::PoolSpec> p = poolOf(f);
  if (!p.ok()) return usageError(p.error().message);
  if (p->requested.empty()) {
    return usageError("pool " + p->name + ": no resources (NAME:cpu=4,memory=8Gi,... or --resources)");
  }
  auto client = clientFor(f.kubeconfig);
  if (!client.ok()) return failWith(client.error().message);
  kube::Result<std::string> line = peering::addPool(**client, f.peering, *p);
  if (!line.ok()) return failWith(line.error().message);
  std::cout << *line << "\n";
  return kExitOk;
}

int runResize(const PoolFlags& f) {
  setupLogging("warn");
  kube::Result<peering::PoolSpec> p = poolOf(f);
  if (!p.ok()) return usageError(p.error().message);
  if (!p->nodeSelector.empty()) {
    return usageError("resize changes resources only; remove and add the pool to change its nodes");
  }
  if (p->requested.empty()) {
    return usageError("pool " + p->name + ": no resources (NAME:cpu=8 or --resources cpu=8)");
  }
  auto client = clientFor(f.kubeconfig);
  if (!client.ok()) return failWith(client.error().message);
  kube::Result<std::string> line = peering::resizePool(**client, f.peering, p->name, p->requested);
  if (!line.ok()) return failWith(line.error().message);
  std::cout << *line << "\n";
  return kExitOk;
}

int runRemove(const PoolFlags& f) {
  setupLogging("warn");
  if (kube::Status s = peering::validatePoolName(f.pool); !s.ok()) {
    return usageError(s.error().message);
  }
  auto timeout = parseDuration(f.timeout);
  if (!timeout) return usageError("--timeout: expected a duration like 5m");
  auto client = clientFor(f.kubeconfig);
  if (!client.ok()) return failWith(client.error().message);
  peering::RemovePoolRequest req;
  req.peering = f.peering;
  req.pool = f.pool;
  req.drain = f.drain;
  req.timeout = *timeout;
  auto lines = peering::removePool(**client, req);
  if (!lines.ok()) return failWith(lines.error().message);
  for (const std::string& l : *lines) std::cout << l << "\n";
  return kExitOk;
}

int runList(const PoolFlags& f) {
  setupLogging("warn");
  auto client = clientFor(f.kubeconfig);
  if (!client.ok()) return failWith(client.error().message);
  auto rows = peering::poolRows(**client, f.peering);
  if (!rows.ok()) return failWith(rows.error().message);
  if (f.output == "json") {
    std::cout << rows->dump(2) << "\n";
  } else if (rows->empty()) {
    std::cout << "no pools\n";
  } else {
    std::cout << peering::poolsTable(*rows);
  }
  return kExitOk;
}

}  // namespace

void addPoolCommands(CLI::App& app) {
  CLI::App* pool = app.add_subcommand(
      "pool", "several virtual nodes per peering: add, resize, remove or list its pools");
  pool->require_subcommand(1);
  auto common = [](CLI::App* sub, PoolFlags& f) {
    sub->add_option("--kubeconfig", f.kubeconfig, "kubeconfig of the consumer")->required();
    sub->add_option("peering", f.peering, "the peering (the provider's ForeignCluster name)")
        ->required();
  };
  auto af = std::make_shared<PoolFlags>();
  CLI::App* add = pool->add_subcommand(
      "add", "add a pool: a virtual node strait-<peering>-<pool> drawn from the provider nodes "
             "its selector matches");
  common(add, *af);
  add->add_option("pool", af->pool,
                  "NAME[:RESOURCES][@SELECTOR], e.g. gpu:cpu=4,memory=8Gi,nvidia.com/gpu=1"
                  "@nvidia.com/gpu.present=true")
      ->required();
  add->add_option("--resources", af->resources, "NAME=QUANTITY,... the pool asks for");
  add->add_option("--node-selector", af->nodeSelector,
                  "KEY=VALUE,... labels the provider nodes of the pool carry (default: any node)");
  add->callback([af] { setExitCode(runAdd(*af)); });

  auto rf = std::make_shared<PoolFlags>();
  CLI::App* resize = pool->add_subcommand(
      "resize", "change what a pool asks for (running Pods stay; the node follows in seconds)");
  common(resize, *rf);
  resize->add_option("pool", rf->pool, "NAME[:RESOURCES], e.g. gpu:cpu=8")->required();
  resize->add_option("--resources", rf->resources, "NAME=QUANTITY,... (replacing those named)");
  resize->callback([rf] { setExitCode(runResize(*rf)); });

  auto xf = std::make_shared<PoolFlags>();
  CLI::App* remove = pool->add_subcommand(
      "remove", "remove a pool (refused while Pods run on its node, unless --drain)");
  common(remove, *xf);
  remove->add_option("pool", xf->pool, "the pool's name")->required();
  remove->add_flag("--drain", xf->drain,
                   "cordon the pool's node and evict its Pods (Eviction API) first");
  remove->add_option("--timeout", xf->timeout, "how long to wait for the drain (1s to 24h)")
      ->capture_default_str()
      ->check(durationValidator(std::chrono::seconds(1), std::chrono::hours(24)));
  remove->callback([xf] { setExitCode(runRemove(*xf)); });

  auto lf = std::make_shared<PoolFlags>();
  CLI::App* list = pool->add_subcommand("list", "list the pools of every peering, or of one");
  list->add_option("--kubeconfig", lf->kubeconfig, "kubeconfig of the consumer")->required();
  list->add_option("peering", lf->peering, "only this peering");
  list->add_option("-o,--output", lf->output, "table (default) or json")
      ->check(CLI::IsMember({"table", "json"}));
  list->callback([lf] { setExitCode(runList(*lf)); });
}

}  // namespace strait::cmd
