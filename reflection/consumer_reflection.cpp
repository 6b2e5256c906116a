// The consumer side of reflection for one peering (see consumer_reflection.h).
#include "reflection/consumer_reflection.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <set>

#include "kube/event.h"
#include "kube/informer.h"
#include "kube/json_access.h"
#include "kube/object.h"
#include "kube/time.h"
#include "reflection/pod_dependencies.h"
#include "reflection/pod_reflector.h"
#include "reflection/pod_status_writer.h"
#include "reflection/reflection_metrics.h"
#include "reflection/reflector.h"
#include "reflection/service_forge.h"
#include "reflection/stream_client.h"

namespace strait::reflection {

using nlohmann::json;
using namespace std::chrono_literals;
namespace res = kube::resources;

namespace {

constexpr const char* kUidIndex = "uid";
constexpr const char* kServiceIndex = "service";  // EndpointSlices by "ns/service"

// Holds keys back while `open` says the stream cannot answer truthfully. A key arriving then
// is dropped, not requeued: every (re)connection ends with a resync that enqueues every local
// object (ConsumerReflection::resyncNow), so nothing is lost, and a long outage with
// thousands of offloaded Pods costs no CPU (requeueing each every 250 ms did).
class GatedReflector : public KindReflector {
 public:
  GatedReflector(std::unique_ptr<KindReflector> inner, std::function<bool()> open)
      : inner_(std::move(inner)), open_(std::move(open)) {}
  std::string kind() const override { return inner_->kind(); }
  HandleResult handle(const std::string& key) override {
    if (!open_()) return HandleResult::done();
    return inner_->handle(key);
  }

