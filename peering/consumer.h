#pragma once
// The consumer side of an agent: turns ForeignClusters with role Provider into live
// peerings. For each one it
//   - joins: reads the token the CLI left in a Secret, pins the provider CA by the token's
//     fingerprint, makes a key and a CSR (CN = this cluster's ID), calls Join, and keeps the
//     signed certificate, key and provider CA in the credential Secret
//     strait-system/strait-credential-<provider-id>; a failed join is retried with a
//     jittered exponential backoff (100 ms doubling to 30 s), and its condition names the
//     token Secret it used (status.joinTokenRef) so that `strait peer` reads only its own;
//   - heartbeats every `heartbeatInterval` over mTLS and records Connected, latency, granted
//     and used resources in the ForeignCluster status (written when a condition, the grant
//     or the usage changed, else every 10 s, so lastHeartbeatTime and latencyMs may be that
//     old); after `lostAfter` without an answer Connected turns False (that is "noticing a
//     lost peer");
//   - renews the client certificate when two thirds of its lifetime have passed;
//   - delivers revocations left by `strait unpeer --force` while the provider was away;
//   - keeps the grant and provider summary of the last heartbeat in a LivePeering and
//     announces it to the PeeringObserver after the first answered heartbeat, and its end
//     when the ForeignCluster goes or the provider revokes the peering.
//
// Not thread-safe: tick() is called from the agent's single loop thread only.

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <string>

#include "kube/client.h"
#include "peering/identity.h"
#include "peering/network.h"
#include "peering/observer.h"
#include "peering/pools.h"
#include "peering/transport.h"

namespace strait::peering {

struct ConsumerConfig {
  std::chrono::milliseconds heartbeatInterval{1000};
  std::chrono::milliseconds lostAfter{3000};
  std::chrono::milliseconds callTimeout{5000};
  std::string ownEndpoint;  // this agent's advertised endpoint (sent to providers)
  // Told when a peering becomes usable and when it ends (observer.h). Borrowed, optional;
  // must outlive the controller.
  PeeringObserver* observer = nullptr;
  // Pull mode (link.h), set by the agent: the local address through which calls to a
  // pull-mode provider go, whether its link is up, and which providers still need a link.
  std::function<kube::Result<std::string>(const std::string& providerId)> pullEndpoint;
  std::function<bool(const std::string& providerId)> pullLinked;
  std::function<void(const std::set<std::string>& providerIds)> pullRetain;
  // The ForeignClusters as a list object ({"items": [...]}); unset: a LIST request each
  // pass. The agent serves them from an informer's cache.
  std::function<kube::Result<nlohmann::json>()> listForeignClusters;
  // The tunnel's control plane (network.h): negotiated after answered heartbeats, forgotten
  // when the peering ends; its TunnelUp condition goes into every status write. Borrowed,
  // optional; must outlive the controller.
  NetworkController* network = nullptr;
};

class ConsumerController {
 public:
  // `identity` and `client` are borrowed and must outlive the controller. No I/O here.
  ConsumerController(const ClusterIdentity& identity, kube::Client& client, ConsumerConfig config);
  ~ConsumerController();

  // One reconcile pass over every ForeignCluster with role Provider. Logs failures; never
  // throws. Blocks for at most a few call timeouts. Returns when the next pass is due (the
  // earliest heartbeat, renewal, join retry or revocation scan; a pull-mode peering waiting
  // for its link asks for `pollInterval`); a pass earlier than that is harmless (what is not
  // due is skipped). Heartbeats due within a quarter interval are sent together, so that
  // the peerings' heartbeats settle into a few passes per interval.
  std::chrono::system_clock::time_point tick(std::chrono::system_clock::time_point now,
                                             std::chrono::milliseconds pollInterval =
                                                 std::chrono::milliseconds(100));

 private:
  struct Peering {
    std::string fcName;
    std::shared_ptr<RpcClient> rpc;  // replaced on renewal (LivePeering hands it out)
    std::string tenantNamespace;
    std::shared_ptr<LivePeering> live;  // created on the first answered heartbeat
    bool announced = false;             // observer told peeringUp (and not yet Down)
    std::chrono::system_clock::time_point issuedAt;  // of the current certificate
    std::chrono::system_clock::time_point notAfter;
    std::chrono::system_clock::time_point lastAttempt;
    std::chrono::system_clock::time_point lastSuccess;
    bool connected = false;
    bool revoked = false;
    std::string relayEndpoint;  // pull mode: the link forwarder calls go through
    std::vector<PoolSpec> lastPools;  // the last valid spec.pools sent
    // The last status written after an answered heartbeat, without its clock fields
    // (lastHeartbeatTime, latencyMs), and when: an unchanged status is written again only
    // after kStatusRefresh.
    nlohmann::json lastStatus;
    std::chrono::system_clock::time_point lastStatusWrite;
  };

  // Where calls to `providerId` go: `endpoint` in push mode, the link forwarder in pull mode.
  kube::Result<std::string> dialAddress(const std::string& providerId, const std::string& mode,
                                        const std::string& endpoint);

  // True when the peering joined (its credential is stored).
  bool join(const nlohmann::json& fc, std::chrono::system_clock::time_point now);
  bool loadCredential(const std::string& providerId, const std::string& fcName, Peering* p);
  void heartbeat(const nlohmann::json& fc, Peering& p, std::chrono::system_clock::time_point now);
  void renew(const std::string& providerId, Peering& p, std::chrono::system_clock::time_point now);
  void patchStatus(const std::string& fcName, const nlohmann::json& status);
  // Tells the observer (if any) that the peering ended, once.
  void announceDown(const std::string& providerId, Peering& p);
  // Delivers the Unpeer calls that `strait unpeer --force` could not make (records left as
  // Secrets labelled strait.io/component=revocation-pending), then deletes each record.
  void deliverRevocations(std::chrono::system_clock::time_point now);

  const ClusterIdentity& identity_;
  kube::Client& client_;
  const ConsumerConfig config_;
  std::map<std::string, Peering> peerings_;  // by provider cluster ID
  std::chrono::system_clock::time_point lastRevocationAttempt_;
  std::set<std::string> pullRevocations_;  // providers with a pending pull-mode revocation
  std::set<std::string> waitingNoted_;     // pull peerings whose wait for a link is recorded
  // Failed joins back off: 100 ms doubling to 30 s, jittered, per provider; a new attempt
  // (another ForeignCluster or token) starts again at once.
  struct JoinBackoff {
    std::string attempt;  // ForeignCluster uid + token Secret name
    std::chrono::milliseconds delay{0};
    std::chrono::system_clock::time_point next;
  };
  std::map<std::string, JoinBackoff> joinBackoff_;  // by provider cluster ID
};

}  // namespace strait::peering
