// Agent composition and start-up (see agent.h).
#include "peering/agent.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

#include "peering/foreign_cluster.h"
#include "peering/names.h"

namespace strait::peering {
namespace {

using json = nlohmann::json;
using kube::Code;
const std::string kSys(kSystemNamespace);

std::string hostOf(const std::string& hostPort) {
  size_t colon = hostPort.rfind(':');
  return colon == std::string::npos ? hostPort : hostPort.substr(0, colon);
}

}  // namespace

kube::Result<std::unique_ptr<Agent>> Agent::create(AgentConfig config,
                                                   std::unique_ptr<kube::Client> client) {
  if (config.clusterName.empty()) {
    return kube::makeError(Code::Invalid, "agent: --cluster-name is required");
  }
  if (config.listen.find(':') == std::string::npos) {
    return kube::makeError(Code::Invalid, "agent: --listen must be host:port");
  }
  if (!client) return kube::makeError(Code::Invalid, "agent: no Kubernetes client");
  if (config.provider.certTtl.count() < 2) {
    return kube::makeError(Code::Invalid, "agent: --cert-ttl must be at least 2s");
  }
  return std::unique_ptr<Agent>(new Agent(std::move(config), std::move(client)));
}

Agent::Agent(AgentConfig config, std::unique_ptr<kube::Client> client)
    : config_(std::move(config)), client_(std::move(client)) {}

Agent::~Agent() { stop(); }

kube::Status Agent::loadOrCreateIdentity() {
  json ns = {{"apiVersion", "v1"},
             {"kind", "Namespace"},
             {"metadata", {{"name", kSys}, {"labels", {{std::string(kLabelComponent), "system"}}}}}};
  kube::Result<json> created = client_->create(kube::resources::kNamespaces, "", ns);
  if (!created.ok() && created.code() != Code::AlreadyExists) return created.error();
  for (int attempt = 0; attempt < 2; ++attempt) {
    kube::Result<json> secret =
        client_->get(kube::resources::kSecrets, kSys, std::string(kIdentitySecret));
    if (secret.ok()) {
      kube::Result<ClusterIdentity> id = ClusterIdentity::fromSecret(*secret);
      if (!id.ok()) return id.error();
      identity_ = std::move(*id);
      if (kube::Status s = ownIdentity(*secret); !s.ok()) return s;
      if (identity_.clusterName != config_.clusterName) {
        spdlog::warn("event=identity_name_kept stored={} flag={}", identity_.clusterName,
                     config_.clusterName);
      }
      spdlog::info("event=identity_loaded cluster_id={} name={}", identity_.clusterId,
                   identity_.clusterName);
      return kube::Status::OK();
    }
    if (secret.code() != Code::NotFound) return secret.error();
    kube::Result<ClusterIdentity> id = ClusterIdentity::generate(config_.clusterName);
    if (!id.ok()) return id.error();
    json fresh = id->toSecret();
    if (config_.ownerOwnsIdentity && config_.ownerReferences.is_array()) {
      fresh["metadata"]["ownerReferences"] = config_.ownerReferences;
    }
    kube::Result<json> made = client_->create(kube::resources::kSecrets, kSys, fresh);
    if (made.ok()) {
      identity_ = std::move(*id);
      spdlog::info("event=identity_created cluster_id={} name={}", identity_.clusterId,
                   identity_.clusterName);
      return kube::Status::OK();
    }
    if (made.code() != Code::AlreadyExists) return made.error();  // else: lost a race, reload
  }
  return kube::makeError(Code::Conflict, "agent: identity Secret keeps changing");
}

kube::Status Agent::installCrd() {
  kube::Result<json> r = client_->create(kCrds, "", foreignClusterCrd());
  if (!r.ok() && r.code() != Code::AlreadyExists) return r.error();
  // Wait until the API server serves the new resource.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (true) {
    kube::Result<json> l = client_->list(kForeignClusters, "");
    if (l.ok()) return kube::Status::OK();
    if (std::chrono::steady_clock::now() > deadline) return l.error();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

kube::Status Agent::ownIdentity(const json& secret) {
  const json have = secret["metadata"].value("ownerReferences", json());
  json want = have;
  if (config_.ownerOwnsIdentity && config_.ownerReferences.is_array()) {
    want = config_.ownerReferences;
  } else if (config_.ownerReferences.is_array() && have == config_.ownerReferences) {
    want = nullptr;  // kept on uninstall again
  }
  if (want == have) return kube::Status::OK();
  json updated = secret;
  if (want.is_null()) {
    updated["metadata"].erase("ownerReferences");
  } else {
    updated["metadata"]["ownerReferences"] = want;
  }
  kube::Result<json> u = client_->update(kube::resources::kSecrets, kSys, updated);
  if (!u.ok()) return u.error();
  spdlog::info("event=identity_owner_changed owned={}", !want.is_null());
  return kube::Status::OK();
}

kube::Status Agent::publishEndpoint() {
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata",
              {{"name", std::string(kAgentConfigMap)},
               {"namespace", kSys},
               {"labels", {{std::string(kLabelComponent), "agent"}}}}},
             {"data",
              {{"endpoint", endpoint_},
               {"clusterID", identity_.clusterId},
               {"clusterName", identity_.clusterName},
               {"linkEndpoint", linkEndpoint_},
               {"caFingerprint", identity_.caFingerprint()}}}};
  const bool owned = config_.ownerReferences.is_array();
  if (owned) cm["metadata"]["ownerReferences"] = config_.ownerReferences;
  kube::Result<json> r = client_->create(kube::resources::kConfigMaps, kSys, cm);
  if (r.ok()) return kube::Status::OK();
  if (r.code() != Code::AlreadyExists) return r.error();
  kube::Result<json> cur =
      client_->get(kube::resources::kConfigMaps, kSys, std::string(kAgentConfigMap));
  if (!cur.ok()) return cur.error();
  if (cur->value("data", json::object()) == cm["data"] &&
      (!owned || (*cur)["metadata"].value("ownerReferences", json()) == config_.ownerReferences)) {
    return kube::Status::OK();
  }
  cm["metadata"]["resourceVersion"] = (*cur)["metadata"]["resourceVersion"];
  kube::Result<json> u = client_->update(kube::resources::kConfigMaps, kSys, cm);
  return u.ok() ? kube::Status::OK() : kube::Status(u.error());
}

