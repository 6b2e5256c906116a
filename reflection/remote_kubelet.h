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
// Then: logs through kube::Client::streamLogs (pods/log), exec through a pods/exec
// WebSocket (kube/exec_client.h, v5 then v4), pods by a labelled list mapped back to the
// consumer's namespaces, stats built from the Pods (the provider API server offers no
// resource usage: no usage figures are invented, see statsSummary).
//
// Thread-safe: each call uses only its own state and the (thread-safe) client.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

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
};

class RemoteKubelet final : public peering::KubeletHandler {
 public:
  // Invalid naming the missing option (provider, providerConfig.server, authorize).
  static kube::Result<std::unique_ptr<RemoteKubelet>> create(RemoteKubeletOptions options);

  kube::Status logs(const peering::Caller& caller, const v1::LogsRequest& req,
                    const std::function<bool(std::string_view)>& send,
                    const std::function<bool()>& cancelled) override;
  kube::Status exec(const peering::Caller& caller, peering::ExecStream& stream) override;
  kube::Status listPods(const peering::Caller& caller, v1::ListPodsResponse* resp) override;
  // A stats/v1alpha1 Summary: node {nodeName "" (the consumer fills in its virtual node),
  // startTime}, and per Pod podRef (consumer namespace, name, origin uid), startTime and
  // containers {name, startTime}. No cpu/memory usage: the provider API server does not
  // expose it (no metrics API in the minicluster), and none is made up.
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
  // The caller's Pods, each with metadata.namespace mapped back to the consumer's.
  kube::Result<nlohmann::json> callerPods(const peering::Caller& caller);

  const RemoteKubeletOptions o_;
};

// Pure helpers, exposed for tests.
// The Pod of `remotePod` as the consumer knows it: namespace mapped back (or from the
// strait.io/origin-namespace annotation), uid = the origin uid. Null when `remotePod` is not
// the consumer's (labels) or its namespace is not one the mapping produces.
nlohmann::json podAsConsumerSees(const nlohmann::json& remotePod, const NamespaceMapping& m);
// The stats Summary (see statsSummary) of consumer-view Pods.
nlohmann::json statsSummaryOf(const nlohmann::json& consumerPods);

}  // namespace strait::reflection
