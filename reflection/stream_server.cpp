#include "reflection/stream_server.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "base/thread_annotations.h"
#include "kube/informer.h"
#include "kube/object.h"
#include "peering/foreign_cluster.h"
#include "reflection/labels.h"
#include "reflection/pod_usage.h"
#include "reflection/provider_applier.h"
#include "reflection/reflection_metrics.h"
#include "reflection/service_exporter.h"
#include "reflection/stream_messages.h"

namespace strait::reflection {

using json = nlohmann::json;
namespace res = kube::resources;

namespace {

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

StreamMessage goneMessage(const json& pod) {
  StreamMessage m = StreamMessage::remove("Pod", kube::getNamespace(pod), kube::getName(pod),
                                          originUid(pod), std::nullopt);
  m.type = StreamMessageType::Gone;
  m.object = nullptr;
  return m;
}

}  // namespace

// One running session: the reader (serve()'s thread), a keepalive thread, a worker pool and
// two informers. Everything it starts is stopped and joined in run() before it returns.
// Whether the endpoints of opts.consumerId are held not ready (its tunnel is down); empty
// when nothing says so.
std::function<bool()> endpointsHeld(const StreamServerOptions& opts) {
  if (!opts.consumerTunnelDown) return {};
  return [down = opts.consumerTunnelDown, id = opts.consumerId] { return down(id); };
}

class StreamSession {
 public:
  StreamSession(StreamServer& owner, peering::EventStream& s)
      : owner_(owner),
        opts_(owner.opts_),
        stream_(s),
        // Any valid namespace name (default or same-name naming): the applier's bounds are
        // the namespaces it created for this consumer (labels), never someone else's.
        mapping_(opts_.consumerId, NamingStrategy::SameName),
        applier_(owner.provider_, mapping_, opts_.podSecurity,
                 peering::ownershipLabels(opts_.consumerId), opts_.translateAddress,
                 endpointsHeld(opts_)),
        sentEvents_(opts_.sentEvents) {}

  kube::Status run() {
    lastReceivedMs_ = nowMs();
    const std::string selector =
        std::string(kLabelOriginClusterId) + "=" + opts_.consumerId;
    // Compact caches: they hold every Pod of the consumer and every Event of the cluster.
    kube::InformerOptions po{res::kPods, "", selector, ""};
    po.compactCache = true;
    kube::InformerOptions eo{res::kEvents, "", "", ""};
    eo.compactCache = true;
    pods_ = std::make_unique<kube::Informer>(owner_.provider_, po);
    events_ = std::make_unique<kube::Informer>(owner_.provider_, eo);
    auto status = [this](const kube::ObjectPtr& p) {
      usage_.observe(*p);
      std::string uid = originUid(*p);
      if (!uid.empty()) send(StreamMessage::status(*p, uid));
    };
    // A change of a Pod whose previous version this stream carried: only the difference.
    auto changed = [this, status](const kube::ObjectPtr& old, const kube::ObjectPtr& p) {
      std::string uid = originUid(*p);
      if (statusPatches_ && old && !uid.empty() && originUid(*old) == uid) {
        if (std::optional<StreamMessage> m = StreamMessage::statusPatch(*old, *p, uid)) {
          usage_.observe(*p);
          send(*m);
          return;
        }
      }
      status(p);
    };
    pods_->addHandlers({status, changed,
                        [this](const kube::ObjectPtr& p) {
                          usage_.forget(kube::objectKey(*p));
                          if (!originUid(*p).empty()) send(goneMessage(*p));
                        }});
    if (!sentEvents_) sentEvents_ = std::make_shared<SentEvents>();
    auto event = [this](const kube::ObjectPtr& e) { forwardEvent(*e); };
    events_->addHandlers({event, [event](const kube::ObjectPtr&, const kube::ObjectPtr& n) { event(n); },
                          nullptr});
    for (int i = 0; i < std::max(1, opts_.workers); i++) workers_.emplace_back([this] { work(); });
    keepalive_ = std::jthread([this](std::stop_token st) { keepalive(st); });
    pods_->start();
    listing_ = std::jthread([this](std::stop_token st) {
      // The initial list: one STATUS per existing Pod (sent by the informer's add handler),
      // then the marker. Events are forwarded from then on only.
      while (!st.stop_requested() && !pods_->waitForSync(std::chrono::milliseconds(200))) {
      }
      if (st.stop_requested()) return;
      if (opts_.onUsage) {
        opts_.onUsage(usage_, true);
        usageShared_ = true;
      }
      send(StreamMessage::ofType(StreamMessageType::Synced));
      spdlog::info("event=stream_initial_list_sent consumer={} pods={}", opts_.consumerId,
                   pods_->cache().size());
      events_->start();
      while (!st.stop_requested() && !events_->waitForSync(std::chrono::milliseconds(200))) {
      }
      if (!st.stop_requested()) flushEventBacklog();
    });

    v1::ReflectionEvent e;
    while (stream_.read(&e)) {
      owner_.counters_.messagesIn++;
      owner_.counters_.bytesIn += e.ByteSizeLong();
      countStreamMessage(StreamSide::Provider, StreamDirection::Received, e);
      lastReceivedMs_ = nowMs();
      kube::Result<StreamMessage> m = decodeStreamMessage(e);
      if (!m.ok()) {
        spdlog::warn("event=stream_bad_message consumer={} error=\"{}\"", opts_.consumerId,
                     m.error().message);
        countStreamError(StreamSide::Provider, StreamError::BadMessage);
        if (e.seq() != 0) send(StreamMessage::reply(e.seq(), m.error()));
        continue;
      }
      dispatch(std::move(*m));
    }
    stop();
    base::MutexLock lock(mu_);
    return ended_;
  }