void Agent::reconcileOwned() {
  // Another writer (an operator, a second agent started by mistake) may have changed or
  // deleted what this agent publishes: put it back.
  const json desiredCrd = foreignClusterCrd();
  const std::string crdName = desiredCrd["metadata"]["name"].get<std::string>();
  kube::Result<json> crd = client_->get(kCrds, "", crdName);
  if (!crd.ok() && crd.code() == Code::NotFound) {
    spdlog::warn("event=owned_object_restored kind=CustomResourceDefinition name={}", crdName);
    (void)client_->create(kCrds, "", desiredCrd);
  }
  kube::Result<json> cm =
      client_->get(kube::resources::kConfigMaps, kSys, std::string(kAgentConfigMap));
  if (cm.ok() && cm->value("data", json::object()).value("endpoint", "") == endpoint_ &&
      cm->value("data", json::object()).value("clusterID", "") == identity_.clusterId &&
      cm->value("data", json::object()).value("linkEndpoint", "") == linkEndpoint_) {
    return;
  }
  if (!cm.ok() && cm.code() != Code::NotFound) return;
  if (kube::Status s = publishEndpoint(); s.ok()) {
    spdlog::warn("event=owned_object_restored kind=ConfigMap name={}/{} endpoint={}", kSys,
                 kAgentConfigMap, endpoint_);
  }
}

