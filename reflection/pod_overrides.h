#pragma once
// Per-provider overrides of offloaded Pods (Karmada's OverridePolicy, Liqo's offloadingPatch):
// the namespaced custom resource OffloadingOverride (strait.io/v1alpha1) says, for the Pods
// of its namespace that match, how the remote Pod sent to the matching providers differs:
//
//   spec:
//     providers:        {names: [fc-name...], selector: LabelSelector on the virtual node's
//                        labels}; absent or empty = every provider (names OR selector)
//     podSelector:      LabelSelector on the local Pod's labels; absent = every Pod
//     containers:       [container names] the container rules touch; empty = all
//     rules:
//       imageRegistry:      {from: REGISTRY, to: REGISTRY} (an image without a registry is
//                           on docker.io, a one-part name under library/, as docker reads it)
//       addLabels / addAnnotations:       {key: value}
//       removeLabels / removeAnnotations: [key]
//       tolerations:        [Toleration] appended (when not already there)
//       nodeSelector:       {key: value} merged into spec.nodeSelector
//       resources:          {requests: FACTOR, limits: FACTOR} each quantity scaled
//                           (0 < FACTOR <= 100), in the chosen containers
//     strategicMergePatch: a strategic merge patch of the Pod (kube/patch.h)
//     jsonPatch:           RFC 6902 operations
//
// Applied in that order (rules, then the strategic merge patch, then the JSON patch), after
// the forge (pod_forge.h), overrides in name order. No override may change the remote Pod's
// name or namespace or any strait.io/ label or annotation (ownership lives there).
// Pure; thread-safe.

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kube/selector.h"
#include "kube/status.h"

namespace strait::reflection {

inline constexpr std::string_view kOverrideGroup = "strait.io";
inline constexpr std::string_view kOverrideVersion = "v1alpha1";
inline constexpr std::string_view kOverridePlural = "offloadingoverrides";
inline constexpr std::string_view kOverrideKind = "OffloadingOverride";

struct PodOverride {
  std::string name;  // "namespace/name", for messages and ordering
  std::set<std::string> providerNames;
  std::optional<kube::LabelSelector> providerSelector;
  kube::LabelSelector podSelector;                                   // empty: every Pod
  std::set<std::string> containers;                                  // empty: all
  std::optional<std::pair<std::string, std::string>> imageRegistry;  // from, to
  std::map<std::string, std::string> addLabels, addAnnotations;
  std::vector<std::string> removeLabels, removeAnnotations;
  nlohmann::json tolerations = nlohmann::json::array();
  std::map<std::string, std::string> nodeSelector;
  std::optional<double> requestsFactor, limitsFactor;
  nlohmann::json strategicMergePatch;  // null: none
  nlohmann::json jsonPatch;            // null: none
};

// Parses and validates an OffloadingOverride object. Invalid with every problem found, each
// naming its field ("spec.rules.imageRegistry.from: required; spec.jsonPatch[1].op:
// \"fold\" is not one of add, remove, replace, move, copy, test"). Also tries the patches on
// a minimal Pod where that tells a broken patch from one that needs fields the Pod lacks
// (a strategic merge patch must apply; JSON patch syntax must be right).
kube::Result<PodOverride> parsePodOverride(const nlohmann::json& obj);

// Whether the override is for the provider with ForeignCluster name `providerName` whose
// virtual node carries `nodeLabels`.
bool overrideSelectsProvider(const PodOverride& o, const std::string& providerName,
                             const kube::LabelSet& nodeLabels);
// Whether the override's podSelector matches the local Pod's labels.
bool overrideSelectsPod(const PodOverride& o, const nlohmann::json& localPod);

// `image` with its registry `from` replaced by `to`, or unchanged when it is on another
// registry. Pure.
std::string rewriteImageRegistry(const std::string& image, const std::string& from,
                                 const std::string& to);

// The `field` of applyPodOverride's errors (so callers tell them from other forge errors).
inline constexpr std::string_view kOverrideFailedField = "offloadingOverride";

// Applies `o` to the forged remote Pod. Invalid naming the override and what failed (a JSON
// patch operation on a path the Pod lacks, a change of name, namespace or strait.io/ keys),
// with field kOverrideFailedField.
kube::Status applyPodOverride(nlohmann::json& remotePod, const PodOverride& o);

using PodOverrides = std::vector<std::shared_ptr<const PodOverride>>;

}  // namespace strait::reflection
