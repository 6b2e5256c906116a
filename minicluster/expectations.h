#pragma once
// Pending creates and deletes per owner key (upstream ControllerExpectations with UID
// tracking for deletions): keeps a controller (ReplicaSet, DaemonSet) from creating or
// deleting again while its own earlier writes have not reached its pod informer yet.
// Entries expire after five minutes (a lost watch event never blocks an owner for good).
// A sync reads satisfied() before it lists the Pods: the informer caches a Pod before its
// handler reports it observed, so only that order guarantees the list holds what was counted.
// Thread-safe.

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "base/thread_annotations.h"

namespace strait::minicluster {

class Expectations {
  using Clock = std::chrono::steady_clock;
  static constexpr auto kExpectationsTimeout = std::chrono::minutes(5);

 public:
  bool satisfied(const std::string& key) {
    base::MutexLock l(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return true;
    const auto& e = it->second;
    return (e.adds <= 0 && e.deletes.empty()) || Clock::now() - e.since > kExpectationsTimeout;
  }
  void expectCreations(const std::string& key, int n) {
    base::MutexLock l(mu_);
    auto& e = map_[key];
    e.adds = n;
    e.since = Clock::now();
  }
  void creationObserved(const std::string& key) {
    base::MutexLock l(mu_);
    if (auto it = map_.find(key); it != map_.end()) --it->second.adds;
  }
  void expectDeletions(const std::string& key, const std::set<std::string>& podKeys) {
    base::MutexLock l(mu_);
    auto& e = map_[key];
    e.deletes = podKeys;
    e.since = Clock::now();
  }
  void deletionObserved(const std::string& key, const std::string& podKey) {
    base::MutexLock l(mu_);
    if (auto it = map_.find(key); it != map_.end()) it->second.deletes.erase(podKey);
  }
  void forget(const std::string& key) {
    base::MutexLock l(mu_);
    map_.erase(key);
  }

 private:
  struct Entry {
    int adds = 0;
    std::set<std::string> deletes;
    Clock::time_point since;
  };
  base::Mutex mu_;
  std::map<std::string, Entry> map_ GUARDED_BY(mu_);
};

}  // namespace strait::minicluster