 private:
  void dispatch(StreamMessage m) {
    switch (m.type) {
      case StreamMessageType::Apply:
      case StreamMessageType::Delete:
      case StreamMessageType::Get:
      case StreamMessageType::ResyncDone: {
        base::MutexLock lock(mu_);
        if (m.type == StreamMessageType::Apply) {
          // An APPLY of an object whose previous APPLY still waits (a consumer retrying
          // after a timeout): one entry with the newest object, answering both requests.
          const std::string key = m.kind + "/" + m.ns + "/" + m.name + "/" + m.originUid;
          auto queued = queuedApplies_.find(key);
          if (queued != queuedApplies_.end()) {
            Task& t = *queued->second;
            if (t.m.seq != 0) t.alsoAnswer.push_back(t.m.seq);
            t.m = std::move(m);
            return;
          }
          auto t = std::make_shared<Task>(Task{std::move(m), {}});
          queuedApplies_.emplace(key, t);
          tasks_.push_back(std::move(t));
        } else {
          tasks_.push_back(std::make_shared<Task>(Task{std::move(m), {}}));
        }
        cv_.notify_one();
        return;
      }
      case StreamMessageType::ResyncBegin:
        statusPatches_ = m.acceptsStatusPatch();
        spdlog::info("event=stream_resync_begin consumer={} status_patches={} exports={}",
                     opts_.consumerId, statusPatches_.load(), m.acceptsExports());
        if (m.acceptsExports() && !exporter_) {
          // The Services exported to this consumer: their full list, then every change.
          exporter_ = std::make_unique<ServiceExporter>(
              owner_.provider_,
              ServiceExporterOptions{opts_.consumerId,
                                     [this](const StreamMessage& x) { return send(x); }});
          exporter_->start();
        }
        return;
      case StreamMessageType::Keepalive:
        return;
      default:
        spdlog::warn("event=stream_unexpected_message consumer={} type={}", opts_.consumerId,
                     streamMessageTypeName(m.type));
    }
  }

  void work() {
    for (;;) {
      std::shared_ptr<Task> t;
      {
        base::UniqueLock lock(mu_);
        while (!stopping_ && tasks_.empty()) cv_.wait(lock);
        if (stopping_) return;
        t = std::move(tasks_.front());
        tasks_.pop_front();
        if (t->m.type == StreamMessageType::Apply) {
          auto queued = queuedApplies_.find(t->m.kind + "/" + t->m.ns + "/" + t->m.name + "/" +
                                            t->m.originUid);
          if (queued != queuedApplies_.end() && queued->second == t) queuedApplies_.erase(queued);
        }
      }
      serveRequest(t->m, t->alsoAnswer);
    }
  }

