// The negotiated network state (see network_state.h).
#include "peering/network_state.h"

#include "peering/network_alloc.h"

namespace strait::peering {

std::string NetworkState::toLocalView(const std::string& remoteClusterId,
                                      const std::string& ip) const {
  std::optional<RemoteView> v = view(remoteClusterId);
  if (!v || v->seenAs == v->remoteCidr) return ip;
  base::Result<tunnel::IpPrefix> from = tunnel::IpPrefix::parse(v->remoteCidr);
  base::Result<tunnel::IpPrefix> to = tunnel::IpPrefix::parse(v->seenAs);
  if (!from.ok() || !to.ok()) return ip;
  return translateAddress(ip, *from, *to).value_or(ip);
}

std::optional<RemoteView> NetworkState::view(const std::string& remoteClusterId) const {
  base::MutexLock l(mu_);
  auto it = views_.find(remoteClusterId);
  if (it == views_.end()) return std::nullopt;
  return it->second;
}

TunnelCondition NetworkState::condition(const std::string& remoteClusterId) const {
  base::MutexLock l(mu_);
  auto it = conditions_.find(remoteClusterId);
  return it == conditions_.end() ? default_ : it->second;
}

bool NetworkState::tunnelLost(const std::string& remoteClusterId) const {
  base::MutexLock l(mu_);
  if (!wasUp_.count(remoteClusterId)) return false;
  auto it = conditions_.find(remoteClusterId);
  const TunnelCondition& c = it == conditions_.end() ? default_ : it->second;
  return !c.up && c.reason != "TunnelNotConfigured";
}

void NetworkState::setView(const std::string& remoteClusterId, const RemoteView& view) {
  base::MutexLock l(mu_);
  if (view.remoteCidr.empty()) {
    views_.erase(remoteClusterId);
  } else {
    views_[remoteClusterId] = view;
  }
}

void NetworkState::setCondition(const std::string& remoteClusterId,
                                const TunnelCondition& condition) {
  base::MutexLock l(mu_);
  conditions_[remoteClusterId] = condition;
  if (condition.up) wasUp_.insert(remoteClusterId);
}

void NetworkState::forget(const std::string& remoteClusterId) {
  base::MutexLock l(mu_);
  views_.erase(remoteClusterId);
  conditions_.erase(remoteClusterId);
  wasUp_.erase(remoteClusterId);
}

}  // namespace strait::peering
