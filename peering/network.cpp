// The tunnel's control plane (see network.h). Logs one line per event, key=value; public keys
// may be logged, the private key never.
#include "peering/network.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <variant>

#include "kube/object.h"
#include "peering/encoding.h"
#include "peering/foreign_cluster.h"
#include "peering/names.h"
#include "peering/network_alloc.h"
#include "peering/pull.h"

namespace strait::peering {
namespace {

using json = nlohmann::json;
using kube::Code;
const std::string kSys(kSystemNamespace);
constexpr std::string_view kKeyField = "privateKey";

std::string digestOf(const v1::NetworkResponse& resp) {
  std::string bytes;
  resp.SerializeToString(&bytes);
  tunnel::HashValue h = tunnel::hash(
      {tunnel::Bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())});
  return tunnel::toHex(tunnel::Bytes(h.data(), 16));
}

std::string nodeInternalIp(const json& node) {
  for (const json& a : node.value("/status/addresses"_json_pointer, json::array())) {
    if (a.is_object() && a.value("type", "") == "InternalIP") return a.value("address", "");
  }
  return {};
}

std::vector<std::string> nodePodCidrs(const json& node) {
  std::vector<std::string> out;
  for (const json& c : node.value("/spec/podCIDRs"_json_pointer, json::array())) {
    if (c.is_string()) out.push_back(c.get<std::string>());
  }
  std::string one = node.value("/spec/podCIDR"_json_pointer, std::string());
  if (out.empty() && !one.empty()) out.push_back(one);
  return out;
}

std::string unixToRfc3339(int64_t unix) {
  return rfc3339(std::chrono::system_clock::time_point(std::chrono::seconds(unix)));
}

// "the provider cluster cloud" / "the consumer cluster home".
std::string sideName(const std::string& role, const std::string& name) {
  return "the " + role + " cluster " + name;
}

}  // namespace

NetworkController::NetworkController(const ClusterIdentity& identity, kube::Client& client,
                                     NetworkConfig config)
    : identity_(identity),
      client_(client),
      config_(std::move(config)),
      state_(config_.gateway ? TunnelCondition{false, "Negotiating",
                                               "waiting for the tunnel negotiation"}
                             : TunnelCondition{false, "TunnelNotConfigured",
                                               "this cluster (" + identity.clusterName +
                                                   ") runs no gateway (strait agent --gateway)"}) {}

NetworkController::~NetworkController() { stop(); }

TunnelCondition NetworkController::localRefusal() const {
  return {false, "TunnelNotConfigured",
          "this cluster (" + identity_.clusterName + ") runs no gateway (strait agent --gateway)"};
}

