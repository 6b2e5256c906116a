#pragma once
// The informer's object cache: objects keyed "namespace/name" (or "name" when
// cluster-scoped), held as immutable snapshots, with secondary indexes (namespace,
// spec.nodeName, labels, or custom functions) kept in step with every change.
//
// Thread-safe: readers (get/list/byIndex) take a shared lock; the informer is the only
// writer. Snapshots stay valid after the cache moved on (shared ownership).

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace strait::kube {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

// Index values for one object (an object may have several, e.g. one per label).
using IndexFunc = std::function<std::vector<std::string>(const nlohmann::json&)>;

// "ns/name", or "name" for objects without a namespace.
std::string objectKey(const nlohmann::json& obj);
// metadata.resourceVersion, "" when absent.
std::string objectResourceVersion(const nlohmann::json& obj);

// Built-in index functions.
IndexFunc indexByNamespace();  // metadata.namespace
IndexFunc indexByNodeName();   // spec.nodeName (objects without one are not indexed)
IndexFunc indexByLabels();     // one value "key=value" per label

inline constexpr const char* kNamespaceIndex = "namespace";
inline constexpr const char* kNodeNameIndex = "spec.nodeName";
inline constexpr const char* kLabelsIndex = "labels";

class Cache {
 public:
  // compact = false keeps parsed snapshots (reads cost nothing; about 7x the JSON size in
  // memory with nlohmann::json). compact = true keeps each object as CBOR (less than its
  // JSON size) and parses it on every read (tens of microseconds for a pod): for large,
  // rarely listed caches.
  explicit Cache(bool compact = false) : compact_(compact) {}

  // Adds an index; call before the first upsert (objects already cached are indexed too).
  void addIndex(const std::string& name, IndexFunc fn);

  // Readers. Null / empty when absent. In compact mode each call returns freshly parsed
  // snapshots.
  ObjectPtr get(std::string_view key) const;
  std::vector<ObjectPtr> list() const;
  std::vector<std::string> keys() const;
  // Objects whose index `name` has `value`; empty for an unknown index.
  std::vector<ObjectPtr> byIndex(const std::string& name, const std::string& value) const;
  size_t size() const;

  // Writer side (the informer). upsert returns the previous snapshot (null if new); erase
  // returns the removed one (null if absent).
  ObjectPtr upsert(const std::string& key, ObjectPtr obj);
  ObjectPtr erase(const std::string& key);

 private:
  struct Index {
    IndexFunc fn;
    std::map<std::string, std::set<std::string>> values;  // index value -> keys
  };
  // One cached object: the snapshot, or in compact mode its CBOR encoding.
  struct Entry {
    ObjectPtr obj;
    std::vector<uint8_t> cbor;
  };
  Entry makeEntry(const ObjectPtr& obj) const;
  ObjectPtr load(const Entry& e) const;
  void indexLocked(const std::string& key, const nlohmann::json& obj, bool add);

  const bool compact_;
  mutable std::shared_mutex mu_;  // guards the fields below
  std::map<std::string, Entry, std::less<>> items_;
  std::map<std::string, Index> indexes_;
};

}  // namespace strait::kube
