// One virtual kubelet per peering (see virtual_kubelet.h).
#include "vnode/virtual_kubelet.h"

#include <spdlog/spdlog.h>

#include <array>
#include <set>

#include "kube/informer.h"
#include "kube/object.h"
#include "reflection/pod_dependencies.h"
#include "reflection/pod_reflector.h"
#include "reflection/provider_applier.h"
#include "reflection/reflector.h"
#include "reflection/stream_client.h"
#include "vnode/capacity.h"
#include "vnode/kubelet_server.h"
#include "vnode/namespace_offloads.h"
#include "vnode/node_controller.h"
#include "vnode/serving_cert.h"
#include "vnode/stream_health.h"

namespace strait::vnode {

using nlohmann::json;
using namespace std::chrono_literals;
namespace res = kube::resources;

namespace {

constexpr const char* kUidIndex = "uid";

// Holds Pod keys back while the stream cannot answer truthfully (down, or the provider's
// initial list not in yet): an empty remote cache must not read as "the remote Pod is gone".
// A key arriving then is dropped, not requeued: every (re)connection ends with a resync that
// enqueues every local Pod (resyncNow), so nothing is lost, and a long outage with thousands
// of offloaded Pods costs no CPU (requeueing each every 250 ms did).
class GatedPodReflector : public reflection::KindReflector {
 public:
  GatedPodReflector(std::unique_ptr<reflection::PodReflector> inner, std::function<bool()> open)
      : inner_(std::move(inner)), open_(std::move(open)) {}
  std::string kind() const override { return inner_->kind(); }
  reflection::HandleResult handle(const std::string& key) override {
    if (!open_()) return reflection::HandleResult::done();
    return inner_->handle(key);
  }

