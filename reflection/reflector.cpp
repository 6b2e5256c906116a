#include "reflection/reflector.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include "kube/api_error.h"
#include "reflection/reflection_metrics.h"

namespace strait::reflection {

static_assert(static_cast<int>(WorkResult::RequeueAfter) ==
                  static_cast<int>(HandleResult::Kind::RequeueAfter) &&
              static_cast<int>(WorkResult::Retry) == static_cast<int>(HandleResult::Kind::Retry));

Reflector::~Reflector() { stop(); }

kube::Status Reflector::registerKind(std::unique_ptr<KindReflector> kind, KindOptions opts) {
  if (!kind) return kube::makeError(kube::Code::Invalid, "reflector: null kind");
  if (started_) {
    return kube::makeError(kube::Code::Invalid, "reflector: kinds must be registered before start()");
  }
  if (opts.workers < 1) {
    return kube::makeError(kube::Code::Invalid,
                           "reflector: kind " + kind->kind() + ": workers must be positive",
                           "workers");
  }
  std::string name = kind->kind();
  if (kinds_.count(name)) {
    return kube::makeError(kube::Code::Invalid, "reflector: kind " + name + " registered twice");
  }
  auto k = std::make_unique<Kind>();
  k->reflector = std::move(kind);
  k->queue = std::make_unique<kube::WorkQueue>(opts.queue);
  k->opts = std::move(opts);
  kinds_.emplace(name, std::move(k));
  return kube::Status::OK();
}

void Reflector::start() {
  if (started_.exchange(true)) return;
  for (auto& [name, k] : kinds_) {
    if (auto m = reflectionMetrics()) {
      m->queueAdded(name_, name, [q = k->queue.get()] { return q->len(); });
    }
    for (int i = 0; i < k->opts.workers; ++i) {
      Kind* kp = k.get();
      k->workers.emplace_back([this, kp] { work(*kp); });
    }
  }
}

void Reflector::stop() {
  if (stopped_.exchange(true)) return;
  if (auto m = reflectionMetrics(); m && started_) {
    for (auto& [name, k] : kinds_) m->queueRemoved(name_, name);
  }
  for (auto& [name, k] : kinds_) k->queue->shutDown();
  for (auto& [name, k] : kinds_) {
    for (std::thread& t : k->workers) {
      if (t.joinable()) t.join();
    }
  }
}

void Reflector::work(Kind& k) {
  // "refl-Pod": names the workers in top -H, perf and /proc (15 characters at most).
  pthread_setname_np(pthread_self(), ("refl-" + k.reflector->kind()).substr(0, 15).c_str());
  while (true) {
    std::optional<std::string> key = k.queue->get();
    if (!key) return;
    if (stopped_) {  // drop what is left: the next start resyncs
      k.queue->done(*key);
      continue;
    }
    const auto began = std::chrono::steady_clock::now();
    HandleResult r = k.reflector->handle(*key);
    countWork(k.reflector->kind(), static_cast<WorkResult>(r.kind), began);
    ++k.handled;
    switch (r.kind) {
      case HandleResult::Kind::Done:
        k.queue->forget(*key);
        break;
      case HandleResult::Kind::RequeueAfter:
        ++k.requeues;
        k.queue->forget(*key);
        k.queue->addAfter(*key, r.after);
        break;
      case HandleResult::Kind::Retry:
        ++k.retries;
        // A stale-version Conflict is optimistic concurrency at work (another writer was
        // first; the retry reads the new version): routine, so logged at debug.
        spdlog::log(!r.error.ok() && kube::isStaleVersionConflict(r.error.error())
                        ? spdlog::level::debug
                        : spdlog::level::warn,
                    "event=reflect_retry kind={} key={} code={} error=\"{}\" requeues={}",
                    k.reflector->kind(), *key,
                    r.error.ok() ? "Unknown" : kube::reasonOf(r.error.code()),
                    r.error.ok() ? "" : r.error.error().message, k.queue->numRequeues(*key));
        k.queue->addRateLimited(*key);
        break;
    }
    k.queue->done(*key);
  }
}

kube::Status Reflector::enqueue(const std::string& kind, const std::string& key) {
  auto it = kinds_.find(kind);
  if (it == kinds_.end()) {
    return kube::makeError(kube::Code::NotFound, "reflector: no kind " + kind);
  }
  it->second->queue->add(key);
  return kube::Status::OK();
}

KindCounters Reflector::counters(const std::string& kind) const {
  auto it = kinds_.find(kind);
  if (it == kinds_.end()) return {};
  return {it->second->handled.load(), it->second->retries.load(), it->second->requeues.load()};
}

size_t Reflector::queued(const std::string& kind) const {
  auto it = kinds_.find(kind);
  return it == kinds_.end() ? 0 : it->second->queue->len();
}

}  // namespace strait::reflection
