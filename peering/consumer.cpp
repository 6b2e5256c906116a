// Consumer side of peering (see consumer.h). Logs one line per event, key=value, never a
// token or key.
#include "peering/consumer.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <cmath>
#include <random>
#include <set>

#include "peering/foreign_cluster.h"
#include "peering/names.h"
#include "peering/policy.h"
#include "peering/pools.h"
#include "peering/pull.h"
#include "peering/token.h"

namespace strait::peering {
namespace {

using json = nlohmann::json;
using kube::Code;
const std::string kSys(kSystemNamespace);
// How long an unchanged status (only lastHeartbeatTime and latencyMs would differ) goes
// without a write, as on the provider side.
constexpr std::chrono::seconds kStatusRefresh(10);

std::string dataField(const json& secret, const char* key) {
  auto it = secret.find("data");
  if (it == secret.end() || !it->is_object() || !it->contains(key)) return {};
  kube::Result<std::string> v = base64Decode((*it)[key].get<std::string>(), key);
  return v.ok() ? *v : std::string();
}

// What the peering's virtual Node says of itself (VirtualNodeReady follows its Ready).
struct VirtualNodeState {
  bool ready = false;
  std::string reason = "NotJoined";
  std::string message = "the virtual node is created once the peering is up";
};

VirtualNodeState virtualNodeState(kube::Client& client, const std::string& fcName) {
  const std::string name = "strait-" + fcName;
  kube::Result<json> node = client.get(kube::resources::kNodes, "", name);
  if (!node.ok()) {
    return {false, "VirtualNodeAbsent",
            node.code() == Code::NotFound ? "no virtual node " + name + " in this cluster"
                                          : "reading node " + name + ": " + node.error().message};
  }
  for (const json& c : node->value("/status/conditions"_json_pointer, json::array())) {
    if (!c.is_object() || c.value("type", "") != "Ready") continue;
    const bool ready = c.value("status", "") == "True";
    std::string message = c.value("message", "");
    return {ready, ready ? "VirtualNodeReady" : "VirtualNodeNotReady",
            "node " + name + (ready ? " is Ready" : " is not Ready") +
                (message.empty() ? "" : ": " + message)};
  }
  return {false, "VirtualNodeNotReady", "node " + name + " reports no Ready condition yet"};
}

// VirtualNodeReady of a peering with pools: every granted pool's node Ready.
VirtualNodeState poolNodesState(kube::Client& client, const std::string& fcName,
                                const std::vector<PoolGrant>& pools) {
  VirtualNodeState all{true, "VirtualNodeReady", ""};
  int granted = 0;
  for (const PoolGrant& g : pools) {
    if (!g.refusedReason.empty()) continue;
    ++granted;
    const std::string name = poolNodeName(fcName, g.name);
    VirtualNodeState one{false, "VirtualNodeNotReady", ""};
    kube::Result<json> node = client.get(kube::resources::kNodes, "", name);
    if (!node.ok()) {
      one = {false, "VirtualNodeAbsent", "no virtual node " + name + " in this cluster"};
    } else {
      for (const json& c : node->value("/status/conditions"_json_pointer, json::array())) {
        if (c.is_object() && c.value("type", "") == "Ready") {
          one.ready = c.value("status", "") == "True";
        }
      }
      one.message = "node " + name + (one.ready ? " is Ready" : " is not Ready");
    }
    if (!one.ready && all.ready) all = {false, one.reason, ""};
    all.message += (all.message.empty() ? "" : "; ") + one.message;
  }
  if (granted == 0) return {false, "NoPoolGranted", "the provider granted none of the pools"};
  return all;
}

// The four conditions as one status fragment, keeping transition times from `fc`.
json conditionsFor(const json& fc, bool authenticated, const std::string& authReason,
                   const std::string& authMessage, bool connected,
                   const std::string& connReason, const std::string& connMessage,
                   std::chrono::system_clock::time_point now,
                   const VirtualNodeState& vnode = VirtualNodeState(),
                   const TunnelCondition& tunnel = TunnelCondition()) {
  json previous = fc.contains("status") && fc["status"].is_object()
                      ? fc["status"].value("conditions", json::array())
                      : json::array();
  return peeringConditions(authenticated, authReason, authMessage, connected, connReason,
                           connMessage, vnode.ready, vnode.reason, vnode.message, previous, now,
                           tunnel);
}

void toProto(const json& list, v1::ResourceList* out) {
  kube::Result<ResourceMap> r = kube::parseResourceList(list);
  if (!r.ok()) return;
  resourcesToProto(*r, out);
}

json fromProto(const v1::ResourceList& l) {
  json out = json::object();
  for (const auto& [k, v] : l.items()) out[k] = v;
  return out;
}

}  // namespace

ConsumerController::ConsumerController(const ClusterIdentity& identity, kube::Client& client,
                                       ConsumerConfig config)
    : identity_(identity), client_(client), config_(std::move(config)) {}

ConsumerController::~ConsumerController() = default;

void ConsumerController::patchStatus(const std::string& fcName, const json& status) {
  patchForeignClusterStatus(client_, fcName, status);
}

void ConsumerController::deliverRevocations(std::chrono::system_clock::time_point now) {
  if (now - lastRevocationAttempt_ < config_.heartbeatInterval) return;
  lastRevocationAttempt_ = now;
  kube::ListOptions sel;
  sel.labelSelector = std::string(kLabelComponent) + "=revocation-pending";
  kube::Result<json> records = client_.list(kube::resources::kSecrets, kSys, sel);
  if (!records.ok()) return;
  pullRevocations_.clear();
  for (const json& rec : records->value("items", json::array())) {
    std::string name = rec.value("/metadata/name"_json_pointer, std::string());
    std::string providerId = dataField(rec, "providerID");
    std::string mode = dataField(rec, "mode");
    if (mode == kModePull) pullRevocations_.insert(providerId);
    kube::Result<std::string> address = dialAddress(providerId, mode, dataField(rec, "endpoint"));
    if (!address.ok()) continue;
    ClientConfig cc;
    cc.endpoint = *address;
    cc.serverCaPem = dataField(rec, "ca.crt");
    cc.serverName = agentServerName(providerId);
    cc.clientCert = {dataField(rec, "tls.crt"), dataField(rec, "tls.key")};
    kube::Result<std::unique_ptr<RpcClient>> rpc = makeRpcClient(cc);
    if (!rpc.ok()) {
      spdlog::warn("event=revocation_record_invalid name={}", name);
      (void)client_.remove(kube::resources::kSecrets, kSys, name);
      continue;
    }
    v1::UnpeerRequest req;
    req.set_force(true);
    v1::UnpeerResponse resp;
    kube::Status s = (*rpc)->unpeer(req, &resp, std::min(config_.callTimeout,
                                                         std::chrono::milliseconds(2000)));
    // Forbidden: the provider no longer knows us (already cleaned up), also done.
    if (s.ok() || s.code() == Code::Forbidden) {
      spdlog::info("event=revocation_delivered provider={} deleted={}", providerId,
                   resp.deleted_objects());
      (void)client_.remove(kube::resources::kSecrets, kSys, name);
      pullRevocations_.erase(providerId);
    }
  }
}

kube::Result<std::string> ConsumerController::dialAddress(const std::string& providerId,
                                                          const std::string& mode,
                                                          const std::string& endpoint) {
  if (mode != kModePull) return endpoint;
  if (!config_.pullEndpoint) {
    return kube::makeError(Code::Unavailable, "pull mode is not available in this agent");
  }
  return config_.pullEndpoint(providerId);
}

std::chrono::system_clock::time_point ConsumerController::tick(
    std::chrono::system_clock::time_point now, std::chrono::milliseconds pollInterval) {
  deliverRevocations(now);
  // When the next pass is due: the earliest of what each peering waits for.
  std::chrono::system_clock::time_point next = lastRevocationAttempt_ + config_.heartbeatInterval;
  auto dueAt = [&](std::chrono::system_clock::time_point t) { next = std::min(next, t); };
  kube::Result<json> list = config_.listForeignClusters ? config_.listForeignClusters()
                                                        : client_.list(kForeignClusters, "");
  if (!list.ok()) {
    spdlog::warn("event=foreigncluster_list_failed error=\"{}\"", list.error().message);
    return now + pollInterval;
  }
  std::set<std::string> seen;
  std::set<std::string> pull = pullRevocations_;
  for (const json& fc : list->value("items", json::array())) {
    if (fc.value("/spec/role"_json_pointer, std::string()) != kRoleProvider) continue;
    if (fc.contains("metadata") && fc["metadata"].contains("deletionTimestamp")) continue;
    std::string providerId = fc.value("/spec/clusterID"_json_pointer, std::string());
    std::string fcName = fc.value("/metadata/name"_json_pointer, std::string());
    if (!validClusterId(providerId)) continue;
    seen.insert(providerId);
    bool isPull = fc.value("/spec/mode"_json_pointer, std::string()) == kModePull;
    if (isPull) pull.insert(providerId);
    auto it = peerings_.find(providerId);
    if (it == peerings_.end()) {
      Peering p;
      if (loadCredential(providerId, fcName, &p)) {
        p.lastSuccess = now;  // a full grace period before calling the provider lost
        p.connected = true;
        it = peerings_.emplace(providerId, std::move(p)).first;
      } else if (isPull && !(config_.pullLinked && config_.pullLinked(providerId))) {
        // The provider agent has not dialed in yet: Join travels over its link.
        if (waitingNoted_.insert(providerId).second) {
          std::string msg = "waiting for the provider agent to dial this cluster's link port";
          json status = conditionsFor(fc, false, "WaitingForProvider", msg, false,
                                      "WaitingForProvider", msg, now);
          status["joinTokenRef"] = fc.value("/spec/tokenSecretRef"_json_pointer, std::string());
          patchStatus(fcName, status);
        }
        dueAt(now + pollInterval);  // the link comes up without an event here
        continue;
      } else {
        const std::string attempt =
            fc.value("/metadata/uid"_json_pointer, std::string()) + "/" +
            fc.value("/spec/tokenSecretRef"_json_pointer, std::string());
        JoinBackoff& b = joinBackoff_[providerId];
        if (b.attempt != attempt) b = JoinBackoff{attempt, {}, {}};
        if (now < b.next) {
          dueAt(b.next);
          continue;
        }
        if (join(fc, now)) {
          joinBackoff_.erase(providerId);
          dueAt(now);  // the next pass loads the credential and heartbeats
        } else {
          using std::chrono::milliseconds;
          b.delay = b.delay.count() == 0 ? milliseconds(100)
                                         : std::min(b.delay * 2, milliseconds(30000));
          static thread_local std::mt19937 rng{std::random_device{}()};
          std::uniform_real_distribution<double> jitter(0.8, 1.2);
          b.next = now + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                             b.delay * jitter(rng));
          dueAt(b.next);
        }
        continue;
      }
    }
    Peering& p = it->second;
    if (now - p.lastAttempt >= config_.heartbeatInterval - config_.heartbeatInterval / 4) {
      heartbeat(fc, p, now);
    }
    dueAt(p.lastAttempt + config_.heartbeatInterval);
    auto renewAt = [&p] { return p.issuedAt + (p.notAfter - p.issuedAt) * 2 / 3; };
    if (!p.revoked && p.notAfter > p.issuedAt) {
      if (now >= renewAt()) renew(providerId, p, now);
      // Due again at two thirds of the new certificate's life, or, when the renewal
      // failed, a heartbeat interval later.
      dueAt(renewAt() > now ? renewAt() : now + config_.heartbeatInterval);
    }
  }
  for (auto it = peerings_.begin(); it != peerings_.end();) {
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    announceDown(it->first, it->second);
    if (config_.network) config_.network->forget(it->first);
    it = peerings_.erase(it);
  }
  for (auto it = joinBackoff_.begin(); it != joinBackoff_.end();) {
    it = seen.count(it->first) ? std::next(it) : joinBackoff_.erase(it);
  }
  for (auto it = waitingNoted_.begin(); it != waitingNoted_.end();) {
    it = seen.count(*it) ? std::next(it) : waitingNoted_.erase(it);
  }
  if (config_.pullRetain) config_.pullRetain(pull);
  return next;
}

