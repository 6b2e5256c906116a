#pragma once
// The minicluster's versioned object store: an in-memory ordered map of keys to immutable
// JSON objects, one global revision counter (the resourceVersion), a bounded event history
// for watches (older revisions are "compacted": a watch from before them gets Gone), and
// optional durability (write-ahead log + snapshots under a data directory, fsync'd before a
// write is acknowledged).
//
// Thread-safe: every method may be called from any thread.
//
// Keys are strings "<resource-prefix>/<namespace>/<name>", e.g. "/core/pods/default/web" or
// "/core/nodes//n1" (empty namespace for cluster-scoped). A prefix ending in '/' selects a
// subtree: "/core/pods/" is all pods, "/core/pods/default/" the pods of namespace default.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/container/flat_map.hpp>

#include "kube/status.h"

namespace strait::minicluster {

using kube::Error;
using kube::Result;
using kube::Status;

// Attributes extracted once per write so selectors match without re-parsing JSON.
using Labels = std::map<std::string, std::string>;
// The name of a selectable field ("spec.nodeName"), interned: every object's fields refer to
// one process-wide copy of each name instead of carrying their own (most names are longer
// than a string's inline buffer, so each copy was a heap block per field per version).
// Constructing one interns the name (the set of names is fixed by the resource kinds and the
// CRDs' selectableFields); looking a name up in Fields does not. Thread-safe.
class FieldName {
 public:
  FieldName() : FieldName(std::string_view()) {}
  FieldName(std::string_view name);  // NOLINT(google-explicit-constructor)
  FieldName(const char* name) : FieldName(std::string_view(name)) {}  // NOLINT
  FieldName(const std::string& name) : FieldName(std::string_view(name)) {}  // NOLINT

  const std::string& str() const { return *name_; }
  operator const std::string&() const { return *name_; }  // NOLINT(google-explicit-constructor)
  operator std::string_view() const { return *name_; }    // NOLINT(google-explicit-constructor)

  friend bool operator==(const FieldName& a, const FieldName& b) { return a.name_ == b.name_; }

 private:
  const std::string* name_;  // interned, never freed
};

// Orders FieldNames by their text; also compares them with plain strings, so that Fields
// finds a name without interning it.
struct FieldNameLess {
  using is_transparent = void;
  bool operator()(const FieldName& a, const FieldName& b) const { return a.str() < b.str(); }
  bool operator()(const FieldName& a, std::string_view b) const { return a.str() < b; }
  bool operator()(std::string_view a, const FieldName& b) const { return a < b.str(); }
  bool operator()(const FieldName& a, const std::string& b) const { return a.str() < b; }
  bool operator()(const std::string& a, const FieldName& b) const { return a < b.str(); }
  bool operator()(const FieldName& a, const char* b) const { return a.str() < b; }
  bool operator()(const char* a, const FieldName& b) const { return a < b.str(); }
};

// A sorted vector, not a tree: an object keeps about ten fields, and a tree node per field
// cost ~110 bytes more per field on every stored version.
using Fields = boost::container::flat_map<FieldName, std::string, FieldNameLess>;

// An immutable map held by pointer, so that versions of an object whose labels or selectable
// fields did not change share one copy (a status write keeps both: without sharing, each
// version the watch history holds carried its own ~1 KB of map nodes and strings). Reads
// like the map it holds (find, at, count, iteration, conversion to const Map&); assigning a
// map replaces the pointer. An empty map holds nothing. Thread-safe for reads, as the Object
// that holds it.
template <typename Map>
class SharedMap {
 public:
  SharedMap() = default;
  SharedMap(Map m)  // NOLINT(google-explicit-constructor): assigned from built maps
      : p_(m.empty() ? nullptr : std::make_shared<const Map>(std::move(m))) {}
  SharedMap& operator=(Map m) { return *this = SharedMap(std::move(m)); }

  const Map& get() const { return p_ ? *p_ : none(); }
  operator const Map&() const { return get(); }  // NOLINT(google-explicit-constructor)
  auto begin() const { return get().begin(); }
  auto end() const { return get().end(); }
  size_t size() const { return get().size(); }
  bool empty() const { return p_ == nullptr || p_->empty(); }
  template <typename K>
  auto find(const K& k) const {
    return get().find(k);
  }
  template <typename K>
  size_t count(const K& k) const {
    return get().count(k);
  }
  template <typename K>
  const auto& at(const K& k) const {
    return get().at(k);
  }
  // Whether both hold the same copy (not merely equal maps).
  bool shares(const SharedMap& other) const { return p_ == other.p_; }
  friend bool operator==(const SharedMap& a, const SharedMap& b) { return a.get() == b.get(); }
  friend bool operator==(const SharedMap& a, const Map& b) { return a.get() == b; }

