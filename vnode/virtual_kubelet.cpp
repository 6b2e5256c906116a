// One virtual kubelet per peering (see virtual_kubelet.h).
#include "vnode/virtual_kubelet.h"

#include <spdlog/spdlog.h>

#include <set>

#include "kube/object.h"
#include "kube/validation.h"
#include "peering/foreign_cluster.h"
#include "reflection/consumer_reflection.h"
#include "vnode/capacity.h"
#include "vnode/kubelet_server.h"
#include "vnode/namespace_offloads.h"
#include "vnode/offloading_overrides.h"
#include "vnode/node_builder.h"
#include "vnode/node_controller.h"
#include "vnode/serving_cert.h"
#include "vnode/stream_health.h"

namespace strait::vnode {

using nlohmann::json;
using namespace std::chrono_literals;
namespace res = kube::resources;

VirtualKubelet::VirtualKubelet(kube::Client& local, VirtualKubeletOptions opts)
    : local_(local),
      opts_(std::move(opts)),
      nodeName_(opts_.peering ? virtualNodeName(opts_.peering->providerName()) : std::string()) {}

VirtualKubelet::~VirtualKubelet() { stop(); }

bool VirtualKubelet::streamReady() const { return reflection_ && reflection_->ready(); }

uint64_t VirtualKubelet::resyncs() const { return reflection_ ? reflection_->resyncs() : 0; }

kube::Status VirtualKubelet::start() {
  if (!opts_.peering) return kube::makeError(kube::Code::Invalid, "virtual kubelet: peering is required");
  if (opts_.streamGrace <= 0ms) {
    return kube::makeError(kube::Code::Invalid, "virtual kubelet: stream grace must be positive");
  }
  if (opts_.podWorkers <= 0) {
    return kube::makeError(kube::Code::Invalid, "virtual kubelet: pod workers must be positive");
  }
  {
    base::MutexLock l(mu_);
    if (started_) return kube::makeError(kube::Code::Invalid, "virtual kubelet already started");
    started_ = true;
  }
  const std::shared_ptr<peering::LivePeering> peering = opts_.peering;
  namespaces_ = std::make_unique<NamespaceOffloads>(local_, peering->providerName(), opts_.naming);
  NamespaceOffloads* offloads = namespaces_.get();
  const reflection::NamespaceMapping mapping(
      peering->consumerId(), [offloads](std::string_view ns) { return offloads->naming(ns); });

  NodeControllerOptions no;
  no.node.providerName = peering->providerName();
  no.node.providerClusterId = peering->providerId();
  no.node.address = opts_.nodeAddress;
  no.node.kubeletPort = opts_.kubeletPort == 0 ? 10250 : opts_.kubeletPort;
  if (kube::Status s = startKubeletServer(); !s.ok()) {
    // Logs and exec on offloaded Pods then fail; the Pods themselves still travel.
    spdlog::error("event=kubelet_api_not_started node={} error=\"{}\"", nodeName_,
                  s.error().message);
  } else {
    no.node.kubeletPort = kubelet_->port();
  }
  no.node.taintEffect = opts_.taintEffect;
  no.node.extraLabels = virtualNodeLabels(peering->providerName());
  no.pollInterval = opts_.nodePollInterval;
  no.grant = [peering] { return peering->grant(); };
  no.provider = [peering] { return peering->summary(); };
  no.tunnel = [peering] { return peering->tunnel(); };
  health_ = std::make_unique<StreamHealth>(opts_.streamGrace);
  no.health = health_.get();
  if (kube::Status s = validateConfig(no.node); !s.ok()) return s;

  reflection::ConsumerReflectionOptions ro;
  ro.consumerId = peering->consumerId();
  ro.nodeName = nodeName_;
  ro.nodeAddress = opts_.nodeAddress;
  ro.nodeLabelKeys = virtualNodeOwnLabelKeys();
  // Labels given at peering exist on the virtual node only: selectors on them chose the
  // provider and mean nothing to its nodes.
  for (const auto& [k, v] : no.node.extraLabels) ro.nodeLabelKeys.insert(k);
  // The pool label exists on the pool nodes only; the forge pins a pool's Pods itself.
  ro.nodeLabelKeys.insert(std::string(peering::kLabelPool));
  ro.pools = [this] { return poolsByNode(); };
  ro.mapping = mapping;
  ro.namespacesSynced = [offloads] { return offloads->hasSynced(); };
  ro.offloaded = [offloads](const std::string& ns) { return offloads->offloaded(ns); };
  ro.virtualNodeSelector = std::string(kLabelType) + "=" + std::string(kTypeVirtualKubelet);
  // Unreachable: the reflection stream down past the grace, or the tunnel, once it was up,
  // down (its own detection is the grace: the handshake or probe went unanswered). Traffic
  // to the offloaded Pods then has no way through, so the Services here stop using them.
  ro.providerUnreachable = [health = health_.get(), peering,
                            tunnelWasUp = std::make_shared<std::atomic<bool>>(false)] {
    const Readiness r = health->readiness();
    if (!r.ready && r.reason == "ReflectionStreamDown") return true;
    const peering::TunnelCondition t = peering->tunnel();
    if (t.up) {
      tunnelWasUp->store(true);
      return false;
    }
    return tunnelWasUp->load() && t.reason != "TunnelNotConfigured";
  };
  ro.onServiceCounts = [this, fc = peering->providerName()](
                           const reflection::ServiceReflectionCounts& c) {
    // Shown per peering by `strait status`.
    peering::patchForeignClusterStatus(
        local_, fc,
        {{"reflection",
          {{"services", c.services}, {"endpointSlices", c.endpointSlices},
           {"conflicts", c.conflicts}}}});
  };
  // The provider Services exported to this cluster (`strait expose service`), counted per
  // peering by `strait status` too.
  ro.providerId = peering->providerId();
  ro.onImportCounts = [this, fc = peering->providerName()](
                          const reflection::ServiceImportCounts& c) {
    peering::patchForeignClusterStatus(
        local_, fc,
        {{"imports",
          {{"services", c.services}, {"endpointSlices", c.endpointSlices},
           {"conflicts", c.conflicts}}}});
  };
  ro.open = [peering]() -> kube::Result<std::unique_ptr<peering::EventStream>> {
    std::shared_ptr<peering::RpcClient> rpc = peering->rpc();  // the current certificate
    if (!rpc) return kube::makeError(kube::Code::Unavailable, "no client for the provider yet");
    return rpc->openStream();
  };
  ro.mapPodIp = [peering](const std::string& ip) { return peering->localPodIp(ip); };
  ro.doesNotFit = [peering](const nlohmann::json& pod) {
    return doesNotFitReason(podRequests(pod), peering->summary());
  };
  overrides_ = std::make_unique<OffloadingOverrides>(local_);
  ro.podOverrides = [this, provider = peering->providerName(),
                     extra = no.node.extraLabels](const json& pod) {
    // The virtual node's labels as last written (topology, peering labels), else those
    // known before its first write.
    kube::LabelSet labels(extra.begin(), extra.end());
    const json node = node_ ? node_->lastNode() : json();
    for (const auto& [k, v] : kube::getLabels(node)) labels[k] = v;
    return overrides_->overridesFor(pod, provider, labels);
  };
  ro.podWorkers = opts_.podWorkers;
  ro.keepaliveInterval = opts_.keepaliveInterval;
  ro.callTimeout = opts_.callTimeout;
  StreamHealth* health = health_.get();
  ro.onConnected = [health] { health->onConnected(); };
  ro.onMessage = [health] { health->onMessage(); };
  ro.onDisconnected = [health](const kube::Status&) { health->onDisconnected(); };
  reflection_ = std::make_unique<reflection::ConsumerReflection>(local_, std::move(ro));

  reflection::ConsumerReflection* reflection = reflection_.get();
  namespaces_->setOnOffloaded(
      [reflection](const std::string& ns) { reflection->resyncNamespaceServices(ns); });
  namespaces_->start([reflection, mapping](const std::string& ns,
                                           reflection::NamingStrategy naming) {
    kube::Result<std::string> remote =
        reflection::NamespaceMapping(mapping.consumerId(), naming).remoteNamespace(ns);
    if (remote.ok()) reflection->releaseNamespace(*remote);
    reflection->resyncNamespaceServices(ns);
  });
  overrides_->start();
  node_ = std::make_unique<NodeController>(local_, no);
  if (kube::Status s = node_->start(); !s.ok()) return s;
  if (kube::Status s = reflection_->start(); !s.ok()) return s;
  spdlog::info("event=virtual_kubelet_started node={} provider={} address={} kubelet_port={}",
               nodeName_, peering->providerId(), opts_.nodeAddress, no.node.kubeletPort);
  return kube::Status::OK();
}

std::map<std::string, std::string> VirtualKubelet::virtualNodeLabels(
    const std::string& providerName) {
  std::map<std::string, std::string> out;
  kube::Result<json> fc = local_.get(peering::kForeignClusters, "", providerName);
  if (!fc.ok()) {
    spdlog::warn("event=virtual_node_labels_unread node={} error=\"{}\"", nodeName_,
                 fc.error().message);
    return out;
  }
  const json labels = fc->value("/spec/virtualNodeLabels"_json_pointer, json::object());
  if (!labels.is_object()) return out;
  for (const auto& [k, v] : labels.items()) {
    if (!v.is_string() || !kube::validateLabelKey(k).empty() ||
        !kube::validateLabelValue(v.get<std::string>()).empty()) {
      spdlog::warn("event=virtual_node_label_ignored node={} key=\"{}\" reason=invalid",
                   nodeName_, k);
      continue;
    }
    out[k] = v.get<std::string>();
  }
  return out;
}

kube::Status VirtualKubelet::startKubeletServer() {
  const std::string& clientCa = local_.config().caPem;
  if (clientCa.empty()) {
    return kube::makeError(kube::Code::Invalid,
                           "the consumer kubeconfig carries no cluster CA to verify the API "
                           "server's kubelet client certificate with");
  }
  ServingCertRequest csr;
  csr.nodeName = nodeName_;
  csr.ips = {opts_.nodeAddress};
  auto serving = requestServingCertificate(local_, csr);
  if (!serving.ok()) return kube::Status(serving.error());
  KubeletServerConfig kc;
  kc.nodeName = nodeName_;
  kc.listenHost = opts_.nodeAddress;
  kc.port = static_cast<uint16_t>(opts_.kubeletPort);
  kc.servingCert = *serving;
  kc.clientCaPem = clientCa;
  std::shared_ptr<peering::LivePeering> peering = opts_.peering;
  kc.provider = [peering]() -> std::shared_ptr<peering::KubeletClient> {
    std::shared_ptr<peering::RpcClient> rpc = peering->rpc();  // the current certificate
    return rpc ? rpc->kubelet() : nullptr;
  };
  // Each caller is authorized by a SubjectAccessReview to this cluster, as a kubelet does.
  kc.authorize = [authorizer = std::make_shared<KubeletAuthorizer>(subjectAccessReviewer(local_))](
                     const KubeletRequestAttributes& a) { return authorizer->authorize(a); };
  auto server = KubeletServer::create(std::move(kc));
  if (!server.ok()) return kube::Status(server.error());
  if (kube::Status s = (*server)->start(); !s.ok()) return s;
  kubelet_ = std::move(*server);
  return kube::Status::OK();
}

int VirtualKubelet::kubeletPort() const {
  if (kubelet_) return kubelet_->port();
  return opts_.kubeletPort == 0 ? 10250 : opts_.kubeletPort;
}

std::optional<std::map<std::string, peering::PoolSpec>> VirtualKubelet::poolsByNode() {
  const std::shared_ptr<peering::LivePeering> peering = opts_.peering;
  std::set<std::string> granted;
  for (const peering::PoolGrant& g : peering->pools()) granted.insert(g.name);
  const auto now = std::chrono::steady_clock::now();
  bool read = false;
  {
    base::MutexLock l(mu_);
    if (!specPools_ || now - specPoolsRead_ >= 30s) {
      read = true;
    } else if (now - specPoolsRead_ >= 2s) {
      std::set<std::string> known;
      for (const peering::PoolSpec& p : *specPools_) known.insert(p.name);
      read = known != granted;
    }
  }
  if (read) {
    kube::Result<json> fc = local_.get(peering::kForeignClusters, "", peering->providerName());
    std::optional<std::vector<peering::PoolSpec>> pools;
    if (fc.ok()) {
      kube::Result<std::vector<peering::PoolSpec>> p = peering::poolsOfForeignCluster(*fc);
      if (p.ok()) {
        pools = std::move(*p);
      } else {
        spdlog::warn("event=pools_unread node={} error=\"{}\"", nodeName_, p.error().message);
      }
    } else if (kube::isNotFound(fc.error())) {
      pools.emplace();
    } else {
      spdlog::warn("event=pools_unread node={} error=\"{}\"", nodeName_, fc.error().message);
    }
    base::MutexLock l(mu_);
    if (pools) {
      specPools_ = std::move(pools);
      specPoolsRead_ = now;
    }
  }
  base::MutexLock l(mu_);
  if (!specPools_) return std::nullopt;
  std::map<std::string, peering::PoolSpec> out;
  for (const peering::PoolSpec& p : *specPools_) {
    out[peering::poolNodeName(peering->providerName(), p.name)] = p;
  }
  return out;
}

void VirtualKubelet::stop() {
  if (reflection_) reflection_->stop();  // first: no more callbacks into the parts below
  if (kubelet_) kubelet_->stop();
  if (namespaces_) namespaces_->stop();
  if (overrides_) overrides_->stop();
  if (node_) node_->stop();
}

void VirtualKubelet::removeNode() {
  kube::Result<json> r = local_.remove(res::kNodes, "", nodeName_);
  if (r.ok()) {
    spdlog::info("event=virtual_node_deleted node={}", nodeName_);
  } else if (!kube::isNotFound(r.error())) {
    spdlog::warn("event=virtual_node_delete_failed node={} error=\"{}\"", nodeName_,
                 r.error().message);
  }
}

}  // namespace strait::vnode
