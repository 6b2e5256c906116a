#pragma once
// Pull mode (the provider agent dials the consumer agent, for a provider behind NAT): the
// Kubernetes records that drive it and the agent-side duties. The link itself is link.h.
//
// Provider cluster: ConfigMap strait-system/strait-pull-<token-id>, label
// strait.io/component=pull-target, written with the token by `strait token --mode pull` (or
// in-band `strait peer --mode pull`): data consumerEndpoint (the consumer agent's link
// port), consumerCaFingerprint (pinned), tokenID, expires. It names no consumer until a
// consumer joins with that token: Join binds it (labels it strait.io/remote-cluster-id=<id>
// and records the ID), so the labelled clean-up of unpeer deletes it. Unbound records are
// deleted when their token expires.
//
// Consumer cluster: the ForeignCluster (role Provider) has spec.mode=pull; the credential
// Secret has data mode=pull; the agent publishes status.relayEndpoint (its forwarder to the
// provider, which the CLI dials for unpeer).

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/client.h"
#include "peering/link.h"

namespace strait::peering {

inline constexpr const char* kModePull = "pull";
inline constexpr const char* kModePush = "push";

struct PullTarget {
  std::string consumerEndpoint;       // the consumer agent's link port, host:port
  std::string consumerCaFingerprint;  // SHA-256 hex of the consumer's CA certificate
  std::string consumerId;             // set once bound
};

// Invalid naming the field if the endpoint is not host:port or the fingerprint is not 64
// lowercase hex digits.
kube::Status validatePullTarget(const PullTarget& t);
// The record for a token (see the file comment).
nlohmann::json pullTargetRecord(const std::string& tokenId, int64_t expiresUnix,
                                const PullTarget& target);
// Provider, at Join with token `tokenId`: binds its pull target to `consumerId` and returns
// it; NotFound if the token was issued for push mode.
kube::Result<PullTarget> bindPullTarget(kube::Client& client, const std::string& tokenId,
                                        const std::string& consumerId);

// Provider agent: one LinkDialer per pull target. tick() and stop() from one thread.
class PullDialers {
 public:
  // `client` is borrowed. `chain` is this agent's certificate chain and key, `localTarget`
  // its gRPC server.
  PullDialers(kube::Client& client, kube::KeyPair chain, std::string localTarget,
              LinkTiming timing);
  ~PullDialers();
  // At most every 500 ms: lists the pull targets, starts dialers for new ones, stops those
  // whose record is gone, deletes unbound records whose token expired. Never throws.
  void tick(std::chrono::system_clock::time_point now);
  void stop();

 private:
  kube::Client& client_;
  const kube::KeyPair chain_;
  const std::string localTarget_;
  const LinkTiming timing_;
  std::chrono::system_clock::time_point lastScan_;
  struct Entry {
    PullTarget target;
    std::unique_ptr<LinkDialer> dialer;
  };
  std::map<std::string, Entry> dialers_;  // by record name
};

// Consumer agent: the CA fingerprint a provider dialing in as `providerId` must present —
// from the credential once joined, else from the token the CLI left — or Forbidden saying
// why the link is refused (no peering with it, or a push-mode one). Thread-safe.
kube::Result<std::string> expectedProviderCa(kube::Client& client, const std::string& providerId);

}  // namespace strait::peering
