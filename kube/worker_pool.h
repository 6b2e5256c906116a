#pragma once
// Workers that drain a WorkQueue for a controller (the worker loop client-go controllers
// write around their rate-limited queue): each worker takes a key, reconciles it with the
// handler, forgets its failures on success and requeues it with backoff on error. The queue
// deduplicates waiting keys and never hands one key to two workers at once; an add while the
// key is processed runs it again afterwards.
//
// Thread-safe: add/addAfter may be called from any thread, handlers included. start() and
// stop() from one owning thread.

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "kube/status.h"
#include "kube/workqueue.h"

namespace strait::kube {

struct WorkerPoolOptions {
  std::string name = "queue";  // for logs
  int workers = 1;
  WorkQueueOptions queue;      // retry backoff and overall rate limit
};

class WorkerPool {
 public:
  // Reconciles one key. An error is logged and the key retried with backoff; OK forgets
  // the key's failures. Runs on a worker thread; may call add/addAfter.
  using Handler = std::function<Status(const std::string& key)>;

  WorkerPool(WorkerPoolOptions opts, Handler handler);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Starts the workers; keys added before are processed then. Idempotent; a pool cannot be
  // started again after stop().
  void start();
  // Stops accepting keys, lets running handlers finish, joins the workers. Keys still queued
  // or delayed are dropped. Idempotent.
  void stop();

  // Queues `key` unless it is already waiting.
  void add(const std::string& key) { queue_.add(key); }
  // Queues `key` after `delay` (an earlier pending time for the same key wins).
  void addAfter(const std::string& key, std::chrono::milliseconds delay) {
    queue_.addAfter(key, delay);
  }
  // Keys waiting, delayed or being processed (tests: wait until idle).
  size_t pending() const { return queue_.pending(); }

 private:
  void work();

  const WorkerPoolOptions opts_;
  const Handler handler_;
  WorkQueue queue_;
  std::vector<std::thread> threads_;  // touched by start/stop only
};

}  // namespace strait::kube
