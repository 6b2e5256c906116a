#pragma once
// The consumer side of the reflection stream for one peering (stream_messages.h): the
// RemoteObjects the PodReflector writes through when the provider is another cluster.
//  - apply()/remove() send APPLY/DELETE with a fresh seq and block up to callTimeout for the
//    REPLY with that seq (many calls may be in flight from different threads); get() of a
//    Pod answers from a remote cache that the provider's STATUS/GONE keep current, other
//    kinds by a GET request;
//  - a background thread dials with `open`, sends RESYNC_BEGIN, reads, and reconnects after
//    a failure with jittered exponential backoff (100 ms .. 5 s); when the stream breaks,
//    calls in flight fail with Unavailable and the remote cache is cleared; it is refilled
//    by the provider's initial list on the next connection (remoteSynced() turns true at its
//    SYNCED marker); a Pod's later changes arrive as STATUS_PATCH (applied to the cached
//    copy; a copy at another version is fetched again with a GET);
//  - KEEPALIVE every keepaliveInterval; a stream silent for deadAfter is cancelled (and
//    redialled).
// The vnode re-lists its local Pods in onConnected and then calls resyncDone(origin uids),
// which lets the provider delete what no longer has an origin (never before).
//
// Thread-safe. Callbacks run on the client's reader thread (onMessage, onRemoteChange,
// onEvent, onExport: they must not call get/apply/remove, which wait for that thread) or its
// connection thread (onConnected, after the provider's first message; onDisconnected): they
// must not block for long and must not call stop().

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_annotations.h"
#include "peering/transport.h"
#include "reflection/namespace_mapping.h"
#include "reflection/remote_objects.h"
#include "reflection/stream_messages.h"

namespace strait::reflection {

struct StreamClientOptions {
  std::string consumerId;
  NamespaceMapping mapping{"", NamingStrategy::Default};
  // Dials the provider: a fresh stream each call (e.g. RpcClient::openStream on the current
  // mTLS client). Required.
  std::function<kube::Result<std::unique_ptr<peering::EventStream>>()> open;
  std::chrono::milliseconds keepaliveInterval{1000};
  std::chrono::milliseconds deadAfter{0};  // 0: 5 x keepaliveInterval, at least 3 s
  std::chrono::milliseconds callTimeout{10000};
  std::chrono::milliseconds minBackoff{100};
  std::chrono::milliseconds maxBackoff{5000};
  // A stream is up (after each (re)connect). Feed StreamHealth; re-list local Pods.
  std::function<void()> onConnected;
  // Any message arrived (KEEPALIVE included): liveness for StreamHealth.
  std::function<void()> onMessage;
  // The stream broke or was refused; `why` says how.
  std::function<void(const kube::Status& why)> onDisconnected;
  // A STATUS or GONE concerned the local Pod "ns/name" (enqueue it).
  std::function<void(const std::string& localKey)> onRemoteChange;
  // A provider Event about the remote Pod mirroring local Pod uid `originUid`.
  std::function<void(const nlohmann::json& event, const std::string& originUid)> onEvent;
  // An EXPORT, UNEXPORT or EXPORT_SYNCED from the provider. When set, RESYNC_BEGIN tells the
  // provider that this consumer imports exported Services; unset, none is sent.
  std::function<void(const StreamMessage& m)> onExport;
};

class StreamClient : public RemoteObjects {
 public:
  explicit StreamClient(StreamClientOptions opts);
  ~StreamClient() override;  // stop()
  StreamClient(const StreamClient&) = delete;
  StreamClient& operator=(const StreamClient&) = delete;

  // Starts the connection thread. Idempotent.
  void start();
  // Cancels the stream, fails calls in flight (Unavailable), joins the threads. Idempotent.
  void stop();

  // RemoteObjects. Unavailable when not connected or the stream broke during the call,
  // ServerTimeout after callTimeout; otherwise the provider's answer.
  kube::Result<nlohmann::json> get(const std::string& kind, const std::string& ns,
                                   const std::string& name) override;
  kube::Result<nlohmann::json> apply(const StreamMessage& m) override;
  kube::Result<nlohmann::json> remove(const StreamMessage& m) override;

  bool connected() const { return connected_.load(); }
  // The provider's initial list arrived since the current connection was made.
  bool remoteSynced() const { return synced_.load(); }
  // Sends RESYNC_DONE listing the local origin uids. Unavailable when not connected.
  kube::Status resyncDone(const std::vector<std::string>& originUids);
  // The cached remote Pods ("remoteNs/name" -> object), for tests and diagnostics.
  std::map<std::string, nlohmann::json> remotePods() const;
  size_t remotePodCount() const;
  // Totals over all connections, and how many connections were made.
  StreamCounters counters() const;
  uint64_t connections() const { return connections_.load(); }

 private:
  struct Pending;
  void run();
  void runConnection(peering::EventStream& s);
  void handle(const StreamMessage& m);
  bool send(const StreamMessage& m);
  kube::Result<nlohmann::json> call(StreamMessage m);
  void failPending(const std::string& why);
  // Asks the provider for the whole Pod (a GET whose REPLY replaces the cached copy), when a
  // STATUS_PATCH does not apply to the cached one. Does not wait.
  void refreshRemotePod(const std::string& ns, const std::string& name);
  // Tells the reconciler (onRemoteChange) that the remote Pod remoteNs/name changed.
  void notifyRemoteChange(const std::string& remoteNs, const std::string& name);
  // Keeps `pod` for `key` unless the cached one is newer.
  void cacheRemotePodLocked(const std::string& key, const nlohmann::json& pod) REQUIRES(mu_);
  bool sleepFor(std::chrono::milliseconds d);
  std::chrono::milliseconds deadAfter() const;

  const StreamClientOptions opts_;
  std::atomic<bool> connected_{false};
  std::atomic<bool> synced_{false};
  std::atomic<uint64_t> connections_{0};
  std::atomic<uint64_t> nextSeq_{1};
  std::atomic<int64_t> lastReceivedMs_{0};  // steady clock, ms
  LiveStreamCounters counters_;

  mutable base::Mutex mu_;
  std::condition_variable_any cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool started_ GUARDED_BY(mu_) = false;
  bool readerDone_ GUARDED_BY(mu_) = false;  // the current stream's reader has ended
  std::shared_ptr<peering::EventStream> stream_ GUARDED_BY(mu_);  // the current stream
  // Pending's fields are guarded by mu_ too.
  std::map<uint64_t, std::shared_ptr<Pending>> pending_ GUARDED_BY(mu_);
  // "remoteNs/name" -> the newest STATUS object, as CBOR (about 1x its JSON size in memory
  // instead of 7x parsed: 10,000 Pods stay in tens of MB); parsed on each get().
  struct RemotePod {
    std::string resourceVersion;
    std::vector<std::uint8_t> cbor;
  };
  std::map<std::string, RemotePod> remotePods_ GUARDED_BY(mu_);
  std::thread thread_;  // set by start() under mu_, joined by stop()
};

}  // namespace strait::reflection
