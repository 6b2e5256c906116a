#pragma once
// An in-process informer over the minicluster store for one resource (client-go's
// SharedIndexInformer without the network): an initial list, then the store's watch, a
// cache of immutable parsed snapshots, add/update/delete handlers and simple indexes.
//
// Usage: construct, addIndex()/addHandlers() before start(), start(), then read get()/
// list()/byIndex() from any thread and stop() (or destroy) when done. When the store ends
// the watch (the informer fell behind) or history was compacted, the informer relists and
// tells the handlers what changed (adds, updates and deletes computed from the diff).
//
// Thread-safe: readers may call every const method concurrently with the informer thread.
// Handlers run on the informer's single thread, in event order, after the cache already
// holds the new state; they must not block for long (queue a key and return).

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/thread_annotations.h"
#include "minicluster/store.h"

namespace strait::minicluster {

using JsonPtr = std::shared_ptr<const nlohmann::json>;

// One cached object version. Immutable: shared between the cache, handlers and readers.
// Thread-safe: every method may be called from any thread.
//
// The parsed tree is the costly part (a parsed Pod takes about six times its JSON), so an
// informer that does not keep trees (LocalInformer's keepTrees == false, used for Pods)
// caches only the JSON: tree() parses it on first use and shares that tree with every caller
// while one of them holds it. What the informer and the event handlers read of such an object
// (apiVersion, kind, metadata) is its head(), parsed without the spec and status; the
// informer holds the head while its handlers run.
struct CachedObject {
  ObjectPtr stored;     // the store's version (key, rv, compact JSON, labels, fields)
  std::string ns;       // metadata.namespace ("" for cluster-scoped)
  std::string name;     // metadata.name
  std::string uid;      // metadata.uid
  // (index name, value) pairs this object is filed under; set before it is shared.
  std::vector<std::pair<std::string, std::string>> indexed;

  // The parsed object, never null. Parsed again on a later call once no caller holds it
  // (unless the tree is kept). Hold the pointer for as long as references into it are used.
  JsonPtr tree() const;
  // The parsed object; keeps the tree for the lifetime of this object from the first call,
  // so references stay valid as long as the CachedPtr does. Meant for the few objects a
  // controller reads repeatedly (its owners, Services); use tree() for Pods.
  const nlohmann::json& obj() const;
  // The object's apiVersion, kind and metadata (no spec, no status), never null: the whole
  // tree when it is kept or held by someone, else parsed from those members only and shared
  // like tree() while a caller holds it. For handlers that look at owners, labels and
  // deletion only.
  JsonPtr head() const;

  // Internal to makeCached(): the tree when kept, and the last parse otherwise.
  mutable std::mutex treeMu;
  mutable JsonPtr kept;
  mutable std::weak_ptr<const nlohmann::json> recent;
  mutable std::weak_ptr<const nlohmann::json> recentHead;
};
using CachedPtr = std::shared_ptr<const CachedObject>;

// Builds a CachedObject from a stored object; null if its JSON is not an object. With
// `keepTree` the parsed tree is kept with it; otherwise only its head is parsed and `*tree`
// (if given) receives that head (see CachedObject::head()).
CachedPtr makeCached(const ObjectPtr& stored, bool keepTree = true, JsonPtr* tree = nullptr);

// "ns/name" (or "name" for cluster-scoped objects): the informer's and work queues' key.
std::string objectKey(const std::string& ns, const std::string& name);
// Splits an objectKey back into namespace and name.
std::pair<std::string, std::string> splitObjectKey(const std::string& key);

// Index functions map an object to the index values it is filed under (may be empty).
using IndexFunc = std::function<std::vector<std::string>(const CachedObject&)>;

// Built-in index names, registered on every informer.
inline constexpr const char* kIndexNamespace = "namespace";  // metadata.namespace (key order)
inline constexpr const char* kIndexNodeName = "nodeName";    // spec.nodeName (pods), if set
inline constexpr const char* kIndexOwnerUid = "ownerUid";    // every ownerReferences[].uid

struct InformerHandlers {
  std::function<void(const CachedPtr& obj)> onAdd;
  std::function<void(const CachedPtr& oldObj, const CachedPtr& newObj)> onUpdate;
  // `obj` is the last known version (for deletes seen on the watch: the final version).
  std::function<void(const CachedPtr& obj)> onDelete;
};

class LocalInformer {
 public:
  // `prefix` is the store prefix of the resource, e.g. Rest::prefix(podsInfo, "") ==
  // "/core/pods/". `keepTrees`: cache parsed trees with the objects (false for resources
  // whose count grows with the workload: their objects parse on use). No I/O, no thread.
  LocalInformer(Store& store, std::string prefix, bool keepTrees = true);
  ~LocalInformer();
  LocalInformer(const LocalInformer&) = delete;
  LocalInformer& operator=(const LocalInformer&) = delete;

