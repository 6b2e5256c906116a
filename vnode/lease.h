#pragma once
// The node Lease (coordination.k8s.io/v1, namespace kube-node-lease, named after the node):
// holderIdentity = node name, leaseDurationSeconds 40, renewTime as MicroTime, an owner
// reference to the Node; renewed every 10 s, as the kubelet and virtual-kubelet do. On a
// failed renewal the next attempt comes sooner (200 ms doubling up to the interval), so a
// short API-server hiccup does not let the lease lapse.
//
// LeaseRenewer does one step per tick() and returns when the next step is due; it starts no
// thread and never sleeps (the node controller drives it), and reads time from an injected
// clock, so tests need no sleeps. Not thread-safe: one caller.

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/status.h"

namespace strait::vnode {

inline constexpr std::string_view kNodeLeaseNamespace = "kube-node-lease";
inline constexpr int kLeaseDurationSeconds = 40;
inline constexpr std::chrono::seconds kLeaseRenewInterval{10};
inline constexpr std::chrono::milliseconds kLeaseRetryMin{200};

// The Lease for `nodeName` renewed at `now`. `previous` (the stored Lease or null) gives the
// resourceVersion to update and keeps acquireTime/leaseTransitions when we already held it.
nlohmann::json buildLease(const std::string& nodeName, const std::string& nodeUid,
                          const nlohmann::json& previous,
                          std::chrono::system_clock::time_point now);

// Where the renewer reads and writes the Lease (the node controller adapts its kube client).
class LeaseStore {
 public:
  virtual ~LeaseStore() = default;
  virtual kube::Result<nlohmann::json> get(const std::string& name) = 0;
  virtual kube::Result<nlohmann::json> create(const nlohmann::json& lease) = 0;
  virtual kube::Result<nlohmann::json> update(const nlohmann::json& lease) = 0;
};

class LeaseRenewer {
 public:
  using WallClock = std::function<std::chrono::system_clock::time_point()>;

  // `store` is borrowed and must outlive the renewer. `nodeUid` may be set later.
  LeaseRenewer(LeaseStore& store, std::string nodeName, WallClock clock = {},
               std::chrono::milliseconds interval = kLeaseRenewInterval);

  void setNodeUid(std::string uid) { nodeUid_ = std::move(uid); }

  // Renews (or creates) the Lease once. Returns the delay until the next tick: the interval
  // after a success, a backoff after a failure. The last error is kept in lastError().
  std::chrono::milliseconds tick();

  const kube::Status& lastError() const { return lastError_; }
  // renewTime written by the last successful tick (epoch when none yet).
  std::chrono::system_clock::time_point lastRenewed() const { return lastRenewed_; }

 private:
  kube::Status renewOnce(std::chrono::system_clock::time_point now);

  LeaseStore& store_;
  const std::string nodeName_;
  std::string nodeUid_;
  const WallClock clock_;
  const std::chrono::milliseconds interval_;
  nlohmann::json cached_;  // last Lease we wrote or read
  std::chrono::milliseconds backoff_{0};
  kube::Status lastError_;
  std::chrono::system_clock::time_point lastRenewed_{};
};

}  // namespace strait::vnode