kube::Status Agent::startPull(const kube::KeyPair& chain) {
  // Consumer side: the link port provider agents dial, and forwarders beside the gRPC port.
  std::string listenHost = hostOf(config_.listen);
  bool wildcard = listenHost == "0.0.0.0" || listenHost == "[::]";
  LinkListener::Options lo;
  // Default: the port after the gRPC port (stable across restarts, as pull targets name
  // it), or any port when the gRPC port is chosen by the system.
  std::string listenPort = config_.listen.substr(config_.listen.rfind(':') + 1);
  lo.listen = config_.linkListen;
  if (lo.listen.empty()) {
    lo.listen = listenHost + ":" + (listenPort == "0" ? std::string("0")
                                                      : std::to_string(std::atoi(listenPort.c_str()) + 1));
  }
  lo.forwardHost = wildcard ? "127.0.0.1" : listenHost;
  lo.chain = chain;
  lo.timing = config_.linkTiming;
  kube::Client* client = client_.get();
  lo.expectedCa = [client](const std::string& providerId) {
    return expectedProviderCa(*client, providerId);
  };
  kube::Result<std::unique_ptr<LinkListener>> links = LinkListener::start(std::move(lo));
  if (!links.ok()) return links.error();
  links_ = std::move(*links);
  linkEndpoint_ = config_.linkAdvertise.empty()
                      ? hostOf(endpoint_) + ":" + std::to_string(links_->port())
                      : config_.linkAdvertise;
  // Provider side: dial the consumers whose pull targets name them; relay to our gRPC port.
  std::string local = (wildcard ? std::string("127.0.0.1") : listenHost) + ":" +
                      std::to_string(server_->port());
  dialers_ = std::make_unique<PullDialers>(*client_, chain, local, config_.linkTiming);
  return kube::Status::OK();
}

kube::Status Agent::start() {
  if (kube::Status s = loadOrCreateIdentity(); !s.ok()) return s;
  if (kube::Status s = installCrd(); !s.ok()) return s;
  // A fresh server certificate each start: it names the cluster, not an address, so it never
  // goes stale when the agent moves (cf. liqo#1334).
  kube::Result<kube::KeyPair> leaf =
      kube::issueCert(identity_.ca, "strait-agent-" + identity_.clusterName, {},
                      {agentServerName(identity_.clusterId)}, {}, true, 365);
  if (!leaf.ok()) return leaf.error();
  network_ = std::make_unique<NetworkController>(identity_, *client_, config_.network);
  if (kube::Status s = network_->start(); !s.ok()) return s;
  provider_ = std::make_unique<ProviderService>(identity_, *client_, config_.provider);
  provider_->setNetwork(network_.get());
  if (kube::Status s = provider_->load(); !s.ok()) return s;
  if (config_.streamHandlerFactory) {
    provider_->setStreamHandler(config_.streamHandlerFactory(*provider_, *client_));
  }
  ServerConfig sc;
  sc.listen = config_.listen;
  sc.serverCert = {leaf->certPem + identity_.ca.certPem, leaf->keyPem};
  sc.clientCaPem = identity_.ca.certPem;
  sc.kubelet = kubelet_;
  kube::Result<std::unique_ptr<RpcServer>> server = startRpcServer(sc, *provider_);
  if (!server.ok()) return server.error();
  server_ = std::move(*server);
  endpoint_ = config_.advertise.empty()
                  ? hostOf(config_.listen) + ":" + std::to_string(server_->port())
                  : config_.advertise;
  if (hostOf(endpoint_) == "0.0.0.0" || hostOf(endpoint_) == "[::]") {
    endpoint_ = "127.0.0.1:" + std::to_string(server_->port());
    spdlog::warn("event=advertise_defaulted endpoint={} hint=\"set --advertise\"", endpoint_);
  }
  if (kube::Status s = startPull(sc.serverCert); !s.ok()) return s;
  if (kube::Status s = publishEndpoint(); !s.ok()) return s;
  ConsumerConfig cc = config_.consumer;
  cc.ownEndpoint = endpoint_;
  cc.network = network_.get();
  LinkListener* links = links_.get();
  cc.pullEndpoint = [links](const std::string& id) { return links->forwardEndpoint(id); };
  cc.pullLinked = [links](const std::string& id) { return links->linked(id); };
  cc.pullRetain = [links](const std::set<std::string>& ids) { links->retain(ids); };
  kube::InformerOptions io;
  io.resource = kForeignClusters;
  foreignClusters_ = std::make_unique<kube::Informer>(*client_, io);
  auto wake = [this](const kube::ObjectPtr&) {
    {
      base::MutexLock lock(mu_);
      wake_ = true;
    }
    cv_.notify_all();
  };
  // Updates only when the spec or the deletion changed, not for the status writes.
  auto wakeOnSpec = [wake](const kube::ObjectPtr& before, const kube::ObjectPtr& after) {
    auto differs = [&](const char* field) {
      return before->value("/metadata"_json_pointer / field, json()) !=
             after->value("/metadata"_json_pointer / field, json());
    };
    if (differs("generation") || differs("deletionTimestamp")) wake(after);
  };
  foreignClusters_->addHandlers({wake, wakeOnSpec, wake});
  foreignClusters_->start();
  if (!foreignClusters_->waitForSync(std::chrono::seconds(30))) {
    return kube::makeError(Code::ServerTimeout, "agent: ForeignCluster informer did not sync");
  }
  kube::Informer* fcs = foreignClusters_.get();
  cc.listForeignClusters = [fcs]() -> kube::Result<json> {
    json items = json::array();
    for (const kube::ObjectPtr& o : fcs->cache().list()) items.push_back(*o);
    return json{{"items", std::move(items)}};
  };
  consumer_ = std::make_unique<ConsumerController>(identity_, *client_, cc);
  thread_ = std::thread([this] { loop(); });
  providerThread_ = std::thread([this] { providerLoop(); });
  spdlog::info("event=agent_started cluster_id={} name={} listen={} port={} endpoint={} "
               "link_endpoint={}",
               identity_.clusterId, identity_.clusterName, config_.listen, server_->port(),
               endpoint_, linkEndpoint_);
  return kube::Status::OK();
}