 private:
  std::unique_ptr<KindReflector> inner_;
  std::function<bool()> open_;
};

}  // namespace

ConsumerReflection::ConsumerReflection(kube::Client& local, ConsumerReflectionOptions opts)
    : local_(local), opts_(std::move(opts)) {}

ConsumerReflection::~ConsumerReflection() { stop(); }

bool ConsumerReflection::ready() const {
  return stream_ && stream_->connected() && stream_->remoteSynced();
}

bool ConsumerReflection::gateOpen() const { return ready() && opts_.namespacesSynced(); }

uint64_t ConsumerReflection::resyncs() const {
  base::MutexLock l(mu_);
  return resyncs_;
}

StreamCounters ConsumerReflection::counters() const {
  return stream_ ? stream_->counters() : StreamCounters{};
}

kube::Status ConsumerReflection::start() {
  auto invalid = [](const char* what) {
    return kube::makeError(kube::Code::Invalid, std::string("consumer reflection: ") + what);
  };
  if (opts_.consumerId.empty()) return invalid("consumerId is required");
  if (opts_.nodeName.empty()) return invalid("nodeName is required");
  if (!opts_.open) return invalid("open (the stream dialer) is required");
  if (!opts_.namespacesSynced) return invalid("namespacesSynced is required");
  if (opts_.podWorkers <= 0) return invalid("pod workers must be positive");
  if (opts_.statusWriters <= 0) return invalid("status writers must be positive");
  if (opts_.serviceWorkers <= 0 || opts_.endpointSliceWorkers <= 0) {
    return invalid("service and endpoint slice workers must be positive");
  }
  {
    base::MutexLock l(mu_);
    if (started_) return invalid("already started");
    started_ = true;
  }

  StreamClientOptions so;
  so.consumerId = opts_.consumerId;
  so.mapping = opts_.mapping;
  so.open = opts_.open;
  so.keepaliveInterval = opts_.keepaliveInterval;
  so.callTimeout = opts_.callTimeout;
  // Redialled at least every second: after a heal, endpoints and Pod readiness are restored
  // within about two seconds (a failed dial costs one connection attempt).
  so.maxBackoff = std::chrono::milliseconds(1000);
  so.onConnected = [this] { onStreamConnected(); };
  so.onMessage = [this] {
    if (opts_.onMessage) opts_.onMessage();
  };
  so.onDisconnected = [this](const kube::Status& why) {
    if (opts_.onDisconnected) opts_.onDisconnected(why);
    // The totals are final for the connection that ended: nothing is sent while down.
    StreamCounters c = stream_->counters();
    spdlog::warn("event=reflection_stream_down node={} applies={} deletes={} error=\"{}\"",
                 opts_.nodeName, c.applies, c.deletes,
                 why.ok() ? std::string("closed") : why.error().message);
  };
  so.onRemoteChange = [this](const std::string& key) { (void)reflector_->enqueue("Pod", key); };
  so.onEvent = [this](const json& ev, const std::string& uid) { onProviderEvent(ev, uid); };
  if (!opts_.providerId.empty()) {
    ServiceImporterOptions io;
    io.providerId = opts_.providerId;
    io.mapPodIp = opts_.mapPodIp;
    io.providerUnreachable = opts_.providerUnreachable;
    io.onCounts = opts_.onImportCounts;
    importer_ = std::make_unique<ServiceImporter>(local_, std::move(io));
    if (kube::Status s = importer_->start(); !s.ok()) return s;
    so.onExport = [this](const StreamMessage& m) { importer_->handle(m); };
  }
  stream_ = std::make_unique<StreamClient>(std::move(so));

  // Compact (CBOR) cache: 10,000 Pods on the node cost tens of MB instead of ~150 MB parsed;
  // the reflector reads one Pod per handle().
  kube::InformerOptions io{res::kPods, "", "", "spec.nodeName=" + opts_.nodeName};
  io.compactCache = true;
  pods_ = std::make_unique<kube::Informer>(local_, io);
  pods_->addIndex(kUidIndex, [](const json& p) {
    std::string uid = kube::getUid(p);
    return uid.empty() ? std::vector<std::string>{} : std::vector<std::string>{uid};
  });

  // The reflected kinds. Each is a KindReflector behind the gate, registered once.
  PodReflectorOptions po;
  po.mapping = opts_.mapping;
  po.forge.consumerId = opts_.consumerId;
  po.forge.virtualNodeName = opts_.nodeName;
  po.forge.virtualNodeAddress = opts_.nodeAddress;
  po.forge.virtualNodeLabelKeys = opts_.nodeLabelKeys;
  po.forge.poolOfNode = [this](const std::string& node) { return poolOfNode(node); };
  po.status.virtualNodeAddress = opts_.nodeAddress;
  po.status.mapPodIp = opts_.mapPodIp;
  po.status.providerUnreachable = opts_.providerUnreachable;
  po.status.unreachableMessage =
      "the provider behind virtual node " + opts_.nodeName + " is unreachable";
  po.doesNotFit = opts_.doesNotFit;
  po.overrides = opts_.podOverrides;
  kube::Informer* informer = pods_.get();
  po.resyncDone = [this] { return podsSynced(); };
  PodStatusWriterOptions wo;
  wo.workers = opts_.statusWriters;
  wo.queue.baseDelay = 50ms;
  wo.queue.maxDelay = 5s;
  statusWriter_ = std::make_unique<PodStatusWriter>(local_, wo);
  po.statusWriter = statusWriter_.get();
  KindOptions ko;
  ko.workers = opts_.podWorkers;
  ko.queue.baseDelay = 50ms;
  ko.queue.maxDelay = 5s;
  reflector_ = std::make_unique<Reflector>(opts_.nodeName);
  if (kube::Status s = reflector_->registerKind(
          std::make_unique<GatedReflector>(
              std::make_unique<PodReflector>(
                  local_, [this](const std::string& key) { return localPod(key); }, *stream_,
                  po),
              [this] { return gateOpen(); }),
          ko);
      !s.ok()) {
    return s;
  }
  auto enqueue = [this](const kube::ObjectPtr& p) {
    (void)reflector_->enqueue("Pod", kube::objectKey(*p));
  };
  pods_->addHandlers({enqueue, podUpdateHandler(), enqueue});

  if (opts_.offloaded) {
    if (kube::Status st = registerServiceKinds(); !st.ok()) return st;
  }

  statusWriter_->start();
  reflector_->start();
  pods_->start();
  if (virtualNodes_) virtualNodes_->start();
  if (services_) services_->start();
  if (slices_) slices_->start();
  if (auto m = reflectionMetrics()) {
    m->podsAdded(opts_.nodeName, [informer] { return informer->cache().size(); });
  }
  thread_ = std::jthread([this](std::stop_token st) { housekeeping(st); });
  stream_->start();
  return kube::Status::OK();
}

void ConsumerReflection::stop() {
  if (stream_) stream_->stop();  // first: no more callbacks into the parts below
  if (importer_) importer_->stop();
  if (auto m = reflectionMetrics(); m && pods_) m->podsRemoved(opts_.nodeName);
  if (thread_.joinable()) {
    thread_.request_stop();
    {
      base::MutexLock l(mu_);
      cv_.notify_all();
    }
    thread_.join();
  }
  if (pods_) pods_->stop();
  for (const std::shared_ptr<kube::Informer>& i : poolInformers()) i->stop();
  if (services_) services_->stop();
  if (slices_) slices_->stop();
  if (virtualNodes_) virtualNodes_->stop();
  if (reflector_) reflector_->stop();
  if (statusWriter_) statusWriter_->stop();
}

kube::Status ConsumerReflection::registerServiceKinds() {
  // Every Service and EndpointSlice of the cluster (the namespaces offloaded here change at
  // run time): compact caches, read one object per handle().
  kube::InformerOptions svcOpts{res::kServices, "", "", ""};
  svcOpts.compactCache = true;
  kube::InformerOptions sliceOpts{res::kEndpointSlices, "", "", ""};
  sliceOpts.compactCache = true;
  services_ = std::make_unique<kube::Informer>(local_, svcOpts);
  slices_ = std::make_unique<kube::Informer>(local_, sliceOpts);
  slices_->addIndex(kServiceIndex, [](const json& s) {
    const std::string svc = endpointSliceServiceName(s);
    return svc.empty() ? std::vector<std::string>{}
                       : std::vector<std::string>{kube::getNamespace(s) + "/" + svc};
  });
  if (!opts_.virtualNodeSelector.empty()) {
    virtualNodes_ = std::make_unique<kube::Informer>(
        local_, kube::InformerOptions{res::kNodes, "", opts_.virtualNodeSelector, ""});
  }
  ServiceReflectorOptions so;
  so.mapping = opts_.mapping;
  so.offloaded = opts_.offloaded;
  so.isVirtualNode = [this](const std::string& node) { return isVirtualNode(node); };
  so.enqueueSlices = [this](const std::string& key) { enqueueServiceSlices(key); };
  KindOptions ko;
  ko.queue.baseDelay = 50ms;
  ko.queue.maxDelay = 5s;
  ko.workers = opts_.serviceWorkers;
  auto gate = [this] { return gateOpen(); };
  if (kube::Status s = reflector_->registerKind(
          std::make_unique<GatedReflector>(
              std::make_unique<ServiceReflector>(local_, services_->cache(), *stream_,
                                                 serviceState_, so),
              gate),
          ko);
      !s.ok()) {
    return s;
  }
  ko.workers = opts_.endpointSliceWorkers;
  if (kube::Status s = reflector_->registerKind(
          std::make_unique<GatedReflector>(
              std::make_unique<EndpointSliceReflector>(local_, services_->cache(),
                                                       slices_->cache(), *stream_,
                                                       serviceState_, so),
              gate),
          ko);
      !s.ok()) {
    return s;
  }
  auto onService = [this](const kube::ObjectPtr& o) {
    (void)reflector_->enqueue("Service", kube::objectKey(*o));
  };
  services_->addHandlers(
      {onService, [onService](const kube::ObjectPtr&, const kube::ObjectPtr& n) { onService(n); },
       onService});
  auto onSlice = [this](const kube::ObjectPtr& o) {
    (void)reflector_->enqueue("EndpointSlice", kube::objectKey(*o));
  };
  slices_->addHandlers(
      {onSlice, [onSlice](const kube::ObjectPtr&, const kube::ObjectPtr& n) { onSlice(n); },
       onSlice});
  return kube::Status::OK();
}

std::vector<std::shared_ptr<kube::Informer>> ConsumerReflection::poolInformers() const {
  base::MutexLock l(poolMu_);
  std::vector<std::shared_ptr<kube::Informer>> out;
  for (const auto& [node, informer] : poolPods_) out.push_back(informer);
  return out;
}

std::vector<std::string> ConsumerReflection::poolNodes() const {
  base::MutexLock l(poolMu_);
  std::vector<std::string> out;
  for (const auto& [node, informer] : poolPods_) out.push_back(node);
  return out;
}

kube::ObjectPtr ConsumerReflection::localPod(const std::string& key) const {
  if (kube::ObjectPtr p = pods_->cache().get(key)) return p;
  for (const std::shared_ptr<kube::Informer>& i : poolInformers()) {
    if (kube::ObjectPtr p = i->cache().get(key)) return p;
  }
  return nullptr;
}

std::vector<kube::ObjectPtr> ConsumerReflection::localPods() const {
  std::vector<kube::ObjectPtr> out = pods_->cache().list();
  for (const std::shared_ptr<kube::Informer>& i : poolInformers()) {
    for (kube::ObjectPtr& p : i->cache().list()) out.push_back(std::move(p));
  }
  return out;
}

bool ConsumerReflection::podsSynced() const {
  if (!pods_->hasSynced()) return false;
  base::MutexLock l(poolMu_);
  if (!poolsKnown_) return false;
  for (const auto& [node, informer] : poolPods_) {
    if (!informer->hasSynced()) return false;
  }
  return true;
}

std::optional<peering::PoolSpec> ConsumerReflection::poolOfNode(const std::string& nodeName) const {
  base::MutexLock l(poolMu_);
  auto it = poolSpecs_.find(nodeName);
  if (it == poolSpecs_.end()) return std::nullopt;
  return it->second;
}

void ConsumerReflection::syncPoolInformers() {
  std::map<std::string, peering::PoolSpec> wanted;
  if (opts_.pools) {
    std::optional<std::map<std::string, peering::PoolSpec>> now = opts_.pools();
    if (!now) return;  // not known yet
    wanted = std::move(*now);
  }
  std::vector<std::shared_ptr<kube::Informer>> gone;
  std::vector<std::string> toStart;
  {
    base::MutexLock l(poolMu_);
    poolsKnown_ = true;
    poolSpecs_ = wanted;
    for (auto it = poolPods_.begin(); it != poolPods_.end();) {
      if (wanted.count(it->first)) {
        ++it;
        continue;
      }
      spdlog::info("event=pool_node_pods_unwatched node={} pool_node={}", opts_.nodeName,
                   it->first);
      gone.push_back(std::move(it->second));
      it = poolPods_.erase(it);
    }
    for (const auto& [node, spec] : wanted) {
      if (!poolPods_.count(node)) toStart.push_back(node);
    }
  }
  for (const std::shared_ptr<kube::Informer>& i : gone) {
    i->stop();
    // No longer bound to a node of this peering: each is handled as gone here.
    for (const std::string& key : i->cache().keys()) (void)reflector_->enqueue("Pod", key);
  }
  for (const std::string& node : toStart) {
    kube::InformerOptions io{res::kPods, "", "", "spec.nodeName=" + node};
    io.compactCache = true;
    auto informer = std::make_shared<kube::Informer>(local_, io);
    informer->addIndex(kUidIndex, [](const json& p) {
      std::string uid = kube::getUid(p);
      return uid.empty() ? std::vector<std::string>{} : std::vector<std::string>{uid};
    });
    auto enqueue = [this](const kube::ObjectPtr& p) {
      (void)reflector_->enqueue("Pod", kube::objectKey(*p));
    };
    informer->addHandlers({enqueue, podUpdateHandler(), enqueue});
    {
      base::MutexLock l(poolMu_);
      poolPods_[node] = informer;
    }
    informer->start();
    spdlog::info("event=pool_node_pods_watched node={} pool_node={}", opts_.nodeName, node);
  }
}

bool ConsumerReflection::isVirtualNode(const std::string& nodeName) const {
  if (nodeName == opts_.nodeName) return true;
  return virtualNodes_ && virtualNodes_->cache().get(nodeName) != nullptr;
}

std::function<void(const kube::ObjectPtr&, const kube::ObjectPtr&)>
ConsumerReflection::podUpdateHandler() {
  return [this](const kube::ObjectPtr& before, const kube::ObjectPtr& now) {
    const std::string key = kube::objectKey(*now);
    // The echo of a status this agent wrote: the reflector decided with that status already.
    if (statusWriter_->echoesOwnWrite(key, *before, *now)) return;
    (void)reflector_->enqueue("Pod", key);
  };
}

void ConsumerReflection::enqueueServiceSlices(const std::string& serviceKey) {
  if (!slices_) return;
  for (const kube::ObjectPtr& s : slices_->cache().byIndex(kServiceIndex, serviceKey)) {
    (void)reflector_->enqueue("EndpointSlice", kube::objectKey(*s));
  }
}

void ConsumerReflection::resyncNamespaceServices(const std::string& ns) {
  if (!services_ || !reflector_) return;
  for (const kube::ObjectPtr& s : services_->cache().list()) {
    if (kube::getNamespace(*s) == ns) (void)reflector_->enqueue("Service", kube::objectKey(*s));
  }
}

ServiceImportCounts ConsumerReflection::importCounts() const {
  return importer_ ? importer_->counts() : ServiceImportCounts{};
}

ServiceReflectionCounts ConsumerReflection::serviceCounts() const {
  return serviceState_.counts();
}

bool ConsumerReflection::markPodsUnreachable() {
  bool all = true;
  const std::string now = kube::rfc3339Now();
  for (const kube::ObjectPtr& p : localPods()) {
    json pod = *p;
    if (!kube::hasObject(pod, "status") || !kube::hasArray(pod["status"], "conditions")) continue;
    const std::string phase = kube::stringOf(pod["status"], "phase");
    if (phase == "Succeeded" || phase == "Failed") continue;
    bool changed = false;
    for (json& c : pod["status"]["conditions"]) {
      const std::string type = kube::stringOf(c, "type");
      if ((type == "Ready" || type == "ContainersReady") &&
          (kube::stringOf(c, "status") != "False" ||
           kube::stringOf(c, "reason") != "ProviderUnreachable")) {
        c["status"] = "False";
        c["reason"] = "ProviderUnreachable";
        c["message"] = "the provider behind virtual node " +
                       kube::stringOf(pod["spec"], "nodeName", opts_.nodeName) +
                       " is unreachable";
        c["lastTransitionTime"] = now;
        changed = true;
      }
    }
    if (!changed) continue;
    if (kube::hasArray(pod["status"], "containerStatuses")) {
      for (json& cs : pod["status"]["containerStatuses"]) {
        if (cs.is_object()) cs["ready"] = false;
      }
    }
    kube::Result<json> r = kube::updateStatus(local_, res::kPods, kube::getNamespace(pod), pod);
    if (!r.ok() && !kube::isNotFound(r.error())) {
      all = false;
      spdlog::warn("event=pod_unreachable_not_marked pod={}/{} error=\"{}\"",
                   kube::getNamespace(pod), kube::getName(pod), r.error().message);
    }
  }
  spdlog::info("event=pods_marked_provider_unreachable node={} complete={}", opts_.nodeName, all);
  return all;
}

void ConsumerReflection::releaseNamespace(const std::string& remoteNs) {
  base::MutexLock l(mu_);
  releases_.push_back(remoteNs);
  cv_.notify_all();
}

void ConsumerReflection::onStreamConnected() {
  if (opts_.onConnected) opts_.onConnected();
  base::MutexLock l(mu_);
  resyncPending_ = true;
  cv_.notify_all();
}

void ConsumerReflection::onProviderEvent(const json& event, const std::string& originUid) {
  if (seenEvents_.sent(event)) return;
  seenEvents_.record(event);
  base::MutexLock l(mu_);
  if (events_.size() >= 1000) events_.pop_front();  // a storm: keep the newest
  events_.emplace_back(event, originUid);
  // The housekeeper takes every queued Event before it waits again: one wake-up per burst.
  if (events_.size() == 1) cv_.notify_all();
}

bool ConsumerReflection::resyncNow() {
  if (!podsSynced() || !gateOpen()) {
    return false;  // the gate: keys it dropped are enqueued here once it opens
  }
  if ((services_ && !services_->hasSynced()) || (slices_ && !slices_->hasSynced()) ||
      (virtualNodes_ && !virtualNodes_->hasSynced())) {
    return false;
  }
  std::vector<std::string> uids;
  std::set<std::pair<std::string, std::string>> deps;  // ("ns/name", Kind)
  for (const kube::ObjectPtr& p : localPods()) {
    uids.push_back(kube::getUid(*p));
    (void)reflector_->enqueue("Pod", kube::objectKey(*p));
    const std::string ns = kube::getNamespace(*p);
    PodDependencies d = podDependencies(*p);
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
    kube::Result<kube::ResourceRef> r = resourceOfKind(kind);
    if (!r.ok()) continue;
    kube::Result<json> obj = local_.get(*r, key.substr(0, slash), key.substr(slash + 1));
    if (obj.ok()) uids.push_back(kube::getUid(*obj));
  }
  // The Services still reflected and their slices: the provider keeps those (and deletes
  // its copies of the others, e.g. a Service deleted or opted out while the stream was down).
  if (services_) {
    std::set<std::string> wantedServices;
    for (const kube::ObjectPtr& svc : services_->cache().list()) {
      (void)reflector_->enqueue("Service", kube::objectKey(*svc));
      if (opts_.offloaded(kube::getNamespace(*svc)) && !serviceReflectionDisabled(*svc)) {
        wantedServices.insert(kube::objectKey(*svc));
        uids.push_back(kube::getUid(*svc));
      }
    }
    for (const kube::ObjectPtr& slice : slices_->cache().list()) {
      (void)reflector_->enqueue("EndpointSlice", kube::objectKey(*slice));
      if (wantedServices.count(kube::getNamespace(*slice) + "/" +
                               endpointSliceServiceName(*slice))) {
        uids.push_back(kube::getUid(*slice));
      }
    }
  }
  kube::Status s = stream_->resyncDone(uids);
  if (!s.ok()) {
    spdlog::warn("event=resync_done_failed node={} error=\"{}\"", opts_.nodeName,
                 s.error().message);
    return false;
  }
  spdlog::info("event=resync_done node={} live_origins={}", opts_.nodeName, uids.size());
  return true;
}

bool ConsumerReflection::sendRelease(const std::string& remoteNs) {
  kube::Result<json> r = stream_->remove(StreamMessage::removeNamespace(remoteNs));
  if (r.ok()) {
    spdlog::info("event=remote_namespace_released node={} namespace={}", opts_.nodeName,
                 remoteNs);
    return true;
  }
  const kube::Code c = r.error().code;
  if (c == kube::Code::Unavailable || c == kube::Code::ServerTimeout) return false;
  // Not ours (a namespace Strait did not create for this consumer): left alone.
  spdlog::warn("event=remote_namespace_not_released node={} namespace={} error=\"{}\"",
               opts_.nodeName, remoteNs, r.error().message);
  return true;
}

void ConsumerReflection::logCountersIfChanged() {
  const StreamCounters c = stream_->counters();
  const std::array<uint64_t, 3> now = {c.applies, c.deletes, c.errors};
  if (now == loggedCounters_) return;
  loggedCounters_ = now;
  spdlog::info("event=stream_counters node={} connections={} applies={} deletes={} errors={} "
               "messages_out={} bytes_out={} messages_in={} bytes_in={}",
               opts_.nodeName, stream_->connections(), c.applies, c.deletes, c.errors,
               c.messagesOut, c.bytesOut, c.messagesIn, c.bytesIn);
}

void ConsumerReflection::housekeeping(std::stop_token stop) {
  pthread_setname_np(pthread_self(), "vnode-housekeep");
  syncPoolInformers();
  base::UniqueLock l(mu_);
  auto nextCounters = std::chrono::steady_clock::now() + 1s;
  while (!stop.stop_requested()) {
    // stop() notifies under the lock after request_stop(): no wake-up is lost.
    if (events_.empty()) cv_.wait_for(l, 100ms);
    if (stop.stop_requested()) break;
    if (std::chrono::steady_clock::now() >= nextCounters) {
      nextCounters = std::chrono::steady_clock::now() + 1s;
      l.unlock();
      syncPoolInformers();
      logCountersIfChanged();
      if (opts_.onServiceCounts && services_) {
        const ServiceReflectionCounts c = serviceState_.counts();
        if (!publishedCounts_ || *publishedCounts_ != c) {
          opts_.onServiceCounts(c);
          publishedCounts_ = c;
        }
      }
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
      const bool done = sendRelease(ns);
      l.lock();
      if (!done) releases_.push_back(std::move(ns));
    }
    if (opts_.providerUnreachable) {
      const bool unreachable = opts_.providerUnreachable();
      if (unreachable && !podsMarkedUnreachable_) {
        l.unlock();
        podsMarkedUnreachable_ = markPodsUnreachable();
        l.lock();
      } else if (!unreachable && podsMarkedUnreachable_) {
        // Each Pod handled again writes the provider's status back: after a stream outage
        // the resync does it too, after a tunnel outage (the stream stayed up) only this.
        podsMarkedUnreachable_ = false;
        l.unlock();
        for (const kube::ObjectPtr& p : localPods()) {
          (void)reflector_->enqueue("Pod", kube::objectKey(*p));
        }
        l.lock();
      }
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

void ConsumerReflection::recordEvent(const json& remote, const std::string& originUid) {
  std::vector<kube::ObjectPtr> pods = pods_->cache().byIndex(kUidIndex, originUid);
  for (const std::shared_ptr<kube::Informer>& i : poolInformers()) {
    if (!pods.empty()) break;
    pods = i->cache().byIndex(kUidIndex, originUid);
  }
  if (pods.empty()) return;  // the local Pod is gone
  const json& pod = *pods.front();
  kube::EventFields fields;
  fields.involvedObject = {{"apiVersion", "v1"},
                           {"kind", "Pod"},
                           {"namespace", kube::getNamespace(pod)},
                           {"name", kube::getName(pod)},
                           {"uid", originUid}};
  fields.type = kube::stringOf(remote, "type", "Normal");
  fields.reason = kube::stringOf(remote, "reason", "ProviderEvent");
  fields.message = "[provider] " + kube::stringOf(remote, "message");
  fields.component = "strait-vnode";
  fields.host = opts_.nodeName;
  fields.firstTimestamp = kube::stringOf(remote, "firstTimestamp");  // empty: now
  fields.lastTimestamp = kube::stringOf(remote, "lastTimestamp");
  fields.count = kube::intOf(remote, "count", 1);
  json ev = kube::makeEvent(fields);
  kube::Result<json> r = local_.create(res::kEvents, kube::getNamespace(pod), ev);
  if (!r.ok()) {
    spdlog::warn("event=provider_event_not_recorded pod={}/{} error=\"{}\"",
                 kube::getNamespace(pod), kube::getName(pod), r.error().message);
  }
}

}  // namespace strait::reflection