  // Adds an index. Call before start(); a duplicate name replaces the function.
  void addIndex(const std::string& name, IndexFunc fn);
  // Adds handlers; every handler set sees every event. Call before start().
  void addHandlers(InformerHandlers h);

  // Lists, fills the cache (calling onAdd for each object), then follows the watch on a
  // background thread. Idempotent. The initial list happens on that thread: use
  // hasSynced()/waitForSync().
  void start();
  // Stops and joins the thread; handlers are not called afterwards. Idempotent.
  void stop();

  // True once the initial list is in the cache and its onAdd handlers have run.
  bool hasSynced() const { return synced_.load(); }
  // Blocks until hasSynced() or the timeout; returns hasSynced().
  bool waitForSync(std::chrono::milliseconds timeout) const;

  // The cached object, or null.
  CachedPtr get(const std::string& ns, const std::string& name) const;
  CachedPtr getByKey(const std::string& key) const;
  // Every cached object (ns == "") or those of one namespace, in key order.
  std::vector<CachedPtr> list(const std::string& ns = "") const;
  // Objects filed under `value` in index `index` (empty if the index is unknown).
  std::vector<CachedPtr> byIndex(const std::string& index, const std::string& value) const;
  // Blocks until the cache holds ns/name at a resourceVersion >= rv (rv == 0: until the
  // object is absent), or the timeout passes; returns whether it happened. Lets a controller
  // see its own write before its next sync. Any thread except the informer's own.
  bool waitFor(const std::string& ns, const std::string& name, uint64_t rv,
               std::chrono::milliseconds timeout) const;
  // Number of cached objects.
  size_t size() const;
  // Whether cached objects keep their parsed trees (the constructor's keepTrees).
  bool keepsTrees() const { return keepTrees_; }

 private:
  void run();
  // Relists and diffs against the cache; returns the store revision listed at.
  uint64_t relist();
  // Cache updates; each returns the previous version (null if none).
  CachedPtr put(const CachedPtr& obj);
  CachedPtr erase(const std::string& key);
  // Makes the cached version of `stored` with its index values; `*tree` holds its tree.
  CachedPtr prepare(const ObjectPtr& stored, JsonPtr* tree) const;
  void fileIndexes(const CachedObject& o, bool add);
  void notifyAdd(const CachedPtr& o);
  void notifyUpdate(const CachedPtr& oldObj, const CachedPtr& newObj);
  void notifyDelete(const CachedPtr& o);

  Store& store_;
  const std::string prefix_;
  const bool keepTrees_;
  std::vector<InformerHandlers> handlers_;  // fixed after start()
  std::map<std::string, IndexFunc> indexFns_;  // fixed after start()

  std::atomic<bool> stopping_{false};
  std::atomic<bool> synced_{false};
  std::thread thread_;
  base::Mutex watchMu_;
  Watch* watch_ GUARDED_BY(watchMu_) = nullptr;  // the live watch (stop() ends it)

  // State below is protected by mu_.
  mutable std::shared_mutex mu_;
  std::map<std::string, CachedPtr> items_;  // objectKey -> object
  // index name -> value -> object keys
  std::map<std::string, std::map<std::string, std::set<std::string>>> indexes_;
};

}  // namespace strait::minicluster
