#pragma once
// The provider side of the virtual node's kubelet API (peering::KubeletHandler): a consumer
// asks for the log of, or an exec in, one of ITS offloaded Pods, named as the consumer knows
// it (its namespace, the Pod name); this serves it from the provider's API server.
//
// Authorization, in order: the caller has an active peering (`authorize` hook, from
// ProviderService); the namespace maps (NamespaceMapping of the caller, with the strategy
// `namingFor` gives); the remote Pod exists and carries strait.io/origin-cluster-id=<caller>
// (reflection/labels.h) — another consumer's Pod, or a Pod of the provider's own users in a
// namespace that happens to have the mapped name, is NotFound, exactly like an absent one,
// so a consumer learns nothing about Pods that are not its own.
//
// Then: logs through kube::Client::streamLogs (pods/log), exec and attach through a
// pods/exec or pods/attach WebSocket (kube/exec_client.h, v5 then v4), port-forward through
// pods/portforward (kube/portforward.h, one connection per call), pods by a labelled list
// mapped back to the consumer's namespaces, stats built from the Pods (the provider API
// server offers no resource usage: no usage figures are invented, see statsSummary).
//
// Thread-safe: each call uses only its own state and the (thread-safe) client.

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/byte_stream.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "peering/kubelet_transport.h"
#include "reflection/namespace_mapping.h"

namespace strait::reflection {

struct RemoteKubeletOptions {
  kube::Client* provider = nullptr;  // the provider's API server (borrowed)
  kube::RestConfig providerConfig;   // the same server's config, for exec WebSockets
  // OK when the caller may use the kubelet API now (an active peering); the error otherwise.
  std::function<kube::Status(const peering::Caller&)> authorize;
  // Naming strategy of a consumer's namespaces; null = NamingStrategy::Default for all.
  std::function<NamingStrategy(const std::string& consumerId)> namingFor;
  // Opens one forwarded connection to a Pod's port through the provider API server; null =
  // kube::openPortForward (tests inject their own).
  std::function<kube::Result<std::unique_ptr<kube::ByteStream>>(
      const kube::RestConfig&, const std::string& ns, const std::string& pod, uint16_t port)>
      portForwarder;
};

class RemoteKubelet final : public peering::KubeletHandler {
 public:
  // Invalid naming the missing option (provider, providerConfig.server, authorize).
  static kube::Result<std::unique_ptr<RemoteKubelet>> create(RemoteKubeletOptions options);

  kube::Status logs(const peering::Caller& caller, const v1::LogsRequest& req,
                    const std::function<bool(std::string_view)>& send,
                    const std::function<bool()>& cancelled) override;
  kube::Status exec(const peering::Caller& caller, peering::ExecStream& stream) override;
  // pods/attach of the remote Pod, relayed like exec.
  kube::Status attach(const peering::Caller& caller, peering::ExecStream& stream) override;
  // One forwarded connection to a port of the remote Pod (pods/portforward of the provider
  // API server, through `portForwarder`).
  kube::Status portForward(const peering::Caller& caller,
                           peering::PortForwardStream& stream) override;
  kube::Status listPods(const peering::Caller& caller, v1::ListPodsResponse* resp) override;
  // A stats/v1alpha1 Summary: node {nodeName "" (the consumer fills in its virtual node)},
  // and per Pod podRef (consumer namespace, name, origin uid), startTime and containers
  // {name, startTime}, with cpu usageNanoCores and memory workingSetBytes from the
  // provider's metrics.k8s.io PodMetrics when it serves them (nothing is made up otherwise).
  kube::Status statsSummary(const peering::Caller& caller,
                            v1::StatsSummaryResponse* resp) override;

 private:
  explicit RemoteKubelet(RemoteKubeletOptions options) : o_(std::move(options)) {}
  // The caller's remote Pod for its (namespace, name), after all the checks above.
  struct Target {
    std::string remoteNs;
    nlohmann::json pod;
  };
  kube::Result<Target> resolve(const peering::Caller& caller, const std::string& ns,
                               const std::string& pod);
  NamespaceMapping mappingOf(const std::string& consumerId) const;
  // exec or attach (`subresource`): the provider's stream WebSocket relayed to `stream`.
  kube::Status relayStream(const peering::Caller& caller, peering::ExecStream& stream,
                           const std::string& subresource);
  // The caller's Pods, each with metadata.namespace mapped back to the consumer's.
  kube::Result<nlohmann::json> callerPods(const peering::Caller& caller);

  const RemoteKubeletOptions o_;
};

// Pure helpers, exposed for tests.
// The Pod of `remotePod` as the consumer knows it: namespace mapped back (or from the
// strait.io/origin-namespace annotation), uid = the origin uid. Null when `remotePod` is not
// the consumer's (labels) or its namespace is not one the mapping produces.
nlohmann::json podAsConsumerSees(const nlohmann::json& remotePod, const NamespaceMapping& m);
// The stats Summary (see statsSummary) of consumer-view Pods; `podMetrics` (metrics.k8s.io
// PodMetrics by the consumer's "namespace/name") adds usageNanoCores and workingSetBytes per
// container and their sums per Pod. A figure the metrics lack is left out, never made up.
nlohmann::json statsSummaryOf(const nlohmann::json& consumerPods,
                              const std::map<std::string, nlohmann::json>& podMetrics = {});

}  // namespace strait::reflection
