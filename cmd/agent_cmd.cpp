// `strait agent`: the per-cluster daemon (peering service, virtual kubelets and the
// reflection stream). Composition root: flags -> AgentConfig -> peering::Agent.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "cmd/agent_health.h"
#include "cmd/agent_leader.h"
#include "cmd/agent_memory.h"
#include "cmd/agent_metrics.h"
#include "cmd/agent_vnode.h"
#include "cmd/cli_util.h"
#include "cmd/commands.h"
#include "kube/kubeconfig.h"
#include "kube/object.h"
#include "peering/names.h"
#include "peering/agent.h"
#include "peering/network_alloc.h"
#include "peering/network_gateway.h"
#include "reflection/stream_server.h"
#include "reflection/remote_kubelet.h"

namespace strait::cmd {
namespace {

using nlohmann::json;

std::atomic<bool> g_stop{false};
void onSignal(int) { g_stop = true; }

struct AgentFlags {
  std::string kubeconfig;
  std::string clusterName;
  std::string listen = "127.0.0.1:7443";
  std::string advertise;
  std::string linkListen;
  std::string linkAdvertise;
  std::string certTtl = "1h";
  std::string heartbeat = "1s";
  std::string lostAfter = "3s";
  double share = 0.5;
  std::string budget;
  std::string maxPerConsumer;
  std::string logLevel = "info";
  VnodeFlags vnode;
  std::string streamKeepalive = "1s";
  // Client-side rate limit of the agent's API clients: the reflection makes a few requests
  // per offloaded Pod on each side (client-go's 5 QPS would cap it at a few Pods/s).
  double kubeQps = 1000;
  int kubeBurst = 2000;
  int streamWorkers = 16;  // provider side: requests of one consumer's stream served at once
  std::string leaderLease = "15s";  // one active agent per cluster (agent_leader.h)
  std::string podSecurity = "baseline";  // provider side: level every consumer's Pod must pass
  std::string metricsListen;  // "" = no /metrics
  std::string healthListen;   // "" = no /healthz, /readyz
  // A ServiceAccount in strait-system owning the endpoint ConfigMap and the leader Lease
  // ("" = nothing owns them): the chart's, so that helm uninstall removes them.
  std::string ownerServiceAccount;
  bool ownerOwnsIdentity = false;  // that ServiceAccount owns the identity Secret too
  // The tunnel of every peering (peering/network.h).
  bool gateway = false;
  std::string gatewayNetns;
  std::string gatewayNode;
  std::string gatewayEndpoint;
  int gatewayPort = 51840;
  std::string gatewayInterface = "strait0";
  std::string gatewayUapiDir = "/var/run/wireguard";
  std::string gatewayProbeAddress;
  std::string podCidr;
  std::string serviceCidr;
  std::string remapPool = "10.240.0.0/12";
};

// An IPv4 CIDR flag (peering::parseCidr says what is wrong).
CLI::Validator cidrValidator() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        kube::Result<tunnel::IpPrefix> p = peering::parseCidr("CIDR", v);
        return p.ok() ? "" : p.error().message;
      },
      "CIDR");
}

// The tunnel's configuration from the --gateway* and CIDR flags; the gateway itself is
// started by the agent (NetworkController::start) once it has the key.
peering::NetworkConfig networkConfig(const AgentFlags& f) {
  peering::NetworkConfig n;
  n.gateway = f.gateway;
  n.podCidr = f.podCidr;
  n.serviceCidr = f.serviceCidr;
  n.remapPool = f.remapPool;
  n.gatewayNode = f.gatewayNode;
  n.endpoint = f.gatewayEndpoint;
  n.port = static_cast<uint16_t>(f.gatewayPort);
  n.probeAddress = f.gatewayProbeAddress;
  tunnel::GatewayOptions base;
  base.netnsPath = f.gatewayNetns;
  base.interfaceName = f.gatewayInterface;
  base.listenPort = static_cast<uint16_t>(f.gatewayPort);
  base.uapiDir = f.gatewayUapiDir;
  n.startGateway = [base](const tunnel::PrivateKey& key, const std::string& probeSource) {
    tunnel::GatewayOptions o = base;
    o.privateKey = key;
    o.probeSource = probeSource;
    return peering::startTunnelGateway(std::move(o));
  };
  return n;
}