void ConsumerController::announceDown(const std::string& providerId, Peering& p) {
  if (!p.announced) return;
  p.announced = false;
  spdlog::info("event=peering_down provider={} name={}", providerId, p.fcName);
  if (config_.observer) config_.observer->peeringDown(providerId);
}

bool ConsumerController::loadCredential(const std::string& providerId, const std::string& fcName,
                                        Peering* p) {
  kube::Result<json> secret =
      client_.get(kube::resources::kSecrets, kSys, credentialSecretName(providerId));
  if (!secret.ok()) return false;
  kube::KeyPair cert{dataField(*secret, "tls.crt"), dataField(*secret, "tls.key")};
  std::string mode = dataField(*secret, "mode");
  kube::Result<std::string> address = dialAddress(providerId, mode, dataField(*secret, "endpoint"));
  if (!address.ok()) {
    spdlog::warn("event=credential_unusable provider={} error=\"{}\"", providerId,
                 address.error().message);
    return false;
  }
  ClientConfig cc;
  cc.endpoint = *address;
  cc.serverCaPem = dataField(*secret, "ca.crt");
  cc.serverName = agentServerName(providerId);
  cc.clientCert = cert;
  kube::Result<kube::CertificateInfo> info = kube::certificateInfo(cert.certPem);
  kube::Result<std::unique_ptr<RpcClient>> rpc = makeRpcClient(cc);
  if (!info.ok() || !rpc.ok()) {
    spdlog::warn("event=credential_unusable provider={}", providerId);
    return false;
  }
  p->fcName = fcName;
  p->rpc = std::shared_ptr<RpcClient>(std::move(*rpc));
  p->tenantNamespace = dataField(*secret, "tenantNamespace");
  if (mode == kModePull) p->relayEndpoint = *address;
  p->notAfter = info->notAfter;
  p->issuedAt = info->notBefore;
  std::string issued = secret->value("/metadata/annotations"_json_pointer, json::object())
                           .value(std::string(kAnnotationIssuedAt), std::string());
  int64_t issuedUnix = 0;
  if (std::from_chars(issued.data(), issued.data() + issued.size(), issuedUnix).ec == std::errc() &&
      issuedUnix > 0) {
    p->issuedAt = std::chrono::system_clock::time_point(std::chrono::seconds(issuedUnix));
  }
  return true;
}

