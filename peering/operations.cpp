// The peering commands' logic (see operations.h).
#include "peering/operations.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <thread>

#include "peering/foreign_cluster.h"
#include "peering/identity.h"
#include "peering/names.h"
#include "peering/node_drain.h"
#include "peering/token.h"
#include "peering/transport.h"

namespace strait::peering {
namespace {

using json = nlohmann::json;
using kube::Code;
using kube::makeError;
const std::string kSys(kSystemNamespace);

std::string dataField(const json& obj, const char* key, bool base64) {
  auto it = obj.find("data");
  if (it == obj.end() || !it->is_object() || !it->contains(key) || !(*it)[key].is_string()) {
    return {};
  }
  std::string v = (*it)[key].get<std::string>();
  if (!base64) return v;
  kube::Result<std::string> d = base64Decode(v, key);
  return d.ok() ? *d : std::string();
}

kube::Result<json> agentConfigMap(kube::Client& cluster) {
  kube::Result<json> cm =
      cluster.get(kube::resources::kConfigMaps, kSys, std::string(kAgentConfigMap));
  if (!cm.ok() && cm.code() == Code::NotFound) {
    return makeError(Code::NotFound, "no strait agent has started on " + cluster.config().server +
                                         " (ConfigMap strait-system/strait-agent is missing; "
                                         "run `strait agent` there first)");
  }
  return cm;
}

// How long unpeer leaves the consumer agent to stop a peering's virtual kubelets and delete
// their nodes, once the ForeignCluster is gone, before deleting the nodes itself.
constexpr auto kAgentReleaseWait = std::chrono::seconds(15);

// Waits until none of `nodes` exists (or `until`); returns those still there. A failed get
// counts as still there.
std::vector<std::string> waitForNodesGone(kube::Client& consumer,
                                          const std::vector<std::string>& nodes,
                                          std::chrono::steady_clock::time_point until) {
  while (true) {
    std::vector<std::string> held;
    for (const std::string& n : nodes) {
      kube::Result<json> node = consumer.get(kube::resources::kNodes, "", n);
      if (node.ok() || node.code() != Code::NotFound) held.push_back(n);
    }
    if (held.empty() || std::chrono::steady_clock::now() >= until) return held;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

kube::Result<json> findForeignCluster(kube::Client& consumer, const std::string& name,
                                      const std::string& clusterId) {
  kube::Result<json> list = consumer.list(kForeignClusters, "");
  if (!list.ok()) return list.error();
  for (const json& fc : list->value("items", json::array())) {
    if (fc.value("/spec/role"_json_pointer, std::string()) != kRoleProvider) continue;
    if ((!name.empty() && fc.value("/metadata/name"_json_pointer, std::string()) == name) ||
        (!clusterId.empty() && fc.value("/spec/clusterID"_json_pointer, std::string()) == clusterId)) {
      return fc;
    }
  }
  return makeError(Code::NotFound, "no peering with " + (name.empty() ? clusterId : name) +
                                       " on this cluster (see `strait status`)");
}

int deleteLabelled(kube::Client& c, const kube::ResourceRef& ref, const std::string& ns,
                   const std::string& selector, std::string* error) {
  kube::ListOptions sel;
  sel.labelSelector = selector;
  kube::Result<json> list = c.list(ref, ns, sel);
  if (!list.ok()) {
    if (list.code() != Code::NotFound && error->empty()) *error = list.error().message;
    return 0;
  }
  int n = 0;
  for (const json& item : list->value("items", json::array())) {
    kube::Result<json> r =
        c.remove(ref, item.value("/metadata/namespace"_json_pointer, std::string()),
                 item.value("/metadata/name"_json_pointer, std::string()));
    if (r.ok()) {
      ++n;
    } else if (r.code() != Code::NotFound && error->empty()) {
      *error = r.error().message;
    }
  }
  return n;
}

}  // namespace

kube::Result<std::string> agentClusterId(kube::Client& cluster) {
  kube::Result<json> cm = agentConfigMap(cluster);
  if (!cm.ok()) return cm.error();
  return dataField(*cm, "clusterID", false);
}

kube::Result<PullTarget> consumerPullTarget(kube::Client& consumer) {
  kube::Result<json> cm = agentConfigMap(consumer);
  if (!cm.ok()) return cm.error();
  PullTarget t;
  t.consumerEndpoint = dataField(*cm, "linkEndpoint", false);
  t.consumerCaFingerprint = dataField(*cm, "caFingerprint", false);
  if (t.consumerEndpoint.empty()) {
    return makeError(Code::NotFound, "the agent on " + consumer.config().server +
                                         " publishes no link endpoint (restart it with this "
                                         "version of strait for pull mode)");
  }
  return t;
}

kube::Result<SecretString> issueToken(kube::Client& provider, std::chrono::seconds ttl,
                                      const PullTarget* pull) {
  if (ttl.count() <= 0) return makeError(Code::Invalid, "token: --ttl must be positive");
  if (pull) {
    if (kube::Status s = validatePullTarget(*pull); !s.ok()) return s.error();
  }
  kube::Result<json> cm = agentConfigMap(provider);
  if (!cm.ok()) return cm.error();
  kube::Result<json> secret =
      provider.get(kube::resources::kSecrets, kSys, std::string(kIdentitySecret));
  if (!secret.ok()) return secret.error();
  kube::Result<ClusterIdentity> id = ClusterIdentity::fromSecret(*secret);
  if (!id.ok()) return id.error();
  Token token = newToken(dataField(*cm, "endpoint", false), id->clusterId, id->clusterName,
                         id->caFingerprint(), ttl, std::chrono::system_clock::now());
  json record = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"type", "Opaque"},
                 {"metadata",
                  {{"name", tokenSecretName(token.id)},
                   {"namespace", kSys},
                   {"labels",
                    {{std::string(kLabelManagedBy), std::string(kManagedByValue)},
                     {std::string(kLabelComponent), "token"}}}}},
                 {"data",
                  {{"secretHash", base64Encode(tokenSecretHash(token.secret))},
                   {"expires", base64Encode(std::to_string(token.expiresUnix))}}}};
  if (pull) {
    kube::Result<json> target = provider.create(kube::resources::kConfigMaps, kSys,
                                                pullTargetRecord(token.id, token.expiresUnix, *pull));
    if (!target.ok()) return target.error();
  }
  kube::Result<json> created = provider.create(kube::resources::kSecrets, kSys, record);
  if (!created.ok()) return created.error();
  spdlog::debug("event=token_issued id={} expires={}", token.id, token.expiresUnix);
  return encodeToken(token, id->tokenKey);
}

kube::Result<PeerResult> requestPeering(kube::Client& consumer, const PeerRequest& req) {
  kube::Result<Token> token = parseToken(req.token);
  if (!token.ok()) return token.error();
  kube::Result<std::string> ownId = agentClusterId(consumer);
  if (!ownId.ok()) return ownId.error();
  if (*ownId == token->clusterId) {
    return makeError(Code::Invalid, "this token is for the consumer cluster itself");
  }
  const std::string name = dnsLabel(token->clusterName);
  const std::string providerId = token->clusterId;
  kube::Result<json> existing = consumer.get(kForeignClusters, "", name);
  if (existing.ok()) {
    if (existing->value("/spec/clusterID"_json_pointer, std::string()) != providerId) {
      return makeError(Code::AlreadyExists, "a peering named " + name +
                                                " with another cluster exists; unpeer it first");
    }
    if (conditionStatus(*existing, "Authenticated") == "True") {
      return PeerResult{name, providerId,
                        existing->value("/status/granted"_json_pointer, json::object())};
    }
    // A previous attempt failed: start afresh so its refusal is not read as this one's.
    (void)consumer.remove(kForeignClusters, "", name);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (consumer.get(kForeignClusters, "", name).ok() &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } else if (existing.code() != Code::NotFound) {
    return existing.error();
  }
  const std::string tokenSecret = "strait-peer-token-" + token->id;
  // Token Secrets of earlier attempts for this provider that never joined (no ForeignCluster
  // names them any more): this attempt replaces them.
  kube::ListOptions owned;
  owned.labelSelector = ownershipSelector(providerId);
  if (kube::Result<json> old = consumer.list(kube::resources::kSecrets, kSys, owned); old.ok()) {
    for (const json& o : old->value("items", json::array())) {
      std::string n = o.value("/metadata/name"_json_pointer, std::string());
      if (n.rfind("strait-peer-token-", 0) == 0 && n != tokenSecret) {
        (void)consumer.remove(kube::resources::kSecrets, kSys, n);
      }
    }
  }
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"type", "Opaque"},
                 {"metadata",
                  {{"name", tokenSecret}, {"namespace", kSys}, {"labels", ownershipLabels(providerId)}}},
                 {"data", {{"token", base64Encode(req.token)}}}};
  kube::Result<json> s = consumer.create(kube::resources::kSecrets, kSys, secret);
  if (!s.ok() && s.code() == Code::AlreadyExists) {
    // Left by a failed attempt with the same token id: this token replaces it.
    kube::Result<json> cur = consumer.get(kube::resources::kSecrets, kSys, tokenSecret);
    if (cur.ok()) {
      secret["metadata"]["resourceVersion"] = (*cur)["metadata"]["resourceVersion"];
      s = consumer.update(kube::resources::kSecrets, kSys, secret);
    }
  }
  if (!s.ok()) return s.error();
  // What this attempt created goes again when it fails (a later success of the agent would
  // otherwise contradict the failure reported to the user).
  auto abandon = [&] {
    (void)consumer.remove(kForeignClusters, "", name);
    (void)consumer.remove(kube::resources::kSecrets, kSys, tokenSecret);
  };
  json fc = makeForeignCluster(name, providerId, token->clusterName,
                               std::string(kRoleProvider), token->endpoint);
  fc["spec"]["tokenSecretRef"] = tokenSecret;
  if (req.pull) fc["spec"]["mode"] = kModePull;
  fc["spec"]["requested"] = kube::formatResourceList(req.requested);
  if (!req.virtualNodeLabels.empty()) fc["spec"]["virtualNodeLabels"] = req.virtualNodeLabels;
  for (const PoolSpec& p : req.pools) {
    if (kube::Status bad = validatePoolNodeName(name, p.name); !bad.ok()) {
      (void)consumer.remove(kube::resources::kSecrets, kSys, tokenSecret);
      return bad.error();
    }
  }
  if (!req.pools.empty()) {
    fc["spec"]["pools"] = json::array();
    for (const PoolSpec& p : req.pools) fc["spec"]["pools"].push_back(poolToJson(p));
  }
  kube::Result<json> created = consumer.create(kForeignClusters, "", fc);
  if (!created.ok()) {
    (void)consumer.remove(kube::resources::kSecrets, kSys, tokenSecret);
    return created.error();
  }

