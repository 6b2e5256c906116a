#include "kube/cache.h"

#include <mutex>

#include "kube/json_access.h"

namespace strait::kube {

using nlohmann::json;

std::string objectKey(const json& obj) {
  const json& m = child(obj, "metadata");
  std::string ns = stringOf(m, "namespace");
  std::string name = stringOf(m, "name");
  return ns.empty() ? name : ns + "/" + name;
}

std::string objectResourceVersion(const json& obj) {
  return stringOf(child(obj, "metadata"), "resourceVersion");
}

IndexFunc indexByNamespace() {
  return [](const json& o) -> std::vector<std::string> {
    std::string ns = stringOf(child(o, "metadata"), "namespace");
    if (ns.empty()) return {};
    return {ns};
  };
}

IndexFunc indexByNodeName() {
  return [](const json& o) -> std::vector<std::string> {
    std::string node = stringOf(child(o, "spec"), "nodeName");
    if (node.empty()) return {};
    return {node};
  };
}

IndexFunc indexByLabels() {
  return [](const json& o) {
    std::vector<std::string> out;
    const json& labels = child(child(o, "metadata"), "labels");
    for (auto it = labels.begin(); it != labels.end(); ++it) {
      if (it.value().is_string()) out.push_back(it.key() + "=" + it.value().get<std::string>());
    }
    return out;
  };
}

Cache::Entry Cache::makeEntry(const ObjectPtr& obj) const {
  Entry e;
  if (compact_) {
    e.cbor = json::to_cbor(*obj);
    e.cbor.shrink_to_fit();
  } else {
    e.obj = obj;
  }
  return e;
}

ObjectPtr Cache::load(const Entry& e) const {
  if (e.obj) return e.obj;
  // Our own encoding: cannot fail short of memory exhaustion.
  return std::make_shared<const json>(json::from_cbor(e.cbor));
}

void Cache::addIndex(const std::string& name, IndexFunc fn) {
  std::unique_lock lock(mu_);
  indexes_[name] = Index{std::move(fn), {}};
  Index& idx = indexes_[name];
  for (const auto& [key, entry] : items_) {
    for (auto& v : idx.fn(*load(entry))) idx.values[v].insert(key);
  }
}

ObjectPtr Cache::get(std::string_view key) const {
  std::shared_lock lock(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : load(it->second);
}

std::vector<ObjectPtr> Cache::list() const {
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(items_.size());
  for (const auto& [k, v] : items_) out.push_back(load(v));
  return out;
}

std::vector<std::string> Cache::keys() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& [k, v] : items_) out.push_back(k);
  return out;
}

std::vector<ObjectPtr> Cache::byIndex(const std::string& name, const std::string& value) const {
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  auto idx = indexes_.find(name);
  if (idx == indexes_.end()) return out;
  auto keys = idx->second.values.find(value);
  if (keys == idx->second.values.end()) return out;
  for (const auto& k : keys->second) {
    auto it = items_.find(k);
    if (it != items_.end()) out.push_back(load(it->second));
  }
  return out;
}

size_t Cache::size() const {
  std::shared_lock lock(mu_);
  return items_.size();
}

void Cache::indexLocked(const std::string& key, const json& obj, bool add) {
  for (auto& [name, idx] : indexes_) {
    for (auto& v : idx.fn(obj)) {
      if (add) {
        idx.values[v].insert(key);
      } else {
        auto it = idx.values.find(v);
        if (it == idx.values.end()) continue;
        it->second.erase(key);
        if (it->second.empty()) idx.values.erase(it);
      }
    }
  }
}

ObjectPtr Cache::upsert(const std::string& key, ObjectPtr obj) {
  Entry entry = makeEntry(obj);
  std::unique_lock lock(mu_);
  ObjectPtr old;
  auto it = items_.find(key);
  if (it != items_.end()) {
    old = load(it->second);
    indexLocked(key, *old, false);
    it->second = std::move(entry);
  } else {
    items_.emplace(key, std::move(entry));
  }
  indexLocked(key, *obj, true);
  return old;
}

ObjectPtr Cache::erase(const std::string& key) {
  std::unique_lock lock(mu_);
  auto it = items_.find(key);
  if (it == items_.end()) return nullptr;
  ObjectPtr old = load(it->second);
  indexLocked(key, *old, false);
  items_.erase(it);
  return old;
}

}  // namespace strait::kube
