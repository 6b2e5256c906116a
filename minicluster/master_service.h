#pragma once
// The `kubernetes` Service of the default namespace (upstream's master service reconciler,
// private to minicluster/): ClusterIP 10.96.0.1, port 443 named https, no selector, with an
// Endpoints object and an EndpointSlice (both named kubernetes) holding the address and port
// where Pods reach the API server.

#include <cstdint>
#include <string>

#include "kube/status.h"
#include "minicluster/registry.h"
#include "minicluster/rest.h"

namespace strait::minicluster {

inline constexpr const char* kKubernetesServiceIP = "10.96.0.1";

// Creates the Service, its Endpoints and EndpointSlice, or points the existing ones at
// `address`:`port`. Blocks on store writes; error naming the object that could not be written.
kube::Status publishKubernetesService(Rest& rest, Registry& registry, const std::string& address,
                                      uint16_t port);

}  // namespace strait::minicluster