 private:
  static const Map& none() {
    static const Map e;
    return e;
  }
  std::shared_ptr<const Map> p_;
};

// One stored object version. Immutable once handed out.
struct Object {
  std::string key;
  uint64_t rv = 0;     // resourceVersion of this version (the revision that wrote it)
  std::string json;    // compact JSON of the whole object, metadata.resourceVersion included
  SharedMap<Labels> labels;  // metadata.labels; shared with the previous version if equal
  SharedMap<Fields> fields;  // selectable fields (metadata.name, metadata.namespace,
                             // spec.nodeName...); shared with the previous version if equal
};
using ObjectPtr = std::shared_ptr<const Object>;

enum class EventType { Added, Modified, Deleted, Bookmark };
const char* eventTypeName(EventType t);  // "ADDED", "MODIFIED", "DELETED", "BOOKMARK"

// One change. For Deleted, `object` is the last version with rv set to the deletion
// revision (the JSON's metadata.resourceVersion too); `prev` is the version before the change
// (null for Added).
struct Event {
  EventType type;
  uint64_t rv;
  ObjectPtr object;
  ObjectPtr prev;
};
using EventPtr = std::shared_ptr<const Event>;

// What a write callback returns: the new object's JSON and attributes. The store fills in
// key and rv. `json` must already carry metadata.resourceVersion == the rv passed to the
// callback (the store cannot edit JSON).
struct NewObject {
  std::string json;
  Labels labels;
  Fields fields;
};

// Called under the store's write lock with the current version (null if absent) and the
// revision the write will get. Returns the new object, or an error that aborts the write
// (nothing changes). Must not call back into the store.
using UpdateFn = std::function<Result<NewObject>(const ObjectPtr& current, uint64_t newRv)>;
// Decides a deletion under the write lock (preconditions, finalizers); returns an error to
// abort. `newRv` is the deletion revision; the callback returns the final JSON the DELETED
// event should carry (with metadata.resourceVersion == newRv).
using DeleteFn = std::function<Result<NewObject>(const ObjectPtr& current, uint64_t newRv)>;

struct ListResult {
  std::vector<ObjectPtr> items;  // key order
  uint64_t rv = 0;               // store revision the list reflects
};

// A live watch. Events arrive in revision order; next() blocks up to `timeout`.
class Watch {
 public:
  virtual ~Watch() = default;
  // Next event, or nullopt on timeout or after stop(). Never returns an event twice.
  virtual std::optional<EventPtr> next(std::chrono::milliseconds timeout) = 0;
  // True when the watch was ended by the store (e.g. it fell too far behind): the caller
  // should end the stream; the client re-watches and gets Gone if history moved on.
  virtual bool ended() const = 0;
  // Ends the watch; next() returns nullopt from then on. Idempotent; any thread.
  virtual void stop() = 0;
};

struct StoreOptions {
  // Events kept for watch resume; older revisions are compacted (watch from them = Gone).
  size_t historyLimit = 100000;
  // With a data directory: WAL + snapshots; every acknowledged write survives kill -9.
  std::optional<std::string> dataDir;
  // Snapshot + truncate the WAL after this many WAL records.
  size_t snapshotEvery = 50000;
  // A watcher whose queue exceeds this many pending events is ended (ended() == true).
  size_t watcherQueueLimit = 1000000;
};

class Store {
 public:
  virtual ~Store() = default;

  // Loads the snapshot and replays the WAL when a data directory is set. Call once before
  // any other method. Fails with a message naming the file and offset of corrupt data; a
  // torn record at the end of the WAL (crash mid-write) is dropped, not an error.
  virtual Status open() = 0;

  virtual Result<ObjectPtr> get(const std::string& key) const = 0;
  // Objects whose key starts with `prefix`, with an optional filter; rv = current revision.
  virtual ListResult list(const std::string& prefix,
                          const std::function<bool(const Object&)>& filter = {}) const = 0;

  // Creates `key` via fn(nullptr, rv). AlreadyExists if present.
  virtual Result<ObjectPtr> create(const std::string& key, const UpdateFn& fn) = 0;
  // Read-modify-write of an existing key; NotFound if absent. fn errors abort.
  virtual Result<ObjectPtr> update(const std::string& key, const UpdateFn& fn) = 0;
  // Deletes an existing key (NotFound if absent) after fn approves; returns the final object.
  virtual Result<ObjectPtr> remove(const std::string& key, const DeleteFn& fn) = 0;

  // Current revision (the rv of the last write; starts at 1 on a new store).
  virtual uint64_t revision() const = 0;
  // Oldest revision a watch can resume from (events after it are all kept).
  virtual uint64_t compactedRevision() const = 0;
  // Drops history up to and including `rv` (test hook for 410 behaviour).
  virtual void compact(uint64_t rv) = 0;

  // Watches keys under `prefix` for events with rv > fromRv. Gone if fromRv is older than
  // compactedRevision(). fromRv == 0 means "from now" (no replay). Filtering by selector
  // is the caller's job (Event carries prev so it can turn MODIFIED into ADDED/DELETED).
  virtual Result<std::unique_ptr<Watch>> watch(const std::string& prefix, uint64_t fromRv) = 0;
};

std::unique_ptr<Store> newStore(StoreOptions opts);

}  // namespace strait::minicluster