bool ConsumerController::join(const json& fc, std::chrono::system_clock::time_point now) {
  const std::string fcName = fc.value("/metadata/name"_json_pointer, std::string());
  const std::string providerId = fc.value("/spec/clusterID"_json_pointer, std::string());
  const std::string tokenRef = fc.value("/spec/tokenSecretRef"_json_pointer, std::string());
  if (tokenRef.empty()) return false;
  kube::Result<json> tokenSecret = client_.get(kube::resources::kSecrets, kSys, tokenRef);
  // Refused earlier (the token is deleted then) or not yet written.
  if (!tokenSecret.ok()) return false;
  SecretString tokenText(dataField(*tokenSecret, "token"));
  auto refuse = [&](const std::string& reason, const std::string& message) {
    spdlog::warn("event=join_failed provider={} reason={} message=\"{}\"", providerId, reason,
                 message);
    json status = conditionsFor(fc, false, reason, message, false, reason, message, now);
    status["joinTokenRef"] = tokenRef;
    patchStatus(fcName, status);
    if (reason == "JoinRefused") {
      (void)client_.remove(kube::resources::kSecrets, kSys, tokenRef);
    }
    return false;
  };
  kube::Result<Token> token = parseToken(tokenText.reveal());
  if (!token.ok()) return refuse("JoinRefused", token.error().message);
  if (token->clusterId != providerId) {
    return refuse("JoinRefused", "token is for cluster " + token->clusterId +
                                     ", the ForeignCluster names " + providerId);
  }
  const std::string mode = fc.value("/spec/mode"_json_pointer, std::string(kModePush));
  kube::Result<std::string> address = dialAddress(providerId, mode, token->endpoint);
  if (!address.ok()) return refuse("ProviderUnreachable", address.error().message);
  kube::Result<std::string> ca = fetchPinnedCa(*address, token->caFingerprint,
                                               config_.callTimeout);
  if (!ca.ok()) {
    // Nothing listens at the endpoint, or it cannot be reached at all: no point waiting.
    const std::string& m = ca.error().message;
    bool noAnswer = false;
    for (const char* cause : {"Connection refused", "No route to host", "Network is unreachable",
                              "Name or service not known"}) {
      noAnswer = noAnswer || m.find(cause) != std::string::npos;
    }
    if (ca.code() == Code::Unavailable) {
      return refuse(noAnswer ? "EndpointUnreachable" : "ProviderUnreachable", m);
    }
    return refuse("JoinRefused", m);
  }
  kube::Result<kube::KeyAndCsr> kc =
      kube::makeKeyAndCsr(identity_.clusterId, {std::string(kConsumerOrganization)});
  if (!kc.ok()) return refuse("InternalError", kc.error().message);
  SecretString keyPem(std::move(kc->keyPem));
  ClientConfig cc;
  cc.endpoint = *address;
  cc.serverCaPem = *ca;
  cc.serverName = agentServerName(providerId);
  kube::Result<std::unique_ptr<RpcClient>> bootstrap = makeRpcClient(cc);
  if (!bootstrap.ok()) return refuse("InternalError", bootstrap.error().message);
  v1::JoinRequest req;
  req.set_token(tokenText.reveal());
  req.set_consumer_id(identity_.clusterId);
  req.set_consumer_name(identity_.clusterName);
  req.set_csr_pem(kc->csrPem);
  req.set_consumer_endpoint(config_.ownEndpoint);
  req.set_consumer_ca_pem(identity_.ca.certPem);
  if (fc.contains("spec") && fc["spec"].contains("requested")) {
    toProto(fc["spec"]["requested"], req.mutable_requested());
  }
  v1::JoinResponse resp;
  kube::Status s = (*bootstrap)->join(req, &resp, config_.callTimeout);
  req.clear_token();
  if (!s.ok()) {
    bool transient = s.code() == Code::Unavailable || s.code() == Code::ServerTimeout;
    return refuse(transient ? "ProviderUnreachable" : "JoinRefused", s.error().message);
  }
  if (!kube::verifyIssuedBy(*ca, resp.certificate_pem()).ok()) {
    return refuse("JoinRefused", "the provider returned a certificate not signed by its CA");
  }
  kube::Result<kube::CertificateInfo> info = kube::certificateInfo(resp.certificate_pem());
  if (!info.ok()) return refuse("JoinRefused", info.error().message);
  auto nowSec = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  json cred = {{"apiVersion", "v1"},
               {"kind", "Secret"},
               {"type", "Opaque"},
               {"metadata",
                {{"name", credentialSecretName(providerId)},
                 {"namespace", kSys},
                 {"labels", ownershipLabels(providerId)},
                 {"annotations", {{std::string(kAnnotationIssuedAt), std::to_string(nowSec)}}}}},
               {"data",
                {{"tls.crt", base64Encode(resp.certificate_pem())},
                 {"tls.key", base64Encode(keyPem.reveal())},
                 {"ca.crt", base64Encode(*ca)},
                 {"endpoint", base64Encode(token->endpoint)},
                 {"mode", base64Encode(mode)},
                 {"providerID", base64Encode(providerId)},
                 {"tenantNamespace", base64Encode(resp.tenant_namespace())}}}};
  kube::Result<json> created = client_.create(kube::resources::kSecrets, kSys, cred);
  if (!created.ok() && created.code() == Code::AlreadyExists) {
    created = client_.update(kube::resources::kSecrets, kSys, cred);
  }
  if (!created.ok()) return refuse("InternalError", created.error().message);
  (void)client_.remove(kube::resources::kSecrets, kSys, tokenRef);
  // `strait peer` may have given up (its timeout) and removed the ForeignCluster while the
  // join was under way: then undo the join on both sides instead of leaving a peering the
  // user was told failed.
  kube::Result<json> still = client_.get(kForeignClusters, "", fcName);
  const std::string uid = fc.value("/metadata/uid"_json_pointer, std::string());
  if ((!still.ok() && still.code() == Code::NotFound) ||
      (still.ok() && (still->value("/metadata/uid"_json_pointer, std::string()) != uid ||
                      still->contains("/metadata/deletionTimestamp"_json_pointer)))) {
    cc.clientCert = {resp.certificate_pem(), keyPem.reveal()};
    kube::Result<std::unique_ptr<RpcClient>> rpc = makeRpcClient(cc);
    if (rpc.ok()) {
      v1::UnpeerRequest ur;
      ur.set_force(true);
      v1::UnpeerResponse ures;
      (void)(*rpc)->unpeer(ur, &ures, config_.callTimeout);
    }
    (void)client_.remove(kube::resources::kSecrets, kSys, credentialSecretName(providerId));
    spdlog::info("event=join_undone provider={} reason=\"the ForeignCluster went during the "
                 "join\"", providerId);
    return false;
  }
  json status = conditionsFor(fc, true, "CertificateIssued",
                              "client certificate signed by the provider CA", true, "Joined",
                              "joined the provider", now);
  status["granted"] = fromProto(resp.granted());
  status["tenantNamespace"] = resp.tenant_namespace();
  status["certificateNotAfter"] = rfc3339(info->notAfter);
  status["lastHeartbeatTime"] = rfc3339(now);
  if (mode == kModePull) status["relayEndpoint"] = *address;
  patchStatus(fcName, status);
  spdlog::info("event=joined provider={} name={} tenant_namespace={} cert_not_after={}",
               providerId, resp.provider_name(), resp.tenant_namespace(), rfc3339(info->notAfter));
  return true;
}

