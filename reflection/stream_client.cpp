#include "reflection/stream_client.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <random>

#include "kube/object.h"
#include "reflection/reflection_metrics.h"

namespace strait::reflection {

using json = nlohmann::json;
using std::chrono::milliseconds;

namespace {

int64_t nowMs() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// True unless both resourceVersions are numbers and `incoming` is the older one (the
// API server's are opaque, but ours and Kubernetes' etcd ones are counters; when they are
// not numbers the newest message wins).
bool notOlder(const std::string& incoming, const std::string& cached) {
  auto rv = [](const std::string& s, uint64_t& out) {
    return !s.empty() && std::from_chars(s.data(), s.data() + s.size(), out).ec == std::errc();
  };
  uint64_t a = 0, b = 0;
  if (!rv(incoming, a) || !rv(cached, b)) return true;
  return a >= b;
}

}  // namespace

struct StreamClient::Pending {
  StreamMessageType request = StreamMessageType::Apply;
  bool refresh = false;  // a GET sent by refreshRemotePod: nobody waits, the reply is cached
  std::string key;       // refresh: "remoteNs/name"
  std::condition_variable_any cv;
  bool done = false;
  kube::Result<json> result = json();
};

StreamClient::StreamClient(StreamClientOptions opts) : opts_(std::move(opts)) {}

StreamClient::~StreamClient() { stop(); }

void StreamClient::start() {
  base::MutexLock lock(mu_);
  if (started_ || stopping_) return;
  started_ = true;
  thread_ = std::thread([this] { run(); });
}

void StreamClient::stop() {
  {
    base::MutexLock lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    if (stream_) stream_->cancel();
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  failPending("the reflection stream client stopped");
}

milliseconds StreamClient::deadAfter() const {
  if (opts_.deadAfter.count() > 0) return opts_.deadAfter;
  return std::max(5 * opts_.keepaliveInterval, milliseconds(3000));
}

bool StreamClient::sleepFor(milliseconds d) {
  base::UniqueLock lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + d;
  while (!stopping_) {
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) break;
  }
  return !stopping_;
}

void StreamClient::run() {
  pthread_setname_np(pthread_self(), "stream-conn");
  std::mt19937_64 rng(std::random_device{}());
  milliseconds backoff = opts_.minBackoff;
  for (;;) {
    {
      base::MutexLock lock(mu_);
      if (stopping_) return;
    }
    kube::Result<std::unique_ptr<peering::EventStream>> opened =
        opts_.open ? opts_.open()
                   : kube::Result<std::unique_ptr<peering::EventStream>>(
                         kube::makeError(kube::Code::Invalid, "no dial function"));
    kube::Status why = kube::Status::OK();
    auto began = std::chrono::steady_clock::now();
    if (!opened.ok()) {
      why = opened.error();
      countStreamError(StreamSide::Consumer, StreamError::Dial);
    } else {
      std::shared_ptr<peering::EventStream> s(std::move(*opened));
      {
        base::MutexLock lock(mu_);
        if (stopping_) return;
        stream_ = s;
        readerDone_ = false;
      }
      if (connections_++ > 0) countStreamReconnect();
      runConnection(*s);
      why = s->status();
      {
        base::MutexLock lock(mu_);
        // Not synced before the cache empties: get() must never read the emptied cache as
        // "the remote Pod is gone" (that marks a running local Pod lost).
        synced_ = false;
        stream_.reset();
        remotePods_.clear();
      }
      if (why.ok()) why = kube::makeError(kube::Code::Unavailable, "the reflection stream ended");
    }
    const bool wasUp = connected_.exchange(false);
    synced_ = false;
    failPending("the reflection stream broke: " + why.error().message);
    spdlog::warn("event=stream_disconnected consumer={} was_up={} error=\"{}\"", opts_.consumerId,
                 wasUp, why.error().message);
    if (opts_.onDisconnected) opts_.onDisconnected(why);
    // A connection that stayed up a while starts the backoff over.
    if (wasUp && std::chrono::steady_clock::now() - began > 10 * opts_.keepaliveInterval) {
      backoff = opts_.minBackoff;
    }
    std::uniform_int_distribution<int64_t> jitter(backoff.count() / 2, backoff.count());
    if (!sleepFor(milliseconds(jitter(rng)))) return;
    backoff = std::min(backoff * 2, opts_.maxBackoff);
  }
}

void StreamClient::runConnection(peering::EventStream& s) {
  lastReceivedMs_ = nowMs();
  // A refused stream fails this write; the reader then collects why.
  (void)send(StreamMessage::resyncBegin(static_cast<bool>(opts_.onExport)));
  std::thread reader([this, &s] {
    pthread_setname_np(pthread_self(), "stream-read");
    v1::ReflectionEvent e;
    while (s.read(&e)) {
      counters_.messagesIn++;
      counters_.bytesIn += e.ByteSizeLong();
      countStreamMessage(StreamSide::Consumer, StreamDirection::Received, e);
      lastReceivedMs_ = nowMs();
      if (!connected_.load()) {
        base::MutexLock lock(mu_);
        connected_ = true;
        cv_.notify_all();
      }
      if (opts_.onMessage) opts_.onMessage();
      kube::Result<StreamMessage> m = decodeStreamMessage(e);
      if (!m.ok()) {
        spdlog::warn("event=stream_bad_message consumer={} error=\"{}\"", opts_.consumerId,
                     m.error().message);
        countStreamError(StreamSide::Consumer, StreamError::BadMessage);
        continue;
      }
      handle(*m);
    }
    base::MutexLock lock(mu_);
    readerDone_ = true;
    cv_.notify_all();
  });
  bool announced = false;
  auto nextTick = std::chrono::steady_clock::now() + opts_.keepaliveInterval;
  base::UniqueLock lock(mu_);
  for (;;) {
    while (!(stopping_ || readerDone_ || (!announced && connected_.load()))) {
      if (cv_.wait_until(lock, nextTick) == std::cv_status::timeout) break;
    }
    if (readerDone_ && !stopping_) countStreamError(StreamSide::Consumer, StreamError::Broken);
    if (stopping_ || readerDone_) break;
    if (!announced && connected_.load()) {
      announced = true;
      lock.unlock();
      spdlog::info("event=stream_connected consumer={} connection={}", opts_.consumerId,
                   connections_.load());
      if (opts_.onConnected) opts_.onConnected();
      lock.lock();
      continue;
    }
    if (std::chrono::steady_clock::now() < nextTick) continue;
    nextTick = std::chrono::steady_clock::now() + opts_.keepaliveInterval;
    if (nowMs() - lastReceivedMs_.load() > deadAfter().count()) {
      spdlog::warn("event=stream_silent consumer={} silent_ms={}", opts_.consumerId,
                   nowMs() - lastReceivedMs_.load());
      countStreamError(StreamSide::Consumer, StreamError::Silent);
      break;
    }
    lock.unlock();
    send(StreamMessage::ofType(StreamMessageType::Keepalive));
    lock.lock();
  }
  lock.unlock();
  s.cancel();
  reader.join();
}

void StreamClient::handle(const StreamMessage& m) {
  switch (m.type) {
    case StreamMessageType::Reply: {
      std::string refreshed;  // "remoteNs/name" of a refresh answered: reconciled below
      {
        base::MutexLock lock(mu_);
        auto it = pending_.find(m.seq);
        if (it == pending_.end()) return;  // timed out meanwhile
        if (it->second->refresh) {
          refreshed = it->second->key;
          if (!m.error && m.object.is_object()) {
            cacheRemotePodLocked(refreshed, m.object);
          } else if (m.error && m.error->code == kube::Code::NotFound) {
            remotePods_.erase(refreshed);
          }
          pending_.erase(it);
        }
      }
      if (!refreshed.empty()) {
        // The STATUS_PATCH that asked for this copy did not reconcile the stale one.
        notifyRemoteChange(refreshed.substr(0, refreshed.find('/')),
                           refreshed.substr(refreshed.find('/') + 1));
        return;
      }
      base::MutexLock lock(mu_);
      auto it = pending_.find(m.seq);
      if (it == pending_.end()) return;
      it->second->result = m.replyResult();
      it->second->done = true;
      it->second->cv.notify_all();
      // Only an APPLY's answer replaces the cached Pod: a DELETE's (the Pod still terminating)
      // may arrive after the GONE that followed it and would bring the Pod back.
      if (it->second->request == StreamMessageType::Apply && m.kind == "Pod" && !m.error &&
          m.object.is_object()) {
        cacheRemotePodLocked(m.ns + "/" + m.name, m.object);
      }
      // A DELETE's answer only marks a Pod still cached as terminating (never re-adds one):
      // a worker handling the Pod again before the provider's STATUS must not delete it twice.
      if (it->second->request == StreamMessageType::Delete && m.kind == "Pod" && !m.error &&
          m.object.is_object() && kube::isBeingDeleted(m.object)) {
        auto cur = remotePods_.find(m.ns + "/" + m.name);
        if (cur != remotePods_.end()) {
          json cached = json::from_cbor(cur->second.cbor);
          if (kube::getUid(cached) == kube::getUid(m.object) && !kube::isBeingDeleted(cached)) {
            for (const char* f : {"deletionTimestamp", "deletionGracePeriodSeconds"}) {
              if (m.object["metadata"].contains(f)) cached["metadata"][f] = m.object["metadata"][f];
            }
            cur->second.cbor = json::to_cbor(cached);
          }
        }
      }
      return;
    }
    case StreamMessageType::Status:
    case StreamMessageType::Gone: {
      if (m.kind != "Pod") return;
      {
        base::MutexLock lock(mu_);
        const std::string key = m.ns + "/" + m.name;
        if (m.type == StreamMessageType::Gone) {
          remotePods_.erase(key);
        } else {
          cacheRemotePodLocked(key, m.object);
        }
      }
      if (opts_.onRemoteChange) {
        if (std::optional<std::string> local = opts_.mapping.localNamespace(m.ns)) {
          opts_.onRemoteChange(*local + "/" + m.name);
        }
      }
      return;
    }
    case StreamMessageType::StatusPatch: {
      if (m.kind != "Pod") return;
      const std::string key = m.ns + "/" + m.name;
      bool refresh = false;
      {
        base::MutexLock lock(mu_);
        auto cur = remotePods_.find(key);
        const json& meta = m.object.value("metadata", json::object());
        const std::string target =
            meta.is_object() ? meta.value("resourceVersion", std::string()) : std::string();
        if (cur != remotePods_.end() && cur->second.resourceVersion == m.baseResourceVersion) {
          kube::Result<json> patched = m.applyStatusPatch(json::from_cbor(cur->second.cbor));
          if (patched.ok()) {
            cur->second = RemotePod{kube::getResourceVersion(*patched), json::to_cbor(*patched)};
          } else {
            spdlog::warn("event=stream_bad_status_patch consumer={} pod={} error=\"{}\"",
                         opts_.consumerId, key, patched.error().message);
            refresh = true;
          }
        } else if (cur == remotePods_.end() || target.empty() ||
                   !notOlder(cur->second.resourceVersion, target)) {
          // Not the copy the patch was made from (only an APPLY's REPLY races with the
          // provider's watch): ask for the whole Pod. A copy as new as the patch's is kept.
          refresh = true;
        }
      }
      // A refreshed copy is reconciled when the GET's answer arrives, not the stale one now.
      if (refresh) {
        refreshRemotePod(m.ns, m.name);
      } else {
        notifyRemoteChange(m.ns, m.name);
      }
      return;
    }
    case StreamMessageType::Event:
      if (opts_.onEvent) opts_.onEvent(m.object, m.originUid);
      return;
    case StreamMessageType::Export:
    case StreamMessageType::Unexport:
    case StreamMessageType::ExportSynced:
      if (opts_.onExport) opts_.onExport(m);
      return;
    case StreamMessageType::Synced:
      synced_ = true;
      spdlog::info("event=stream_remote_synced consumer={} pods={}", opts_.consumerId,
                   remotePodCount());
      return;
    case StreamMessageType::Keepalive:
      return;
    default:
      spdlog::warn("event=stream_unexpected_message consumer={} type={}", opts_.consumerId,
                   streamMessageTypeName(m.type));
  }
}

bool StreamClient::send(const StreamMessage& m) {
  std::shared_ptr<peering::EventStream> s;
  {
    base::MutexLock lock(mu_);
    s = stream_;
  }
  if (!s) return false;
  v1::ReflectionEvent e = encodeStreamMessage(m);
  counters_.messagesOut++;
  counters_.bytesOut += e.ByteSizeLong();
  countStreamMessage(StreamSide::Consumer, StreamDirection::Sent, e);
  return s->write(e);
}

kube::Result<json> StreamClient::call(StreamMessage m) {
  m.seq = nextSeq_++;
  auto p = std::make_shared<Pending>();
  p->request = m.type;
  {
    base::MutexLock lock(mu_);
    if (!connected_.load() || !stream_) {
      return kube::makeError(kube::Code::Unavailable,
                             "the reflection stream to the provider is not connected");
    }
    pending_[m.seq] = p;
  }
  if (!send(m)) {
    base::MutexLock lock(mu_);
    pending_.erase(m.seq);
    return kube::makeError(kube::Code::Unavailable, "the reflection stream broke");
  }
  if (m.type == StreamMessageType::Apply) counters_.applies++;
  if (m.type == StreamMessageType::Delete) counters_.deletes++;
  base::UniqueLock lock(mu_);
  bool answered = p->cv.wait_for(lock, opts_.callTimeout, [&] { return p->done; });
  pending_.erase(m.seq);
  if (!answered) {
    return kube::makeError(kube::Code::ServerTimeout,
                           std::string("no reply to ") + streamMessageTypeName(m.type) + " " +
                               m.kind + " " + m.ns + "/" + m.name + " within " +
                               std::to_string(opts_.callTimeout.count()) + " ms");
  }
  return p->result;
}

void StreamClient::notifyRemoteChange(const std::string& remoteNs, const std::string& name) {
  if (!opts_.onRemoteChange) return;
  if (std::optional<std::string> local = opts_.mapping.localNamespace(remoteNs)) {
    opts_.onRemoteChange(*local + "/" + name);
  }
}

void StreamClient::refreshRemotePod(const std::string& ns, const std::string& name) {
  StreamMessage m = StreamMessage::get("Pod", ns, name, nextSeq_++);
  auto p = std::make_shared<Pending>();
  p->request = StreamMessageType::Get;
  p->refresh = true;
  p->key = ns + "/" + name;
  {
    base::MutexLock lock(mu_);
    pending_[m.seq] = p;
  }
  if (!send(m)) {
    base::MutexLock lock(mu_);
    pending_.erase(m.seq);
  }
}

void StreamClient::failPending(const std::string& why) {
  base::MutexLock lock(mu_);
  std::erase_if(pending_, [](const auto& e) { return e.second->refresh; });
  for (auto& [seq, p] : pending_) {
    if (p->done) continue;
    p->result = kube::makeError(kube::Code::Unavailable, why);
    p->done = true;
    p->cv.notify_all();
  }
}

kube::Result<json> StreamClient::get(const std::string& kind, const std::string& ns,
                                     const std::string& name) {
  if (kind != "Pod") return call(StreamMessage::get(kind, ns, name, 0));
  base::MutexLock lock(mu_);  // synced_ and the cache change together
  if (!synced_.load()) {
    return kube::makeError(kube::Code::Unavailable,
                           "the provider's list of remote Pods has not arrived yet");
  }
  auto it = remotePods_.find(ns + "/" + name);
  if (it == remotePods_.end()) {
    return kube::makeError(kube::Code::NotFound, "remote pod " + ns + "/" + name + " not found");
  }
  return json::from_cbor(it->second.cbor);
}

kube::Result<json> StreamClient::apply(const StreamMessage& m) {
  kube::Result<json> r = call(m);
  if (!r.ok()) counters_.errors++;
  return r;
}

kube::Result<json> StreamClient::remove(const StreamMessage& m) {
  kube::Result<json> r = call(m);
  if (!r.ok()) counters_.errors++;
  return r;
}

kube::Status StreamClient::resyncDone(const std::vector<std::string>& originUids) {
  if (!connected_.load() || !send(StreamMessage::resyncDone(originUids))) {
    return kube::makeError(kube::Code::Unavailable,
                           "the reflection stream to the provider is not connected");
  }
  spdlog::info("event=stream_resync_done_sent consumer={} live={}", opts_.consumerId,
               originUids.size());
  return kube::Status::OK();
}

std::map<std::string, json> StreamClient::remotePods() const {
  base::MutexLock lock(mu_);
  std::map<std::string, json> out;
  for (const auto& [key, p] : remotePods_) out.emplace(key, json::from_cbor(p.cbor));
  return out;
}

void StreamClient::cacheRemotePodLocked(const std::string& key, const json& pod) {
  std::string rv = kube::getResourceVersion(pod);
  auto cur = remotePods_.find(key);
  if (cur != remotePods_.end() && !notOlder(rv, cur->second.resourceVersion)) return;
  remotePods_[key] = RemotePod{std::move(rv), json::to_cbor(pod)};
}

size_t StreamClient::remotePodCount() const {
  base::MutexLock lock(mu_);
  return remotePods_.size();
}

StreamCounters StreamClient::counters() const { return counters_.snapshot(); }

}  // namespace strait::reflection