kube::Status Agent::authorizeConsumer(const Caller& caller) {
  if (!provider_) return kube::makeError(kube::Code::Unavailable, "the agent is starting");
  return provider_->authorizeConsumer(caller);
}

void Agent::loop() {
  // Event-driven: a pass when the consumer says one is due (its next heartbeat, renewal or
  // retry) or a ForeignCluster came, went or changed its spec; at least one per heartbeat
  // interval.
  const auto longest = std::max(config_.loopInterval, config_.consumer.heartbeatInterval);
  base::UniqueLock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    auto now = std::chrono::system_clock::now();
    auto wait = config_.loopInterval;
    // Objects read from the API server are checked, but a field of an unexpected JSON type
    // must not end the agent: log and carry on with the next pass.
    try {
      const auto next = consumer_->tick(now, config_.loopInterval);
      wait = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(
                            next - std::chrono::system_clock::now()),
                        std::chrono::milliseconds(0), longest);
    } catch (const std::exception& e) {
      spdlog::error("event=loop_exception error=\"{}\"", e.what());
    }
    lock.lock();
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (!stopping_ && !wake_) {
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
    wake_ = false;
  }
}

void Agent::providerLoop() {
  // Apart from the consumer loop: calls to a provider that does not answer (up to a call
  // timeout each) must not delay noticing a silent consumer.
  base::UniqueLock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    auto now = std::chrono::system_clock::now();
    try {
      provider_->tick(now);
      dialers_->tick(now);
      network_->tick(now);
      if (now - lastOwnedResync_ >= config_.ownedResyncInterval) {
        lastOwnedResync_ = now;
        reconcileOwned();
      }
    } catch (const std::exception& e) {
      spdlog::error("event=loop_exception error=\"{}\"", e.what());
    }
    lock.lock();
    const auto deadline = std::chrono::steady_clock::now() + config_.loopInterval;
    while (!stopping_) {
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
  }
}

void Agent::stop() {
  {
    base::MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (providerThread_.joinable()) providerThread_.join();
  if (foreignClusters_) foreignClusters_->stop();
  if (dialers_) dialers_->stop();
  if (links_) links_->stop();
  if (server_) server_->shutdown(std::chrono::seconds(2));
  if (network_) network_->stop();
}

}  // namespace strait::peering