void ConsumerController::heartbeat(const json& fc, Peering& p,
                                   std::chrono::system_clock::time_point now) {
  p.lastAttempt = now;
  v1::HeartbeatRequest req;
  auto sent = std::chrono::steady_clock::now();
  req.set_sent_unix_nanos(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count());
  if (fc.contains("spec") && fc["spec"].contains("requested")) {
    toProto(fc["spec"]["requested"], req.mutable_requested());
  }
  kube::Result<std::vector<PoolSpec>> pools = poolsOfForeignCluster(fc);
  if (pools.ok()) {
    for (const PoolSpec& pool : *pools) poolToProto(pool, req.add_pools());
  } else {
    // `kubectl edit` can write anything: keep the last pools the provider knows.
    spdlog::warn("event=pools_invalid provider={} error=\"{}\"", p.fcName,
                 pools.error().message);
    for (const PoolSpec& pool : p.lastPools) poolToProto(pool, req.add_pools());
  }
  v1::HeartbeatResponse resp;
  auto timeout = std::min(config_.callTimeout, config_.lostAfter);
  kube::Status s = p.rpc->heartbeat(req, &resp, timeout);
  auto done = std::chrono::system_clock::now();
  if (s.ok()) {
    double latencyMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count();
    if (!p.connected) spdlog::info("event=provider_connected provider={}", p.fcName);
    const bool reconnected = !p.connected;
    p.connected = true;
    p.revoked = false;
    p.lastSuccess = done;
    const std::string id = fc.value("/spec/clusterID"_json_pointer, std::string());
    TunnelCondition tunnel;
    if (config_.network) {
      config_.network->onProviderHeartbeat(id, p.fcName, *p.rpc, resp.network_digest(),
                                           reconnected, done);
      tunnel = config_.network->state().condition(id);
    }
    json status = conditionsFor(fc, true, "CertificateIssued",
                                "client certificate signed by the provider CA", true,
                                "HeartbeatAnswered", "provider agent is reachable", done,
                                virtualNodeState(client_, p.fcName), tunnel);
    status["granted"] = fromProto(resp.granted());
    status["used"] = fromProto(resp.used());
    status["certificateNotAfter"] = rfc3339(p.notAfter);
    if (!p.relayEndpoint.empty()) status["relayEndpoint"] = p.relayEndpoint;
    if (pools.ok()) p.lastPools = *pools;
    std::vector<PoolGrant> poolGrants;
    json poolStatus = json::array();
    for (const v1::PoolGrant& pg : resp.pools()) {
      PoolGrant g = poolGrantFromProto(pg);
      const bool granted = g.refusedReason.empty();
      poolStatus.push_back({{"name", g.name},
                            {"nodeName", granted ? poolNodeName(p.fcName, g.name) : ""},
                            {"granted", kube::formatResourceList(g.granted)},
                            {"used", kube::formatResourceList(g.used)},
                            {"refusedReason", g.refusedReason},
                            {"refusedMessage", g.refusedMessage}});
      poolGrants.push_back(std::move(g));
    }
    status["pools"] = poolStatus;
    if (!poolGrants.empty()) {
      // The peering's virtual nodes are its pools' (none is named strait-<provider>).
      status["conditions"] = conditionsFor(fc, true, "CertificateIssued",
                                           "client certificate signed by the provider CA", true,
                                           "HeartbeatAnswered", "provider agent is reachable",
                                           done, poolNodesState(client_, p.fcName, poolGrants),
                                           tunnel)["conditions"];
    }
    // Written when something but the clock fields changed (a condition, the grant, the
    // usage), else every kStatusRefresh: one write per peering per second was most of an
    // idle agent's API traffic.
    if (reconnected || status != p.lastStatus || done - p.lastStatusWrite >= kStatusRefresh) {
      p.lastStatus = status;
      p.lastStatusWrite = done;
      status["latencyMs"] = std::round(latencyMs * 100) / 100;
      status["lastHeartbeatTime"] = rfc3339(done);
      patchStatus(p.fcName, status);
    }
    const std::string providerId = fc.value("/spec/clusterID"_json_pointer, std::string());
    if (!p.live) {
      p.live = std::make_shared<LivePeering>(identity_.clusterId, providerId, p.fcName,
                                             p.tenantNamespace);
      if (config_.network) p.live->setNetwork(&config_.network->state());
    }
    p.live->setRpc(p.rpc);
    p.live->setHeartbeat(resourcesFromProto(resp.granted()), summaryFromProto(resp.summary()),
                         std::move(poolGrants));
    if (!p.announced) {
      p.announced = true;
      spdlog::info("event=peering_up provider={} name={}", providerId, p.fcName);
      if (config_.observer) config_.observer->peeringUp(p.live);
    }
    return;
  }
  bool revoked = s.code() == Code::Forbidden;
  bool lost = revoked || done - p.lastSuccess >= config_.lostAfter;
  if (lost && (p.connected || revoked != p.revoked)) {
    p.connected = false;
    p.revoked = revoked;
    spdlog::warn("event=provider_lost provider={} revoked={} error=\"{}\"", p.fcName, revoked,
                 s.error().message);
    const std::string id = fc.value("/spec/clusterID"_json_pointer, std::string());
    if (revoked) {
      announceDown(id, p);
      if (config_.network) config_.network->forget(id);
      p.live.reset();  // a new one if the provider accepts us again
    }
    patchStatus(p.fcName,
                conditionsFor(fc, !revoked, revoked ? "Revoked" : "CertificateIssued",
                              revoked ? s.error().message : "client certificate signed by the provider CA",
                              false, revoked ? "Revoked" : "HeartbeatFailed", s.error().message,
                              done, virtualNodeState(client_, p.fcName),
                              config_.network ? config_.network->state().condition(id)
                                              : TunnelCondition()));
  }
}