kube::Status NetworkController::resolveLocal() {
  kube::Result<tunnel::IpPrefix> pool = parseCidr("--remap-pool", config_.remapPool);
  if (!pool.ok()) return pool.error();
  pool_ = *pool;
  if (!config_.serviceCidr.empty()) {
    kube::Result<tunnel::IpPrefix> svc = parseCidr("--service-cidr", config_.serviceCidr);
    if (!svc.ok()) return svc.error();
    serviceCidr_ = *svc;
  }
  std::string nodePodCidr;
  if (!config_.gatewayNode.empty()) {
    kube::Result<json> node = client_.get(kube::resources::kNodes, "", config_.gatewayNode);
    if (!node.ok()) {
      return kube::makeError(node.code() == Code::NotFound ? Code::Invalid : node.code(),
                             "--gateway-node " + config_.gatewayNode + ": " +
                                 node.error().message);
    }
    gatewayIp_ = nodeInternalIp(*node);
    if (gatewayIp_.empty()) {
      return kube::makeError(Code::Invalid, "--gateway-node " + config_.gatewayNode +
                                                ": the Node has no InternalIP address");
    }
    std::vector<std::string> cidrs = nodePodCidrs(*node);
    if (!cidrs.empty()) nodePodCidr = cidrs.front();
  }
  if (!config_.podCidr.empty()) {
    kube::Result<tunnel::IpPrefix> pod = parseCidr("--pod-cidr", config_.podCidr);
    if (!pod.ok()) return pod.error();
    podCidr_ = *pod;
  } else {
    kube::Result<json> nodes = client_.list(kube::resources::kNodes, "");
    if (!nodes.ok()) return nodes.error();
    std::vector<tunnel::IpPrefix> all;
    for (const json& n : nodes->value("items", json::array())) {
      if (n.value("/metadata/labels/type"_json_pointer, std::string()) == "virtual-kubelet") {
        continue;  // a virtual node's pods live in its provider
      }
      for (const std::string& c : nodePodCidrs(n)) {
        kube::Result<tunnel::IpPrefix> p =
            parseCidr("Node " + kube::getName(n) + " spec.podCIDR", c);
        if (p.ok()) all.push_back(*p);
      }
    }
    kube::Result<tunnel::IpPrefix> cover = coveringCidr(all);
    if (!cover.ok()) {
      return kube::makeError(Code::Invalid,
                             "--pod-cidr: no Node of this cluster has an IPv4 spec.podCIDR to "
                             "derive it from; give --pod-cidr");
    }
    podCidr_ = *cover;
  }
  probeAddress_ = config_.probeAddress;
  if (probeAddress_.empty() && !nodePodCidr.empty()) {
    kube::Result<tunnel::IpPrefix> p = parseCidr("gateway node podCIDR", nodePodCidr);
    if (p.ok()) probeAddress_ = firstHostAddress(*p);
  }
  if (!probeAddress_.empty()) {
    base::Result<tunnel::IpAddress> a = tunnel::IpAddress::parse(probeAddress_);
    if (!a.ok() || !podCidr_.contains(*a)) {
      return kube::makeError(Code::Invalid, "probe address " + probeAddress_ +
                                                " is not inside the pod CIDR " +
                                                podCidr_.toString());
    }
  }
  endpoint_ = config_.endpoint;
  if (endpoint_.empty()) {
    if (config_.port == 0) {
      return kube::makeError(Code::Invalid,
                             "--gateway-endpoint is required with --gateway-port 0");
    }
    if (gatewayIp_.empty()) {
      return kube::makeError(Code::Invalid,
                             "--gateway-endpoint is required when --gateway-node is not set");
    }
    endpoint_ = gatewayIp_ + ":" + std::to_string(config_.port);
  }
  if (base::Result<tunnel::Endpoint> e = tunnel::Endpoint::parse(endpoint_); !e.ok()) {
    return kube::makeError(Code::Invalid,
                           "--gateway-endpoint " + endpoint_ + ": " + e.error().message);
  }
  return kube::Status::OK();
}

kube::Status NetworkController::loadOrCreateKey(tunnel::PrivateKey* key, std::string* version) {
  const std::string name(kGatewayKeySecret);
  for (int attempt = 0; attempt < 2; ++attempt) {
    kube::Result<json> secret = client_.get(kube::resources::kSecrets, kSys, name);
    if (secret.ok()) {
      kube::Result<std::string> text = base64Decode(
          secret->value("data", json::object()).value(std::string(kKeyField), ""), "privateKey");
      std::optional<std::array<uint8_t, 32>> raw =
          text.ok() ? tunnel::keyFromBase64(*text) : std::nullopt;
      if (text.ok()) tunnel::wipeMemory(text->data(), text->size());
      if (!raw) {
        return kube::makeError(Code::Invalid, "Secret " + kSys + "/" + name +
                                                  ": data.privateKey is not a WireGuard "
                                                  "private key (base64 of 32 bytes)");
      }
      std::copy(raw->begin(), raw->end(), key->data());
      tunnel::wipeMemory(raw->data(), raw->size());
      *version = kube::getResourceVersion(*secret);
      return kube::Status::OK();
    }
    if (secret.code() != Code::NotFound) return secret.error();
    tunnel::PrivateKey fresh = tunnel::generatePrivateKey();
    std::string b64 = tunnel::keyToBase64(fresh.bytes());
    json obj = {{"apiVersion", "v1"},
                {"kind", "Secret"},
                {"type", "Opaque"},
                {"metadata",
                 {{"name", name},
                  {"namespace", kSys},
                  {"labels",
                   {{std::string(kLabelManagedBy), std::string(kManagedByValue)},
                    {std::string(kLabelComponent), "gateway"}}}}},
                {"data", {{std::string(kKeyField), base64Encode(b64)}}}};
    tunnel::wipeMemory(b64.data(), b64.size());
    kube::Result<json> made = client_.create(kube::resources::kSecrets, kSys, obj);
    if (made.ok()) {
      *key = fresh;
      *version = kube::getResourceVersion(*made);
      spdlog::info("event=gateway_key_created secret={}/{}", kSys, name);
      return kube::Status::OK();
    }
    if (made.code() != Code::AlreadyExists) return made.error();
  }
  return kube::makeError(Code::Conflict, "Secret " + kSys + "/" + name + " keeps changing");
}