  // Serves `m` and answers its seq, and each of `alsoAnswer` (APPLYs it replaced) the same.
  void serveRequest(const StreamMessage& m, const std::vector<uint64_t>& alsoAnswer = {}) {
    kube::Result<json> r = json();
    switch (m.type) {
      case StreamMessageType::Apply:
        owner_.counters_.applies++;
        {
          // Before the write, so an orphan sweep that lists the object also sees its origin.
          base::MutexLock lock(mu_);
          appliedOrigins_.insert(m.originUid);
        }
        r = applyWithGrant(m);
        break;
      case StreamMessageType::Delete:
        owner_.counters_.deletes++;
        if (m.kind == "Namespace") {
          r = applier_.removeNamespace(m.name);
        } else {
          r = applier_.remove(m);
        }
        break;
      case StreamMessageType::Get:
        r = applier_.get(m.kind, m.ns, m.name);
        break;
      case StreamMessageType::ResyncDone: {
        std::vector<std::string> uids = m.resyncOriginUids();
        std::set<std::string> live(uids.begin(), uids.end());
        // Objects applied on this stream have a live origin, listed or not: a Pod bound after
        // the consumer's listing may be created while the sweep runs. Asked per candidate,
        // after the sweep's list, so such a Pod is never taken for an orphan.
        kube::Result<int> n = applier_.deleteOrphans("Pod", [&](const std::string& uid) {
          if (live.count(uid)) return true;
          base::MutexLock lock(mu_);
          return appliedOrigins_.count(uid) > 0;
        });
        {
          base::MutexLock lock(mu_);
          live.insert(appliedOrigins_.begin(), appliedOrigins_.end());
        }
        kube::Result<int> deps = n.ok() ? applier_.deleteOrphanDependencies(live) : n;
        // Services and their slices: the consumer listed the ones it still reflects.
        int services = 0;
        kube::Result<int> svc = deps;
        for (const char* kind : {"EndpointSlice", "Service"}) {
          if (!svc.ok()) break;
          svc = applier_.deleteOrphans(kind, live);
          if (svc.ok()) services += *svc;
        }
        const kube::Result<int>& failed = !n.ok() ? n : !deps.ok() ? deps : svc;
        spdlog::info("event=stream_resync_done consumer={} live={} orphans_deleted={} "
                     "orphan_dependencies_deleted={} orphan_services_deleted={}{}",
                     opts_.consumerId, uids.size(), n.ok() ? *n : 0, deps.ok() ? *deps : 0,
                     services,
                     failed.ok() ? "" : " error=\"" + failed.error().message + "\"");
        return;
      }
      default:
        return;
    }
    if (!r.ok()) {
      owner_.counters_.errors++;
      countStreamError(StreamSide::Provider, StreamError::RequestFailed);
      spdlog::info("event=stream_request_failed consumer={} type={} kind={} namespace={} name={} "
                   "error=\"{}\"",
                   opts_.consumerId, streamMessageTypeName(m.type), m.kind, m.ns, m.name,
                   r.error().message);
    }
    // The consumer reads no managedFields (its caches drop them too): not sent back.
    if (r.ok() && r->is_object() && r->contains("metadata") && (*r)["metadata"].is_object()) {
      (*r)["metadata"].erase("managedFields");
    }
    if (m.seq != 0) send(StreamMessage::reply(m.seq, r));
    for (uint64_t seq : alsoAnswer) send(StreamMessage::reply(seq, r));
  }

