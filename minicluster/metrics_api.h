#pragma once
// The resource metrics API, metrics.k8s.io/v1beta1, as metrics-server serves it (private to
// minicluster/): what `kubectl top nodes` and `kubectl top pods [-A]` read.
//
//   GET /apis/metrics.k8s.io, /apis/metrics.k8s.io/v1beta1        discovery
//   GET /apis/metrics.k8s.io/v1beta1/nodes[/NAME]                 NodeMetrics(List)
//   GET /apis/metrics.k8s.io/v1beta1/[namespaces/NS/]pods[/NAME]  PodMetrics(List)
// Lists take labelSelector and fieldSelector (applied to the Nodes and Pods).
//
// Every request is answered from the kubelets' current stats Summaries (GET /stats/summary
// on each node's InternalIP and daemonEndpoints.kubeletEndpoint.Port, with the API server's
// kubelet client certificate): the process runtime's nodes and virtual nodes, whose
// kubelet is the Strait agent relaying its provider's usage. A node whose kubelet cannot be
// reached or has no usage (simulated nodes) is left out, as are its Pods, like metrics-server
// leaves out what it could not scrape. Usage: cpu from usageNanoCores ("<n>n"), memory
// from workingSetBytes ("<n>Ki").
//
// Thread-safe: a request uses only its own state; it blocks while the kubelets answer
// (at most 5 s each, 16 at a time).

#include <nlohmann/json.hpp>

#include "kube/http_server.h"
#include "minicluster/pod_proxy.h"
#include "minicluster/registry.h"
#include "minicluster/rest.h"

namespace strait::minicluster {

inline constexpr const char* kMetricsGroup = "metrics.k8s.io";
inline constexpr const char* kMetricsVersion = "v1beta1";

// True when `path` belongs to the metrics API (serveMetricsApi answers it).
bool isMetricsApiPath(const std::string& path);

// Answers one request under /apis/metrics.k8s.io (see the top of this file).
void serveMetricsApi(const kube::HttpRequest& req, kube::Responder& out, Rest& rest,
                     Registry& registry, const KubeletClientConfig& kubelet);

// Adds the group to an APIGroupList (/apis) or an APIGroupDiscoveryList (aggregated /apis).
void addMetricsGroup(nlohmann::json& apiGroupList);
void addMetricsAggregatedDiscovery(nlohmann::json& discoveryList);

// Pure builders (exposed for tests). The NodeMetrics of `node` from its kubelet's
// `summary`; null when the summary has no cpu usageNanoCores or memory workingSetBytes.
nlohmann::json nodeMetricsOf(const nlohmann::json& node, const nlohmann::json& summary);
// The PodMetrics of `pod` from its entry in a Summary's "pods"; null when a running
// container lacks usage or none has any.
nlohmann::json podMetricsOf(const nlohmann::json& pod, const nlohmann::json& podStats);

}  // namespace strait::minicluster
