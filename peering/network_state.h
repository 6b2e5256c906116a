#pragma once
// What the tunnel negotiation settled for each remote cluster, for the readers above and
// beside peering/: how the remote's pod CIDR appears here (for translating pod IPs), and the
// tunnel's condition (TunnelUp on the ForeignCluster and on the virtual node).
//
// NetworkController (network.h) writes it; the conditions of ForeignCluster status, the
// virtual node and the reflection read it. Without a gateway nothing is written and every
// view is the identity.
//
// Thread-safe: every method may be called from any thread; readers get copies.

#include <map>
#include <optional>
#include <set>
#include <string>

#include "base/thread_annotations.h"

namespace strait::peering {

// The TunnelUp condition of one peering.
struct TunnelCondition {
  bool up = false;
  std::string reason = "TunnelNotConfigured";
  std::string message = "no tunnel configured";
  bool operator==(const TunnelCondition&) const = default;
};

// How one remote cluster's pod CIDR appears here.
struct RemoteView {
  std::string remoteCidr;  // the remote's real pod CIDR ("10.244.0.0/16")
  std::string seenAs;      // how it appears here (equal to remoteCidr when not remapped)
};

class NetworkState {
 public:
  // `defaultCondition`: the TunnelUp condition of a remote nothing was set for (e.g.
  // TunnelNotConfigured naming this cluster when it runs no gateway).
  explicit NetworkState(TunnelCondition defaultCondition = {})
      : default_(std::move(defaultCondition)) {}

  // The remote's pod IP `ip` as this cluster addresses it: translated from the remote's real
  // pod CIDR to the prefix it is seen under here when that CIDR is remapped; `ip` unchanged
  // otherwise (not remapped, not in the remote's CIDR, no tunnel, unknown remote, not an
  // IPv4 address). On the consumer, remote = the provider: the podIP of an offloaded Pod as
  // the consumer's Pods reach it. On the provider, remote = the consumer: a consumer Pod's
  // real IP as the provider's Pods reach it (e.g. endpoints of consumer Pods reflected to
  // the provider). Never blocks for long (a map lookup under a mutex).
  std::string toLocalView(const std::string& remoteClusterId, const std::string& ip) const;

  // The view negotiated for `remoteClusterId`; nullopt when none (no tunnel).
  std::optional<RemoteView> view(const std::string& remoteClusterId) const;
  TunnelCondition condition(const std::string& remoteClusterId) const;
  // True while the tunnel to `remoteClusterId`, up at some point since this process set its
  // first condition, is not up (handshake or probe unanswered, or renegotiating); false when
  // it is up, never came up, or is not configured (TunnelNotConfigured). Traffic to that
  // remote's Pods then has no way through. Never blocks for long.
  bool tunnelLost(const std::string& remoteClusterId) const;

  // Set by NetworkController. setView with an empty remoteCidr clears the view.
  void setView(const std::string& remoteClusterId, const RemoteView& view);
  void setCondition(const std::string& remoteClusterId, const TunnelCondition& condition);
  // Forgets the remote (unpeer).
  void forget(const std::string& remoteClusterId);

 private:
  const TunnelCondition default_;
  mutable base::Mutex mu_;
  std::map<std::string, RemoteView> views_ GUARDED_BY(mu_);
  std::map<std::string, TunnelCondition> conditions_ GUARDED_BY(mu_);
  std::set<std::string> wasUp_ GUARDED_BY(mu_);  // remotes whose tunnel has been up
};

}  // namespace strait::peering
