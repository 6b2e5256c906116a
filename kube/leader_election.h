#pragma once
// Leader election on a coordination.k8s.io/v1 Lease (client-go's leaderelection with the
// LeaseLock): a candidate acquires the Lease when it is absent, released (empty holder), held
// by itself, or not renewed by its holder for leaseDuration as observed on the candidate's
// own clock (no cross-host clock comparison, as upstream); the leader renews every
// retryPeriod and gives up if it could not renew within renewDeadline. Writes use the
// Lease's resourceVersion, so of two racing candidates one gets Conflict and stays follower.
//
// Lease fields written: holderIdentity, leaseDurationSeconds, acquireTime and renewTime
// (MicroTime, RFC 3339 with microseconds), leaseTransitions (incremented when the holder
// changes).
//
// Thread-safe: run() on one thread; isLeader()/leader() from any thread.

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "base/thread_annotations.h"
#include "kube/client.h"

namespace strait::kube {

struct LeaderElectionConfig {
  std::string leaseNamespace;
  std::string leaseName;
  std::string identity;  // this candidate (unique per process)
  std::chrono::milliseconds leaseDuration{15000};
  std::chrono::milliseconds renewDeadline{10000};
  std::chrono::milliseconds retryPeriod{2000};
  // Clear holderIdentity when run() stops while leading, so another candidate takes over at
  // once instead of after leaseDuration.
  bool releaseOnCancel = false;
  // metadata.ownerReferences of the Lease (an array; null = none): set when the elector
  // creates it and added to one that lacks them, so deleting the owner removes the Lease.
  nlohmann::json ownerReferences;
  // Called on the run() thread. onStartedLeading gets a token stopped when leadership ends;
  // it must return promptly (start work elsewhere).
  std::function<void(std::stop_token)> onStartedLeading;
  std::function<void()> onStoppedLeading;
  std::function<void(const std::string& identity)> onNewLeader;
};

// Checks the config: names the missing/wrong field (Invalid), e.g. renewDeadline must be
// shorter than leaseDuration.
Status validate(const LeaderElectionConfig& cfg);

class LeaderElector {
 public:
  // `client` must outlive the elector. No I/O.
  LeaderElector(Client& client, LeaderElectionConfig cfg);

  // Campaigns, leads, and returns when `stop` is requested (releasing the lease if
  // releaseOnCancel). After losing leadership (renew deadline missed) it campaigns again.
  // Blocks; call once.
  void run(std::stop_token stop);

  bool isLeader() const;
  // The holder last observed ("" if none).
  std::string leader() const;

 private:
  // One attempt; true when this candidate holds the lease afterwards.
  bool tryAcquireOrRenew();
  void release();
  void setLeader(bool leading, const std::string& holder);

  Client& client_;
  const LeaderElectionConfig cfg_;

  mutable base::Mutex mu_;
  bool leading_ GUARDED_BY(mu_) = false;
  std::string observedHolder_ GUARDED_BY(mu_);
  std::string observedRecord_ GUARDED_BY(mu_);  // holder + renewTime as last read
  std::chrono::steady_clock::time_point observedAt_ GUARDED_BY(mu_){};
  std::optional<nlohmann::json> lease_ GUARDED_BY(mu_);  // last lease read or written
};

}  // namespace strait::kube
