#include "vnode/lease.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "kube/object.h"

namespace strait::vnode {

using nlohmann::json;

json buildLease(const std::string& nodeName, const std::string& nodeUid, const json& previous,
                std::chrono::system_clock::time_point now) {
  const std::string t = kube::rfc3339Micro(now);
  json meta = {{"name", nodeName}, {"namespace", std::string(kNodeLeaseNamespace)}};
  if (!nodeUid.empty()) {
    meta["ownerReferences"] = json::array({{{"apiVersion", "v1"},
                                            {"kind", "Node"},
                                            {"name", nodeName},
                                            {"uid", nodeUid}}});
  }
  json spec = {{"holderIdentity", nodeName},
               {"leaseDurationSeconds", kLeaseDurationSeconds},
               {"renewTime", t}};
  bool held = false;
  if (previous.is_object()) {
    if (std::string rv = kube::getResourceVersion(previous); !rv.empty()) {
      meta["resourceVersion"] = rv;
    }
    if (previous.contains("spec") && previous["spec"].is_object()) {
      const json& ps = previous["spec"];
      held = ps.contains("holderIdentity") && ps["holderIdentity"] == nodeName;
      if (held && ps.contains("acquireTime")) spec["acquireTime"] = ps["acquireTime"];
      int64_t transitions = 0;
      if (ps.contains("leaseTransitions") && ps["leaseTransitions"].is_number_integer()) {
        transitions = ps["leaseTransitions"].get<int64_t>();
      }
      if (!held) ++transitions;
      if (transitions > 0) spec["leaseTransitions"] = transitions;
    }
  }
  if (!held) spec["acquireTime"] = t;
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", std::move(meta)},
          {"spec", std::move(spec)}};
}

LeaseRenewer::LeaseRenewer(LeaseStore& store, std::string nodeName, WallClock clock,
                           std::chrono::milliseconds interval)
    : store_(store), nodeName_(std::move(nodeName)), clock_(std::move(clock)),
      interval_(interval) {}

kube::Status LeaseRenewer::renewOnce(std::chrono::system_clock::time_point now) {
  if (cached_.is_null()) {
    kube::Result<json> got = store_.get(nodeName_);
    if (got.ok()) {
      cached_ = *got;
    } else if (!kube::isNotFound(got.error())) {
      return got.error();
    }
  }
  if (cached_.is_null()) {
    kube::Result<json> created = store_.create(buildLease(nodeName_, nodeUid_, json(), now));
    if (!created.ok()) {
      if (kube::isAlreadyExists(created.error())) cached_ = json();  // read it next time
      return created.error();
    }
    cached_ = *created;
    return kube::Status::OK();
  }
  kube::Result<json> updated = store_.update(buildLease(nodeName_, nodeUid_, cached_, now));
  if (!updated.ok()) {
    // Stale resourceVersion or the Lease vanished: read it again on the next attempt.
    if (kube::isConflict(updated.error()) || kube::isNotFound(updated.error())) cached_ = json();
    return updated.error();
  }
  cached_ = *updated;
  return kube::Status::OK();
}

std::chrono::milliseconds LeaseRenewer::tick() {
  const auto now = clock_ ? clock_() : std::chrono::system_clock::now();
  lastError_ = renewOnce(now);
  if (lastError_.ok()) {
    backoff_ = std::chrono::milliseconds(0);
    lastRenewed_ = now;
    return interval_;
  }
  backoff_ = backoff_.count() == 0 ? kLeaseRetryMin : std::min(backoff_ * 2, interval_);
  spdlog::warn("event=lease_renew_failed node={} code={} error=\"{}\" retry_ms={}", nodeName_,
               kube::reasonOf(lastError_.code()), lastError_.error().message, backoff_.count());
  return backoff_;
}

}  // namespace strait::vnode