// ownerReferences naming ServiceAccount strait-system/<name> (null when `name` is empty).
// Asks the API server for its uid, a few times while it is not there yet.
kube::Result<json> ownerReferencesFor(kube::Client& client, const std::string& name) {
  if (name.empty()) return json(nullptr);
  kube::Result<json> sa = kube::makeError(kube::Code::NotFound, "not asked");
  for (int attempt = 0; attempt < 10; ++attempt) {
    sa = client.get(kube::resources::kServiceAccounts, std::string(peering::kSystemNamespace),
                    name);
    if (sa.ok() || sa.code() == kube::Code::Forbidden) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  if (!sa.ok()) {
    return kube::makeError(sa.code(), "--owner-service-account: ServiceAccount " +
                                          std::string(peering::kSystemNamespace) + "/" + name +
                                          ": " + sa.error().message);
  }
  return json::array({{{"apiVersion", "v1"},
                       {"kind", "ServiceAccount"},
                       {"name", name},
                       {"uid", kube::getUid(*sa)}}});
}

// The kubeconfig the agent's clients use, as client-go's loading rules pick it: --kubeconfig,
// else the first existing file of $KUBECONFIG, else "" (the in-cluster service account).
std::string agentKubeconfig(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("KUBECONFIG");
  if (env == nullptr) return {};
  std::vector<std::string> paths = kube::splitKubeconfigPaths(env);
  for (const std::string& p : paths) {
    std::error_code ec;
    if (std::filesystem::exists(p, ec)) return p;
  }
  return paths.empty() ? std::string() : paths.front();  // the error then names it
}

int runAgent(const AgentFlags& flags) {
  keepFreedHeapUntilTrimmed();  // the HeapTrimmer below returns freed memory (agent_memory.h)
  setupLogging(flags.logLevel);
  AgentFlags f = flags;
  f.kubeconfig = agentKubeconfig(flags.kubeconfig);
  peering::AgentConfig cfg;
  cfg.clusterName = f.clusterName;
  cfg.listen = f.listen;
  cfg.advertise = f.advertise;
  cfg.linkListen = f.linkListen;
  cfg.linkAdvertise = f.linkAdvertise;
  auto ttl = parseDuration(f.certTtl);
  auto hb = parseDuration(f.heartbeat);
  auto lost = parseDuration(f.lostAfter);
  if (!ttl || !hb || !lost) {
    spdlog::error("event=bad_flag error=\"--cert-ttl, --heartbeat-interval and --lost-after take "
                  "durations like 30s, 5m, 1h\"");
    return 2;
  }
  if (f.share <= 0 || f.share > 1) {
    spdlog::error("event=bad_flag flag=--share error=\"must be in (0, 1]\"");
    return 2;
  }
  cfg.provider.certTtl = std::chrono::duration_cast<std::chrono::seconds>(*ttl);
  cfg.provider.consumerLostAfter = *lost;
  cfg.provider.policy.share = f.share;
  for (auto [text, out, flag] :
       {std::tuple{&f.budget, &cfg.provider.policy.explicitBudget, "--budget"},
        std::tuple{&f.maxPerConsumer, &cfg.provider.policy.perConsumerCap, "--max-per-consumer"}}) {
    kube::Result<peering::ResourceMap> r = peering::parseResourceArg(*text);
    if (!r.ok()) {
      spdlog::error("event=bad_flag flag={} error=\"{}\"", flag, r.error().message);
      return 2;
    }
    *out = *r;
  }
  auto keepalive = parseDuration(f.streamKeepalive);
  if (!keepalive || keepalive->count() <= 0) {
    spdlog::error("event=bad_flag flag=--stream-keepalive error=\"takes a positive duration like 1s\"");
    return 2;
  }
  if (f.streamWorkers < 1 || f.streamWorkers > 1024) {
    spdlog::error("event=bad_flag flag=--stream-workers error=\"expected 1..1024\"");
    return 2;
  }
  kube::Result<kube::PodSecurityLevel> podSecurity = kube::parsePodSecurityLevel(f.podSecurity);
  if (!podSecurity.ok()) {
    spdlog::error("event=bad_flag flag=--pod-security error=\"{}\"", podSecurity.error().message);
    return 2;
  }
  cfg.provider.podSecurity = *podSecurity;
  reflection::StreamServerOptions streamOpts;
  streamOpts.podSecurity = *podSecurity;
  streamOpts.keepaliveInterval = *keepalive;
  streamOpts.workers = f.streamWorkers;
  // The agent, once created: the handler asks its NetworkController for the tunnels.
  auto agentRef = std::make_shared<peering::Agent*>(nullptr);
  cfg.streamHandlerFactory = [streamOpts, agentRef](peering::ProviderService& service,
                                                    kube::Client& c) {
    reflection::StreamServerOptions opts = streamOpts;
    // Endpoints of the consumer's Pods reflected here carry the consumer's real addresses;
    // this cluster reaches them at the tunnel's negotiated remap of the consumer's pod CIDR.
    // `service` outlives the handler it keeps.
    opts.translateAddress = [&service](const std::string& consumerId, const std::string& ip) {
      return service.consumerPodIpView(consumerId, ip);
    };
    // While this cluster's tunnel to a consumer is down, its Pods' endpoints reflected here
    // are held not ready: traffic to them has no way through. The factory runs inside
    // Agent::start, after the NetworkController exists; the agent outlives the handler.
    if (peering::NetworkController* network = *agentRef ? (*agentRef)->network() : nullptr) {
      opts.consumerTunnelDown = [network](const std::string& consumerId) {
        return network->state().tunnelLost(consumerId);
      };
    }
    return reflection::makeProviderStreamHandler(c, service, opts);
  };
  cfg.network = networkConfig(f);
  cfg.consumer.heartbeatInterval = *hb;
  cfg.consumer.lostAfter = *lost;
  kube::Result<std::unique_ptr<kube::Client>> client =
      clientFor(f.kubeconfig, f.kubeQps, f.kubeBurst);
  if (!client.ok()) {
    spdlog::error("event=start_failed error=\"{}\"", client.error().message);
    return 1;
  }
  VnodeFlags vnodeFlags = f.vnode;
  vnodeFlags.kubeQps = f.kubeQps;
  vnodeFlags.kubeBurst = f.kubeBurst;
  kube::Result<std::unique_ptr<VnodeRuntime>> vnodes = VnodeRuntime::create(vnodeFlags, f.kubeconfig);
  if (!vnodes.ok()) {
    spdlog::error("event=bad_flag error=\"{}\"", vnodes.error().message);
    return 2;
  }
  cfg.consumer.observer = (*vnodes)->observer();
  kube::Result<json> owners = ownerReferencesFor(**client, f.ownerServiceAccount);
  if (!owners.ok()) {
    spdlog::error("event=start_failed error=\"{}\"", owners.error().message);
    return 1;
  }
  cfg.ownerReferences = *owners;
  cfg.ownerOwnsIdentity = f.ownerOwnsIdentity;
  kube::Result<std::unique_ptr<peering::Agent>> agent =
      peering::Agent::create(std::move(cfg), std::move(*client));
  if (!agent.ok()) {
    spdlog::error("event=start_failed error=\"{}\"", agent.error().message);
    return 2;
  }
  *agentRef = agent->get();
  // Provider side of the virtual nodes' kubelet API: logs/exec of the consumers' Pods.
  kube::Result<std::unique_ptr<kube::Client>> kubeletClient = clientFor(f.kubeconfig);
  if (!kubeletClient.ok()) {
    spdlog::error("event=start_failed error=\"{}\"", kubeletClient.error().message);
    return 1;
  }
  reflection::RemoteKubeletOptions rko;
  rko.provider = kubeletClient->get();
  rko.providerConfig = (*kubeletClient)->config();
  rko.authorize = [a = agent->get()](const peering::Caller& c) { return a->authorizeConsumer(c); };
  kube::Result<std::unique_ptr<reflection::RemoteKubelet>> remoteKubelet =
      reflection::RemoteKubelet::create(std::move(rko));
  if (!remoteKubelet.ok()) {
    spdlog::error("event=start_failed error=\"{}\"", remoteKubelet.error().message);
    return 2;
  }
  (*agent)->setKubeletHandler(remoteKubelet->get());
  auto leaseDuration = parseDuration(f.leaderLease);
  kube::Result<std::unique_ptr<kube::Client>> leaseClient = clientFor(f.kubeconfig);
  if (!leaseClient.ok()) {
    spdlog::error("event=start_failed error=\"{}\"", leaseClient.error().message);
    return 1;
  }
  kube::Result<std::unique_ptr<AgentLeadership>> leadership = AgentLeadership::create(
      std::move(*leaseClient), leaseDuration ? *leaseDuration : std::chrono::milliseconds(0),
      f.listen, *owners);
  if (!leadership.ok()) {
    spdlog::error("event=bad_flag error=\"{}\"", leadership.error().message);
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // /metrics is served by a standby too (its peerings read from this cluster's objects).
  std::unique_ptr<AgentMetrics> agentMetrics;
  if (!f.metricsListen.empty()) {
    kube::Result<HostPort> hp = parseHostPort(f.metricsListen, true);
    kube::Result<std::unique_ptr<kube::Client>> metricsClient = clientFor(f.kubeconfig);
    if (!hp.ok() || !metricsClient.ok()) {
      spdlog::error("event=start_failed component=metrics error=\"{}\"",
                    hp.ok() ? metricsClient.error().message : hp.error().message);
      return 1;
    }
    agentMetrics = std::make_unique<AgentMetrics>(std::move(*metricsClient));
    if (kube::Status s = agentMetrics->start(hp->host, hp->port); !s.ok()) {
      spdlog::error("event=start_failed component=metrics error=\"{}\"", s.error().message);
      return 1;
    }
  }
  // Probes are answered by a standby too (agent_health.h).
  std::unique_ptr<AgentHealth> health;
  if (!f.healthListen.empty()) {
    kube::Result<HostPort> hp = parseHostPort(f.healthListen, true);
    kube::Result<std::unique_ptr<kube::Client>> healthClient = clientFor(f.kubeconfig);
    if (!hp.ok() || !healthClient.ok()) {
      spdlog::error("event=start_failed component=health error=\"{}\"",
                    hp.ok() ? healthClient.error().message : hp.error().message);
      return 1;
    }
    kube::Result<std::unique_ptr<AgentHealth>> created =
        AgentHealth::create(std::move(*healthClient));
    kube::Status s = created.ok() ? (*created)->start(hp->host, hp->port) : created.error();
    if (!s.ok()) {
      spdlog::error("event=start_failed component=health error=\"{}\"", s.error().message);
      return 1;
    }
    health = std::move(*created);
    spdlog::info("event=health_listening port={}", health->port());
  }
  // Only the Lease holder acts; a standby starts nothing until it leads.
  if (!(*leadership)->waitUntilLeading(g_stop)) return 0;
  if (kube::Status s = (*agent)->start(); !s.ok()) {
    spdlog::error("event=start_failed error=\"{}\"", s.error().message);
    return 1;
  }
  if (kube::Status s = (*vnodes)->startWebhook((*agent)->identity().ca); !s.ok()) {
    spdlog::error("event=start_failed component=webhook error=\"{}\"", s.error().message);
    (*agent)->stop();
    return 1;
  }
  if (health) health->setRole(AgentHealth::Role::Leading);
  // Freed heap back to the kernel every 2 s (agent_memory.h): the agent's arenas otherwise
  // keep most of what its threads freed (134 of 176 MB with 6,000 offloaded Pods).
  HeapTrimmer trimmer(std::chrono::seconds(2));
  while (!g_stop && !(*leadership)->lost()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    trimmer.tick(HeapTrimmer::Clock::now());
  }
  const bool leadershipLost = (*leadership)->lost();
  if (leadershipLost) {
    spdlog::error("event=leadership_lost msg=\"another agent may lead now; exiting\"");
  }
  spdlog::info("event=stopping");
  if (health) health->setRole(AgentHealth::Role::Stopping);
  (*agent)->stop();  // first: no more peering callbacks
  (*vnodes)->stop();
  (*leadership)->stop();  // last: a standby takes over once this one acts no more
  return leadershipLost ? 1 : 0;
}

}  // namespace

void addAgentCommand(CLI::App& app) {
  auto flags = std::make_shared<AgentFlags>();
  CLI::App* sub = app.add_subcommand("agent", "run the per-cluster Strait agent (peering service)");
  sub->add_option("--kubeconfig", flags->kubeconfig,
                  "kubeconfig of this cluster (default: $KUBECONFIG, else the in-cluster "
                  "service account)");
  sub->add_option("--cluster-name", flags->clusterName, "this cluster's name")->required();
  sub->add_option("--listen", flags->listen, "HOST:PORT for the gRPC service (PORT 0 = any)")
      ->capture_default_str()
      ->check(hostPortValidator(true));
  sub->add_option("--advertise", flags->advertise,
                  "HOST:PORT other clusters dial (default: listen host and bound port)")
      ->check(hostPortValidator(false));
  sub->add_option("--link-listen", flags->linkListen,
                  "HOST:PORT provider agents dial in pull mode (default: listen host, any port)")
      ->check(hostPortValidator(true));
  sub->add_option("--link-advertise", flags->linkAdvertise,
                  "HOST:PORT published for the link port (default: advertised host, bound port)")
      ->check(hostPortValidator(false));
  sub->add_option("--cert-ttl", flags->certTtl,
                  "validity of client certificates this cluster signs (1s to 8760h)")
      ->capture_default_str()
      ->check(durationValidator(std::chrono::seconds(1), std::chrono::hours(8760)));
  sub->add_option("--heartbeat-interval", flags->heartbeat,
                  "how often to call each provider (10ms to 1h)")
      ->capture_default_str()
      ->check(durationValidator(std::chrono::milliseconds(10), std::chrono::hours(1)));
  sub->add_option("--lost-after", flags->lostAfter,
                  "silence after which a peer is marked disconnected (10ms to 24h)")
      ->capture_default_str()
      ->check(durationValidator(std::chrono::milliseconds(10), std::chrono::hours(24)));
  sub->add_option("--share", flags->share,
                  "share of free allocatable lent to all consumers together, in (0, 1]")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            double d = 0;
            bool number = CLI::detail::lexical_cast(v, d);
            return number && d > 0 && d <= 1 ? ""
                                             : "\"" + v + "\" is out of range (expected a "
                                               "number above 0 and at most 1, e.g. 0.5)";
          },
          "(0,1]"));
  sub->add_option("--budget", flags->budget,
                  "explicit budget for all consumers, e.g. cpu=8,memory=16Gi,pods=110")
      ->check(resourceListValidator());
  sub->add_option("--max-per-consumer", flags->maxPerConsumer, "cap per consumer, e.g. cpu=4")
      ->check(resourceListValidator());
  sub->add_option("--stream-keepalive", flags->streamKeepalive,
                  "keepalive interval on the reflection stream (provider side; 10ms to 1h)")
      ->capture_default_str()
      ->check(durationValidator(std::chrono::milliseconds(10), std::chrono::hours(1)));
  sub->add_option("--stream-workers", flags->streamWorkers,
                  "reflection stream requests served at once per consumer (provider side; 1 "
                  "to 1024)")
      ->capture_default_str()
      ->check(numberRange(1, 1024));
  sub->add_option("--kube-qps", flags->kubeQps,
                  "client-side rate limit of the agent's API requests per second (0 = none; up to "
                  "1000000)")
      ->capture_default_str()
      ->check(numberRange(0, 1e6));
  sub->add_option("--kube-burst", flags->kubeBurst, "burst of that rate limit (1 to 1000000)")
      ->capture_default_str()
      ->check(numberRange(1, 1000000));
  sub->add_option("--pod-security", flags->podSecurity,
                  "Pod Security Standards level the consumers' Pods must pass in this cluster "
                  "(privileged, baseline, restricted)")
      ->capture_default_str()
      ->check(CLI::IsMember({"privileged", "baseline", "restricted"}));
  sub->add_option("--log-level", flags->logLevel, kLogLevelHelp)
      ->capture_default_str()
      ->check(logLevelValidator());
  sub->add_option("--leader-lease-duration", flags->leaderLease,
                  "lease of the active agent: a standby agent of the same cluster takes over "
                  "this long after the active one died (1s to 1h)")
      ->capture_default_str()
      ->check(durationValidator(std::chrono::seconds(1), std::chrono::hours(1)));
  sub->add_option("--metrics-listen", flags->metricsListen,
                  "HOST:PORT serving Prometheus metrics on /metrics over plain HTTP (PORT 0 = "
                  "any; default: none)")
      ->check(hostPortValidator(true));
  sub->add_option("--health-listen", flags->healthListen,
                  "HOST:PORT serving /healthz, /livez, /readyz and /readyz/leader over plain HTTP "
                  "for probes (PORT 0 = any; default: none)")
      ->check(hostPortValidator(true));
  sub->add_option("--owner-service-account", flags->ownerServiceAccount,
                  "NAME of a ServiceAccount in strait-system that owns the agent's endpoint "
                  "ConfigMap and leader Lease, so deleting it (helm uninstall) garbage-collects "
                  "them (default: none)");
  sub->add_flag("--owner-owns-identity", flags->ownerOwnsIdentity,
                "the --owner-service-account owns the identity Secret strait-system/"
                "strait-identity too: deleting it deletes the identity (a reinstall is then a "
                "new cluster to its peers)")
      ->needs(sub->get_option("--owner-service-account"));
  sub->add_flag("--gateway", flags->gateway,
                "run the tunnel gateway (a WireGuard TUN interface and routes in --gateway-netns): "
                "every peering with a gateway on the other side gets a tunnel (default: off, "
                "the peerings show TunnelUp=False TunnelNotConfigured)");
  sub->add_option("--gateway-netns", flags->gatewayNetns,
                  "PATH of the network namespace the gateway lives in, e.g. /run/netns/NAME "
                  "(default: the agent's own)");
  sub->add_option("--gateway-node", flags->gatewayNode,
                  "NAME of the Node the gateway runs on: its InternalIP is where the other nodes "
                  "route the remote CIDRs (ConfigMap strait-system/strait-fabric) and the default "
                  "endpoint host; its spec.podCIDR's first address is the default probe address");
  sub->add_option("--gateway-endpoint", flags->gatewayEndpoint,
                  "HOST:PORT of the gateway's UDP port as the other clusters reach it (default: "
                  "the --gateway-node's InternalIP and --gateway-port)")
      ->check(hostPortValidator(false));
  sub->add_option("--gateway-port", flags->gatewayPort,
                  "UDP port of the gateway (0 = any, then --gateway-endpoint is required; up to "
                  "65535)")
      ->capture_default_str()
      ->check(numberRange(0, 65535));
  sub->add_option("--gateway-interface", flags->gatewayInterface,
                  "name of the gateway's TUN interface (1 to 15 characters)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            return !v.empty() && v.size() <= 15 && v.find('/') == std::string::npos &&
                           v.find(' ') == std::string::npos
                       ? ""
                       : "\"" + v + "\" is not an interface name (1 to 15 characters, no / "
                         "or space)";
          },
          "IFNAME"));
  sub->add_option("--gateway-uapi-dir", flags->gatewayUapiDir,
                  "directory of the gateway's UAPI socket <dir>/<interface>.sock, for `wg show` "
                  "(empty: none)")
      ->capture_default_str();
  sub->add_option("--gateway-probe-address", flags->gatewayProbeAddress,
                  "IPv4 address inside this cluster's pod CIDR, in the gateway's namespace, that "
                  "the tunnel's probes leave from and reach (default: the first address of the "
                  "--gateway-node's spec.podCIDR)");
  sub->add_option("--pod-cidr", flags->podCidr,
                  "this cluster's pod CIDR (default: the smallest prefix covering every Node's "
                  "spec.podCIDRs)")
      ->check(cidrValidator());
  sub->add_option("--service-cidr", flags->serviceCidr,
                  "this cluster's service CIDR, kept free of remaps (default: unknown)")
      ->check(cidrValidator());
  sub->add_option("--remap-pool", flags->remapPool,
                  "CIDR the remaps of overlapping remote pod CIDRs are taken from")
      ->capture_default_str()
      ->check(cidrValidator());
  addVnodeFlags(sub, flags->vnode);
  sub->callback([flags] { setExitCode(runAgent(*flags)); });
}

}  // namespace strait::cmd