void NetworkController::loadStoredChoices() {
  kube::Result<json> list = client_.list(kForeignClusters, "");
  if (!list.ok()) return;
  base::MutexLock l(mu_);
  for (const json& fc : list->value("items", json::array())) {
    std::string id = fc.value("/spec/clusterID"_json_pointer, std::string());
    std::string seen = fc.value("/status/network/remoteCIDRSeenHere"_json_pointer, std::string());
    if (!id.empty() && parseCidr("stored remap", seen).ok()) stored_[id] = seen;
  }
}

kube::Status NetworkController::start() {
  if (!config_.gateway) return kube::Status::OK();
  if (!config_.startGateway) {
    return kube::makeError(Code::Invalid, "network: no gateway factory (startGateway)");
  }
  if (kube::Status s = resolveLocal(); !s.ok()) return s;
  tunnel::PrivateKey key;
  std::string version;
  if (kube::Status s = loadOrCreateKey(&key, &version); !s.ok()) return s;
  kube::Result<std::unique_ptr<GatewayPort>> gw = config_.startGateway(key, probeAddress_);
  if (!gw.ok()) return gw.error();
  gateway_ = std::move(*gw);
  {
    base::MutexLock l(mu_);
    publicKey_ = tunnel::keyToBase64(gateway_->publicKey());
    keyVersion_ = version;
  }
  loadStoredChoices();
  syncFabric(true);
  spdlog::info("event=network_started pod_cidr={} remap_pool={} endpoint={} probe={} "
               "gateway_node={} public_key={}",
               podCidr_.toString(), pool_.toString(), endpoint_, probeAddress_,
               config_.gatewayNode, tunnel::keyToBase64(gateway_->publicKey()));
  return kube::Status::OK();
}

void NetworkController::stop() {
  if (!gateway_) return;
  std::vector<std::string> ids;
  {
    base::MutexLock l(mu_);
    for (const auto& [id, r] : remotes_) {
      if (r.tunnel) ids.push_back(id);
    }
  }
  for (const std::string& id : ids) gateway_->removePeer(id);
  gateway_.reset();
}

v1::NetworkOffer NetworkController::offer() const {
  v1::NetworkOffer o;
  if (!gateway_) return o;
  o.set_gateway(true);
  {
    base::MutexLock l(mu_);
    o.set_public_key(publicKey_);
  }
  o.set_endpoint(endpoint_);
  o.set_pod_cidr(podCidr_.toString());
  o.set_probe_address(probeAddress_);
  return o;
}

