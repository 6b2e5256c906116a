#pragma once
// The generic reflector (after Liqo's): one work queue
// and a pool of workers per kind, retries, and counters, shared by every kind. A kind
// supplies only a factory and one handle(key) that reconciles the key from current state
// (read both sides, check ownership, delete if the origin is gone, otherwise forge and
// apply); the reflector calls it, and requeues by the outcome:
//   Done         -> the key's backoff is forgotten;
//   RequeueAfter -> handled again after the delay (e.g. waiting for a remote deletion);
//   Retry        -> handled again with per-key exponential backoff (kube::WorkQueue).
// A key is never handled by two workers at once; keys added while handled are handled
// again afterwards (kube::WorkQueue semantics), so handle() may be called more often than
// objects changed and must be idempotent.
//
// Thread-safe: enqueue() from any thread (informer handlers, the stream reader).

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kube/status.h"
#include "kube/workqueue.h"

namespace strait::reflection {

// What one handle(key) asks for next.
struct HandleResult {
  enum class Kind { Done, RequeueAfter, Retry };
  Kind kind = Kind::Done;
  std::chrono::milliseconds after{0};  // RequeueAfter
  kube::Status error;                  // Retry: why (logged)

  static HandleResult done() { return {}; }
  static HandleResult requeueAfter(std::chrono::milliseconds d) {
    return {Kind::RequeueAfter, d, {}};
  }
  static HandleResult retry(kube::Error e) { return {Kind::Retry, {}, kube::Status(std::move(e))}; }
};

// One kind's reconciler. handle() runs on the reflector's worker threads, concurrently for
// different keys: implementations must be thread-safe across keys.
class KindReflector {
 public:
  virtual ~KindReflector() = default;
  // "Pod", "ConfigMap"...: names the queue in logs and counters.
  virtual std::string kind() const = 0;
  // Reconciles `key` ("namespace/name" of the local object, or a key the kind defines).
  virtual HandleResult handle(const std::string& key) = 0;
};

struct KindOptions {
  int workers = 1;  // Liqo: pods 10, endpointslices 10, others 3
  kube::WorkQueueOptions queue;
};

struct KindCounters {
  uint64_t handled = 0;   // handle() calls
  uint64_t retries = 0;   // Retry outcomes
  uint64_t requeues = 0;  // RequeueAfter outcomes
};

class Reflector {
 public:
  // `name` labels its work queues in the process's metrics (reflection_metrics.h).
  explicit Reflector(std::string name = "") : name_(std::move(name)) {}
  ~Reflector();  // stop()
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  // Registers a kind (before start()). Invalid if the kind is already registered or workers
  // is not positive.
  kube::Status registerKind(std::unique_ptr<KindReflector> kind, KindOptions opts = {});
  // Starts every kind's workers. Idempotent.
  void start();
  // Stops accepting keys, lets running handle() calls finish, joins the workers. Keys still
  // queued are dropped (the next start resyncs from current state). Idempotent.
  void stop();

  // Queues `key` for `kind`. NotFound for an unknown kind. Ignored after stop().
  kube::Status enqueue(const std::string& kind, const std::string& key);
  // Counters of one kind (zero for an unknown kind).
  KindCounters counters(const std::string& kind) const;
  // Keys of `kind` ready to be handled now (not counting delayed or in-flight ones).
  size_t queued(const std::string& kind) const;

 private:
  struct Kind {
    std::unique_ptr<KindReflector> reflector;
    KindOptions opts;
    std::unique_ptr<kube::WorkQueue> queue;
    std::vector<std::thread> workers;
    std::atomic<uint64_t> handled{0}, retries{0}, requeues{0};
  };
  void work(Kind& k);

  const std::string name_;
  std::map<std::string, std::unique_ptr<Kind>> kinds_;  // fixed after start()
  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};
};

}  // namespace strait::reflection
