#pragma once
// Namespace mapping between a consumer and one provider (Liqo's NamespaceOffloading names):
//  - Default:  local "web" -> remote "web-<consumer-id>" (no clash between consumers);
//  - SameName: local "web" -> remote "web" (what users want when the provider is theirs).
// A remote name must be a DNS-1123 label (<= 63 characters): with Default naming and a
// 36-character cluster ID, local names longer than 26 characters do not fit, and mapping
// them is an error (Invalid) that says so, never a silent truncation that two namespaces
// could share. The consumer may choose per namespace (a NamingLookup reading each Namespace's
// strait.io/namespace-naming); the provider maps with SameName (any valid name) and relies
// on namespace ownership (ProviderApplier) for its bounds. Value type; const methods are
// thread-safe as far as the lookup is.

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "kube/status.h"

namespace strait::reflection {

enum class NamingStrategy { Default, SameName };

// "default" / "same" (the `--naming` flag values). Invalid naming the bad value.
kube::Result<NamingStrategy> parseNamingStrategy(std::string_view text);
const char* namingStrategyName(NamingStrategy s);

// The strategy of one local namespace (must be thread-safe and must not block for long).
using NamingLookup = std::function<NamingStrategy(std::string_view localNs)>;

class NamespaceMapping {
 public:
  NamespaceMapping(std::string consumerId, NamingStrategy strategy)
      : consumerId_(std::move(consumerId)), strategy_(strategy) {}
  // Per-namespace strategies: remoteNamespace uses lookup(localNs); localNamespace maps
  // "<x>-<consumer-id>" back to x when x uses Default, else a name to itself when that name
  // uses SameName.
  NamespaceMapping(std::string consumerId, NamingLookup lookup)
      : consumerId_(std::move(consumerId)), lookup_(std::move(lookup)) {}

  // The provider namespace for local namespace `localNs`. Invalid when `localNs` is not a
  // valid namespace name or the mapped name would not be a valid one (too long).
  kube::Result<std::string> remoteNamespace(std::string_view localNs) const;
  // The local namespace whose objects live in `remoteNs`, or nullopt when `remoteNs` is not
  // a namespace this mapping produces (with SameName every valid name maps to itself).
  std::optional<std::string> localNamespace(std::string_view remoteNs) const;

  const std::string& consumerId() const { return consumerId_; }
  // The fixed strategy (Default when a lookup decides per namespace).
  NamingStrategy strategy() const { return strategy_; }
  // The strategy of local namespace `localNs`.
  NamingStrategy strategyFor(std::string_view localNs) const {
    return lookup_ ? lookup_(localNs) : strategy_;
  }

 private:
  std::string consumerId_;
  NamingStrategy strategy_ = NamingStrategy::Default;
  NamingLookup lookup_;
};

}  // namespace strait::reflection