void ConsumerController::renew(const std::string& providerId, Peering& p,
                               std::chrono::system_clock::time_point now) {
  kube::Result<kube::KeyAndCsr> kc =
      kube::makeKeyAndCsr(identity_.clusterId, {std::string(kConsumerOrganization)});
  if (!kc.ok()) return;
  SecretString keyPem(std::move(kc->keyPem));
  v1::RenewRequest req;
  req.set_csr_pem(kc->csrPem);
  v1::RenewResponse resp;
  kube::Status s = p.rpc->renewCertificate(req, &resp, config_.callTimeout);
  if (!s.ok()) {
    spdlog::warn("event=renewal_failed provider={} error=\"{}\"", providerId, s.error().message);
    return;
  }
  kube::Result<json> secret =
      client_.get(kube::resources::kSecrets, kSys, credentialSecretName(providerId));
  if (!secret.ok()) return;
  if (!kube::verifyIssuedBy(dataField(*secret, "ca.crt"), resp.certificate_pem()).ok()) {
    spdlog::warn("event=renewal_failed provider={} error=\"certificate not signed by the "
                 "provider CA\"", providerId);
    return;
  }
  auto nowSec = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  (*secret)["data"]["tls.crt"] = base64Encode(resp.certificate_pem());
  (*secret)["data"]["tls.key"] = base64Encode(keyPem.reveal());
  (*secret)["metadata"]["annotations"][std::string(kAnnotationIssuedAt)] = std::to_string(nowSec);
  kube::Result<json> updated = client_.update(kube::resources::kSecrets, kSys, *secret);
  if (!updated.ok()) {
    spdlog::warn("event=renewal_store_failed provider={} error=\"{}\"", providerId,
                 updated.error().message);
    return;
  }
  Peering fresh;
  if (loadCredential(providerId, p.fcName, &fresh)) {
    fresh.lastAttempt = p.lastAttempt;
    fresh.lastSuccess = p.lastSuccess;
    fresh.connected = p.connected;
    fresh.live = p.live;
    fresh.announced = p.announced;
    p = std::move(fresh);
    if (p.live) p.live->setRpc(p.rpc);
  }
  spdlog::info("event=certificate_renewed provider={} not_after={}", providerId,
               rfc3339(p.notAfter));
}

}  // namespace strait::peering
