#pragma once
// A namespace's pod offloading strategy (Liqo's NamespaceOffloading podOffloadingStrategy),
// recorded on the consumer's Namespace next to the other offloading marks
// (vnode/offloading.h):
//
//   annotation strait.io/pod-offloading-strategy = LocalAndRemote | Remote | Local
//     LocalAndRemote  Pods may run at home or on the virtual nodes chosen (absent = this)
//     Remote          Pods may run only on the virtual nodes chosen
//     Local           no Pod is offloaded; the namespace's other objects (Services, their
//                     endpoints and configuration) may still be reflected to the providers
//   annotation strait.io/offload-selector = a label selector on the virtual nodes' labels
//     (region, zone, provider labels given at peering); absent = every provider, or the one
//     strait.io/offload-providers names
//
// Pure; thread-safe.

#include <string_view>

#include "kube/status.h"

namespace strait::reflection {

inline constexpr std::string_view kAnnotationPodOffloadingStrategy =
    "strait.io/pod-offloading-strategy";
inline constexpr std::string_view kAnnotationOffloadSelector = "strait.io/offload-selector";

enum class PodOffloadingStrategy { LocalAndRemote, Remote, Local };

// "LocalAndRemote", "Remote", "Local" ("" = LocalAndRemote). Invalid naming the bad value and
// the accepted ones.
kube::Result<PodOffloadingStrategy> parsePodOffloadingStrategy(std::string_view text);
const char* podOffloadingStrategyName(PodOffloadingStrategy s);

// Whether Pods of a namespace with strategy `s` may be reflected to a provider.
inline bool offloadsPods(PodOffloadingStrategy s) { return s != PodOffloadingStrategy::Local; }

}  // namespace strait::reflection
