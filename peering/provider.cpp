// Provider side of peering (see provider.h). Logs one line per event, key=value, never a
// token, secret or key.
#include "peering/provider.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "peering/foreign_cluster.h"
#include "peering/names.h"
#include "peering/pull.h"
#include "peering/token.h"

namespace strait::peering {
namespace {

using kube::Code;
using kube::makeError;
using json = nlohmann::json;

const std::string kSys(kSystemNamespace);

json toJson(const ResourceMap& r) { return kube::formatResourceList(r); }

// The node selector of pool `name` (empty when there is no such pool).
NodeSelector poolFor(const std::vector<PoolSpec>& pools, const std::string& name) {
  for (const PoolSpec& p : pools) {
    if (p.name == name) return p.nodeSelector;
  }
  return {};
}

ResourceMap fromProto(const v1::ResourceList& l) { return resourcesFromProto(l); }

void toProto(const ResourceMap& r, v1::ResourceList* out) { resourcesToProto(r, out); }

kube::Status ignoreAlreadyExists(const kube::Result<json>& r) {
  if (r.ok() || r.code() == Code::AlreadyExists) return kube::Status::OK();
  return r.error();
}


// Status conditions of a consumer's ForeignCluster on the provider.
json providerConditions(bool connected, const std::string& reason, const std::string& message,
                        const json& previous, std::chrono::system_clock::time_point now,
                        const TunnelCondition& tunnel) {
  return peeringConditions(true, "CertificateIssued",
                           "client certificate signed by this cluster's CA", connected, reason,
                           message, "OnConsumerSide",
                           "the virtual node lives in the consumer cluster", previous, now,
                           tunnel);
}

}  // namespace

ProviderService::ProviderService(const ClusterIdentity& identity, kube::Client& client,
                                 ProviderConfig config)
    : identity_(identity), client_(client), config_(std::move(config)), capacity_(client) {}

kube::Status ProviderService::load() {
  kube::Result<json> list = client_.list(kForeignClusters, "");
  if (!list.ok()) return list.error();
  base::MutexLock lock(mu_);
  auto now = std::chrono::system_clock::now();
  for (const json& fc : list->value("items", json::array())) {
    if (fc.value("/spec/role"_json_pointer, std::string()) != kRoleConsumer) continue;
    std::string id = fc.value("/spec/clusterID"_json_pointer, std::string());
    if (!validClusterId(id)) continue;
    Consumer c;
    c.fcName = fc.value("/metadata/name"_json_pointer, std::string());
    c.name = fc.value("/spec/clusterName"_json_pointer, std::string());
    if (fc.contains("spec") && fc["spec"].contains("requested")) {
      if (auto r = kube::parseResourceList(fc["spec"]["requested"]); r.ok()) c.requested = *r;
    }
    if (fc.contains("status") && fc["status"].contains("granted")) {
      if (auto r = kube::parseResourceList(fc["status"]["granted"]); r.ok()) c.granted = *r;
    }
    c.mode = fc.value("/spec/mode"_json_pointer, std::string(kModePush));
    c.lastHeartbeat = now;  // give every consumer a full grace period after a restart
    consumers_[id] = std::move(c);
  }
  spdlog::info("event=provider_loaded consumers={}", consumers_.size());
  capacity_.start();
  return kube::Status::OK();
}

kube::Status ProviderService::checkToken(const std::string& tokenText,
                                         const std::string& consumerId) {
  kube::Result<Token> token = verifyToken(tokenText, identity_.tokenKey,
                                          std::chrono::system_clock::now());
  if (!token.ok()) return token.error();
  if (token->clusterId != identity_.clusterId) {
    return makeError(Code::Unauthorized, "token refused: issued for another cluster");
  }
  const std::string recordName = tokenSecretName(token->id);
  kube::Result<json> record = client_.get(kube::resources::kSecrets, kSys, recordName);
  if (!record.ok()) {
    if (record.code() == Code::NotFound) {
      return makeError(Code::Unauthorized,
                       "token refused: unknown (no record of token " + token->id +
                           " on the provider: never issued here, or already cleaned up)");
    }
    return record.error();
  }
  kube::Result<std::string> hash =
      base64Decode(record->value("/data/secretHash"_json_pointer, std::string()), "secretHash");
  if (!hash.ok() || !constantTimeEquals(*hash, tokenSecretHash(token->secret))) {
    return makeError(Code::Unauthorized, "token refused: altered (secret does not match)");
  }
  json& annotations = (*record)["metadata"]["annotations"];
  if (annotations.is_object() && annotations.contains(std::string(kAnnotationUsedBy))) {
    return makeError(Code::Conflict,
                     "token refused: already used (by cluster " +
                         annotations.value(std::string(kAnnotationUsedBy), "") + " at " +
                         annotations.value(std::string(kAnnotationUsedAt), "") + ")");
  }
  // Mark used with an optimistic-concurrency update: of two concurrent joins with the same
  // token, exactly one wins; the other gets Conflict.
  annotations[std::string(kAnnotationUsedBy)] = consumerId;
  annotations[std::string(kAnnotationUsedAt)] = rfc3339(std::chrono::system_clock::now());
  kube::Result<json> updated = client_.update(kube::resources::kSecrets, kSys, *record);
  if (!updated.ok()) {
    if (updated.code() == Code::Conflict) {
      return makeError(Code::Conflict, "token refused: already used (concurrently)");
    }
    return updated.error();
  }
  return kube::Status::OK();
}

kube::Result<ResourceMap> ProviderService::currentBudget() {
  ResourceMap free;
  if (config_.policy.explicitBudget.empty() && capacity_.hasSynced()) {
    free = capacity_.freeAllocatable();
  } else if (config_.policy.explicitBudget.empty()) {
    // Before the watches have listed once (just after start).
    kube::Result<json> nodes = client_.list(kube::resources::kNodes, "");
    if (!nodes.ok()) return nodes.error();
    kube::ListOptions opts;
    opts.fieldSelector = "status.phase!=Succeeded,status.phase!=Failed";
    kube::Result<json> pods = client_.list(kube::resources::kPods, "", opts);
    if (!pods.ok()) return pods.error();
    // As ProviderCapacity::freeAllocatable: the Pods that run for consumers are covered by
    // their grants.
    json own = json::array();
    for (const json& p : pods->value("items", json::array())) {
      if (!runsForAConsumer(p)) own.push_back(p);
    }
    free = freeAllocatable(nodes->value("items", json::array()), own);
  }
  return budgetFor(free, config_.policy);
}

ResourceMap ProviderService::grantedToOthers(const std::string& consumerId) {
  ResourceMap others;
  for (const auto& [id, c] : consumers_) {
    if (id != consumerId) others = addResources(others, c.granted);
  }
  return others;
}

kube::Result<ResourceMap> ProviderService::computeGrant(const std::string& consumerId,
                                                        const ResourceMap& requested) {
  kube::Result<ResourceMap> budget = currentBudget();
  if (!budget.ok()) return budget.error();
  return grantFor(requested, *budget, grantedToOthers(consumerId), config_.policy);
}

void ProviderService::waitForCapacitySync() {
  // Pools arrive in heartbeats, after the join started the watches: wait for their first
  // list rather than answer "no matching node" from an empty cache.
  if (!capacity_.hasSynced()) (void)capacity_.waitForSync(std::chrono::seconds(2));
}

ProviderSummary ProviderService::poolSummary(const NodeSelector& selector) {
  waitForCapacitySync();
  return capacity_.poolSummary(selector);
}

ProviderSummary ProviderService::poolSummaryFor(const std::string& consumerId,
                                                const std::string& pool,
                                                const NodeSelector& selector) {
  waitForCapacitySync();
  return capacity_.poolSummaryFor(selector, consumerId, pool);
}

kube::Result<std::vector<PoolGrant>> ProviderService::computePoolGrants(
    const std::string& consumerId, const std::vector<PoolSpec>& pools) {
  kube::Result<ResourceMap> budget = currentBudget();
  if (!budget.ok()) return budget.error();
  return grantPools(pools, *budget, grantedToOthers(consumerId), config_.policy,
                    [this](const PoolSpec& p) { return poolSummary(p.nodeSelector); });
}

std::map<std::string, ResourceMap> ProviderService::usedByPool(const std::string& consumerId) {
  if (capacity_.hasSynced()) return capacity_.usedByPool(consumerId);
  return listUsedByPool(consumerId);
}

std::map<std::string, ResourceMap> ProviderService::listUsedByPool(const std::string& consumerId) {
  std::map<std::string, ResourceMap> out;
  kube::ListOptions opts;
  opts.labelSelector =
      std::string(kLabelOriginClusterId) + "=" + consumerId + "," + std::string(kLabelPool);
  kube::Result<json> pods = client_.list(kube::resources::kPods, "", opts);
  if (!pods.ok()) return out;
  for (const json& p : pods->value("items", json::array())) {
    const std::string pool =
        p.value("/metadata/labels"_json_pointer, json::object()).value(std::string(kLabelPool), "");
    out[pool] = addResources(out[pool], podRequests(json::array({p})));
  }
  return out;
}

kube::Result<std::string> ProviderService::upsertForeignCluster(const std::string& consumerId,
                                                                const std::string& consumerName,
                                                                const ResourceMap& requested,
                                                                const ResourceMap& granted,
                                                                const std::string& endpoint,
                                                                const std::string& mode) {
  std::string name = dnsLabel(consumerName);
  for (int attempt = 0; attempt < 2; ++attempt) {
    kube::Result<json> existing = client_.get(kForeignClusters, "", name);
    if (existing.ok() &&
        existing->value("/spec/clusterID"_json_pointer, std::string()) != consumerId) {
      name = dnsLabel(consumerName) + "-" + consumerId.substr(0, 8);  // same name, other cluster
      continue;
    }
    json fc = makeForeignCluster(name, consumerId, consumerName, std::string(kRoleConsumer),
                                 endpoint);
    fc["spec"]["tenantNamespace"] = tenantNamespace(consumerId);
    fc["spec"]["mode"] = mode;
    fc["spec"]["requested"] = toJson(requested);
    kube::Result<json> written = existing.ok() ? [&] {
      fc["metadata"]["resourceVersion"] = (*existing)["metadata"]["resourceVersion"];
      return client_.update(kForeignClusters, "", fc);
    }()
                                               : client_.create(kForeignClusters, "", fc);
    if (!written.ok()) return written.error();
    auto now = std::chrono::system_clock::now();
    json status = providerConditions(true, "Joined", "consumer joined",
                                     written->value("/status/conditions"_json_pointer, json()), now,
                                     tunnelCondition(consumerId));
    status["granted"] = toJson(granted);
    status["lastHeartbeatTime"] = rfc3339(now);
    patchStatus(name, status);
    return name;
  }
  return makeError(Code::Conflict, "ForeignCluster name for " + consumerName + " is taken");
}

void ProviderService::patchStatus(const std::string& fcName, const json& status) {
  patchForeignClusterStatus(client_, fcName, status);
}

kube::Status ProviderService::join(const Caller& caller, const v1::JoinRequest& req,
                                   v1::JoinResponse* resp) {
  const std::string& consumerId = req.consumer_id();
  if (!validClusterId(consumerId)) {
    return makeError(Code::Invalid, "join refused: consumer_id is not a cluster ID (UUID)");
  }
  if (consumerId == identity_.clusterId) {
    return makeError(Code::Invalid, "join refused: a cluster cannot peer with itself");
  }
  if (kube::Status s = checkToken(req.token(), consumerId); !s.ok()) {
    spdlog::warn("event=join_refused consumer={} peer={} reason=\"{}\"", consumerId,
                 caller.address, s.error().message);
    return s;
  }
  // A token issued for pull mode names the consumer's link port: bind it to this consumer.
  std::string mode = kModePush, endpoint = req.consumer_endpoint();
  if (kube::Result<Token> t = parseToken(req.token()); t.ok()) {
    kube::Result<PullTarget> pull = bindPullTarget(client_, t->id, consumerId);
    if (pull.ok()) {
      mode = kModePull;
      endpoint = pull->consumerEndpoint;
    } else if (pull.code() != Code::NotFound) {
      return pull.error();
    }
  }
  kube::Result<std::string> cert = kube::signCsrFor(identity_.ca, req.csr_pem(), false,
                                                    config_.certTtl);
  if (!cert.ok()) return makeError(Code::Invalid, "join refused: " + cert.error().message);
  kube::Result<kube::CertificateInfo> info = kube::certificateInfo(*cert);
  if (!info.ok() || info->commonName != consumerId) {
    return makeError(Code::Invalid, "join refused: the CSR's CommonName must be the consumer ID");
  }
  json tenantLabels = ownershipLabels(consumerId);
  tenantLabels[std::string(kube::kPodSecurityEnforceLabel)] =
      std::string(kube::podSecurityLevelName(config_.podSecurity));
  tenantLabels[std::string(kube::kPodSecurityEnforceVersionLabel)] = "latest";
  json ns = {{"apiVersion", "v1"},
             {"kind", "Namespace"},
             {"metadata", {{"name", tenantNamespace(consumerId)}, {"labels", tenantLabels}}}};
  if (kube::Status s = ignoreAlreadyExists(client_.create(kube::resources::kNamespaces, "", ns));
      !s.ok()) {
    return s;
  }
  ResourceMap requested = fromProto(req.requested());
  ResourceMap granted;
  {
    base::MutexLock lock(mu_);
    kube::Result<ResourceMap> g = computeGrant(consumerId, requested);
    if (!g.ok()) return g.error();
    granted = *g;
    if (kube::Status s = checkGrantNotEmpty(granted); !s.ok()) return s;
    Consumer& c = consumers_[consumerId];
    c.name = req.consumer_name();
    c.mode = mode;
    c.requested = requested;
    c.granted = granted;
    c.lastHeartbeat = std::chrono::system_clock::now();
    c.connected = true;
  }
  kube::Result<std::string> fcName = upsertForeignCluster(
      consumerId, req.consumer_name(), requested, granted, endpoint, mode);
  if (!fcName.ok()) return fcName.error();
  {
    base::MutexLock lock(mu_);
    consumers_[consumerId].fcName = *fcName;
  }
  resp->set_provider_id(identity_.clusterId);
  resp->set_provider_name(identity_.clusterName);
  resp->set_certificate_pem(*cert);
  resp->set_ca_pem(identity_.ca.certPem);
  resp->set_tenant_namespace(tenantNamespace(consumerId));
  toProto(granted, resp->mutable_granted());
  spdlog::info("event=consumer_joined consumer={} name={} granted={} cert_not_after={}",
               consumerId, req.consumer_name(), formatResources(granted),
               rfc3339(info->notAfter));
  return kube::Status::OK();
}

kube::Status ProviderService::requireActive(const Caller& caller, Consumer* out) {
  base::MutexLock lock(mu_);
  auto it = consumers_.find(caller.clusterId);
  if (it == consumers_.end()) {
    return makeError(Code::Forbidden, "no active peering for cluster " + caller.clusterId +
                                          " (revoked or never joined)");
  }
  if (out) *out = it->second;
  return kube::Status::OK();
}

kube::Status ProviderService::authorizeConsumer(const Caller& caller) {
  return requireActive(caller, nullptr);
}

kube::Status ProviderService::renewCertificate(const Caller& caller, const v1::RenewRequest& req,
                                               v1::RenewResponse* resp) {
  if (kube::Status s = requireActive(caller, nullptr); !s.ok()) return s;
  kube::Result<std::string> cert = kube::signCsrFor(identity_.ca, req.csr_pem(), false,
                                                    config_.certTtl);
  if (!cert.ok()) return makeError(Code::Invalid, "renewal refused: " + cert.error().message);
  kube::Result<kube::CertificateInfo> info = kube::certificateInfo(*cert);
  if (!info.ok() || info->commonName != caller.clusterId) {
    return makeError(Code::Forbidden, "renewal refused: the CSR's CommonName must be "
                                      "the caller's cluster ID");
  }
  resp->set_certificate_pem(*cert);
  spdlog::info("event=certificate_renewed consumer={} not_after={}", caller.clusterId,
               rfc3339(info->notAfter));
  return kube::Status::OK();
}

kube::Status ProviderService::heartbeat(const Caller& caller, const v1::HeartbeatRequest& req,
                                        v1::HeartbeatResponse* resp) {
  Consumer c;
  if (kube::Status s = requireActive(caller, &c); !s.ok()) return s;
  UsageSource usageSource;
  {
    base::MutexLock lock(mu_);
    usageSource = usageSource_;
  }
  std::optional<ResourceMap> counted =
      usageSource ? usageSource(caller.clusterId) : std::nullopt;
  ResourceMap used;
  if (counted) {
    used = std::move(*counted);
  } else {
    // No stream counts them: the consumer's reflected Pods carry its ID as their origin.
    kube::ListOptions opts;
    opts.labelSelector = std::string(kLabelOriginClusterId) + "=" + caller.clusterId;
    kube::Result<json> pods = client_.list(kube::resources::kPods, "", opts);
    if (pods.ok()) used = podRequests(pods->value("items", json::array()));
  }
  for (const char* r : {"cpu", "memory", "pods"}) used.try_emplace(r);  // zero when absent
  ResourceMap requested = fromProto(req.requested());
  std::vector<PoolSpec> pools;
  for (const v1::PoolRequest& p : req.pools()) pools.push_back(poolFromProto(p));
  auto now = std::chrono::system_clock::now();
  bool writeStatus = false;
  {
    base::MutexLock lock(mu_);
    auto it = consumers_.find(caller.clusterId);
    if (it == consumers_.end()) return makeError(Code::Forbidden, "peering revoked");
    Consumer& cur = it->second;
    const bool poolsChanged = pools != cur.pools;
    const bool poolRefused =
        std::any_of(cur.poolGrants.begin(), cur.poolGrants.end(),
                    [](const PoolGrant& g) { return !g.refusedReason.empty(); });
    if (!pools.empty() && (poolsChanged || poolRefused)) {
      // Pools: each its own grant; the peering's grant is their sum. A refused pool is
      // tried again on every heartbeat (nodes may have come, or grants gone).
      kube::Result<std::vector<PoolGrant>> g = computePoolGrants(caller.clusterId, pools);
      if (g.ok()) {
        if (poolsChanged || *g != cur.poolGrants) writeStatus = true;
        if (poolsChanged) {
          spdlog::info("event=pools_granted consumer={} pools={} granted={}", caller.clusterId,
                       pools.size(), formatResources(sumGranted(*g)));
        }
        cur.pools = pools;
        cur.poolGrants = std::move(*g);
        cur.granted = sumGranted(cur.poolGrants);
        if (!requested.empty()) cur.requested = requested;
      }
    } else if (pools.empty() && !cur.pools.empty()) {
      // The last pool went: back to one grant for the whole peering.
      kube::Result<ResourceMap> g =
          computeGrant(caller.clusterId, requested.empty() ? cur.requested : requested);
      if (g.ok()) {
        cur.pools.clear();
        cur.poolGrants.clear();
        if (!requested.empty()) cur.requested = requested;
        cur.granted = *g;
        writeStatus = true;
      }
    } else if (pools.empty() && !requested.empty() && requested != cur.requested) {
      kube::Result<ResourceMap> g = computeGrant(caller.clusterId, requested);
      if (g.ok()) {
        cur.requested = requested;
        cur.granted = *g;
        writeStatus = true;
      }
    }
    cur.lastHeartbeat = now;
    if (network_) {
      resp->set_network_digest(network_->digestFor(caller.clusterId));
      TunnelCondition tunnel = network_->state().condition(caller.clusterId);
      if (!(tunnel == cur.lastTunnel)) writeStatus = true;
      cur.lastTunnel = tunnel;
    }
    if (!cur.connected || now - cur.lastStatusWrite > std::chrono::seconds(10)) writeStatus = true;
    if (writeStatus) cur.lastStatusWrite = now;
    cur.connected = true;
    c = cur;
  }
  resp->set_sent_unix_nanos(req.sent_unix_nanos());
  toProto(c.granted, resp->mutable_granted());
  toProto(used, resp->mutable_used());
  // The caller's own Pods are covered by its grant: the free it can still fill is what the
  // others leave. Counted as used here, a lone consumer's virtual node would shrink as its own
  // Pods arrived, and its scheduler would stop at half the provider.
  ProviderSummary summary = currentSummary(now);
  summary.pooledFree = addResources(summary.pooledFree, used);
  summaryToProto(summary, resp->mutable_summary());
  json poolStatus = json::array();
  if (!c.poolGrants.empty()) {
    std::map<std::string, ResourceMap> poolUsed = usedByPool(caller.clusterId);
    for (PoolGrant g : c.poolGrants) {
      if (g.refusedReason.empty() || g.refusedReason == "NothingToLend") {
        // What the provider and the other consumers leave on its nodes: as for the
        // peering's summary above, the caller's own Pods of the pool are covered by the
        // pool's grant.
        g.summary = poolSummaryFor(caller.clusterId, g.name, poolFor(c.pools, g.name));
      }
      g.used = poolUsed[g.name];
      for (const char* r : {"cpu", "memory", "pods"}) g.used.try_emplace(r);
      poolGrantToProto(g, resp->add_pools());
      poolStatus.push_back({{"name", g.name},
                            {"granted", toJson(g.granted)},
                            {"used", toJson(g.used)},
                            {"refusedReason", g.refusedReason},
                            {"refusedMessage", g.refusedMessage}});
    }
  }
  if (writeStatus) {
    json status = providerConditions(true, "HeartbeatReceived", "consumer agent is reachable",
                                     json(), now, c.lastTunnel);
    status["pools"] = poolStatus;
    status["granted"] = toJson(c.granted);
    status["used"] = toJson(used);
    status["lastHeartbeatTime"] = rfc3339(now);
    patchStatus(c.fcName, status);
  }
  return kube::Status::OK();
}

ProviderSummary ProviderService::currentSummary(std::chrono::system_clock::time_point now) {
  base::MutexLock lock(summaryMu_);
  // One NodeList and PodList per interval however many consumers heartbeat.
  if (summaryAt_.time_since_epoch().count() != 0 && now >= summaryAt_ &&
      now - summaryAt_ < config_.summaryMaxAge) {
    return summary_;
  }
  if (capacity_.hasSynced()) {
    summary_ = capacity_.summary();
    summaryAt_ = now;
    return summary_;
  }
  // Before the watches have listed once (just after start): one LIST each.
  kube::Result<json> nodes = client_.list(kube::resources::kNodes, "");
  kube::Result<json> pods = client_.list(kube::resources::kPods, "");
  if (!nodes.ok() || !pods.ok()) {
    spdlog::warn("event=provider_summary_failed error=\"{}\"",
                 !nodes.ok() ? nodes.error().message : pods.error().message);
    return summary_;  // the last good one (empty before the first)
  }
  summary_ = summarizeProvider((*nodes)["items"], (*pods)["items"]);
  summaryAt_ = now;
  return summary_;
}

kube::Result<int> ProviderService::cleanupConsumer(const std::string& consumerId) {
  NetworkController* network = nullptr;
  {
    base::MutexLock lock(mu_);
    consumers_.erase(consumerId);
    network = network_;
  }
  if (network) network->forget(consumerId);
  int deleted = 0;
  kube::ListOptions sel;
  sel.labelSelector = ownershipSelector(consumerId);
  kube::Status firstError;
  const std::vector<std::pair<kube::ResourceRef, std::string>> kinds = {
      {kube::resources::kNamespaces, ""},
      {kForeignClusters, ""},
      {kube::resources::kSecrets, kSys},
      {kube::resources::kConfigMaps, kSys}};
  for (const auto& [ref, ns] : kinds) {
    kube::Result<json> list = client_.list(ref, ns, sel);
    if (!list.ok()) {
      if (firstError.ok()) firstError = list.error();
      continue;
    }
    for (const json& item : list->value("items", json::array())) {
      std::string name = item.value("/metadata/name"_json_pointer, std::string());
      kube::Result<json> r = client_.remove(ref, ns, name);
      if (r.ok()) {
        ++deleted;
      } else if (r.code() != Code::NotFound && firstError.ok()) {
        firstError = r.error();
      }
    }
  }
  spdlog::info("event=consumer_cleaned_up consumer={} deleted={}", consumerId, deleted);
  if (!firstError.ok()) return firstError.error();
  return deleted;
}

kube::Status ProviderService::unpeer(const Caller& caller, const v1::UnpeerRequest& req,
                                     v1::UnpeerResponse* resp) {
  if (kube::Status s = requireActive(caller, nullptr); !s.ok()) return s;
  spdlog::info("event=unpeer_requested consumer={} force={}", caller.clusterId, req.force());
  kube::Result<int> n = cleanupConsumer(caller.clusterId);
  if (!n.ok()) return n.error();
  resp->set_deleted_objects(*n);
  return kube::Status::OK();
}

void ProviderService::tick(std::chrono::system_clock::time_point now) {
  markSilentConsumers(now);
  // API reads at most every 500 ms (revocations) and 30 s (token expiry), whatever the loop.
  if (now - lastRevocationScan_ >= std::chrono::milliseconds(500)) {
    lastRevocationScan_ = now;
    scanRevocations();
  }
  if (now - lastTokenSweep_ >= std::chrono::seconds(30)) {
    lastTokenSweep_ = now;
    sweepExpiredTokens(now);
  }
}

void ProviderService::scanRevocations() {
  // Revocation records left by `strait unpeer --force` while this agent was away.
  kube::ListOptions sel;
  sel.labelSelector = std::string(kLabelComponent) + "=revocation";
  kube::Result<json> records = client_.list(kube::resources::kConfigMaps, kSys, sel);
  if (records.ok()) {
    for (const json& rec : records->value("items", json::array())) {
      std::string id = rec.value("/data/clusterID"_json_pointer, std::string());
      std::string name = rec.value("/metadata/name"_json_pointer, std::string());
      if (!validClusterId(id)) {
        spdlog::warn("event=revocation_record_invalid name={}", name);
        (void)client_.remove(kube::resources::kConfigMaps, kSys, name);
        continue;
      }
      spdlog::info("event=revocation_record_found consumer={}", id);
      if (cleanupConsumer(id).ok()) {
        (void)client_.remove(kube::resources::kConfigMaps, kSys, name);
      }
    }
  }
}

void ProviderService::markSilentConsumers(std::chrono::system_clock::time_point now) {
  std::vector<std::pair<std::string, std::string>> lost;
  {
    base::MutexLock lock(mu_);
    for (auto& [id, c] : consumers_) {
      if (c.connected && now - c.lastHeartbeat > config_.consumerLostAfter) {
        c.connected = false;
        lost.emplace_back(id, c.fcName);
      }
    }
  }
  for (const auto& [id, fcName] : lost) {
    spdlog::warn("event=consumer_lost consumer={}", id);
    patchStatus(fcName, providerConditions(false, "HeartbeatMissed",
                                           "no heartbeat from the consumer agent", json(), now,
                                           tunnelCondition(id)));
  }
}

void ProviderService::sweepExpiredTokens(std::chrono::system_clock::time_point now) {
  // Expired token records (used ones are kept until then, so that reuse says "already used").
  kube::ListOptions tokSel;
  tokSel.labelSelector = std::string(kLabelComponent) + "=token";
  kube::Result<json> tokens = client_.list(kube::resources::kSecrets, kSys, tokSel);
  if (tokens.ok()) {
    int64_t nowUnix = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    for (const json& t : tokens->value("items", json::array())) {
      kube::Result<std::string> exp =
          base64Decode(t.value("/data/expires"_json_pointer, std::string()), "expires");
      int64_t expires = 0;
      bool parsed = exp.ok() &&
                    std::from_chars(exp->data(), exp->data() + exp->size(), expires).ec == std::errc();
      if (parsed && expires + 60 < nowUnix) {
        (void)client_.remove(kube::resources::kSecrets, kSys,
                             t.value("/metadata/name"_json_pointer, std::string()));
      }
    }
  }
}

kube::Status ProviderService::checkGrant(const std::string& consumerId, const json& pod) {
  ResourceMap granted;
  {
    base::MutexLock lock(mu_);
    auto it = consumers_.find(consumerId);
    if (it == consumers_.end()) return makeError(Code::Forbidden, "peering revoked");
    granted = it->second.granted;
  }
  kube::ListOptions opts;
  opts.labelSelector = ownershipSelector(consumerId);
  kube::Result<json> pods = client_.list(kube::resources::kPods, "", opts);
  if (!pods.ok()) return pods.error();
  // Pods the reflection stream created carry the reflection's origin label instead
  // (reflection/labels.h; peering/ cannot include it): count those too, once each.
  kube::ListOptions reflected;
  reflected.labelSelector = std::string(kLabelOriginClusterId) + "=" + consumerId;
  kube::Result<json> more = client_.list(kube::resources::kPods, "", reflected);
  if (!more.ok()) return more.error();
  json all = pods->value("items", json::array());
  std::set<std::string> seen;
  for (const json& p : all) seen.insert(p.value("/metadata/uid"_json_pointer, std::string()));
  for (const json& p : more->value("items", json::array())) {
    if (seen.insert(p.value("/metadata/uid"_json_pointer, std::string())).second) all.push_back(p);
  }
  return checkGrantUsage(consumerId, pod, granted, podRequests(all));
}

kube::Status ProviderService::admitPodWithUsage(const std::string& consumerId, const json& pod,
                                                const ResourceMap& used) {
  ResourceMap granted;
  {
    base::MutexLock lock(mu_);
    auto it = consumers_.find(consumerId);
    if (it == consumers_.end()) return makeError(Code::Forbidden, "peering revoked");
    granted = it->second.granted;
  }
  return checkGrantUsage(consumerId, pod, granted, used);
}

kube::Status ProviderService::checkPool(const std::string& consumerId, const json& pod) {
  const std::string pool = podPool(pod);
  if (pool.empty()) return kube::Status::OK();
  std::optional<PoolGrant> grant;
  NodeSelector selector;
  {
    base::MutexLock lock(mu_);
    auto it = consumers_.find(consumerId);
    if (it == consumers_.end()) return makeError(Code::Forbidden, "peering revoked");
    for (const PoolGrant& g : it->second.poolGrants) {
      if (g.name == pool && g.refusedReason.empty()) grant = g;
    }
    selector = poolFor(it->second.pools, pool);
  }
  auto refuse = [&](const std::string& why) {
    spdlog::warn("event=pod_refused consumer={} pool={} reason=\"{}\"", consumerId, pool, why);
    return makeError(Code::Forbidden, "pod refused: " + why);
  };
  if (!grant) return refuse("no granted pool " + pool + " for this consumer");
  if (!podPinnedTo(pod, selector)) {
    return refuse("the pod is not pinned to the nodes of pool " + pool +
                  " (spec.nodeSelector must carry its node selector)");
  }
  // Listed, not from the watch: the admission must see the Pods created just before.
  ResourceMap used = listUsedByPool(consumerId)[pool];
  ResourceMap asked = podRequests(json::array({pod}));
  for (const auto& [name, q] : asked) {
    if (q.isZero()) continue;
    auto g = grant->granted.find(name);
    kube::Quantity limit = g == grant->granted.end() ? kube::Quantity() : g->second;
    kube::Quantity inUse = used.count(name) ? used[name] : kube::Quantity();
    kube::Result<kube::Quantity> total = inUse.add(q);
    if (!total.ok() || limit < *total) {
      return refuse("pod exceeds the grant of pool " + pool + ": " + name + " requested " +
                    q.toString() + ", in use " + inUse.toString() + ", granted " +
                    limit.toString());
    }
  }
  return kube::Status::OK();
}

kube::Status ProviderService::checkGrantUsage(const std::string& consumerId, const json& pod,
                                              const ResourceMap& granted, ResourceMap used) {
  if (kube::Status s = checkPool(consumerId, pod); !s.ok()) return s;
  ResourceMap asked = podRequests(json::array({pod}));
  for (const auto& [name, q] : asked) {
    if (q.isZero()) continue;
    auto g = granted.find(name);
    kube::Quantity grant = g == granted.end() ? kube::Quantity() : g->second;
    kube::Quantity inUse = used.count(name) ? used[name] : kube::Quantity();
    kube::Result<kube::Quantity> total = inUse.add(q);
    if (!total.ok() || grant < *total) {
      spdlog::warn("event=pod_refused consumer={} resource={} asked={} used={} granted={}",
                   consumerId, name, q.toString(), inUse.toString(), grant.toString());
      return makeError(Code::Forbidden, "pod exceeds the grant: " + name + " requested " +
                                            q.toString() + ", in use " + inUse.toString() +
                                            ", granted " + grant.toString());
    }
  }
  return kube::Status::OK();
}

kube::Status ProviderService::stream(const Caller& caller, EventStream& s) {
  if (kube::Status st = requireActive(caller, nullptr); !st.ok()) return st;
  StreamHandler handler;
  {
    base::MutexLock lock(mu_);
    handler = streamHandler_;
  }
  if (!handler) return PeeringHandler::stream(caller, s);
  return handler(caller, s);
}

void ProviderService::setStreamHandler(StreamHandler handler) {
  base::MutexLock lock(mu_);
  streamHandler_ = std::move(handler);
}

kube::Status ProviderService::network(const Caller& caller, const v1::NetworkRequest& req,
                                      v1::NetworkResponse* resp) {
  Consumer c;
  if (kube::Status s = requireActive(caller, &c); !s.ok()) return s;
  NetworkController* network = nullptr;
  {
    base::MutexLock lock(mu_);
    network = network_;
  }
  if (!network) return PeeringHandler::network(caller, req, resp);
  return network->serveConsumer(caller.clusterId, c.fcName, c.mode, req, resp);
}

void ProviderService::setNetwork(NetworkController* network) {
  base::MutexLock lock(mu_);
  network_ = network;
}

std::string ProviderService::consumerPodIpView(const std::string& consumerId,
                                               const std::string& ip) {
  NetworkController* network = nullptr;
  {
    base::MutexLock lock(mu_);
    network = network_;
  }
  return network ? network->state().toLocalView(consumerId, ip) : ip;
}

TunnelCondition ProviderService::tunnelCondition(const std::string& consumerId) {
  NetworkController* network = nullptr;
  {
    base::MutexLock lock(mu_);
    network = network_;
  }
  return network ? network->state().condition(consumerId) : TunnelCondition();
}

void ProviderService::setUsageSource(UsageSource source) {
  base::MutexLock lock(mu_);
  usageSource_ = std::move(source);
}

bool ProviderService::isActive(const std::string& consumerId) {
  base::MutexLock lock(mu_);
  return consumers_.count(consumerId) > 0;
}

}  // namespace strait::peering
