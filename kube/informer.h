#pragma once
// Informers (client-go's SharedIndexInformer): list, then watch from the list's
// resourceVersion, keeping a Cache of immutable snapshots and calling handlers for each
// change. Survives real failures: a stream the server ends is re-watched from the last
// resourceVersion seen (events or bookmarks); a dropped connection or restarted server is
// re-watched after a jittered backoff; 410 Gone (history compacted) leads to a relist, after
// which the handlers get the difference (onDelete for vanished objects, onUpdate for changed
// ones, onAdd for new ones) and nothing for unchanged ones.
//
// Guarantees: handlers run on the informer's own thread, one at a time, in event order;
// onAdd/onUpdate never see the same (object, resourceVersion) twice. onDelete gets the
// DELETED event's object, or after a relist the last cached snapshot.
//
// Thread-safe: every public method may be called from any thread. Handlers must not block
// for long (hand keys to a WorkQueue) and must not call stop().

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "base/thread_annotations.h"
#include "kube/cache.h"
#include "kube/client.h"

namespace strait::kube {

struct InformerOptions {
  ResourceRef resource;
  std::string ns;  // "" = all namespaces (and cluster-scoped resources)
  std::string labelSelector;
  std::string fieldSelector;
  int64_t pageSize = 500;  // LIST page size; 0 = one unpaginated LIST
  // Each watch asks the server to end it after a random time in [min, 2*min] (client-go).
  std::chrono::seconds minWatchTimeout{300};
  // Applied to each object before it is cached (e.g. to drop fields nobody reads). When
  // unset, metadata.managedFields is removed.
  std::function<void(nlohmann::json&)> transform;
  // Keep cached objects as CBOR and parse them on each read (see Cache): under 1x the JSON
  // size in memory instead of about 7x, at tens of microseconds per object read.
  bool compactCache = false;
};

struct EventHandlers {
  std::function<void(const ObjectPtr&)> onAdd;
  std::function<void(const ObjectPtr& oldObj, const ObjectPtr& newObj)> onUpdate;
  std::function<void(const ObjectPtr&)> onDelete;
};

struct InformerStats {
  uint64_t events = 0;       // watch events applied (bookmarks excluded)
  uint64_t lists = 0;        // completed LISTs (the first one and relists)
  uint64_t goneRelists = 0;  // relists caused by 410 Gone
  uint64_t watches = 0;      // watch requests started
  uint64_t watchErrors = 0;  // watches that ended in an error (dropped, refused...)
};

class Informer {
 public:
  // No I/O; `client` must outlive the informer.
  Informer(Client& client, InformerOptions opts);
  ~Informer();  // stop()
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Adds a cache index; call before start().
  void addIndex(const std::string& name, IndexFunc fn);
  // Registers handlers. When the cache already holds objects, onAdd runs for each of them
  // first (on the calling thread, serialized with the informer's own calls).
  void addHandlers(EventHandlers h);
  // Starts the list/watch thread. Idempotent.
  void start();
  // Stops the thread and waits for it (a blocked watch is cancelled). Idempotent.
  void stop();

  // True once the first LIST has been applied to the cache.
  bool hasSynced() const { return synced_.load(); }
  // Waits until hasSynced() or the timeout; returns hasSynced().
  bool waitForSync(std::chrono::milliseconds timeout) const;
  const Cache& cache() const { return cache_; }
  // The resourceVersion the next watch would start from.
  std::string lastResourceVersion() const;
  InformerStats stats() const;
  const InformerOptions& options() const { return opts_; }

 private:
  void run(std::stop_token stop);
  Status relist(std::stop_token stop);
  // Watches once; returns whether a relist is needed.
  Status watchOnce(std::stop_token stop, bool& needRelist);
  void apply(WatchEvent&& ev);
  ObjectPtr snapshot(nlohmann::json&& obj) const;
  bool sleepFor(std::chrono::milliseconds d, std::stop_token stop);
  void dispatchAdd(const ObjectPtr& o);
  void dispatchUpdate(const ObjectPtr& a, const ObjectPtr& b);
  void dispatchDelete(const ObjectPtr& o);

  Client& client_;
  InformerOptions opts_;
  Cache cache_;
  std::atomic<bool> synced_{false};

  mutable base::Mutex mu_;
  mutable std::condition_variable_any syncedCv_;
  std::string lastRv_ GUARDED_BY(mu_);
  InformerStats stats_ GUARDED_BY(mu_);
  std::jthread thread_ GUARDED_BY(mu_);

  base::Mutex handlerMu_;  // also serializes handler calls
  std::vector<EventHandlers> handlers_ GUARDED_BY(handlerMu_);
};

// Shares one Informer per (resource, namespace, label selector, field selector) among the
// controllers of a process, so they share one watch. Thread-safe.
class InformerFactory {
 public:
  explicit InformerFactory(Client& client) : client_(client) {}
  ~InformerFactory() { stop(); }

  // The shared informer for these arguments (created on first use, not started).
  std::shared_ptr<Informer> informerFor(const ResourceRef& r, const std::string& ns = {},
                                        const std::string& labelSelector = {},
                                        const std::string& fieldSelector = {});
  // Starts every informer made so far (call again after making more). Idempotent.
  void start();
  // Waits until all started informers have synced; false on timeout.
  bool waitForSync(std::chrono::milliseconds timeout);
  // Stops all informers. Idempotent.
  void stop();

 private:
  using Key = std::tuple<ResourceRef, std::string, std::string, std::string>;
  Client& client_;
  base::Mutex mu_;
  std::map<Key, std::shared_ptr<Informer>> informers_ GUARDED_BY(mu_);
};

}  // namespace strait::kube
