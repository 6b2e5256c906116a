// `strait token`, `strait peer`, `strait unpeer`, `strait status`: flag parsing and printing
// only; the work is in peering/operations.
#include <spdlog/spdlog.h>

#include <fstream>
#include <map>
#include <iostream>
#include <sstream>

#include "cmd/cli_util.h"
#include "cmd/commands.h"
#include "kube/validation.h"
#include "peering/operations.h"
#include "peering/pool_operations.h"

namespace strait::cmd {
namespace {

// The longest `strait token --ttl`: a token is a bearer secret, so it does not live long.
constexpr std::chrono::hours kMaxTokenTtl{720};

struct TokenFlags {
  std::string kubeconfig;
  std::string ttl = "1h";
  std::string mode = "push";
  std::string consumerEndpoint;
  std::string consumerCaFingerprint;
};

bool validMode(const std::string& mode) { return mode == "push" || mode == "pull"; }

int runToken(const TokenFlags& f) {
  setupLogging("warn");
  auto ttl = parseDuration(f.ttl);
  if (!ttl || *ttl < std::chrono::seconds(1) || *ttl > kMaxTokenTtl) {
    return usageError("--ttl: expected a duration from 1s to 720h (30 days)");
  }
  if (!validMode(f.mode)) return usageError("--mode: expected push or pull");
  bool pull = f.mode == "pull";
  if (pull != !f.consumerEndpoint.empty() || pull != !f.consumerCaFingerprint.empty()) {
    return usageError("--mode pull needs --consumer-endpoint and --consumer-ca-fingerprint (the "
                "consumer's ConfigMap strait-system/strait-agent: linkEndpoint, "
                "caFingerprint), and only it takes them");
  }
  peering::PullTarget target{f.consumerEndpoint, f.consumerCaFingerprint, ""};
  auto client = clientFor(f.kubeconfig);
  if (!client.ok()) return failWith(client.error().message);
  auto token = peering::issueToken(**client, std::chrono::duration_cast<std::chrono::seconds>(*ttl),
                                   pull ? &target : nullptr);
  if (!token.ok()) return failWith(token.error().message);
  std::cout << token->reveal() << "\n";
  return 0;
}

struct PeerFlags {
  std::string kubeconfig;
  std::string remoteKubeconfig;
  std::string token;
  std::string tokenFile;
  std::string cpu = "4";
  std::string memory = "8Gi";
  std::string pods = "110";
  std::vector<std::string> resources;
  std::string timeout = "60s";
  std::string mode = "push";
  std::vector<std::string> labels;
  std::vector<std::string> pools;
};

// The --label KEY=VALUE flags as a map. Error naming the flag value: not KEY=VALUE, an
// invalid key or value, a key given twice, or a key the virtual node sets itself.
kube::Result<std::map<std::string, std::string>> parseVirtualNodeLabels(
    const std::vector<std::string>& flags) {
  std::map<std::string, std::string> out;
  for (const std::string& f : flags) {
    auto refuse = [&](const std::string& why) {
      return kube::makeError(kube::Code::Invalid, "--label \"" + f + "\": " + why);
    };
    const size_t eq = f.find('=');
    if (eq == std::string::npos) return refuse("expected KEY=VALUE");
    const std::string key = f.substr(0, eq);
    const std::string value = f.substr(eq + 1);
    if (auto p = kube::validateLabelKey(key); !p.empty()) return refuse("key: " + p.front());
    if (auto p = kube::validateLabelValue(value); !p.empty()) return refuse("value: " + p.front());
    const bool reserved = key == "type" || key.rfind("strait.io/", 0) == 0 ||
                          key.rfind("kubernetes.io/", 0) == 0 ||
                          key.rfind("node.kubernetes.io/", 0) == 0;
    if (reserved) {
      return refuse("the virtual node sets " + key +
                    " itself (type, kubernetes.io/*, node.kubernetes.io/*, strait.io/*)");
    }
    if (!out.emplace(key, value).second) return refuse("key given twice");
  }
  return out;
}

// The token in `path` (surrounding whitespace dropped), so that it never shows in `ps`.
// Error names the file: unreadable, empty, or more than one token in it.
kube::Result<std::string> readTokenFile(const std::string& path) {
  auto refuse = [&](const std::string& why) {
    return kube::makeError(kube::Code::Invalid, "--token-file " + path + ": " + why);
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) return refuse("cannot be read");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return refuse("read failed");
  std::istringstream words(buf.str());
  std::string token, extra;
  words >> token >> extra;
  if (token.empty()) return refuse("file is empty");
  if (!extra.empty()) return refuse("expected one token, found more text");
  return token;
}

int runPeer(const PeerFlags& f) {
  setupLogging("warn");
  int sources = !f.token.empty() + !f.tokenFile.empty() + !f.remoteKubeconfig.empty();
  if (sources != 1) {
    return usageError("give exactly one of --token or --token-file (out-of-band) or "
                "--remote-kubeconfig (in-band)");
  }
  auto timeout = parseDuration(f.timeout);
  if (!timeout) return usageError("--timeout: expected a duration like 60s");
  if (!validMode(f.mode)) return usageError("--mode: expected push or pull");
  std::string resources = "cpu=" + f.cpu + ",memory=" + f.memory + ",pods=" + f.pods;
  for (const std::string& r : f.resources) resources += "," + r;
  auto requested = peering::parseResourceArg(resources);
  if (!requested.ok()) return usageError(requested.error().message);
  auto labels = parseVirtualNodeLabels(f.labels);
  if (!labels.ok()) return usageError(labels.error().message);
  std::vector<peering::PoolSpec> pools;
  for (const std::string& p : f.pools) {
    auto pool = peering::parsePoolArg(p);
    if (!pool.ok()) return usageError("--pool: " + pool.error().message);
    if (pool->requested.empty()) {
      return usageError("--pool " + p + ": no resources (NAME:cpu=4,memory=8Gi,...)");
    }
    pools.push_back(std::move(*pool));
  }
  if (kube::Status s = peering::validatePools(pools); !s.ok()) {
    return usageError("--pool: " + s.error().message);
  }
  auto consumer = clientFor(f.kubeconfig);
  if (!consumer.ok()) return failWith(consumer.error().message);
  peering::PeerRequest req;
  req.requested = *requested;
  req.virtualNodeLabels = std::move(*labels);
  req.pools = std::move(pools);
  req.timeout = *timeout;
  req.pull = f.mode == "pull";
  if (!f.remoteKubeconfig.empty()) {
    auto provider = clientFor(f.remoteKubeconfig);
    if (!provider.ok()) return failWith(provider.error().message);
    kube::Result<peering::PullTarget> target = peering::PullTarget{};
    if (req.pull) {
      target = peering::consumerPullTarget(**consumer);
      if (!target.ok()) return failWith(target.error().message);
    }
    auto token = peering::issueToken(**provider, std::chrono::minutes(10),
                                     req.pull ? &*target : nullptr);
    if (!token.ok()) return failWith("issuing a token on the provider: " + token.error().message);
    req.token = token->reveal();
  } else if (!f.tokenFile.empty()) {
    auto token = readTokenFile(f.tokenFile);
    if (!token.ok()) return failWith(token.error().message);
    req.token = *token;
  } else {
    req.token = f.token;
  }
  auto result = peering::requestPeering(**consumer, req);
  if (!result.ok()) return failWith(result.error().message);
  std::cout << "peered with " << result->name << " (cluster " << result->providerId
            << "); granted " << result->granted.dump() << "\n";
  return 0;
}

struct UnpeerFlags {
  std::string kubeconfig;
  std::string remoteKubeconfig;
  std::string remoteName;
  bool drain = false;
  bool force = false;
  std::string timeout = "5m";
};

int runUnpeer(const UnpeerFlags& f) {
  setupLogging("warn");
  if (f.remoteName.empty() == f.remoteKubeconfig.empty()) {
    return usageError("give exactly one of --remote-name or --remote-kubeconfig");
  }
  auto timeout = parseDuration(f.timeout);
  if (!timeout) return usageError("--timeout: expected a duration like 5m");
  auto consumer = clientFor(f.kubeconfig);
  if (!consumer.ok()) return failWith(consumer.error().message);
  peering::UnpeerRequest req;
  req.remoteName = f.remoteName;
  req.drain = f.drain;
  req.force = f.force;
  req.timeout = *timeout;
  std::unique_ptr<kube::Client> provider;
  if (!f.remoteKubeconfig.empty()) {
    auto p = clientFor(f.remoteKubeconfig);
    if (!p.ok()) return failWith(p.error().message);
    provider = std::move(*p);
    auto id = peering::agentClusterId(*provider);
    if (!id.ok()) return failWith("reading the provider's cluster ID: " + id.error().message);
    req.remoteClusterId = *id;
    req.provider = provider.get();
  }
  auto lines = peering::unpeer(**consumer, req);
  if (!lines.ok()) return failWith(lines.error().message);
  for (const std::string& l : *lines) std::cout << l << "\n";
  return 0;
}

struct StatusFlags {
  std::string kubeconfig;
  std::string output;
};

int runStatus(const StatusFlags& f) {
  setupLogging("warn");
  if (!f.output.empty() && f.output != "json" && f.output != "table") {
    return usageError("-o: expected json or table");
  }
  auto client = clientFor(f.kubeconfig);
  if (!client.ok()) return failWith(client.error().message);
  auto rows = peering::peeringStatus(**client);
  if (!rows.ok() && rows.error().code == kube::Code::NotFound &&
      peering::agentClusterId(**client).code() == kube::Code::NotFound) {
    // No ForeignCluster resource and no agent ConfigMap: no agent ever started there.
    return failWith("Strait is not running in the cluster at " + (*client)->config().server +
                " (no Strait agent has started there). Start one with: strait agent "
                "--kubeconfig " + f.kubeconfig + " --cluster-name NAME");
  }
  if (!rows.ok()) return failWith(rows.error().message);
  if (f.output == "json") {
    std::cout << rows->dump(2) << "\n";
  } else if (rows->empty()) {
    std::cout << "no peerings\n";
  } else {
    std::cout << peering::statusTable(*rows);
    // A peering with pools has one virtual node per pool: a second table.
    auto pools = peering::poolRows(**client);
    if (pools.ok() && !pools->empty()) std::cout << "\n" << peering::poolsTable(*pools);
  }
  return 0;
}

}  // namespace

void addPeeringCommands(CLI::App& app) {
  auto tf = std::make_shared<TokenFlags>();
  CLI::App* token = app.add_subcommand("token", "print a one-time peering token for this provider");
  token->add_option("--kubeconfig", tf->kubeconfig, "kubeconfig of the provider")->required();
  token->add_option("--ttl", tf->ttl, "how long the token stays valid (1s to 720h, i.e. 30 days)")
      ->capture_default_str()
      ->check(durationValidator(std::chrono::seconds(1), kMaxTokenTtl));
  token->add_option("--mode", tf->mode,
                    "push (the consumer dials this provider) or pull (this provider's agent "
                    "dials the consumer, e.g. from behind NAT)")
      ->capture_default_str()
      ->check(CLI::IsMember({"push", "pull"}));
  token->add_option("--consumer-endpoint", tf->consumerEndpoint,
                    "pull mode: the consumer agent's link endpoint HOST:PORT")
      ->check(hostPortValidator(false));
  token->add_option("--consumer-ca-fingerprint", tf->consumerCaFingerprint,
                    "pull mode: SHA-256 fingerprint of the consumer's CA (pinned)");
  token->callback([tf] { setExitCode(runToken(*tf)); });

  auto pf = std::make_shared<PeerFlags>();
  CLI::App* peer = app.add_subcommand("peer", "peer this (consumer) cluster with a provider");
  peer->add_option("--kubeconfig", pf->kubeconfig, "kubeconfig of the consumer")->required();
  peer->add_option("--remote-kubeconfig", pf->remoteKubeconfig,
                   "kubeconfig of the provider (in-band peering)");
  peer->add_option("--token", pf->token, "token from `strait token` (out-of-band peering)");
  peer->add_option("--token-file", pf->tokenFile,
                   "file holding the token (out-of-band peering; keeps it out of `ps`)");
  peer->add_option("--cpu", pf->cpu, "CPU to ask for (above zero)")
      ->capture_default_str()
      ->check(positiveQuantityValidator());
  peer->add_option("--memory", pf->memory, "memory to ask for (above zero)")
      ->capture_default_str()
      ->check(positiveQuantityValidator());
  peer->add_option("--pods", pf->pods, "pods to ask for (above zero)")
      ->capture_default_str()
      ->check(positiveQuantityValidator());
  peer->add_option("--resource", pf->resources, "other resource NAME=QUANTITY (repeatable)")
      ->check(resourceListValidator());
  peer->add_option("--timeout", pf->timeout, "how long to wait (1s to 24h)")
      ->capture_default_str()
      ->check(durationValidator(std::chrono::seconds(1), std::chrono::hours(24)));
  peer->add_option("--mode", pf->mode,
                   "push (this consumer's agent dials the provider) or pull (the provider's "
                   "agent dials this consumer's agent; with --token, the token must be issued "
                   "with `strait token --mode pull`)")
      ->capture_default_str()
      ->check(CLI::IsMember({"push", "pull"}));
  peer->add_option("--label", pf->labels,
                   "KEY=VALUE label of the provider's virtual node (repeatable), e.g. "
                   "tier=gpu or topology.kubernetes.io/region=eu-west; namespaces may be "
                   "offloaded to the virtual nodes it selects (`strait offload namespace "
                   "--selector`)");
  peer->add_option("--pool", pf->pools,
                   "NAME[:RESOURCES][@SELECTOR] (repeatable): instead of one virtual node for "
                   "the peering, one per pool (strait-<provider>-<NAME>) drawn from the "
                   "provider nodes whose labels match SELECTOR (KEY=VALUE,...; default any), "
                   "e.g. gpu:cpu=4,memory=8Gi,nvidia.com/gpu=1@nvidia.com/gpu.present=true; "
                   "change them later with `strait pool`");
  peer->callback([pf] { setExitCode(runPeer(*pf)); });

  auto uf = std::make_shared<UnpeerFlags>();
  CLI::App* unpeer = app.add_subcommand("unpeer", "end a peering and remove what it created");
  unpeer->add_option("--kubeconfig", uf->kubeconfig, "kubeconfig of the consumer")->required();
  unpeer->add_option("--remote-kubeconfig", uf->remoteKubeconfig, "kubeconfig of the provider");
  unpeer->add_option("--remote-name", uf->remoteName, "name of the provider's ForeignCluster");
  unpeer->add_flag("--drain", uf->drain, "evict offloaded pods and wait for them");
  unpeer->add_flag("--force", uf->force, "part even if the provider agent is unreachable");
  unpeer->add_option("--timeout", uf->timeout, "overall deadline (1s to 24h)")
      ->capture_default_str()
      ->check(durationValidator(std::chrono::seconds(1), std::chrono::hours(24)));
  unpeer->callback([uf] { setExitCode(runUnpeer(*uf)); });

  auto sf = std::make_shared<StatusFlags>();
  CLI::App* status = app.add_subcommand("status", "show this cluster's peerings");
  status->add_option("--kubeconfig", sf->kubeconfig, "kubeconfig of the cluster")->required();
  status->add_option("-o,--output", sf->output, "table (default) or json")
      ->check(CLI::IsMember({"table", "json"}));
  status->callback([sf] { setExitCode(runStatus(*sf)); });

  addPoolCommands(app);
}

}  // namespace strait::cmd