  auto deadline = std::chrono::steady_clock::now() + req.timeout;
  std::string last = "waiting for the consumer agent";
  while (true) {
    const bool expired = std::chrono::steady_clock::now() >= deadline;
    kube::Result<json> cur = consumer.get(kForeignClusters, "", name);
    if (cur.ok()) {
      std::string auth = conditionStatus(*cur, "Authenticated");
      if (auth == "True") {
        return PeerResult{name, providerId,
                          cur->value("/status/granted"_json_pointer, json::object())};
      }
      // Only this attempt's outcome counts (the agent names the token Secret it used).
      const bool ours =
          cur->value("/status/joinTokenRef"_json_pointer, std::string()) == tokenSecret;
      if (auth == "False" && ours) {
        last = conditionMessage(*cur, "Authenticated");
        for (const json& c : cur->value("/status/conditions"_json_pointer, json::array())) {
          if (c.value("type", "") != "Authenticated") continue;
          const std::string reason = c.value("reason", "");
          if (reason == "JoinRefused") {
            abandon();
            return makeError(Code::Unauthorized, last);
          }
          if (reason == "EndpointUnreachable") {
            abandon();
            return makeError(Code::Unavailable, "peering with " + name + " failed: " + last);
          }
        }
      }
    }
    if (expired) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  abandon();
  return makeError(Code::ServerTimeout, "peering with " + name + " did not complete in time: " + last);
}

kube::Result<std::vector<std::string>> unpeer(kube::Client& consumer, const UnpeerRequest& req) {
  std::vector<std::string> lines;
  kube::Result<json> fc = findForeignCluster(consumer, req.remoteName, req.remoteClusterId);
  if (!fc.ok()) return fc.error();
  const std::string name = fc->value("/metadata/name"_json_pointer, std::string());
  const std::string providerId = fc->value("/spec/clusterID"_json_pointer, std::string());
  const std::string vnode = "strait-" + name;
  auto deadline = std::chrono::steady_clock::now() + req.timeout;

  // 1. Offloaded pods (on the virtual node and the pool nodes): refused without --drain,
  // leaving the nodes as they were; with --drain the nodes are cordoned first (so
  // replacements stay home), then they are evicted.
  std::vector<std::string> vnodes = {vnode};
  if (kube::Result<std::vector<PoolSpec>> pools = poolsOfForeignCluster(*fc); pools.ok()) {
    for (const PoolSpec& p : *pools) vnodes.push_back(poolNodeName(name, p.name));
  }
  // Every unfinished Pod on the nodes; a failed list is an error (never "no Pods").
  auto offloadedPods = [&]() -> kube::Result<std::vector<std::pair<std::string, std::string>>> {
    std::vector<std::pair<std::string, std::string>> out;
    for (const std::string& n : vnodes) {
      kube::Result<std::vector<BoundPod>> pods = unfinishedPodsOn(consumer, n);
      if (!pods.ok()) return pods.error();
      for (const BoundPod& p : *pods) out.emplace_back(p.ns, p.name);
    }
    return out;
  };
  auto refuse = [&](const std::vector<std::pair<std::string, std::string>>& offloaded) {
    std::string on = vnode;
    for (size_t i = 1; i < vnodes.size(); ++i) on += ", " + vnodes[i];
    std::string msg = std::to_string(offloaded.size()) + " offloaded pod(s) run on " + on +
                      "; use --drain to evict them:";
    for (const auto& [ns, n] : offloaded) msg += " " + ns + "/" + n;
    return makeError(Code::Conflict, msg);
  };
  if (!req.drain) {
    auto offloaded = offloadedPods();
    if (!offloaded.ok()) return offloaded.error();
    if (!offloaded->empty()) return refuse(*offloaded);
  }
  std::vector<std::string> cordoned;  // by this call
  auto uncordon = [&] {
    for (const std::string& n : cordoned) (void)setUnschedulable(consumer, n, false);
  };
  for (const std::string& n : vnodes) {
    kube::Result<json> node = consumer.get(kube::resources::kNodes, "", n);
    if (!node.ok()) continue;
    const bool was = node->value("/spec/unschedulable"_json_pointer, false);
    if (kube::Status s = setUnschedulable(consumer, n, true); !s.ok()) {
      if (kube::isNotFound(s.error())) continue;
      uncordon();
      return makeError(s.code(), "cordoning node " + n + ": " + s.error().message);
    }
    if (!was) cordoned.push_back(n);
    lines.push_back("cordoned node " + n);
  }
  if (!req.drain) {
    auto offloaded = offloadedPods();
    if (!offloaded.ok() || !offloaded->empty()) {
      // A Pod was bound between the check and the cordon: put the nodes back as they were.
      uncordon();
      if (!offloaded.ok()) return offloaded.error();
      return refuse(*offloaded);
    }
  } else {
    kube::Result<size_t> drained = evictAndWait(consumer, vnodes, deadline);
    if (!drained.ok()) return drained.error();
    if (*drained > 0) {
      lines.push_back("drained " + std::to_string(*drained) + " pod(s) from " + vnode);
    }
  }

  // 2. Ask the provider agent to delete its side and forget our credential.
  kube::Result<json> cred =
      consumer.get(kube::resources::kSecrets, kSys, credentialSecretName(providerId));
  kube::Status told = makeError(Code::NotFound, "no credential for the provider");
  if (!cred.ok() && cred.code() == Code::NotFound &&
      conditionStatus(*fc, "Authenticated") != "True") {
    // The peering never joined: the provider holds nothing of ours to delete.
    told = kube::Status::OK();
    lines.push_back("peering with " + name + " never joined: nothing to remove on the provider");
  }
  if (cred.ok()) {
    ClientConfig cc;
    cc.endpoint = dataField(*cred, "endpoint", true);
    if (dataField(*cred, "mode", true) == kModePull) {
      // The provider is not reachable: go through the consumer agent's link forwarder.
      cc.endpoint = fc->value("/status/relayEndpoint"_json_pointer, std::string());
    }
    cc.serverCaPem = dataField(*cred, "ca.crt", true);
    cc.serverName = agentServerName(providerId);
    cc.clientCert = {dataField(*cred, "tls.crt", true), dataField(*cred, "tls.key", true)};
    kube::Result<std::unique_ptr<RpcClient>> rpc = makeRpcClient(cc);
    if (rpc.ok()) {
      v1::UnpeerRequest ur;
      ur.set_force(req.force);
      v1::UnpeerResponse resp;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      auto callTimeout = std::clamp(left, std::chrono::milliseconds(500),
                                    std::chrono::milliseconds(req.force ? 3000 : 15000));
      told = (*rpc)->unpeer(ur, &resp, callTimeout);
      if (told.ok()) {
        lines.push_back("provider deleted " + std::to_string(resp.deleted_objects()) +
                        " object(s) and revoked the credential");
      } else if (told.code() == Code::Forbidden) {
        lines.push_back("provider had already ended the peering");
        told = kube::Status::OK();
      }
    } else {
      told = rpc.error();
    }
  }
  if (!told.ok()) {
    if (!req.force) {
      return makeError(Code::Unavailable, "cannot reach the provider agent: " +
                                              told.error().message +
                                              " (retry, or use --force to part anyway)");
    }
    lines.push_back("provider agent unreachable: " + told.error().message);
    kube::Result<std::string> ownId = agentClusterId(consumer);
    if (req.provider && ownId.ok()) {
      json record = {{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata",
                      {{"name", revocationName(*ownId)},
                       {"namespace", kSys},
                       {"labels",
                        {{std::string(kLabelManagedBy), std::string(kManagedByValue)},
                         {std::string(kLabelRemoteCluster), *ownId},
                         {std::string(kLabelComponent), "revocation"}}}}},
                     {"data", {{"clusterID", *ownId}, {"reason", "strait unpeer --force"}}}};
      kube::Result<json> r = req.provider->create(kube::resources::kConfigMaps, kSys, record);
      if (r.ok() || r.code() == Code::AlreadyExists) {
        lines.push_back("left revocation record strait-system/" + revocationName(*ownId) +
                        " on the provider: its agent deletes the tenant namespace when it runs");
      } else {
        lines.push_back("could not leave a revocation record on the provider: " +
                        r.error().message);
      }
    } else if (cred.ok()) {
      // No access to the provider's API: keep the credential in a pending-revocation record;
      // the consumer agent delivers the Unpeer call when the provider agent answers again.
      json record = *cred;
      record["metadata"] = {{"name", "strait-revocation-" + providerId},
                            {"namespace", kSys},
                            {"labels",
                             {{std::string(kLabelManagedBy), std::string(kManagedByValue)},
                              {std::string(kLabelComponent), "revocation-pending"}}}};
      kube::Result<json> r = consumer.create(kube::resources::kSecrets, kSys, record);
      if (r.ok() || r.code() == Code::AlreadyExists) {
        lines.push_back("left pending revocation strait-system/strait-revocation-" + providerId +
                        ": the consumer agent tells the provider agent when it answers again");
      } else {
        lines.push_back("could not record the pending revocation: " + r.error().message);
      }
    } else {
      lines.push_back("no credential left to tell the provider with; its side stays until "
                      "`strait unpeer --force --remote-kubeconfig PROVIDER`");
    }
  }

  // 3. The consumer side. The ForeignCluster goes first: the consumer agent then stops the
  // peering's virtual kubelets, and each deletes its node once it no longer runs. A node
  // deleted while its virtual kubelet still runs is registered again, uncordoned, and the
  // Pods waiting for room (a drain's replacements) are bound to it. The nodes the agent has
  // not removed within kAgentReleaseWait (no agent runs there) are deleted here, with the
  // credential, tokens and imported Services.
  std::string error;
  int n = 0;
  kube::Result<json> r = consumer.remove(kForeignClusters, "", name);
  if (r.ok()) ++n;
  if (!r.ok() && r.code() != Code::NotFound) error = r.error().message;
  if (r.ok()) {
    const auto releaseBy = std::min(deadline, std::chrono::steady_clock::now() + kAgentReleaseWait);
    if (std::vector<std::string> held = waitForNodesGone(consumer, vnodes, releaseBy);
        !held.empty()) {
      std::string names;
      for (const std::string& h : held) names += (names.empty() ? "" : ", ") + h;
      lines.push_back("the agent did not remove " + names + " in time: deleted here");
    }
  }
  n += deleteLabelled(consumer, kube::resources::kSecrets, kSys, ownershipSelector(providerId),
                      &error);
  n += deleteLabelled(consumer, kube::resources::kNodes, "", ownershipSelector(providerId), &error);
  // The Services and EndpointSlices imported from that provider.
  const std::string imported = std::string(kLabelManagedBy) + "=" +
                               std::string(kManagedByValue) + "," +
                               std::string(kLabelImportedFrom) + "=" + providerId;
  n += deleteLabelled(consumer, kube::resources::kEndpointSlices, "", imported, &error);
  n += deleteLabelled(consumer, kube::resources::kServices, "", imported, &error);
  for (const std::string& v : vnodes) {
    if (consumer.remove(kube::resources::kNodes, "", v).ok()) ++n;
  }
  if (!error.empty()) return makeError(Code::Internal, "unpeer: deleting local objects: " + error);
  lines.push_back("deleted " + std::to_string(n) + " local object(s); unpeered from " + name);
  return lines;
}

kube::Result<json> peeringStatus(kube::Client& cluster) {
  kube::Result<json> list = cluster.list(kForeignClusters, "");
  if (!list.ok()) return list.error();
  json rows = json::array();
  for (const json& fc : list->value("items", json::array())) {
    json row;
    row["name"] = fc.value("/metadata/name"_json_pointer, std::string());
    row["remote"] = fc.value("/spec/clusterName"_json_pointer, std::string());
    row["clusterID"] = fc.value("/spec/clusterID"_json_pointer, std::string());
    row["role"] = fc.value("/spec/role"_json_pointer, std::string());
    row["mode"] = fc.value("/spec/mode"_json_pointer, std::string(kModePush));
    row["endpoint"] = fc.value("/spec/endpoint"_json_pointer, std::string());
    row["authenticated"] = conditionStatus(fc, "Authenticated");
    row["connected"] = conditionStatus(fc, "Connected");
    row["tunnel"] = conditionStatus(fc, "TunnelUp");
    row["tunnelReason"] = conditionReason(fc, "TunnelUp");
    row["tunnelMessage"] = conditionMessage(fc, "TunnelUp");
    // The tunnel (peering/network.h): CIDRs, the remote gateway, the gateway's counters.
    const json network = fc.value("/status/network"_json_pointer, json::object());
    for (const char* k : {"localCIDR", "localCIDRSeenThere", "remoteCIDR", "remoteCIDRSeenHere",
                          "remapped", "remoteEndpoint", "remotePublicKey", "latestHandshakeTime",
                          "rxBytes", "txBytes", "tunnelLatencyMs"}) {
      row[k] = network.is_object() ? network.value(k, json()) : json();
    }
    row["virtualNodeReady"] = conditionStatus(fc, "VirtualNodeReady");
    // What the consumer reflects to this provider (services, endpointSlices, conflicts).
    row["reflection"] = fc.value("/status/reflection"_json_pointer, json::object());
    // What the consumer imports from this provider (services, endpointSlices, conflicts).
    row["imports"] = fc.value("/status/imports"_json_pointer, json::object());
    row["latencyMs"] = fc.value("/status/latencyMs"_json_pointer, json());
    row["granted"] = fc.value("/status/granted"_json_pointer, json::object());
    row["used"] = fc.value("/status/used"_json_pointer, json::object());
    row["pools"] = fc.value("/status/pools"_json_pointer, json::array());
    row["lastHeartbeatTime"] = fc.value("/status/lastHeartbeatTime"_json_pointer, std::string());
    row["message"] = conditionStatus(fc, "Connected") == "True"
                         ? std::string()
                         : conditionMessage(fc, "Connected");
    rows.push_back(row);
  }
  return rows;
}

std::string statusTable(const json& rows) {
  auto res = [](const json& r, const char* k) {
    if (!r.is_object() || !r.contains(k) || !r[k].is_string()) return std::string("-");
    return r[k].get<std::string>();
  };
  std::vector<std::vector<std::string>> table = {
      {"NAME", "ROLE", "MODE", "CLUSTER-ID", "CONNECTED", "LATENCY", "TUNNEL", "TUNNEL-REASON",
       "TUNNEL-RTT", "REMOTE-CIDR", "HANDSHAKE", "RX/TX", "GRANTED(cpu/mem/pods)",
       "USED(cpu/mem/pods)", "VNODE-READY", "IMPORTED(svc/slices/conflicts)",
       "SERVICES(svc/slices/conflicts)"}};
  auto text = [](const json& r, const char* k) {
    return r.contains(k) && r[k].is_string() && !r[k].get<std::string>().empty()
               ? r[k].get<std::string>()
               : std::string("-");
  };
  auto reflected = [](const json& r, const char* field = "reflection") {
    const json ref = r.is_object() ? r.value(field, json::object()) : json::object();
    if (!ref.is_object() || ref.empty()) return std::string("-");
    auto n = [&](const char* k) {
      return ref.contains(k) && ref[k].is_number_unsigned()
                 ? std::to_string(ref[k].get<uint64_t>())
                 : std::string("-");
    };
    return n("services") + "/" + n("endpointSlices") + "/" + n("conflicts");
  };
  for (const json& r : rows) {
    std::string latency = "-";
    if (r["latencyMs"].is_number()) {
      std::ostringstream os;
      os << std::fixed << std::setprecision(2) << r["latencyMs"].get<double>() << "ms";
      latency = os.str();
    }
    std::string rtt = "-";
    if (r.contains("tunnelLatencyMs") && r["tunnelLatencyMs"].is_number()) {
      std::ostringstream os;
      os << std::fixed << std::setprecision(2) << r["tunnelLatencyMs"].get<double>() << "ms";
      rtt = os.str();
    }
    // As seen here, with the real CIDR when remapped: 10.240.0.0/16=10.244.0.0/16.
    std::string cidr = text(r, "remoteCIDRSeenHere");
    if (cidr != "-" && r.value("remapped", false)) cidr += "=" + text(r, "remoteCIDR");
    if (text(r, "remoteCIDR") == "-") cidr = "-";
    std::string traffic = "-";
    if (r.contains("rxBytes") && r["rxBytes"].is_number() && r.contains("txBytes") &&
        r["txBytes"].is_number()) {
      traffic = std::to_string(r["rxBytes"].get<uint64_t>()) + "/" +
                std::to_string(r["txBytes"].get<uint64_t>());
    }
    const json& g = r["granted"];
    const json& u = r["used"];
    table.push_back({r.value("name", ""), r.value("role", ""), r.value("mode", ""),
                     r.value("clusterID", ""),
                     r.value("connected", ""), latency, r.value("tunnel", ""),
                     r.value("tunnelReason", "") == "" ? "-" : r.value("tunnelReason", ""), rtt,
                     cidr, text(r, "latestHandshakeTime"), traffic,
                     res(g, "cpu") + "/" + res(g, "memory") + "/" + res(g, "pods"),
                     res(u, "cpu") + "/" + res(u, "memory") + "/" + res(u, "pods"),
                     r.value("virtualNodeReady", ""), reflected(r, "imports"), reflected(r)});
  }
  std::vector<size_t> width(table[0].size(), 0);
  for (const auto& row : table) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : table) {
    for (size_t i = 0; i < row.size(); ++i) {
      out += row[i];
      if (i + 1 < row.size()) out += std::string(width[i] - row[i].size() + 3, ' ');
    }
    out += "\n";
  }
  return out;
}

}  // namespace strait::peering