std::variant<NetworkController::Accepted, TunnelCondition> NetworkController::accept(
    const std::string& remoteId, const std::string& remoteRole, const v1::NetworkOffer& o) {
  Accepted a;
  std::optional<std::array<uint8_t, 32>> key = tunnel::keyFromBase64(o.public_key());
  if (!key || std::all_of(key->begin(), key->end(), [](uint8_t b) { return b == 0; })) {
    return TunnelCondition{false, "InvalidKey",
                           "the " + remoteRole + "'s gateway public key \"" + o.public_key() +
                               "\" is not a WireGuard key (base64 of 32 bytes)"};
  }
  if (gateway_ && *key == gateway_->publicKey()) {
    return TunnelCondition{false, "InvalidKey",
                           "the " + remoteRole + " offers this gateway's own public key"};
  }
  kube::Result<tunnel::IpPrefix> cidr = parseCidr("the " + remoteRole + "'s pod CIDR",
                                                  o.pod_cidr());
  if (!cidr.ok()) return TunnelCondition{false, "InvalidCIDR", cidr.error().message};
  if (!o.probe_address().empty()) {
    base::Result<tunnel::IpAddress> p = tunnel::IpAddress::parse(o.probe_address());
    if (!p.ok() || !cidr->contains(*p)) {
      return TunnelCondition{false, "InvalidCIDR",
                             "the " + remoteRole + "'s probe address \"" + o.probe_address() +
                                 "\" is not inside its pod CIDR " + cidr->toString()};
    }
  }
  if (!o.endpoint().empty()) {
    base::Result<tunnel::Endpoint> e = tunnel::Endpoint::parse(o.endpoint());
    if (!e.ok()) {
      return TunnelCondition{false, "InvalidEndpoint",
                             "the " + remoteRole + "'s gateway endpoint \"" + o.endpoint() +
                                 "\": " + e.error().message};
    }
    a.peer.endpoint = *e;
  }
  RemapRequest req;
  req.remote = *cidr;
  req.pool = pool_;
  req.taken.push_back(podCidr_);
  if (serviceCidr_) req.taken.push_back(*serviceCidr_);
  base::MutexLock l(mu_);
  for (const auto& [id, seen] : stored_) {
    if (id == remoteId) continue;
    if (kube::Result<tunnel::IpPrefix> p = parseCidr("stored", seen); p.ok()) {
      req.taken.push_back(*p);
    }
  }
  if (auto it = stored_.find(remoteId); it != stored_.end()) {
    if (kube::Result<tunnel::IpPrefix> p = parseCidr("stored", it->second); p.ok()) {
      req.previous = *p;
    }
  }
  kube::Result<tunnel::IpPrefix> seen = chooseSeenAs(req);
  if (!seen.ok()) {
    return TunnelCondition{false,
                           seen.code() == Code::Conflict ? "RemapPoolExhausted" : "InvalidCIDR",
                           seen.error().message};
  }
  stored_[remoteId] = seen->toString();  // reserved at once: a concurrent choice skips it
  std::copy(key->begin(), key->end(), a.peer.publicKey.begin());
  a.peer.cidr = *cidr;
  if (!(*seen == *cidr)) a.peer.seenAs = *seen;
  a.peer.probeTarget = o.probe_address();
  a.remoteCidr = cidr->toString();
  a.seenAs = seen->toString();
  a.remoteKey = o.public_key();
  a.remoteEndpoint = o.endpoint();
  a.remoteProbe = o.probe_address();
  return a;
}

TunnelCondition NetworkController::apply(const std::string& remoteId, const std::string& fcName,
                                         bool consumerSide,
                                         const std::variant<Accepted, TunnelCondition>& result,
                                         const std::string& seenThere,
                                         std::optional<uint16_t> keepalive,
                                         std::optional<tunnel::Endpoint> endpointOverride) {
  TunnelCondition cond;
  json network = json::object();
  if (const Accepted* a = std::get_if<Accepted>(&result)) {
    tunnel::GatewayPeer peer = a->peer;
    if (endpointOverride) peer.endpoint = endpointOverride;
    if (keepalive) peer.persistentKeepalive = *keepalive;
    base::Status s = gateway_->upsertPeer(remoteId, peer);
    if (!s.ok()) {
      gateway_->removePeer(remoteId);
      cond = {false, "GatewayError", "the gateway refused the peer: " + s.error().message};
    } else {
      bool wasTunnel = false;
      {
        base::MutexLock l(mu_);
        Remote& r = remotes_[remoteId];
        wasTunnel = r.tunnel;
        r.fcName = fcName;
        r.consumerSide = consumerSide;
        r.tunnel = true;
        r.peer = peer;
        r.remoteCidr = a->remoteCidr;
        r.seenAs = a->seenAs;
        r.seenThere = seenThere;
        r.remoteKey = a->remoteKey;
        r.remoteEndpoint = peer.endpoint ? peer.endpoint->toString() : std::string();
        r.remoteProbe = a->remoteProbe;
        r.refusal = {};
      }
      state_.setView(remoteId, {a->remoteCidr, a->seenAs});
      cond = wasTunnel ? state_.condition(remoteId)
                       : TunnelCondition{false, "Handshaking",
                                         "tunnel configured; waiting for the first handshake and "
                                         "probe answer"};
      state_.setCondition(remoteId, cond);
      network = {{"localCIDR", podCidr_.toString()},
                 {"localCIDRSeenThere", seenThere.empty() ? json(nullptr) : json(seenThere)},
                 {"remoteCIDR", a->remoteCidr},
                 {"remoteCIDRSeenHere", a->seenAs},
                 {"remapped", a->seenAs != a->remoteCidr},
                 {"remoteEndpoint", peer.endpoint ? json(peer.endpoint->toString()) : json()},
                 {"remotePublicKey", a->remoteKey},
                 {"remoteProbeAddress", a->remoteProbe},
                 {"persistentKeepalive", peer.persistentKeepalive}};
      writeNetworkStatus(fcName, network);
      spdlog::info("event=tunnel_configured remote={} remote_cidr={} seen_as={} seen_there={} "
                   "endpoint={} keepalive={}",
                   remoteId, a->remoteCidr, a->seenAs, seenThere,
                   peer.endpoint ? peer.endpoint->toString() : "", peer.persistentKeepalive);
      return cond;
    }
  } else {
    cond = std::get<TunnelCondition>(result);
  }
  if (gateway_) gateway_->removePeer(remoteId);
  {
    base::MutexLock l(mu_);
    Remote& r = remotes_[remoteId];
    r.fcName = fcName;
    r.consumerSide = consumerSide;
    r.tunnel = false;
    r.refusal = cond;
    r.remoteCidr.clear();
    r.seenThere.clear();
  }
  state_.setView(remoteId, {});
  state_.setCondition(remoteId, cond);
  network = {{"localCIDR", gateway_ ? json(podCidr_.toString()) : json()},
             {"localCIDRSeenThere", nullptr},
             {"remoteCIDR", nullptr},
             {"remapped", nullptr},
             {"remoteEndpoint", nullptr},
             {"remotePublicKey", nullptr},
             {"remoteProbeAddress", nullptr},
             {"persistentKeepalive", nullptr},
             {"latestHandshakeTime", nullptr},
             {"rxBytes", nullptr},
             {"txBytes", nullptr},
             {"tunnelLatencyMs", nullptr}};
  writeNetworkStatus(fcName, network);
  spdlog::warn("event=tunnel_refused remote={} reason={} message=\"{}\"", remoteId, cond.reason,
               cond.message);
  return cond;
}

