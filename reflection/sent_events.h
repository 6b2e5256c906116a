#pragma once
// Which provider Events were already forwarded to one consumer, across the reflection
// streams of that consumer (a stream breaks and is redialled; the ledger stays with the
// provider agent). A new stream re-lists the provider's Events about the consumer's Pods:
// the ones the ledger knows (same uid and resourceVersion) are not sent again, the others
// are, the newest kEventBacklog of them; new Events are always sent. What was sent shortly
// before a stream ended may never have arrived (a silent partition is noticed only after
// deadAfter), so a session forgets the entries of that window when it ends and before its
// re-list (forgetSentAfter): they are sent again, a duplicate being cheaper than a loss
// (the consumer drops repeats it has seen).
//
// Thread-safe.

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/thread_annotations.h"

namespace strait::reflection {

class SentEvents {
 public:
  using Clock = std::chrono::steady_clock;
  explicit SentEvents(size_t capacity = 4096) : capacity_(capacity) {}

  // True when `event` (its uid and resourceVersion) has been sent already.
  bool sent(const nlohmann::json& event) const;
  // Records `event` as sent now (the oldest entries go beyond capacity).
  void record(const nlohmann::json& event);
  // Forgets entries recorded at or after `since` (they may not have arrived).
  void forgetSentAfter(Clock::time_point since);
  size_t size() const;

 private:
  struct Entry {
    std::string uid;
    std::string version;
    Clock::time_point at;
  };
  const size_t capacity_;
  mutable base::Mutex mu_;
  std::map<std::string, std::string> versions_ GUARDED_BY(mu_);  // uid -> resourceVersion sent
  std::deque<Entry> order_ GUARDED_BY(mu_);                      // oldest first
};

// The newest `limit` of `events` (by lastTimestamp, then eventTime, then creationTimestamp,
// then resourceVersion as a number), oldest first: what a new stream sends of the Events it
// found. Pure.
std::vector<nlohmann::json> newestEvents(std::vector<nlohmann::json> events, size_t limit);

// How many Events a new stream sends of those it found (per consumer).
inline constexpr size_t kEventBacklog = 256;

}  // namespace strait::reflection
