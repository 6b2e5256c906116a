#pragma once
// The control plane of the tunnel of every peering (the agent's side of the network
// fabric): the gateway's key, the negotiation over the peering's mutual-TLS gRPC
// (Peering.Network, which travels over the reverse link in pull mode like every other
// consumer -> provider call), the remap choice, one gateway peer per remote cluster, the
// ForeignCluster status fields, the TunnelUp condition and the `strait-fabric` ConfigMap.
//
// Negotiation (the consumer calls, the provider answers):
//   consumer -> provider: its offer (gateway on/off, public key, UDP endpoint, pod CIDR,
//                         probe address), how it sees the provider's pod CIDR (once
//                         chosen) or why it refuses the provider's offer
//   provider -> consumer: its offer, how it sees the consumer's pod CIDR, or a refusal
//                         (reason and message naming the cause)
// The provider configures its gateway peer only once the consumer has accepted (a call that
// carries the consumer's choice): a first call without one is answered and changes nothing.
// Each side validates the other's offer (key, CIDR, probe address, endpoint) and chooses how
// it sees the other's pod CIDR (network_alloc.h: the CIDR itself, or a free prefix of the
// same length from the remap pool when it overlaps this side's pod or service CIDR or a CIDR
// seen for another peering). A refusal on either side leaves the peering without a tunnel:
// no gateway peer, TunnelUp=False with the refusal's reason, never half-configured. The
// consumer runs the exchange again on agent start, on reconnect, when its own offer changes
// (key rotation) and when the provider's answer changes (its heartbeat carries a digest of
// it); a failed or refused exchange is retried every `retryInterval`.
//
// Stored with the peering: the ForeignCluster status field `network` (on both sides) keeps
// the remap in use (remoteCIDRSeenHere), so the choice survives agent restarts; the private
// key lives in the Secret <system namespace>/strait-gateway-key (created on first start,
// reused after; changing it there is a key rotation, carried to every peer).
//
// Status (every `statusInterval`, from the gateway): TunnelUp is True while the remote's
// latest handshake is younger than 3 minutes and a probe through the tunnel is answered;
// status.network carries latestHandshakeTime, rxBytes, txBytes and tunnelLatencyMs.
//
// Thread-safe: the consumer side is driven from the agent's consumer loop, the provider side
// from gRPC threads, tick() from the provider loop; state below is guarded by mu_, and no
// Kubernetes or gRPC call is made while holding it.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "peering/identity.h"
#include "peering/network_state.h"
#include "peering/transport.h"
#include "tunnel/crypto.h"
#include "tunnel/gateway.h"
#include "tunnel/ip.h"

namespace strait::peering {

// What NetworkController needs of the gateway: tunnel::Gateway's peer methods (see
// tunnel/gateway.h for their contracts). network_gateway.h adapts the real one. Thread-safe.
class GatewayPort {
 public:
  virtual ~GatewayPort() = default;
  virtual tunnel::PublicKey publicKey() const = 0;
  virtual base::Status upsertPeer(const std::string& name, const tunnel::GatewayPeer& peer) = 0;
  virtual bool removePeer(const std::string& name) = 0;
  virtual std::optional<tunnel::GatewayPeerStatus> peerStatus(const std::string& name) const = 0;
  virtual base::Status setPrivateKey(const tunnel::PrivateKey& key) = 0;
};

struct NetworkConfig {
  bool gateway = false;  // --gateway: off, the peerings show TunnelNotConfigured
  // This cluster's pod CIDR; empty: the smallest prefix covering every (non-virtual) Node's
  // spec.podCIDRs.
  std::string podCidr;
  std::string serviceCidr;  // empty: unknown (not protected from remaps)
  std::string remapPool = "10.240.0.0/12";
  // The Node the gateway runs on: its InternalIP is the default endpoint host and what the
  // fabric routes to; its spec.podCIDR's first address is the default probe address.
  std::string gatewayNode;
  std::string endpoint;        // advertised UDP host:port; empty: gateway node InternalIP:port
  uint16_t port = 51840;       // --gateway-port (the default endpoint's port)
  std::string probeAddress;    // empty: the first address of the gateway node's podCIDR
  uint16_t persistentKeepalive = 25;  // seconds, set by the provider of a pull-mode peering
  std::chrono::milliseconds statusInterval{1000};
  std::chrono::milliseconds retryInterval{5000};
  std::chrono::milliseconds callTimeout{5000};
  // How often the key Secret is read again (rotation) and the fabric ConfigMap checked.
  std::chrono::milliseconds resyncInterval{5000};
  // Starts the gateway with the key (cmd/ builds it: tunnel::Gateway in the gateway node's
  // namespace). Required when `gateway` is on.
  std::function<kube::Result<std::unique_ptr<GatewayPort>>(const tunnel::PrivateKey& key,
                                                           const std::string& probeSource)>
      startGateway;
};

// The Secret and ConfigMap names (in the system namespace).
inline constexpr std::string_view kGatewayKeySecret = "strait-gateway-key";
inline constexpr std::string_view kFabricConfigMap = "strait-fabric";

class NetworkController {
 public:
  // `identity` and `client` are borrowed and must outlive the controller. No I/O here.
  NetworkController(const ClusterIdentity& identity, kube::Client& client, NetworkConfig config);
  ~NetworkController();