void NetworkController::writeNetworkStatus(const std::string& fcName, const json& network) {
  if (fcName.empty()) return;
  patchForeignClusterStatus(client_, fcName, json{{"network", network}});
}

void NetworkController::onProviderHeartbeat(const std::string& providerId,
                                            const std::string& fcName, RpcClient& rpc,
                                            const std::string& digest, bool reconnected,
                                            std::chrono::system_clock::time_point now) {
  v1::NetworkRequest req;
  {
    base::MutexLock l(mu_);
    Remote& r = remotes_[providerId];
    r.fcName = fcName;
    r.consumerSide = true;
    const bool retryDue = now - r.lastAttempt >= config_.retryInterval;
    bool need = reconnected || r.offerGeneration != offerGeneration_ ||
                (r.negotiated && digest != r.remoteDigest) || (!r.negotiated && retryDue) ||
                (gateway_ && !r.tunnel && retryDue);
    if (!need) return;
    r.lastAttempt = now;
    r.offerGeneration = offerGeneration_;
    if (r.tunnel) req.set_provider_seen_as(r.seenAs);
    if (!r.sentReason.empty()) {
      req.set_refused_reason(r.sentReason);
      req.set_refused_message(r.sentMessage);
    }
  }
  *req.mutable_consumer() = offer();
  v1::NetworkResponse resp;
  kube::Status s = rpc.network(req, &resp, config_.callTimeout);
  if (!s.ok()) {
    TunnelCondition cond =
        s.code() == Code::MethodNotAllowed
            ? TunnelCondition{false, "TunnelNotConfigured",
                              "the provider's agent does not negotiate tunnels: " +
                                  s.error().message}
            : TunnelCondition{false, "NegotiationFailed",
                              "the tunnel negotiation with the provider failed: " +
                                  s.error().message};
    spdlog::warn("event=network_negotiation_failed provider={} error=\"{}\"", providerId,
                 s.error().message);
    {
      base::MutexLock l(mu_);
      remotes_[providerId].negotiated = false;
    }
    // A working tunnel stays as it is while the provider cannot be asked.
    if (!state_.condition(providerId).up) state_.setCondition(providerId, cond);
    return;
  }
  std::variant<Accepted, TunnelCondition> result;
  bool localRefusalToSend = false;
  const std::string provider = sideName("provider", fcName);
  if (!gateway_) {
    result = resp.provider().gateway()
                 ? localRefusal()
                 : TunnelCondition{false, "TunnelNotConfigured",
                                   "neither cluster runs a gateway (strait agent --gateway): "
                                   "this cluster (" + identity_.clusterName + ") nor " + provider};
  } else if (!resp.provider().gateway()) {
    result = TunnelCondition{false, "TunnelNotConfigured",
                             provider + " runs no gateway (strait agent --gateway)"};
  } else if (!resp.refused_reason().empty()) {
    result = TunnelCondition{false, resp.refused_reason(),
                             provider + " refused the tunnel: " + resp.refused_message()};
  } else {
    result = accept(providerId, "provider", resp.provider());
    localRefusalToSend = std::holds_alternative<TunnelCondition>(result);
  }
  TunnelCondition cond = gateway_ ? apply(providerId, fcName, true, result,
                                          resp.consumer_seen_as(), std::nullopt, std::nullopt)
                                  : std::get<TunnelCondition>(result);
  if (!gateway_) {
    state_.setCondition(providerId, cond);
    writeNetworkStatus(fcName, {{"localCIDR", nullptr}});
  }
  if (gateway_ && !cond.up && cond.reason == "GatewayError") localRefusalToSend = true;
  std::string seenAs;
  {
    base::MutexLock l(mu_);
    Remote& r = remotes_[providerId];
    if (r.tunnel) seenAs = r.seenAs;
  }
  // Tell the provider what was chosen here (or why its offer was refused), so that both
  // sides show the same tunnel; its answer is the same offer again.
  const bool refusalChanged = localRefusalToSend ? req.refused_reason() != cond.reason ||
                                                       req.refused_message() != cond.message
                                                 : !req.refused_reason().empty();
  if (gateway_ && (refusalChanged || seenAs != req.provider_seen_as())) {
    req.set_provider_seen_as(seenAs);
    req.clear_refused_reason();
    req.clear_refused_message();
    if (localRefusalToSend) {
      req.set_refused_reason(cond.reason);
      req.set_refused_message(cond.message);
    }
    v1::NetworkResponse second;
    if (kube::Status s2 = rpc.network(req, &second, config_.callTimeout); s2.ok()) {
      resp = second;
    } else {
      spdlog::warn("event=network_negotiation_failed provider={} step=confirm error=\"{}\"",
                   providerId, s2.error().message);
    }
  }
  base::MutexLock l(mu_);
  Remote& r = remotes_[providerId];
  r.negotiated = true;
  r.remoteDigest = digestOf(resp);
  r.sentReason = localRefusalToSend ? cond.reason : "";
  r.sentMessage = localRefusalToSend ? cond.message : "";
}