  // A Pod that does not exist yet must fit the grant; creations are serialized so that two
  // concurrent ones cannot both take the last of it.
  kube::Result<json> applyWithGrant(const StreamMessage& m) {
    if (m.kind != "Pod" || (!opts_.admitPod && !opts_.admitPodWithUsage)) return applier_.apply(m);
    if (opts_.admitPodWithUsage && pods_->hasSynced()) {
      // The informer's cache holds every Pod of this consumer: not counted = a creation.
      const std::string key = m.ns + "/" + m.name;
      bool reserved = false;
      if (kube::Status s = usage_.admit(key, m.object, opts_.admitPodWithUsage, &reserved);
          !s.ok()) {
        return s.error();
      }
      kube::Result<json> r = applier_.apply(m, reserved);
      if (!r.ok() && reserved) usage_.release(key);
      return r;
    }
    if (!opts_.admitPod) return applier_.apply(m);
    kube::Result<json> cur = applier_.get(m.kind, m.ns, m.name);
    if (cur.ok() || !kube::isNotFound(cur.error())) return applier_.apply(m);
    base::MutexLock lock(createMu_);
    if (kube::Status s = opts_.admitPod(m.object); !s.ok()) return s.error();
    return applier_.apply(m);
  }

  // The EVENT message for provider Event `ev`, if it concerns one of this consumer's Pods.
  std::optional<StreamMessage> eventMessage(const json& ev) {
    const json& io = ev.value("involvedObject", json::object());
    if (!io.is_object() || io.value("kind", "") != "Pod") return std::nullopt;
    const std::string ns = io.value("namespace", kube::getNamespace(ev));
    if (!mapping_.localNamespace(ns)) return std::nullopt;
    kube::ObjectPtr pod = pods_->cache().get(ns + "/" + io.value("name", ""));
    if (!pod) return std::nullopt;
    if (io.contains("uid") && io["uid"].is_string() && io["uid"] != kube::getUid(*pod)) {
      return std::nullopt;
    }
    std::string uid = originUid(*pod);
    if (uid.empty()) return std::nullopt;
    StreamMessage m = StreamMessage::apply(ev, uid);
    m.type = StreamMessageType::Event;
    m.kind = "Event";
    return m;
  }

  void forwardEvent(const json& ev) {
    {
      base::MutexLock lock(evMu_);
      if (!eventsLive_) {  // the informer's initial list: sent by flushEventBacklog
        eventBacklog_.push_back(ev);
        return;
      }
    }
    sendEvent(ev);  // a new Event or a new version: always sent
  }

  void sendEvent(const json& ev) {
    std::optional<StreamMessage> m = eventMessage(ev);
    if (!m) return;
    if (send(*m)) sentEvents_->record(ev);
  }

  // The Events that existed when the informer started: the newest kEventBacklog of those
  // about this consumer's Pods that were not sent on an earlier stream.
  void flushEventBacklog() {
    // What an earlier stream sent within a silence's detection time may have been lost
    // with it (that stream may even still be dying): such Events count as unsent.
    sentEvents_->forgetSentAfter(SentEvents::Clock::now() - unconfirmedWindow());
    std::vector<json> found;
    {
      base::MutexLock lock(evMu_);
      eventsLive_ = true;
      found.swap(eventBacklog_);
    }
    std::vector<json> unsent;
    for (json& ev : found) {
      if (!sentEvents_->sent(ev) && eventMessage(ev)) unsent.push_back(std::move(ev));
    }
    const size_t total = unsent.size();
    std::vector<json> newest = newestEvents(std::move(unsent), kEventBacklog);
    for (const json& ev : newest) sendEvent(ev);
    spdlog::info("event=stream_event_backlog_sent consumer={} unsent={} sent={}",
                 opts_.consumerId, total, newest.size());
  }

  bool send(const StreamMessage& m) {
    v1::ReflectionEvent e = encodeStreamMessage(m);
    owner_.counters_.messagesOut++;
    owner_.counters_.bytesOut += e.ByteSizeLong();
    countStreamMessage(StreamSide::Provider, StreamDirection::Sent, e);
    return stream_.write(e);
  }

