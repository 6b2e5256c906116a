#include "minicluster/local_informer.h"

#include <spdlog/spdlog.h>

#include "base/thread_annotations.h"
#include "minicluster/json_scan.h"
#include "minicluster/watch_gather.h"

namespace strait::minicluster {
namespace {

using json = nlohmann::json;
constexpr auto kPollInterval = std::chrono::milliseconds(200);
constexpr auto kRetryInterval = std::chrono::milliseconds(500);

std::string stringAt(const json& obj, const char* a, const char* b) {
  if (!obj.contains(a) || !obj[a].is_object()) return "";
  const json& o = obj[a];
  auto it = o.find(b);
  if (it == o.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

// The apiVersion, kind and metadata of a stored object, parsed without its other members;
// null when the text is not a JSON object or one of those members is malformed.
JsonPtr parseHead(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '{') return nullptr;
  auto head = std::make_shared<json>(json::object());
  for (const char* member : {"apiVersion", "kind", "metadata"}) {
    auto value = jsonMember(text, member);
    if (!value) continue;
    json parsed = json::parse(*value, nullptr, false);
    if (parsed.is_discarded()) return nullptr;
    (*head)[member] = std::move(parsed);
  }
  return head;
}

}  // namespace

JsonPtr CachedObject::head() const {
  std::lock_guard l(treeMu);
  if (kept) return kept;
  if (auto t = recent.lock()) return t;
  if (auto h = recentHead.lock()) return h;
  JsonPtr h = parseHead(stored->json);
  if (!h) h = std::make_shared<const json>(json::object());
  recentHead = h;
  return h;
}

JsonPtr CachedObject::tree() const {
  std::lock_guard l(treeMu);
  if (kept) return kept;
  if (auto t = recent.lock()) return t;
  auto t = std::make_shared<const json>(json::parse(stored->json, nullptr, false));
  recent = t;
  return t;
}

const json& CachedObject::obj() const {
  {
    std::lock_guard l(treeMu);
    if (kept) return *kept;
  }
  JsonPtr t = tree();
  std::lock_guard l(treeMu);
  if (!kept) kept = std::move(t);
  return *kept;
}

CachedPtr makeCached(const ObjectPtr& stored, bool keepTree, JsonPtr* tree) {
  if (!stored) return nullptr;
  JsonPtr t;
  if (keepTree) {
    t = std::make_shared<const json>(json::parse(stored->json, nullptr, false));
    if (t->is_discarded() || !t->is_object()) return nullptr;
  } else {
    t = parseHead(stored->json);  // the whole tree is parsed only when someone asks
    if (!t) return nullptr;
  }
  auto c = std::make_shared<CachedObject>();
  c->stored = stored;
  c->ns = stringAt(*t, "metadata", "namespace");
  c->name = stringAt(*t, "metadata", "name");
  c->uid = stringAt(*t, "metadata", "uid");
  if (keepTree) {
    c->kept = t;
  } else {
    c->recentHead = t;
  }
  if (tree) *tree = std::move(t);
  return c;
}

std::string objectKey(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

std::pair<std::string, std::string> splitObjectKey(const std::string& key) {
  auto slash = key.find('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

LocalInformer::LocalInformer(Store& store, std::string prefix, bool keepTrees)
    : store_(store), prefix_(std::move(prefix)), keepTrees_(keepTrees) {
  indexFns_[kIndexNodeName] = [](const CachedObject& o) {
    // Read from the text: spec.nodeName alone does not need the whole tree.
    auto spec = jsonMember(o.stored->json, "spec");
    auto text = spec ? jsonMember(*spec, "nodeName") : std::nullopt;
    json node = text ? json::parse(*text, nullptr, false) : json();
    if (!node.is_string() || node.get_ref<const std::string&>().empty()) {
      return std::vector<std::string>{};
    }
    return std::vector<std::string>{node.get<std::string>()};
  };
  indexFns_[kIndexOwnerUid] = [](const CachedObject& o) {
    std::vector<std::string> uids;
    const JsonPtr t = o.head();
    const json& m = t->contains("metadata") ? (*t)["metadata"] : json();
    if (m.is_object() && m.contains("ownerReferences") && m["ownerReferences"].is_array()) {
      for (const auto& ref : m["ownerReferences"]) {
        if (ref.is_object() && ref.contains("uid") && ref["uid"].is_string()) {
          uids.push_back(ref["uid"].get<std::string>());
        }
      }
    }
    return uids;
  };
}

LocalInformer::~LocalInformer() { stop(); }

void LocalInformer::addIndex(const std::string& name, IndexFunc fn) {
  indexFns_[name] = std::move(fn);
}

void LocalInformer::addHandlers(InformerHandlers h) { handlers_.push_back(std::move(h)); }

void LocalInformer::start() {
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void LocalInformer::stop() {
  stopping_ = true;
  {
    base::MutexLock l(watchMu_);
    if (watch_) watch_->stop();
  }
  if (thread_.joinable()) thread_.join();
}

bool LocalInformer::waitForSync(std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!synced_.load()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

CachedPtr LocalInformer::get(const std::string& ns, const std::string& name) const {
  return getByKey(objectKey(ns, name));
}

CachedPtr LocalInformer::getByKey(const std::string& key) const {
  std::shared_lock l(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : it->second;
}

std::vector<CachedPtr> LocalInformer::list(const std::string& ns) const {
  std::shared_lock l(mu_);
  std::vector<CachedPtr> out;
  if (!ns.empty()) {
    // The namespace index is the key order itself: "ns/name" keys of one namespace are
    // adjacent (an index of its own would repeat every key).
    const std::string prefix = ns + "/";
    for (auto it = items_.lower_bound(prefix); it != items_.end() && it->first.starts_with(prefix);
         ++it) {
      out.push_back(it->second);
    }
    return out;
  }
  out.reserve(items_.size());
  for (const auto& [k, v] : items_) out.push_back(v);
  return out;
}

std::vector<CachedPtr> LocalInformer::byIndex(const std::string& index,
                                              const std::string& value) const {
  if (index == kIndexNamespace) return value.empty() ? std::vector<CachedPtr>{} : list(value);
  std::shared_lock l(mu_);
  std::vector<CachedPtr> out;
  auto idx = indexes_.find(index);
  if (idx == indexes_.end()) return out;
  auto keys = idx->second.find(value);
  if (keys == idx->second.end()) return out;
  for (const auto& k : keys->second) {
    auto it = items_.find(k);
    if (it != items_.end()) out.push_back(it->second);
  }
  return out;
}

bool LocalInformer::waitFor(const std::string& ns, const std::string& name, uint64_t rv,
                            std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto o = get(ns, name);
    if (rv == 0 ? o == nullptr : (o && o->stored->rv >= rv)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

size_t LocalInformer::size() const {
  std::shared_lock l(mu_);
  return items_.size();
}

CachedPtr LocalInformer::prepare(const ObjectPtr& stored, JsonPtr* tree) const {
  auto c = std::const_pointer_cast<CachedObject>(makeCached(stored, keepTrees_, tree));
  if (!c) return nullptr;
  for (const auto& [name, fn] : indexFns_) {
    for (auto& v : fn(*c)) c->indexed.emplace_back(name, std::move(v));
  }
  c->indexed.shrink_to_fit();
  return c;
}

void LocalInformer::fileIndexes(const CachedObject& o, bool add) {
  const std::string key = objectKey(o.ns, o.name);
  for (const auto& [name, v] : o.indexed) {
    auto& idx = indexes_[name];
    if (add) {
      idx[v].insert(key);
    } else if (auto it = idx.find(v); it != idx.end()) {
      it->second.erase(key);
      if (it->second.empty()) idx.erase(it);
    }
  }
}

CachedPtr LocalInformer::put(const CachedPtr& obj) {
  const std::string key = objectKey(obj->ns, obj->name);
  std::unique_lock l(mu_);
  CachedPtr old;
  auto it = items_.find(key);
  if (it != items_.end()) {
    old = it->second;
    fileIndexes(*old, false);
    it->second = obj;
  } else {
    items_.emplace(key, obj);
  }
  fileIndexes(*obj, true);
  return old;
}

CachedPtr LocalInformer::erase(const std::string& key) {
  std::unique_lock l(mu_);
  auto it = items_.find(key);
  if (it == items_.end()) return nullptr;
  CachedPtr old = it->second;
  fileIndexes(*old, false);
  items_.erase(it);
  return old;
}

void LocalInformer::notifyAdd(const CachedPtr& o) {
  for (const auto& h : handlers_) {
    if (h.onAdd) h.onAdd(o);
  }
}

void LocalInformer::notifyUpdate(const CachedPtr& oldObj, const CachedPtr& newObj) {
  for (const auto& h : handlers_) {
    if (h.onUpdate) h.onUpdate(oldObj, newObj);
  }
}

void LocalInformer::notifyDelete(const CachedPtr& o) {
  for (const auto& h : handlers_) {
    if (h.onDelete) h.onDelete(o);
  }
}

uint64_t LocalInformer::relist() {
  auto listed = store_.list(prefix_);
  std::set<std::string> seen;
  for (const auto& stored : listed.items) {
    JsonPtr head;  // shared by the handlers of this object
    auto c = prepare(stored, &head);
    if (!c) continue;
    seen.insert(objectKey(c->ns, c->name));
    auto old = getByKey(objectKey(c->ns, c->name));
    if (old && old->stored->rv == stored->rv) continue;
    put(c);
    if (old) {
      notifyUpdate(old, c);
    } else {
      notifyAdd(c);
    }
  }
  std::vector<std::string> gone;
  {
    std::shared_lock l(mu_);
    for (const auto& [k, v] : items_) {
      if (!seen.count(k)) gone.push_back(k);
    }
  }
  for (const auto& k : gone) {
    if (auto old = erase(k)) notifyDelete(old);
  }
  return listed.rv;
}

void LocalInformer::run() {
  while (!stopping_) {
    uint64_t rv = relist();
    synced_ = true;
    auto w = store_.watch(prefix_, rv);
    if (!w) {
      spdlog::warn("event=informer_watch_failed prefix={} error=\"{}\"", prefix_,
                   w.error().message);
      std::this_thread::sleep_for(kRetryInterval);
      continue;
    }
    {
      base::MutexLock l(watchMu_);
      watch_ = w->get();
      if (stopping_) watch_->stop();
    }
    while (!stopping_) {
      auto ev = nextGathered(**w, kPollInterval);
      if ((*w)->ended()) {
        spdlog::warn("event=informer_watch_ended prefix={} action=relist", prefix_);
        break;
      }
      if (!ev) continue;
      const Event& e = **ev;
      if (e.type == EventType::Bookmark) continue;
      JsonPtr head;  // shared by the handlers of this event
      auto c = prepare(e.object, &head);
      if (!c) continue;
      if (e.type == EventType::Deleted) {
        if (erase(objectKey(c->ns, c->name))) notifyDelete(c);
        continue;
      }
      auto old = put(c);
      if (old) {
        const JsonPtr oldHead = old->head();  // parsed once for all handlers
        notifyUpdate(old, c);
      } else {
        notifyAdd(c);
      }
    }
    base::MutexLock l(watchMu_);
    watch_ = nullptr;
  }
}

}  // namespace strait::minicluster