kube::Status NetworkController::serveConsumer(const std::string& consumerId,
                                              const std::string& fcName, const std::string& mode,
                                              const v1::NetworkRequest& req,
                                              v1::NetworkResponse* resp) {
  *resp->mutable_provider() = offer();
  const std::string consumer = sideName("consumer", fcName);
  TunnelCondition cond;
  if (!gateway_) {
    cond = req.consumer().gateway()
               ? localRefusal()
               : TunnelCondition{false, "TunnelNotConfigured",
                                 "neither cluster runs a gateway (strait agent --gateway): this "
                                 "cluster (" + identity_.clusterName + ") nor " + consumer};
    resp->set_refused_reason(cond.reason);
    resp->set_refused_message("this cluster (" + identity_.clusterName +
                              ") runs no gateway (strait agent --gateway)");
    state_.setCondition(consumerId, cond);
    {
      base::MutexLock l(mu_);
      Remote& r = remotes_[consumerId];
      r.fcName = fcName;
      r.negotiated = true;
      r.refusal = cond;
      r.answerDigest = digestOf(*resp);
    }
    return kube::Status::OK();
  }
  std::variant<Accepted, TunnelCondition> result;
  if (!req.consumer().gateway()) {
    result = TunnelCondition{false, "TunnelNotConfigured",
                             consumer + " runs no gateway (strait agent --gateway)"};
  } else if (!req.refused_reason().empty()) {
    result = TunnelCondition{false, req.refused_reason(),
                             consumer + " refused the tunnel: " + req.refused_message()};
  } else {
    result = accept(consumerId, "consumer", req.consumer());
    if (const TunnelCondition* c = std::get_if<TunnelCondition>(&result)) {
      resp->set_refused_reason(c->reason);
      resp->set_refused_message(c->message);
    }
  }
  // The consumer has not chosen yet (its first call): answer, configure nothing until it
  // confirms with its choice, so that a refusal on its side leaves nothing behind here.
  if (std::holds_alternative<Accepted>(result) && req.provider_seen_as().empty()) {
    resp->set_consumer_seen_as(std::get<Accepted>(result).seenAs);
    base::MutexLock l(mu_);
    Remote& r = remotes_[consumerId];
    r.fcName = fcName;
    r.negotiated = true;
    r.answerDigest = digestOf(*resp);
    if (!r.tunnel) {
      state_.setCondition(consumerId,
                          {false, "Negotiating", "waiting for " + consumer + " to accept this "
                                                 "cluster's offer"});
    }
    return kube::Status::OK();
  }
  std::optional<uint16_t> keepalive;
  if (mode == kModePull) keepalive = config_.persistentKeepalive;
  cond = apply(consumerId, fcName, false, result, req.provider_seen_as(), keepalive,
               std::nullopt);
  if (!cond.up && cond.reason == "GatewayError" && resp->refused_reason().empty()) {
    resp->set_refused_reason(cond.reason);
    resp->set_refused_message(cond.message);
  }
  if (const Accepted* a = std::get_if<Accepted>(&result); a && resp->refused_reason().empty()) {
    resp->set_consumer_seen_as(a->seenAs);
  }
  base::MutexLock l(mu_);
  Remote& r = remotes_[consumerId];
  r.negotiated = true;
  r.answerDigest = digestOf(*resp);
  return kube::Status::OK();
}

