#pragma once
// What one consumer's reflected Pods request in the provider, kept current from the reflection
// stream's informer instead of listing every Pod for each creation (which made offloading
// O(n^2): at 10,000 Pods each create listed 20 MB of JSON twice).
//
// Each Pod counts once under its "namespace/name": observe() from the informer's add/update
// handlers (a terminal Pod counts as nothing), forget() from its delete handler. A creation
// reserves the new Pod's requests in admit() (checked against the grant under one lock, so
// two concurrent creations cannot both take the last of it) and release()s the reservation
// if the create then fails; once the informer has seen the Pod, observe() takes over.
//
// Thread-safe.

#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "base/thread_annotations.h"
#include "kube/status.h"
#include "peering/policy.h"

namespace strait::reflection {

class PodUsage {
 public:
  // The grant check: OK if a Pod asking `pod` fits when `used` is already in use.
  using Check =
      std::function<kube::Status(const nlohmann::json& pod, const peering::ResourceMap& used)>;

  // Counts `pod` (as stored, with its namespace and name) instead of what its key counted.
  void observe(const nlohmann::json& pod);
  // The Pod `key` ("namespace/name") is gone.
  void forget(const std::string& key);
  // A Pod about to be created as `key`: when `key` is already counted (it exists, or a
  // creation is in flight), OK with nothing reserved and *reserved false; otherwise runs
  // `check` with the current total and, when it passes, reserves the Pod's requests
  // (*reserved true). `check`'s error otherwise.
  kube::Status admit(const std::string& key, const nlohmann::json& pod, const Check& check,
                     bool* reserved);
  // The creation admit() reserved for `key` failed: drops the reservation unless the informer
  // saw the Pod meanwhile.
  void release(const std::string& key);
  // The sum over every counted Pod and reservation.
  peering::ResourceMap total() const;
  size_t size() const;

 private:
  struct Entry {
    peering::ResourceMap requests;
    bool observed = false;  // false: a reservation
  };
  void setLocked(const std::string& key, Entry e) REQUIRES(mu_);
  void subtractLocked(const peering::ResourceMap& r) REQUIRES(mu_);

  mutable base::Mutex mu_;
  std::map<std::string, Entry> pods_ GUARDED_BY(mu_);
  peering::ResourceMap total_ GUARDED_BY(mu_);
};

}  // namespace strait::reflection