  void keepalive(std::stop_token st) {
    const auto interval = opts_.keepaliveInterval;
    const int64_t dead = deadAfterMs();
    std::mutex m;
    std::condition_variable_any cv;
    while (!st.stop_requested()) {
      {
        std::unique_lock<std::mutex> lock(m);
        cv.wait_for(lock, st, interval, [] { return false; });
      }
      if (st.stop_requested()) return;
      if (opts_.stillActive && !opts_.stillActive()) {
        spdlog::warn("event=stream_peering_ended consumer={}", opts_.consumerId);
        end(kube::makeError(kube::Code::Forbidden, "the peering of cluster " + opts_.consumerId +
                                                       " is no longer active"));
        return;
      }
      if (nowMs() - lastReceivedMs_.load() > dead) {
        spdlog::warn("event=stream_silent consumer={} silent_ms={}", opts_.consumerId,
                     nowMs() - lastReceivedMs_.load());
        countStreamError(StreamSide::Provider, StreamError::Silent);
        end(kube::Status::OK());
        return;
      }
      send(StreamMessage::ofType(StreamMessageType::Keepalive));
    }
  }

  int64_t deadAfterMs() const {
    return opts_.deadAfter.count() > 0
               ? opts_.deadAfter.count()
               : std::max<int64_t>(5 * opts_.keepaliveInterval.count(), 3000);
  }

  // How long before a stream's end what it sent may not have arrived.
  std::chrono::milliseconds unconfirmedWindow() const {
    return std::chrono::milliseconds(deadAfterMs() + 2 * opts_.keepaliveInterval.count());
  }

  void end(kube::Status why) {
    {
      base::MutexLock lock(mu_);
      ended_ = std::move(why);
    }
    stream_.cancel();
  }

  void stop() {
    stream_.cancel();  // replies still being written fail fast
    if (exporter_) exporter_->stop();
    listing_.request_stop();
    if (listing_.joinable()) listing_.join();
    if (usageShared_.exchange(false)) opts_.onUsage(usage_, false);
    keepalive_.request_stop();
    if (keepalive_.joinable()) keepalive_.join();
    {
      base::MutexLock lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    for (std::thread& t : workers_) t.join();
    events_->stop();
    pods_->stop();
    // What was sent within a silence's detection time may be lost with the stream.
    sentEvents_->forgetSentAfter(SentEvents::Clock::now() - unconfirmedWindow());
  }

  StreamServer& owner_;
  const StreamServerOptions& opts_;
  peering::EventStream& stream_;
  const NamespaceMapping mapping_;
  ProviderApplier applier_;
  PodUsage usage_;  // what this consumer's Pods request, from pods_
  std::atomic<bool> usageShared_{false};  // opts_.onUsage told it is live
  // The consumer's RESYNC_BEGIN accepted STATUS_PATCH: changes go as patches from then on.
  std::atomic<bool> statusPatches_{false};
  std::unique_ptr<kube::Informer> pods_;
  std::unique_ptr<kube::Informer> events_;
  // Set at a RESYNC_BEGIN that accepts exports (the reader thread; stop() on the same one).
  std::unique_ptr<ServiceExporter> exporter_;
  std::shared_ptr<SentEvents> sentEvents_;
  base::Mutex evMu_;
  bool eventsLive_ GUARDED_BY(evMu_) = false;
  std::vector<json> eventBacklog_ GUARDED_BY(evMu_);  // the events informer's initial list
  std::atomic<int64_t> lastReceivedMs_{0};
  std::vector<std::thread> workers_;
  std::jthread keepalive_;
  std::jthread listing_;
  base::Mutex createMu_;  // serializes admitted Pod creations
  base::Mutex mu_;
  std::condition_variable_any cv_;
  // Requests waiting for a worker, in arrival order; an APPLY of an object already queued
  // replaces the queued one (queuedApplies_, by kind/namespace/name/origin uid), so a burst
  // holds at most one APPLY per object.
  struct Task {
    StreamMessage m;
    std::vector<uint64_t> alsoAnswer;  // seqs of the APPLYs `m` replaced
  };
  std::deque<std::shared_ptr<Task>> tasks_ GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<Task>> queuedApplies_ GUARDED_BY(mu_);
  std::set<std::string> appliedOrigins_ GUARDED_BY(mu_);  // origin uids applied this session
  bool stopping_ GUARDED_BY(mu_) = false;
  kube::Status ended_ GUARDED_BY(mu_) = kube::Status::OK();
};

StreamServer::StreamServer(kube::Client& provider, StreamServerOptions opts)
    : provider_(provider), opts_(std::move(opts)) {}

kube::Status StreamServer::serve(peering::EventStream& stream) {
  StreamSession session(*this, stream);
  return session.run();
}

StreamCounters StreamServer::counters() const { return counters_.snapshot(); }

namespace {

// Per consumer: whether a stream is up, and since when none is. A consumer without a stream
// for unreachableGrace, or whose tunnel is down (consumerTunnelDown), gets its reflected
// endpoints marked not ready (ProviderApplier::markEndpointsNotReady), once per outage; once
// it has a stream and its tunnel is up again they are restored (restoreEndpoints), within a
// watch round (200 ms) of it, and its resync re-applies them as they are now.
// Thread-safe; the watcher thread runs from the first session (the first ended one when
// no tunnel is watched) until destruction.
class ConsumerLinks {
 public:
  ConsumerLinks(kube::Client& provider, const StreamServerOptions& base)
      : provider_(provider), base_(base) {}
  ~ConsumerLinks() {
    if (thread_.joinable()) {
      thread_.request_stop();
      {
        base::MutexLock l(mu_);
        cv_.notify_all();
      }
      thread_.join();
    }
  }