std::string NetworkController::digestFor(const std::string& consumerId) const {
  base::MutexLock l(mu_);
  auto it = remotes_.find(consumerId);
  return it == remotes_.end() ? std::string() : it->second.answerDigest;
}

void NetworkController::forget(const std::string& remoteId) {
  bool known = false;
  {
    base::MutexLock l(mu_);
    known = remotes_.erase(remoteId) > 0;
    stored_.erase(remoteId);
  }
  if (gateway_) gateway_->removePeer(remoteId);
  state_.forget(remoteId);
  if (known) spdlog::info("event=tunnel_removed remote={}", remoteId);
}

void NetworkController::syncFabric(bool force) {
  if (!gateway_ || config_.gatewayNode.empty()) return;
  std::vector<std::string> cidrs;
  {
    base::MutexLock l(mu_);
    for (const auto& [id, r] : remotes_) {
      if (r.tunnel) cidrs.push_back(r.seenAs);
    }
  }
  std::sort(cidrs.begin(), cidrs.end());
  cidrs.erase(std::unique(cidrs.begin(), cidrs.end()), cidrs.end());
  std::string joined;
  for (const std::string& c : cidrs) joined += (joined.empty() ? "" : ",") + c;
  {
    base::MutexLock l(mu_);
    if (!force && joined == fabricWritten_) return;
  }
  const std::string name(kFabricConfigMap);
  json data = {{"gatewayNode", config_.gatewayNode}, {"gatewayIP", gatewayIp_}, {"cidrs", joined}};
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata",
              {{"name", name},
               {"namespace", kSys},
               {"labels",
                {{std::string(kLabelManagedBy), std::string(kManagedByValue)},
                 {std::string(kLabelComponent), "fabric"}}}}},
             {"data", data}};
  kube::Result<json> cur = client_.get(kube::resources::kConfigMaps, kSys, name);
  kube::Result<json> w = kube::makeError(Code::Internal, "not written");
  if (!cur.ok() && cur.code() == Code::NotFound) {
    w = client_.create(kube::resources::kConfigMaps, kSys, cm);
  } else if (cur.ok()) {
    if (cur->value("data", json::object()) == data) {
      base::MutexLock l(mu_);
      fabricWritten_ = joined;
      return;
    }
    cm["metadata"]["resourceVersion"] = kube::getResourceVersion(*cur);
    w = client_.update(kube::resources::kConfigMaps, kSys, cm);
  } else {
    w = cur.error();
  }
  if (!w.ok()) {
    spdlog::warn("event=fabric_configmap_failed error=\"{}\"", w.error().message);
    return;
  }
  base::MutexLock l(mu_);
  fabricWritten_ = joined;
  spdlog::info("event=fabric_configmap_written cidrs={}", joined);
}