  // Gateway off: validates nothing more and returns OK. On: validates the config (Invalid
  // naming the flag), resolves the pod CIDR, gateway node address, endpoint and probe
  // address, loads or creates the key Secret, starts the gateway and loads the stored
  // remap choices from the ForeignClusters. Error if any step fails (nothing runs then).
  // Call once.
  kube::Status start();
  // Removes every gateway peer and stops the gateway. Idempotent.
  void stop();

  NetworkState& state() { return state_; }
  const NetworkState& state() const { return state_; }
  bool gatewayEnabled() const { return config_.gateway; }

  // Consumer side, after each answered heartbeat of `providerId` (ForeignCluster `fcName`):
  // negotiates when needed (see the top of this file). `digest` is the heartbeat's
  // network_digest; `reconnected` is true on the first answered heartbeat after a loss.
  // Blocks for at most two calls of callTimeout.
  void onProviderHeartbeat(const std::string& providerId, const std::string& fcName,
                           RpcClient& rpc, const std::string& digest, bool reconnected,
                           std::chrono::system_clock::time_point now);

  // Provider side: answers the Network call of `consumerId` (ForeignCluster `fcName`, mode
  // push or pull). A refusal is an OK answer with refused_reason set; an error only when
  // the answer cannot be built (Internal).
  kube::Status serveConsumer(const std::string& consumerId, const std::string& fcName,
                             const std::string& mode, const v1::NetworkRequest& req,
                             v1::NetworkResponse* resp);
  // Provider side: the digest of the last answer to `consumerId` ("" when none).
  std::string digestFor(const std::string& consumerId) const;

  // The peering with `remoteId` ended (unpeer, revocation): removes its gateway peer, its
  // state and its CIDR from the fabric ConfigMap. Idempotent.
  void forget(const std::string& remoteId);

  // Periodic work: gateway status -> TunnelUp and status.network; key rotation; the fabric
  // ConfigMap. Never throws; logs failures.
  void tick(std::chrono::system_clock::time_point now);

  // This side's offer as sent in the negotiation (tests, `strait status`).
  v1::NetworkOffer offer() const;

 private:
  struct Remote {
    std::string fcName;
    bool consumerSide = false;  // this cluster is the consumer of `remote`
    bool negotiated = false;    // an exchange completed (accepted or refused)
    std::chrono::system_clock::time_point lastAttempt;
    uint64_t offerGeneration = 0;  // of this side's offer at the last exchange
    std::string remoteDigest;      // consumer side: digest of the provider's last answer
    std::string answerDigest;      // provider side: digest of this side's last answer
    bool tunnel = false;           // a gateway peer is configured
    tunnel::GatewayPeer peer;
    std::string remoteCidr, seenAs, seenThere, remoteKey, remoteEndpoint, remoteProbe;
    TunnelCondition refusal;  // why there is no tunnel (when !tunnel)
    // Consumer side: the refusal last sent to the provider; repeated in the first call of the
    // next exchange so that the provider configures nothing until this side accepts.
    std::string sentReason, sentMessage;
    bool lastUp = false;
    bool reported = false;  // status.network written once for this state
    std::chrono::system_clock::time_point lastStatusWrite;
  };
  // The validated offer of the other side, or a refusal.
  struct Accepted {
    tunnel::GatewayPeer peer;
    std::string remoteCidr, seenAs, remoteKey, remoteEndpoint, remoteProbe;
  };

  kube::Status resolveLocal();
  kube::Status loadOrCreateKey(tunnel::PrivateKey* key, std::string* version);
  void loadStoredChoices();
  // Validates `offer` and chooses how it is seen here; a refusal condition on failure.
  std::variant<Accepted, TunnelCondition> accept(const std::string& remoteId,
                                                 const std::string& remoteRole,
                                                 const v1::NetworkOffer& offer);
  // Installs (or removes) the gateway peer for `remoteId` and records the outcome.
  TunnelCondition apply(const std::string& remoteId, const std::string& fcName,
                        bool consumerSide, const std::variant<Accepted, TunnelCondition>& result,
                        const std::string& seenThere, std::optional<uint16_t> keepalive,
                        std::optional<tunnel::Endpoint> endpointOverride);
  void writeNetworkStatus(const std::string& fcName, const nlohmann::json& network);
  void syncFabric(bool force);
  TunnelCondition localRefusal() const;

  const ClusterIdentity& identity_;
  kube::Client& client_;
  const NetworkConfig config_;
  NetworkState state_;
  std::unique_ptr<GatewayPort> gateway_;  // set by start(); null with the gateway off

  // Resolved by start(), constant after.
  tunnel::IpPrefix podCidr_;
  std::optional<tunnel::IpPrefix> serviceCidr_;
  tunnel::IpPrefix pool_;
  std::string endpoint_, probeAddress_, gatewayIp_;

  mutable base::Mutex mu_;
  std::map<std::string, Remote> remotes_ GUARDED_BY(mu_);      // by remote cluster ID
  std::map<std::string, std::string> stored_ GUARDED_BY(mu_);  // remote ID -> seenAs
  std::string publicKey_ GUARDED_BY(mu_);                      // base64
  std::string keyVersion_ GUARDED_BY(mu_);  // the key Secret's resourceVersion
  uint64_t offerGeneration_ GUARDED_BY(mu_) = 1;
  std::string fabricWritten_ GUARDED_BY(mu_);  // the cidrs last written

  // tick() only.
  std::chrono::system_clock::time_point lastStatusPoll_, lastResync_;
};

}  // namespace strait::peering
