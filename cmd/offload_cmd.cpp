// `strait offload namespace NS` and `strait unoffload namespace NS`: flag parsing and
// printing; the work is vnode::offloadNamespace / unoffloadNamespace.
#include <iostream>

#include "cmd/cli_util.h"
#include "cmd/commands.h"
#include "peering/names.h"
#include "vnode/offloading.h"

namespace strait::cmd {
namespace {

// Why namespace `ns` must not be offloaded without --force, or "" if it may be.
std::string systemNamespaceReason(const std::string& ns) {
  if (ns == "kube-system" || ns == "kube-public" || ns == "kube-node-lease") {
    return ns + " is a Kubernetes system namespace: its Pods (DNS, proxies, controllers) "
                "serve this cluster and must run in it";
  }
  if (ns == peering::kSystemNamespace) {
    return ns + " is Strait's own namespace (agent identity, credentials, tokens): offloading "
                "it would move the agent's state to the providers";
  }
  return {};
}

struct OffloadFlags {
  std::string ns;
  std::string kubeconfig;
  std::string remoteName;
  std::string naming = "default";
  std::string strategy = "LocalAndRemote";
  std::string selector;
  bool force = false;
};

int runOffload(const OffloadFlags& f) {
  setupLogging("warn");
  if (std::string why = systemNamespaceReason(f.ns); !why.empty() && !f.force) {
    std::cerr << "error: refusing to offload namespace " << f.ns << ": " << why
              << " (add --force to offload it anyway)\n";
    return kExitUsage;
  }
  kube::Result<reflection::NamingStrategy> naming = reflection::parseNamingStrategy(f.naming);
  if (!naming.ok()) {
    std::cerr << "error: --naming: " << naming.error().message << "\n";
    return kExitUsage;
  }
  kube::Result<reflection::PodOffloadingStrategy> strategy =
      reflection::parsePodOffloadingStrategy(f.strategy);
  if (!strategy.ok()) {
    std::cerr << "error: --pod-offloading-strategy: " << strategy.error().message << "\n";
    return kExitUsage;
  }
  auto client = clientFor(f.kubeconfig);
  if (!client.ok()) return failWith(client.error().message);
  vnode::OffloadRequest req{f.ns, f.remoteName, *naming, *strategy, f.selector};
  auto lines = vnode::offloadNamespace(**client, req);
  if (!lines.ok()) return failWith(lines.error().message);
  for (const std::string& l : *lines) std::cout << l << "\n";
  return 0;
}

int runUnoffload(const OffloadFlags& f) {
  setupLogging("warn");
  auto client = clientFor(f.kubeconfig);
  if (!client.ok()) return failWith(client.error().message);
  auto lines = vnode::unoffloadNamespace(**client, {f.ns, f.force});
  if (!lines.ok()) return failWith(lines.error().message);
  for (const std::string& l : *lines) std::cout << l << "\n";
  return 0;
}

}  // namespace

void addOffloadCommands(CLI::App& app) {
  auto of = std::make_shared<OffloadFlags>();
  CLI::App* offload = app.add_subcommand("offload", "let a namespace's pods run on virtual nodes");
  offload->require_subcommand(1);
  CLI::App* ons = offload->add_subcommand("namespace", "offload one namespace");
  ons->add_option("NAMESPACE", of->ns, "the namespace")->required();
  ons->add_option("--kubeconfig", of->kubeconfig, "kubeconfig of the consumer")->required();
  ons->add_option("--remote-name", of->remoteName,
                  "only this provider (ForeignCluster name); default: every provider");
  ons->add_option("--naming", of->naming,
                  "remote namespace names: default (<ns>-<consumer-id>) or same")
      ->capture_default_str()
      ->check(CLI::IsMember({"default", "same"}));
  ons->add_option("--pod-offloading-strategy", of->strategy,
                  "where the namespace's pods may run: LocalAndRemote (home or virtual nodes), "
                  "Remote (virtual nodes only) or Local (home only; no pod offloaded)")
      ->capture_default_str()
      ->check(CLI::IsMember({"LocalAndRemote", "Remote", "Local"}));
  ons->add_option("--selector", of->selector,
                  "only virtual nodes whose labels match this label selector (e.g. "
                  "topology.kubernetes.io/region=eu-west, or a label given with `strait peer "
                  "--label`), instead of --remote-name");
  ons->add_flag("--force", of->force,
                "offload even a system namespace (kube-system, kube-public, kube-node-lease, "
                "strait-system)");
  ons->callback([of] { setExitCode(runOffload(*of)); });

  auto uf = std::make_shared<OffloadFlags>();
  CLI::App* unoffload = app.add_subcommand("unoffload", "stop offloading a namespace");
  unoffload->require_subcommand(1);
  CLI::App* uns = unoffload->add_subcommand("namespace", "stop offloading one namespace");
  uns->add_option("NAMESPACE", uf->ns, "the namespace")->required();
  uns->add_option("--kubeconfig", uf->kubeconfig, "kubeconfig of the consumer")->required();
  uns->add_flag("--force", uf->force,
                "delete the namespace's pods on virtual nodes (their controllers recreate them "
                "locally) instead of refusing");
  uns->callback([uf] { setExitCode(runUnoffload(*uf)); });
}

}  // namespace strait::cmd
