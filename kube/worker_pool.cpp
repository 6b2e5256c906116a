// Workers draining a WorkQueue, see worker_pool.h.
#include "kube/worker_pool.h"

#include <spdlog/spdlog.h>

#include <pthread.h>

#include <algorithm>

namespace strait::kube {

WorkerPool::WorkerPool(WorkerPoolOptions opts, Handler handler)
    : opts_(std::move(opts)), handler_(std::move(handler)), queue_(opts_.queue) {}

WorkerPool::~WorkerPool() { stop(); }

void WorkerPool::start() {
  if (!threads_.empty() || queue_.shuttingDown()) return;
  for (int i = 0; i < std::max(1, opts_.workers); ++i) {
    threads_.emplace_back([this] { work(); });
  }
}

void WorkerPool::stop() {
  queue_.shutDown();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void WorkerPool::work() {
  pthread_setname_np(pthread_self(), opts_.name.substr(0, 15).c_str());  // the kernel's limit
  while (std::optional<std::string> key = queue_.get()) {
    if (queue_.shuttingDown()) {  // stopping: what is still queued is dropped
      queue_.done(*key);
      continue;
    }
    Status s = handler_(*key);
    if (s.ok()) {
      queue_.forget(*key);
    } else {
      auto delay = queue_.when(*key);
      spdlog::warn("event=reconcile_failed queue={} key={} attempt={} retry_ms={} error=\"{}\"",
                   opts_.name, *key, queue_.numRequeues(*key),
                   std::chrono::duration_cast<std::chrono::milliseconds>(delay).count(),
                   s.error().message);
      queue_.addAfter(*key, delay);
    }
    queue_.done(*key);
  }
}

}  // namespace strait::kube