 private:
  std::unique_ptr<reflection::PodReflector> inner_;
  std::function<bool()> open_;
};

}  // namespace

VirtualKubelet::VirtualKubelet(kube::Client& local, VirtualKubeletOptions opts)
    : local_(local),
      opts_(std::move(opts)),
      nodeName_(opts_.peering ? virtualNodeName(opts_.peering->providerName()) : std::string()) {}

VirtualKubelet::~VirtualKubelet() { stop(); }

bool VirtualKubelet::streamReady() const {
  return stream_ && stream_->connected() && stream_->remoteSynced();
}

uint64_t VirtualKubelet::resyncs() const {
  std::lock_guard<std::mutex> l(mu_);
  return resyncs_;
}

kube::Status VirtualKubelet::start() {
  if (!opts_.peering) return kube::makeError(kube::Code::Invalid, "virtual kubelet: peering is required");
  if (opts_.streamGrace <= 0ms) {
    return kube::makeError(kube::Code::Invalid, "virtual kubelet: stream grace must be positive");
  }
  if (opts_.podWorkers <= 0) {
    return kube::makeError(kube::Code::Invalid, "virtual kubelet: pod workers must be positive");
  }
  {
    std::lock_guard<std::mutex> l(mu_);
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
  no.pollInterval = opts_.nodePollInterval;
  no.grant = [peering] { return peering->grant(); };
  no.provider = [peering] { return peering->summary(); };
  health_ = std::make_unique<StreamHealth>(opts_.streamGrace);
  no.health = health_.get();
  if (kube::Status s = validateConfig(no.node); !s.ok()) return s;

  reflection::StreamClientOptions so;
  so.consumerId = peering->consumerId();
  so.mapping = mapping;
  so.open = [peering]() -> kube::Result<std::unique_ptr<peering::EventStream>> {
    std::shared_ptr<peering::RpcClient> rpc = peering->rpc();  // the current certificate
    if (!rpc) return kube::makeError(kube::Code::Unavailable, "no client for the provider yet");
    return rpc->openStream();
  };
  so.keepaliveInterval = opts_.keepaliveInterval;
  so.callTimeout = opts_.callTimeout;
  so.onConnected = [this] { onStreamConnected(); };
  so.onMessage = [this] { health_->onMessage(); };
  so.onDisconnected = [this](const kube::Status& why) {
    health_->onDisconnected();
    // The totals are final for the connection that ended: nothing is sent while down.
    reflection::StreamCounters c = stream_->counters();
    spdlog::warn("event=reflection_stream_down node={} applies={} deletes={} error=\"{}\"",
                 nodeName_, c.applies, c.deletes,
                 why.ok() ? std::string("closed") : why.error().message);
  };
  so.onRemoteChange = [this](const std::string& key) { (void)reflector_->enqueue("Pod", key); };
  so.onEvent = [this](const json& ev, const std::string& uid) { onProviderEvent(ev, uid); };
  stream_ = std::make_unique<reflection::StreamClient>(std::move(so));

  // Compact (CBOR) cache: 10,000 Pods on the node cost tens of MB instead of ~150 MB parsed;
  // the reflector reads one Pod per handle().
  kube::InformerOptions io{res::kPods, "", "", "spec.nodeName=" + nodeName_};
  io.compactCache = true;
  pods_ = std::make_unique<kube::Informer>(local_, io);
  pods_->addIndex(kUidIndex, [](const json& p) {
    std::string uid = kube::getUid(p);
    return uid.empty() ? std::vector<std::string>{} : std::vector<std::string>{uid};
  });

  reflection::PodReflectorOptions po;
  po.mapping = mapping;
  po.forge.consumerId = peering->consumerId();
  po.forge.virtualNodeName = nodeName_;
  po.forge.virtualNodeAddress = opts_.nodeAddress;
  po.forge.virtualNodeLabelKeys = virtualNodeOwnLabelKeys();
  po.status.virtualNodeAddress = opts_.nodeAddress;
  po.doesNotFit = [peering](const json& pod) {
    return doesNotFitReason(podRequests(pod), peering->summary());
  };
  kube::Informer* informer = pods_.get();
  po.resyncDone = [informer] { return informer->hasSynced(); };
  reflector_ = std::make_unique<reflection::Reflector>();
  reflection::KindOptions ko;
  ko.workers = opts_.podWorkers;
  ko.queue.baseDelay = 50ms;
  ko.queue.maxDelay = 5s;
  reflection::StreamClient* stream = stream_.get();
  auto inner = std::make_unique<reflection::PodReflector>(local_, pods_->cache(), *stream_, po);
  if (kube::Status s = reflector_->registerKind(
          std::make_unique<GatedPodReflector>(
              std::move(inner),
              [stream, offloads] {
                return stream->connected() && stream->remoteSynced() && offloads->hasSynced();
              }),
          ko);
      !s.ok()) {
    return s;
  }
  auto enqueue = [this](const kube::ObjectPtr& p) {
    (void)reflector_->enqueue("Pod", kube::objectKey(*p));
  };
  pods_->addHandlers(
      {enqueue, [enqueue](const kube::ObjectPtr&, const kube::ObjectPtr& n) { enqueue(n); },
       enqueue});

  namespaces_->start([this, mapping](const std::string& ns, reflection::NamingStrategy naming) {
    kube::Result<std::string> remote =
        reflection::NamespaceMapping(mapping.consumerId(), naming).remoteNamespace(ns);
    if (!remote.ok()) return;
    std::lock_guard<std::mutex> l(mu_);
    releases_.push_back(*remote);
    cv_.notify_all();
  });
  node_ = std::make_unique<NodeController>(local_, no);
  if (kube::Status s = node_->start(); !s.ok()) return s;
  reflector_->start();
  pods_->start();
  thread_ = std::jthread([this](std::stop_token st) { housekeeping(st); });
  stream_->start();
  spdlog::info("event=virtual_kubelet_started node={} provider={} address={} kubelet_port={}",
               nodeName_, peering->providerId(), opts_.nodeAddress, no.node.kubeletPort);
  return kube::Status::OK();
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
  auto server = KubeletServer::create(std::move(kc));
  if (!server.ok()) return kube::Status(server.error());
  if (kube::Status s = (*server)->start(); !s.ok()) return s;
  kubelet_ = std::move(*server);
  return kube::Status::OK();
}

void VirtualKubelet::stop() {
  if (stream_) stream_->stop();  // first: no more callbacks into the parts below
  if (kubelet_) kubelet_->stop();
  if (thread_.joinable()) {
    thread_.request_stop();
    {
      std::lock_guard<std::mutex> l(mu_);
      cv_.notify_all();
    }
    thread_.join();
  }
  if (pods_) pods_->stop();
  if (namespaces_) namespaces_->stop();
  if (reflector_) reflector_->stop();
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

void VirtualKubelet::onStreamConnected() {
  health_->onConnected();
  std::lock_guard<std::mutex> l(mu_);
  resyncPending_ = true;
  cv_.notify_all();
}

void VirtualKubelet::onProviderEvent(const json& event, const std::string& originUid) {
  if (seenEvents_.sent(event)) return;
  seenEvents_.record(event);
  std::lock_guard<std::mutex> l(mu_);
  if (events_.size() >= 1000) events_.pop_front();  // a storm: keep the newest
  events_.emplace_back(event, originUid);
  cv_.notify_all();
}

bool VirtualKubelet::resyncNow() {
  if (!pods_->hasSynced() || !namespaces_->hasSynced() || !stream_->connected() ||
      !stream_->remoteSynced()) {
    return false;  // the gate of GatedPodReflector: keys it dropped are enqueued here
  }
  std::vector<std::string> uids;
  std::set<std::pair<std::string, std::string>> deps;  // ("ns/name", Kind)
  for (const kube::ObjectPtr& p : pods_->cache().list()) {
    uids.push_back(kube::getUid(*p));
    (void)reflector_->enqueue("Pod", kube::objectKey(*p));
    const std::string ns = kube::getNamespace(*p);
    reflection::PodDependencies d = reflection::podDependencies(*p);
    for (const std::string& n : d.configMaps) deps.emplace(ns + "/" + n, "ConfigMap");
    for (const std::string& n : d.secrets) deps.emplace(ns + "/" + n, "Secret");
    if (!d.serviceAccount.empty() && d.serviceAccount != "default") {
      deps.emplace(ns + "/" + d.serviceAccount, "ServiceAccount");
    }
  }
  // The live origins of what travelled with the Pods, so that the provider keeps those
  // (it deletes unused ones whose origin is not listed).
  for (const auto& [key, kind] : deps) {
    const size_t slash = key.find('/');
    kube::Result<kube::ResourceRef> r = reflection::resourceOfKind(kind);
    if (!r.ok()) continue;
    kube::Result<json> obj = local_.get(*r, key.substr(0, slash), key.substr(slash + 1));
    if (obj.ok()) uids.push_back(kube::getUid(*obj));
  }
  kube::Status s = stream_->resyncDone(uids);
  if (!s.ok()) {
    spdlog::warn("event=resync_done_failed node={} error=\"{}\"", nodeName_, s.error().message);
    return false;
  }
  spdlog::info("event=resync_done node={} live_origins={}", nodeName_, uids.size());
  return true;
}

bool VirtualKubelet::releaseNamespace(const std::string& remoteNs) {
  kube::Result<json> r = stream_->remove(reflection::StreamMessage::removeNamespace(remoteNs));
  if (r.ok()) {
    spdlog::info("event=remote_namespace_released node={} namespace={}", nodeName_, remoteNs);
    return true;
  }
  const kube::Code c = r.error().code;
  if (c == kube::Code::Unavailable || c == kube::Code::ServerTimeout) return false;
  // Not ours (a namespace Strait did not create for this consumer): left alone.
  spdlog::warn("event=remote_namespace_not_released node={} namespace={} error=\"{}\"", nodeName_,
               remoteNs, r.error().message);
  return true;
}

void VirtualKubelet::logCountersIfChanged() {
  const reflection::StreamCounters c = stream_->counters();
  const std::array<uint64_t, 3> now = {c.applies, c.deletes, c.errors};
  if (now == loggedCounters_) return;
  loggedCounters_ = now;
  spdlog::info("event=stream_counters node={} connections={} applies={} deletes={} errors={} "
               "messages_out={} bytes_out={} messages_in={} bytes_in={}",
               nodeName_, stream_->connections(), c.applies, c.deletes, c.errors, c.messagesOut,
               c.bytesOut, c.messagesIn, c.bytesIn);
}

void VirtualKubelet::housekeeping(std::stop_token stop) {
  std::unique_lock<std::mutex> l(mu_);
  auto nextCounters = std::chrono::steady_clock::now() + 1s;
  while (!stop.stop_requested()) {
    cv_.wait_for(l, stop, 100ms, [&] { return !events_.empty(); });
    if (stop.stop_requested()) break;
    if (std::chrono::steady_clock::now() >= nextCounters) {
      nextCounters = std::chrono::steady_clock::now() + 1s;
      l.unlock();
      logCountersIfChanged();
      l.lock();
    }
    while (!events_.empty()) {
      auto [ev, uid] = std::move(events_.front());
      events_.pop_front();
      l.unlock();
      recordEvent(ev, uid);
      l.lock();
    }
    if (!releases_.empty() && stream_->connected()) {
      std::string ns = std::move(releases_.front());
      releases_.pop_front();
      l.unlock();
      const bool done = releaseNamespace(ns);
      l.lock();
      if (!done) releases_.push_back(std::move(ns));
    }
    if (resyncPending_) {
      l.unlock();
      bool done = resyncNow();
      l.lock();
      if (done) {
        resyncPending_ = false;
        ++resyncs_;
      }
    }
  }
}

void VirtualKubelet::recordEvent(const json& remote, const std::string& originUid) {
  std::vector<kube::ObjectPtr> pods = pods_->cache().byIndex(kUidIndex, originUid);
  if (pods.empty()) return;  // the local Pod is gone
  const json& pod = *pods.front();
  const std::string now = kube::rfc3339Now();
  auto str = [&](const char* k, const std::string& d) {
    return remote.is_object() && remote.contains(k) && remote[k].is_string()
               ? remote[k].get<std::string>()
               : d;
  };
  json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata",
              {{"generateName", kube::getName(pod) + "."}, {"namespace", kube::getNamespace(pod)}}},
             {"involvedObject",
              {{"apiVersion", "v1"},
               {"kind", "Pod"},
               {"namespace", kube::getNamespace(pod)},
               {"name", kube::getName(pod)},
               {"uid", originUid}}},
             {"type", str("type", "Normal")},
             {"reason", str("reason", "ProviderEvent")},
             {"message", "[provider] " + str("message", "")},
             {"source", {{"component", "strait-vnode"}, {"host", nodeName_}}},
             {"reportingComponent", "strait-vnode"},
             {"reportingInstance", nodeName_},
             {"firstTimestamp", str("firstTimestamp", now)},
             {"lastTimestamp", str("lastTimestamp", now)},
             {"count", remote.is_object() && remote.contains("count") &&
                               remote["count"].is_number_integer()
                           ? remote["count"].get<int64_t>()
                           : 1}};
  kube::Result<json> r = local_.create(res::kEvents, kube::getNamespace(pod), ev);
  if (!r.ok()) {
    spdlog::warn("event=provider_event_not_recorded pod={}/{} error=\"{}\"",
                 kube::getNamespace(pod), kube::getName(pod), r.error().message);
  }
}

}  // namespace strait::vnode
