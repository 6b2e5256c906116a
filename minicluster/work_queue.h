#pragma once
// A work queue with workers for the minicluster's controllers (client-go's rate-limited
// workqueue plus the usual worker loop): keys are deduplicated while waiting, a key is
// never processed by two workers at once (an add during processing queues it again after),
// failed keys are retried with exponential backoff, and keys can be delayed (requeue-after).
//
// Thread-safe: add/addAfter may be called from any thread, including handlers.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kube/status.h"

namespace strait::minicluster {

struct WorkQueueOptions {
  std::string name = "queue";  // for logs
  int workers = 1;
  std::chrono::milliseconds baseBackoff{5};   // first retry after this, doubled per failure
  std::chrono::milliseconds maxBackoff{10000};
};

class WorkQueue {
 public:
  // Reconciles one key. An error is logged and the key retried with backoff; OK forgets
  // the key's failure count. Runs on a worker thread; may call add/addAfter.
  using Handler = std::function<kube::Status(const std::string& key)>;

  WorkQueue(WorkQueueOptions opts, Handler handler);
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Starts the workers. Idempotent.
  void start();
  // Stops accepting work, lets running handlers finish, joins the workers. Queued keys are
  // dropped. Idempotent.
  void stop();

  // Queues `key` unless it is already waiting.
  void add(const std::string& key);
  // Queues `key` after `delay` (an earlier pending time for the same key wins).
  void addAfter(const std::string& key, std::chrono::milliseconds delay);
  // Keys waiting or being processed (tests: wait until idle).
  size_t pending() const;

 private:
  void worker();
  void enqueueLocked(const std::string& key);

  const WorkQueueOptions opts_;
  const Handler handler_;
  std::vector<std::thread> threads_;

  // State below is protected by mu_.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<std::string> queue_;  // FIFO (front at index head_)
  size_t head_ = 0;
  std::set<std::string> dirty_;       // waiting to be processed
  std::set<std::string> processing_;  // being processed now
  std::multimap<std::chrono::steady_clock::time_point, std::string> delayed_;
  std::map<std::string, std::chrono::steady_clock::time_point> delayedAt_;
  std::map<std::string, int> failures_;
};

}  // namespace strait::minicluster