void NetworkController::tick(std::chrono::system_clock::time_point now) {
  if (!gateway_) return;
  if (now - lastResync_ >= config_.resyncInterval) {
    lastResync_ = now;
    // Key rotation: the Secret was changed (or deleted: a fresh key is made).
    std::string version;
    {
      base::MutexLock l(mu_);
      version = keyVersion_;
    }
    kube::Result<json> secret =
        client_.get(kube::resources::kSecrets, kSys, std::string(kGatewayKeySecret));
    if ((secret.ok() && kube::getResourceVersion(*secret) != version) ||
        (!secret.ok() && secret.code() == Code::NotFound)) {
      tunnel::PrivateKey key;
      std::string newVersion;
      kube::Status s = loadOrCreateKey(&key, &newVersion);
      std::optional<tunnel::PublicKey> pub = s.ok() ? tunnel::publicKeyOf(key) : std::nullopt;
      if (!s.ok() || !pub) {
        spdlog::warn("event=gateway_key_unusable error=\"{}\"",
                     s.ok() ? std::string("no public key") : s.error().message);
      } else if (*pub != gateway_->publicKey()) {
        if (base::Status set = gateway_->setPrivateKey(key); !set.ok()) {
          spdlog::warn("event=gateway_key_rotation_failed error=\"{}\"", set.error().message);
        } else {
          base::MutexLock l(mu_);
          publicKey_ = tunnel::keyToBase64(*pub);
          keyVersion_ = newVersion;
          ++offerGeneration_;
          for (auto& [id, r] : remotes_) r.answerDigest.clear();  // consumers ask again
          spdlog::info("event=gateway_key_rotated public_key={}", publicKey_);
        }
      } else {
        base::MutexLock l(mu_);
        keyVersion_ = newVersion;
      }
    }
    syncFabric(true);
  } else {
    syncFabric(false);
  }
  if (now - lastStatusPoll_ < config_.statusInterval) return;
  lastStatusPoll_ = now;
  struct Report {
    std::string id, fcName;
    TunnelCondition cond;
    json network;
  };
  std::vector<Report> reports;
  std::vector<std::pair<std::string, std::string>> ids;
  {
    base::MutexLock l(mu_);
    for (const auto& [id, r] : remotes_) {
      if (r.tunnel) ids.emplace_back(id, r.remoteEndpoint);
    }
  }
  for (const auto& [id, endpoint] : ids) {
    std::optional<tunnel::GatewayPeerStatus> st = gateway_->peerStatus(id);
    if (!st) continue;
    TunnelCondition cond;
    const int64_t nowUnix =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    if (st->up) {
      // A stable message: the figures go to status.network, not into every condition write.
      cond = {true, "TunnelEstablished",
              "a handshake younger than 3 minutes and a probe answered through the tunnel"};
    } else if (st->lastHandshakeUnix == 0 || nowUnix - st->lastHandshakeUnix >= 180) {
      cond = {false, "HandshakeMissing",
              "no WireGuard handshake with the remote gateway" +
                  (endpoint.empty() ? std::string(" (it has not reached this one yet)")
                                    : " at " + endpoint) +
                  " in the last 3 minutes"};
    } else {
      cond = {false, "ProbeUnanswered",
              "handshake done, but no probe answered through the tunnel in the last three "
              "probe intervals"};
    }
    json network = {{"latestHandshakeTime", st->lastHandshakeUnix == 0
                                                ? json(nullptr)
                                                : json(unixToRfc3339(st->lastHandshakeUnix))},
                    {"rxBytes", st->rxBytes},
                    {"txBytes", st->txBytes},
                    {"tunnelLatencyMs",
                     st->rtt ? json(std::round(st->rtt->count() / 10.0) / 100) : json(nullptr)}};
    bool write = false;
    std::string fcName;
    {
      base::MutexLock l(mu_);
      auto it = remotes_.find(id);
      if (it == remotes_.end() || !it->second.tunnel) continue;
      Remote& r = it->second;
      fcName = r.fcName;
      if (!r.reported || r.lastUp != cond.up ||
          now - r.lastStatusWrite >= std::chrono::seconds(2)) {
        write = true;
        r.reported = true;
        r.lastStatusWrite = now;
      }
      if (r.lastUp != cond.up) {
        spdlog::info("event=tunnel_{} remote={} reason={} message=\"{}\"",
                     cond.up ? "up" : "down", id, cond.reason, cond.message);
      }
      r.lastUp = cond.up;
    }
    state_.setCondition(id, cond);
    if (write) reports.push_back({id, fcName, cond, std::move(network)});
  }
  for (const Report& r : reports) writeNetworkStatus(r.fcName, r.network);
}

}  // namespace strait::peering