  void sessionStarted(const std::string& consumerId) {
    base::MutexLock l(mu_);
    Link& k = links_[consumerId];
    ++k.live;
    if (base_.consumerTunnelDown) startWatching();
    cv_.notify_all();
  }

  void sessionEnded(const std::string& consumerId) {
    base::MutexLock l(mu_);
    Link& k = links_[consumerId];
    if (k.live > 0) --k.live;
    k.endedAt = std::chrono::steady_clock::now();
    startWatching();
    cv_.notify_all();
  }

 private:
  struct Link {
    int live = 0;
    bool marked = false;  // its endpoints are held not ready
    std::chrono::steady_clock::time_point endedAt{};
  };

  void startWatching() REQUIRES(mu_) {
    if (!thread_.joinable()) {
      thread_ = std::jthread([this](std::stop_token st) { watch(st); });
    }
  }

  // Whether `k` of `id` is unreachable now: no stream for the grace, or its tunnel down.
  bool unreachable(const std::string& id, const Link& k,
                   std::chrono::steady_clock::time_point now) const {
    if (k.live == 0 && now - k.endedAt >= grace()) return true;
    return base_.consumerTunnelDown && base_.consumerTunnelDown(id);
  }

  std::chrono::milliseconds grace() const {
    if (base_.unreachableGrace.count() > 0) return base_.unreachableGrace;
    const int64_t dead = base_.deadAfter.count() > 0
                             ? base_.deadAfter.count()
                             : std::max<int64_t>(5 * base_.keepaliveInterval.count(), 3000);
    return std::chrono::milliseconds(dead);
  }

  void watch(std::stop_token st) {
    base::UniqueLock l(mu_);
    while (!st.stop_requested()) {
      cv_.wait_for(l, std::chrono::milliseconds(200));
      if (st.stop_requested()) break;
      const auto now = std::chrono::steady_clock::now();
      std::vector<std::string> hold, restore;
      for (const auto& [id, k] : links_) {
        const bool down = unreachable(id, k, now);
        if (down && !k.marked) hold.push_back(id);
        // Restored with a stream up only: without one the consumer's resync does it.
        if (!down && k.marked && k.live > 0) restore.push_back(id);
      }
      for (const std::string& id : hold) {
        l.unlock();
        ProviderApplier applier(provider_, NamespaceMapping(id, NamingStrategy::SameName),
                                base_.podSecurity, json::object(), base_.translateAddress);
        kube::Result<int> n = applier.markEndpointsNotReady();
        l.lock();
        if (!n.ok()) {
          spdlog::warn("event=consumer_endpoints_not_marked consumer={} error=\"{}\"", id,
                       n.error().message);
          continue;  // tried again on the next round
        }
        Link& k = links_[id];
        k.marked = true;
        spdlog::info("event=consumer_endpoints_not_ready consumer={} slices={} stream_up={} "
                     "tunnel_down={}",
                     id, *n, k.live > 0,
                     base_.consumerTunnelDown && base_.consumerTunnelDown(id));
      }
      for (const std::string& id : restore) {
        l.unlock();
        ProviderApplier applier(provider_, NamespaceMapping(id, NamingStrategy::SameName),
                                base_.podSecurity, json::object(), base_.translateAddress);
        kube::Result<int> n = applier.restoreEndpoints();
        l.lock();
        if (!n.ok()) {
          spdlog::warn("event=consumer_endpoints_not_restored consumer={} error=\"{}\"", id,
                       n.error().message);
          continue;
        }
        links_[id].marked = false;
        spdlog::info("event=consumer_endpoints_restored consumer={} slices={}", id, *n);
      }
    }
  }

