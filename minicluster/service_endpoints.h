#pragma once
// What the Endpoints and EndpointSlice controllers share (upstream pkg/api/v1/pod FindPort
// and endpointslice util): a Service's pod selector, target port resolution (numbers and
// named container ports) and which pods belong in endpoints. Pure functions of JSON.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/selector.h"
#include "kube/status.h"
#include "kube/worker_pool.h"
#include "minicluster/local_informer.h"

namespace strait::minicluster {

// The selector of spec.selector; nullopt when the Service has none (its endpoints are the
// user's to manage).
std::optional<kube::LabelSelector> serviceSelector(const nlohmann::json& service);

// The container port a Service port targets on a pod: targetPort as a number, or the
// containerPort of the container port with that name and protocol; targetPort absent means
// `port`. NotFound when a named port does not exist on the pod.
kube::Result<int64_t> findPort(const nlohmann::json& pod, const nlohmann::json& servicePort);

// The pod's endpoint ports for the Service, in Service port order: objects
// {"name","port","protocol"[,"appProtocol"]}; ports that do not resolve on this pod are left
// out (as upstream).
nlohmann::json resolvePorts(const nlohmann::json& service, const nlohmann::json& pod);

// status.podIP (or the first status.podIPs entry); "" when none yet.
std::string podIp(const nlohmann::json& pod);

// Whether a pod belongs in a Service's endpoints at all: it has an IP, it is not terminal,
// and (unless includeTerminating) it is not being deleted.
bool podInEndpoints(const nlohmann::json& pod, bool includeTerminating);

// "ns/name" keys of the Services in the pod's namespace whose selector matches its labels.
std::vector<std::string> servicesSelecting(const LocalInformer& services, const std::string& ns,
                                           const std::map<std::string, std::string>& labels);

// Handlers for the pod informer that queue the keys of the Services selecting a changed pod
// (by its old and its new labels).
InformerHandlers podHandlersForServices(const LocalInformer& services, kube::WorkerPool& queue);

}  // namespace strait::minicluster
