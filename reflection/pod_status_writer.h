#pragma once
// Writing the local Pods' status on the consumer side (the mapped provider status of
// pod_status.h, or the lost status): a keyed queue where the latest wanted status of a Pod
// wins, and writes as the kubelet makes them.
//  - want(key, pod, status): when the Pod's key is waiting or being written, `status`
//    replaces the pending one (three wants while a write is in flight give one more write,
//    of the last status). There is no delay: statuses coalesce only while writes back up.
//  - A write is a JSON merge patch of pods/status carrying the Pod's uid as precondition
//    and no resourceVersion: a stale cache never earns a Conflict, and a Pod re-created
//    under the same name refuses it (the API server answers 422, metadata.uid immutable).
//    Top-level status fields the Pod has and the wanted status lacks are patched to null.
//  - expected(key, pod): the status the Pod has once the queued write lands, or the one
//    last written while the informer cache has not caught up with it yet (the cached Pod's
//    resourceVersion is older than the one the write produced, or, for versions that are
//    not numbers, is the one it had when that status was wanted). The pod reflector
//    compares the mapped status with this, so a handle() that runs before the cache sees
//    its own write does not write the same status again.
//  - A status equal to what the Pod has (as far as known) is not written.
//  - Not written: the Pod is gone (NotFound) or is another incarnation (Conflict, Invalid):
//    the key is dropped, the reflector handles the new Pod from its cache. Other errors:
//    retried with the queue's backoff (with workers), or returned to the caller (inline).
//
// With workers > 0, start() starts them and want() returns at once; with workers = 0 the
// writer starts no thread and want() writes on the calling thread (a concurrent want() of
// the same key leaves its status to the thread writing it). Thread-safe: want(), expected()
// and forget() from any thread; start()/stop() from one owning thread.

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "kube/worker_pool.h"

namespace strait::reflection {

struct PodStatusWriterOptions {
  int workers = 0;               // 0: write on the caller's thread
  kube::WorkQueueOptions queue;  // retry backoff (with workers)
};

struct PodStatusWriterCounters {
  uint64_t wanted = 0;     // want() calls
  uint64_t written = 0;    // PATCH requests answered with success
  uint64_t coalesced = 0;  // wanted statuses replaced before they were written
  uint64_t dropped = 0;    // not written: the Pod gone or another incarnation
};

class PodStatusWriter {
 public:
  // `local` (the consumer's API) is borrowed and must outlive the writer. No I/O, no thread.
  PodStatusWriter(kube::Client& local, PodStatusWriterOptions opts = {});
  ~PodStatusWriter();  // stop()
  PodStatusWriter(const PodStatusWriter&) = delete;
  PodStatusWriter& operator=(const PodStatusWriter&) = delete;

  // Starts the workers (none with workers = 0). Idempotent.
  void start();
  // Lets running writes finish and joins the workers; wanted statuses not yet written are
  // dropped (the resync after the next start maps them again). Idempotent.
  void stop();

  // Wants `status` (a whole status object) on local Pod `key` ("ns/name"), `pod` being the
  // Pod as the caller read it (its uid is the precondition; its status and resourceVersion
  // tell what the Pod has). With workers: queues it and returns OK. Inline: writes it (and
  // any status wanted meanwhile by another thread) and returns the write's outcome; OK when
  // the Pod is gone or another incarnation (nothing to retry).
  kube::Status want(const std::string& key, const nlohmann::json& pod, nlohmann::json status);
  // The status Pod `key` has once the wanted write lands, or the one written last while
  // `pod` (the cached Pod) does not show it yet; nullopt: `pod`'s own status is current.
  std::optional<nlohmann::json> expected(const std::string& key, const nlohmann::json& pod);
  // The local Pod `key` is gone: its records are dropped (a write in flight finishes).
  void forget(const std::string& key);
  // Whether `now`, the informer's update of local Pod `key` from `before`, only echoes a
  // write of this writer: the same uid, the status being or last written, and nothing else
  // changed but metadata.resourceVersion and metadata.managedFields. A handle() of the Pod
  // would decide nothing new (since that status was wanted, the reflector has compared with
  // it), so the informer's handler need not queue it. When the write is done, its record is
  // dropped (the cache shows it now). False for anything else, e.g. a key never written.
  bool echoesOwnWrite(const std::string& key, const nlohmann::json& before,
                      const nlohmann::json& now);

  // Keys with a status waiting or being written (tests: wait until idle).
  size_t pending() const;
  PodStatusWriterCounters counters() const;

 private:
  struct Entry {
    std::string uid;
    std::optional<nlohmann::json> wanted;    // waiting for a writer
    std::string wantedBase;                  // the cached resourceVersion when wanted
    std::optional<nlohmann::json> inFlight;  // being written
    std::string inFlightBase;
    std::optional<nlohmann::json> written;   // written last (the cache may lag)
    std::string writtenBase;
    std::string writtenRv;                   // the resourceVersion the write produced
    nlohmann::json known;  // what the Pod's status is as far as known (patch base)
  };
  // Writes the key's wanted statuses until none is left. OK when done or nothing to do.
  kube::Status drain(const std::string& key);

  kube::Client& local_;
  const PodStatusWriterOptions opts_;
  std::unique_ptr<kube::WorkerPool> pool_;  // set with workers > 0

  mutable base::Mutex mu_;
  std::map<std::string, Entry> entries_ GUARDED_BY(mu_);
  PodStatusWriterCounters counters_ GUARDED_BY(mu_);
};

}  // namespace strait::reflection
