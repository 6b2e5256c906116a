// The reflector loop of an Informer:
//
//   relist (paginated LIST; diff against the cache; handlers get the difference)
//   loop: watch from lastRv_ (allowWatchBookmarks, random timeout)
//     stream ended by the server  -> watch again from lastRv_
//     ERROR 410 / HTTP 410        -> relist
//     transport error, 5xx        -> jittered backoff, watch again from lastRv_
//
// lastRv_ follows every applied event and bookmark, so a re-watch never replays an event the
// handlers already saw.
#include "kube/informer.h"

#include <spdlog/spdlog.h>

#include <pthread.h>

#include <random>

namespace strait::kube {

using nlohmann::json;
using namespace std::chrono_literals;

Informer::Informer(Client& client, InformerOptions opts)
    : client_(client), opts_(std::move(opts)), cache_(opts_.compactCache) {}

Informer::~Informer() { stop(); }

void Informer::addIndex(const std::string& name, IndexFunc fn) {
  cache_.addIndex(name, std::move(fn));
}

void Informer::addHandlers(EventHandlers h) {
  base::MutexLock lock(handlerMu_);
  if (h.onAdd) {
    for (const auto& o : cache_.list()) h.onAdd(o);
  }
  handlers_.push_back(std::move(h));
}

void Informer::start() {
  base::MutexLock lock(mu_);
  if (thread_.joinable()) return;
  thread_ = std::jthread([this](std::stop_token st) { run(st); });
}

void Informer::stop() {
  std::jthread t;
  {
    base::MutexLock lock(mu_);
    t = std::move(thread_);
  }
  if (t.joinable()) {
    t.request_stop();
    syncedCv_.notify_all();
    t.join();
  }
}

bool Informer::waitForSync(std::chrono::milliseconds timeout) const {
  base::UniqueLock lock(mu_);
  syncedCv_.wait_for(lock, timeout, [&] { return synced_.load(); });
  return synced_.load();
}

std::string Informer::lastResourceVersion() const {
  base::MutexLock lock(mu_);
  return lastRv_;
}

InformerStats Informer::stats() const {
  base::MutexLock lock(mu_);
  return stats_;
}

ObjectPtr Informer::snapshot(json&& obj) const {
  if (opts_.transform) {
    opts_.transform(obj);
  } else if (obj.is_object()) {
    auto m = obj.find("metadata");
    if (m != obj.end() && m->is_object()) m->erase("managedFields");
  }
  return std::make_shared<const json>(std::move(obj));
}

void Informer::dispatchAdd(const ObjectPtr& o) {
  base::MutexLock lock(handlerMu_);
  for (auto& h : handlers_) {
    if (h.onAdd) h.onAdd(o);
  }
}

void Informer::dispatchUpdate(const ObjectPtr& a, const ObjectPtr& b) {
  base::MutexLock lock(handlerMu_);
  for (auto& h : handlers_) {
    if (h.onUpdate) h.onUpdate(a, b);
  }
}

void Informer::dispatchDelete(const ObjectPtr& o) {
  base::MutexLock lock(handlerMu_);
  for (auto& h : handlers_) {
    if (h.onDelete) h.onDelete(o);
  }
}

bool Informer::sleepFor(std::chrono::milliseconds d, std::stop_token stop) {
  base::UniqueLock lock(mu_);
  std::condition_variable_any cv;  // woken only by `stop`
  cv.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

Status Informer::relist(std::stop_token stop) {
  ListOptions lo;
  lo.labelSelector = opts_.labelSelector;
  lo.fieldSelector = opts_.fieldSelector;
  lo.limit = opts_.pageSize;
  std::map<std::string, json> fresh;
  std::string listRv;
  for (;;) {
    if (stop.stop_requested()) return Status::OK();
    auto page = client_.list(opts_.resource, opts_.ns, lo);
    if (!page) {
      if (page.code() == Code::Gone && !lo.continueToken.empty()) {
        // The continue token expired: start again with one unpaginated LIST.
        fresh.clear();
        lo.continueToken.clear();
        lo.limit = 0;
        continue;
      }
      return page.error();
    }
    json& doc = *page;
    if (lo.continueToken.empty()) listRv = objectResourceVersion(doc);
    if (doc.contains("items") && doc["items"].is_array()) {
      for (auto& item : doc["items"]) {
        std::string key = objectKey(item);
        fresh[key] = std::move(item);
      }
    }
    std::string cont;
    if (doc.contains("metadata") && doc["metadata"].is_object()) {
      cont = doc["metadata"].value("continue", "");
    }
    if (cont.empty()) break;
    lo.continueToken = cont;
  }
  // Difference against the cache.
  for (const auto& key : cache_.keys()) {
    if (fresh.count(key)) continue;
    if (ObjectPtr old = cache_.erase(key)) dispatchDelete(old);
  }
  for (auto& [key, obj] : fresh) {
    ObjectPtr old = cache_.get(key);
    if (old && objectResourceVersion(*old) == objectResourceVersion(obj)) continue;
    ObjectPtr cur = snapshot(std::move(obj));
    cache_.upsert(key, cur);
    if (old) {
      dispatchUpdate(old, cur);
    } else {
      dispatchAdd(cur);
    }
  }
  {
    base::MutexLock lock(mu_);
    lastRv_ = listRv;
    ++stats_.lists;
  }
  if (!synced_.exchange(true)) {
    base::MutexLock lock(mu_);
    syncedCv_.notify_all();
  }
  spdlog::debug("event=informer_listed resource={} ns={} items={} rv={}",
                opts_.resource.toString(), opts_.ns, cache_.size(), listRv);
  return Status::OK();
}

void Informer::apply(WatchEvent&& ev) {
  std::string rv = ev.resourceVersion();
  if (ev.type == WatchEventType::Bookmark) {
    if (!rv.empty()) {
      base::MutexLock lock(mu_);
      lastRv_ = rv;
    }
    return;
  }
  std::string key = objectKey(ev.object);
  if (ev.type == WatchEventType::Deleted) {
    ObjectPtr old = cache_.erase(key);
    if (old) dispatchDelete(snapshot(std::move(ev.object)));
  } else {
    ObjectPtr old = cache_.get(key);
    if (!old || objectResourceVersion(*old) != rv) {
      ObjectPtr cur = snapshot(std::move(ev.object));
      cache_.upsert(key, cur);
      if (old) {
        dispatchUpdate(old, cur);
      } else {
        dispatchAdd(cur);
      }
    }
  }
  base::MutexLock lock(mu_);
  if (!rv.empty()) lastRv_ = rv;
  ++stats_.events;
}

Status Informer::watchOnce(std::stop_token stop, bool& needRelist) {
  static thread_local std::mt19937 rng(std::random_device{}());
  WatchOptions wo;
  wo.labelSelector = opts_.labelSelector;
  wo.fieldSelector = opts_.fieldSelector;
  wo.resourceVersion = lastResourceVersion();
  wo.allowWatchBookmarks = true;
  auto minT = static_cast<int>(opts_.minWatchTimeout.count());
  wo.timeoutSeconds = std::uniform_int_distribution<int>(minT, 2 * minT)(rng);
  {
    base::MutexLock lock(mu_);
    ++stats_.watches;
  }
  Error streamError;
  bool gotError = false;
  Status s = client_.watch(
      opts_.resource, opts_.ns, wo,
      [&](WatchEvent&& ev) {
        if (ev.type == WatchEventType::Error) {
          streamError = ev.error();
          gotError = true;
          return false;
        }
        apply(std::move(ev));
        return true;
      },
      stop);
  if (gotError) s = streamError;
  if (!s.ok() && s.code() == Code::Gone) {
    needRelist = true;
    base::MutexLock lock(mu_);
    ++stats_.goneRelists;
    spdlog::info("event=informer_relist reason=gone resource={} rv={}",
                 opts_.resource.toString(), wo.resourceVersion);
    return Status::OK();
  }
  return s;
}

void Informer::run(std::stop_token stop) {
  pthread_setname_np(pthread_self(), "informer");  // names it in top -H, perf, /proc
  static thread_local std::mt19937 rng(std::random_device{}());
  bool needRelist = true;
  int failures = 0;
  while (!stop.stop_requested()) {
    Status s;
    if (needRelist) {
      s = relist(stop);
      if (s.ok()) needRelist = false;
    } else {
      s = watchOnce(stop, needRelist);
      if (!s.ok()) {
        base::MutexLock lock(mu_);
        ++stats_.watchErrors;
      }
    }
    if (stop.stop_requested()) break;
    if (s.ok()) {
      failures = 0;
      continue;
    }
    ++failures;
    double base = std::min(5000.0, 100.0 * (1 << std::min(failures, 6)));
    auto wait = std::chrono::milliseconds(
        static_cast<int64_t>(base * std::uniform_real_distribution<double>(0.5, 1.0)(rng)));
    spdlog::info("event=informer_retry resource={} ns={} phase={} failures={} wait_ms={} "
                 "error=\"{}\"",
                 opts_.resource.toString(), opts_.ns, needRelist ? "list" : "watch", failures,
                 wait.count(), s.error().message);
    if (!sleepFor(wait, stop)) break;
  }
}

std::shared_ptr<Informer> InformerFactory::informerFor(const ResourceRef& r,
                                                       const std::string& ns,
                                                       const std::string& labelSelector,
                                                       const std::string& fieldSelector) {
  base::MutexLock lock(mu_);
  Key key{r, r.namespaced ? ns : std::string(), labelSelector, fieldSelector};
  auto it = informers_.find(key);
  if (it != informers_.end()) return it->second;
  InformerOptions o;
  o.resource = r;
  o.ns = std::get<1>(key);
  o.labelSelector = labelSelector;
  o.fieldSelector = fieldSelector;
  auto inf = std::make_shared<Informer>(client_, std::move(o));
  informers_[key] = inf;
  return inf;
}

void InformerFactory::start() {
  base::MutexLock lock(mu_);
  for (auto& [k, inf] : informers_) inf->start();
}

bool InformerFactory::waitForSync(std::chrono::milliseconds timeout) {
  std::vector<std::shared_ptr<Informer>> all;
  {
    base::MutexLock lock(mu_);
    for (auto& [k, inf] : informers_) all.push_back(inf);
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (auto& inf : all) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!inf->waitForSync(std::max(left, 0ms))) return false;
  }
  return true;
}

void InformerFactory::stop() {
  base::MutexLock lock(mu_);
  for (auto& [k, inf] : informers_) inf->stop();
}

}  // namespace strait::kube