  kube::Client& provider_;
  const StreamServerOptions base_;
  base::Mutex mu_;
  std::condition_variable_any cv_;
  std::map<std::string, Link> links_ GUARDED_BY(mu_);
  std::jthread thread_;  // last: stopped and joined before the rest goes
};

}  // namespace

peering::ProviderService::StreamHandler makeProviderStreamHandler(
    kube::Client& provider, peering::ProviderService& service, StreamServerOptions base) {
  // Per consumer, for as long as the handler lives: which Events its streams carried.
  struct Ledgers {
    base::Mutex mu;
    std::map<std::string, std::shared_ptr<SentEvents>> byConsumer GUARDED_BY(mu);
  };
  auto ledgers = std::make_shared<Ledgers>();
  // Per consumer: the Pod request count of its live stream (the newest when two overlap),
  // which the heartbeat reports as what the consumer uses here.
  struct Usages {
    base::Mutex mu;
    std::map<std::string, const PodUsage*> byConsumer GUARDED_BY(mu);
  };
  auto usages = std::make_shared<Usages>();
  auto links = std::make_shared<ConsumerLinks>(provider, base);
  service.setUsageSource(
      [usages](const std::string& consumerId) -> std::optional<peering::ResourceMap> {
        base::MutexLock lock(usages->mu);
        auto it = usages->byConsumer.find(consumerId);
        if (it == usages->byConsumer.end()) return std::nullopt;
        peering::ResourceMap used = it->second->total();
        for (const char* r : {"cpu", "memory", "pods"}) used.try_emplace(r);
        return used;
      });
  return [&provider, &service, base, ledgers, usages, links](const peering::Caller& caller,
                                              peering::EventStream& s) -> kube::Status {
    StreamServerOptions o = base;
    o.consumerId = caller.clusterId;
    {
      base::MutexLock lock(ledgers->mu);
      std::shared_ptr<SentEvents>& l = ledgers->byConsumer[caller.clusterId];
      if (!l) l = std::make_shared<SentEvents>();
      o.sentEvents = l;
    }
    o.admitPod = [&service, id = caller.clusterId](const json& pod) {
      return service.admitPod(id, pod);
    };
    o.admitPodWithUsage = [&service, id = caller.clusterId](const json& pod,
                                                            const peering::ResourceMap& used) {
      return service.admitPodWithUsage(id, pod, used);
    };
    o.stillActive = [&service, id = caller.clusterId] { return service.isActive(id); };
    o.onUsage = [usages, id = caller.clusterId](const PodUsage& u, bool live) {
      base::MutexLock lock(usages->mu);
      if (live) {
        usages->byConsumer[id] = &u;
      } else if (auto it = usages->byConsumer.find(id);
                 it != usages->byConsumer.end() && it->second == &u) {
        usages->byConsumer.erase(it);
      }
    };
    StreamServer server(provider, std::move(o));
    links->sessionStarted(caller.clusterId);
    kube::Status st = server.serve(s);
    links->sessionEnded(caller.clusterId);
    StreamCounters c = server.counters();
    spdlog::info("event=stream_session_ended consumer={} messages_in={} bytes_in={} "
                 "messages_out={} bytes_out={} applies={} deletes={} errors={}",
                 caller.clusterId, c.messagesIn, c.bytesIn, c.messagesOut, c.bytesOut, c.applies,
                 c.deletes, c.errors);
    return st;
  };
}

}  // namespace strait::reflection
