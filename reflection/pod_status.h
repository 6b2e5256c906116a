#pragma once
// Mapping the provider Pod's status back onto the consumer's Pod (pure; no cluster needed).
//
// The local status becomes the remote one with these rules:
//  - phase, reason, message, startTime, conditions other than PodScheduled, containerStatuses,
//    initContainerStatuses come from the remote Pod; PodScheduled stays the local one (the
//    consumer's scheduler bound the Pod to the virtual node), qosClass stays local;
//  - hostIP / hostIPs are the virtual node's address (the local cluster cannot reach the
//    provider node's address); podIP / podIPs are the remote ones passed through `mapPodIp`
//    (identity when the clusters' pod CIDRs do not overlap; the tunnel's remapping otherwise);
//  - restartCount of each container adds `recreations` (how many times the remote Pod was
//    re-created for this local Pod, as Liqo counts);
//  - terminal stays terminal: once the local phase is Succeeded or Failed it never changes
//    again (complaint liqo#1804/#3096: completed pods coming back to life).
// Thread-safe (pure).

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace strait::reflection {

struct PodStatusContext {
  std::string virtualNodeAddress;
  // Remote pod IP -> the IP the consumer uses for it. Empty function = identity.
  std::function<std::string(const std::string&)> mapPodIp;
  int recreations = 0;
  // True while the provider is unreachable (the stream or the tunnel down): Ready and
  // ContainersReady are then False with reason ProviderUnreachable and `unreachableMessage`,
  // the containers not ready, whatever the remote status says. Empty function = reachable.
  std::function<bool()> providerUnreachable;
  std::string unreachableMessage;
};

// True for phases Succeeded and Failed.
bool isTerminalPhase(const std::string& phase);
// The status of `pod` ("" when absent).
std::string podPhase(const nlohmann::json& pod);

// The new local status (the whole `status` object) for `local` given `remote`. When `local`
// is terminal, its status is returned unchanged. While ctx.providerUnreachable(), the Ready
// conditions say so (kept as they are when `local` already says it, so that writing the
// result back is idempotent).
nlohmann::json mapRemoteStatus(const nlohmann::json& local, const nlohmann::json& remote,
                               const PodStatusContext& ctx);

// The local status when the remote Pod has vanished while the local one is not terminal and
// not being deleted (e.g. deleted behind our back in the provider, or its node was lost):
// phase Failed, reason "ProviderPodLost", containers terminated. Re-creating it instead
// would run a completed Job twice, so the choice is left to the Pod's controller.
nlohmann::json lostRemoteStatus(const nlohmann::json& local, const std::string& message);

}  // namespace strait::reflection
