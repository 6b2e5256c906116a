#include "kube/leader_election.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <ctime>
#include <random>

#include "kube/json_access.h"
#include "kube/time.h"

namespace strait::kube {

using nlohmann::json;
using Steady = std::chrono::steady_clock;

namespace {

// Sleeps up to `d`; false when `stop` was requested.
bool sleepUnlessStopped(std::chrono::milliseconds d, std::stop_token stop) {
  std::mutex m;
  std::unique_lock<std::mutex> lock(m);
  std::condition_variable_any cv;
  cv.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

std::chrono::milliseconds jittered(std::chrono::milliseconds d) {
  static thread_local std::mt19937 rng(std::random_device{}());
  // client-go's JitterFactor 1.2 waits between d and d * 2.2; a smaller spread keeps
  // takeover times close to leaseDuration.
  double f = std::uniform_real_distribution<double>(1.0, 1.2)(rng);
  return std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>(d.count()) * f));
}

}  // namespace

Status validate(const LeaderElectionConfig& c) {
  auto bad = [](const std::string& what) { return Status(makeError(Code::Invalid, what)); };
  if (c.leaseName.empty()) return bad("leader election: leaseName is required");
  if (c.leaseNamespace.empty()) return bad("leader election: leaseNamespace is required");
  if (c.identity.empty()) return bad("leader election: identity is required");
  if (c.retryPeriod.count() <= 0) return bad("leader election: retryPeriod must be positive");
  if (c.renewDeadline <= c.retryPeriod) {
    return bad("leader election: renewDeadline must be longer than retryPeriod");
  }
  if (c.leaseDuration <= c.renewDeadline) {
    return bad("leader election: leaseDuration must be longer than renewDeadline");
  }
  return Status::OK();
}

LeaderElector::LeaderElector(Client& client, LeaderElectionConfig cfg)
    : client_(client), cfg_(std::move(cfg)) {}

bool LeaderElector::isLeader() const {
  base::MutexLock lock(mu_);
  return leading_;
}

std::string LeaderElector::leader() const {
  base::MutexLock lock(mu_);
  return observedHolder_;
}

void LeaderElector::setLeader(bool leading, const std::string& holder) {
  bool changed;
  {
    base::MutexLock lock(mu_);
    leading_ = leading;
    changed = holder != observedHolder_;
    observedHolder_ = holder;
  }
  if (changed && !holder.empty() && cfg_.onNewLeader) cfg_.onNewLeader(holder);
}

bool LeaderElector::tryAcquireOrRenew() {
  auto now = rfc3339Micro(std::chrono::system_clock::now());
  int durationSeconds =
      static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(cfg_.leaseDuration).count());
  if (durationSeconds < 1) durationSeconds = 1;
  auto got = client_.get(resources::kLeases, cfg_.leaseNamespace, cfg_.leaseName);
  if (!got) {
    if (got.code() != Code::NotFound) {
      spdlog::warn("event=lease_read_failed lease={}/{} error=\"{}\"", cfg_.leaseNamespace,
                   cfg_.leaseName, got.error().message);
      return false;
    }
    json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", cfg_.leaseName}, {"namespace", cfg_.leaseNamespace}}},
                  {"spec",
                   {{"holderIdentity", cfg_.identity},
                    {"leaseDurationSeconds", durationSeconds},
                    {"acquireTime", now},
                    {"renewTime", now},
                    {"leaseTransitions", 0}}}};
    if (cfg_.ownerReferences.is_array()) {
      lease["metadata"]["ownerReferences"] = cfg_.ownerReferences;
    }
    auto created = client_.create(resources::kLeases, cfg_.leaseNamespace, lease);
    if (!created) return false;
    base::MutexLock lock(mu_);
    lease_ = *created;
    observedRecord_.clear();
    observedAt_ = Steady::now();
    return true;
  }
  json lease = std::move(*got);
  json spec = lease.contains("spec") && lease["spec"].is_object() ? lease["spec"] : json::object();
  std::string holder = stringOf(spec, "holderIdentity");
  std::string record = holder + "|" + stringOf(spec, "renewTime") + "|" +
                       spec.value("leaseTransitions", json(0)).dump();
  auto steadyNow = Steady::now();
  {
    base::MutexLock lock(mu_);
    if (record != observedRecord_) {
      observedRecord_ = record;
      observedAt_ = steadyNow;
    }
    if (!holder.empty() && holder != cfg_.identity &&
        observedAt_ + cfg_.leaseDuration > steadyNow) {
      bool changed = observedHolder_ != holder;
      observedHolder_ = holder;
      if (changed && cfg_.onNewLeader) cfg_.onNewLeader(holder);
      return false;  // held by another candidate and not expired
    }
  }
  int64_t transitions = spec.value("leaseTransitions", json(0)).is_number_integer()
                            ? spec["leaseTransitions"].get<int64_t>()
                            : 0;
  if (holder != cfg_.identity) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = transitions + 1;
  }
  spec["holderIdentity"] = cfg_.identity;
  spec["leaseDurationSeconds"] = durationSeconds;
  spec["renewTime"] = now;
  lease["spec"] = spec;
  if (cfg_.ownerReferences.is_array() && !lease["metadata"].contains("ownerReferences")) {
    lease["metadata"]["ownerReferences"] = cfg_.ownerReferences;
  }
  auto updated = client_.update(resources::kLeases, cfg_.leaseNamespace, lease);
  if (!updated) {
    if (updated.code() != Code::Conflict) {
      spdlog::warn("event=lease_update_failed lease={}/{} error=\"{}\"", cfg_.leaseNamespace,
                   cfg_.leaseName, updated.error().message);
    }
    return false;
  }
  base::MutexLock lock(mu_);
  lease_ = *updated;
  return true;
}

void LeaderElector::release() {
  json lease;
  {
    base::MutexLock lock(mu_);
    if (!lease_) return;
    lease = *lease_;
  }
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["leaseDurationSeconds"] = 1;
  lease["spec"]["renewTime"] = rfc3339Micro(std::chrono::system_clock::now());
  auto r = client_.update(resources::kLeases, cfg_.leaseNamespace, lease);
  spdlog::info("event=lease_released lease={}/{} identity={} ok={}", cfg_.leaseNamespace,
               cfg_.leaseName, cfg_.identity, r.ok());
}

void LeaderElector::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    while (!stop.stop_requested() && !tryAcquireOrRenew()) {
      if (!sleepUnlessStopped(jittered(cfg_.retryPeriod), stop)) break;
    }
    if (stop.stop_requested()) break;
    spdlog::info("event=leader_elected lease={}/{} identity={}", cfg_.leaseNamespace,
                 cfg_.leaseName, cfg_.identity);
    setLeader(true, cfg_.identity);
    std::stop_source leading;
    if (cfg_.onStartedLeading) cfg_.onStartedLeading(leading.get_token());
    auto lastRenew = Steady::now();
    bool lost = false;
    while (sleepUnlessStopped(cfg_.retryPeriod, stop)) {
      if (tryAcquireOrRenew()) {
        lastRenew = Steady::now();
      } else if (Steady::now() - lastRenew > cfg_.renewDeadline) {
        lost = true;
        break;
      }
    }
    leading.request_stop();
    if (!lost && cfg_.releaseOnCancel) release();
    spdlog::info("event=leader_stopped lease={}/{} identity={} reason={}", cfg_.leaseNamespace,
                 cfg_.leaseName, cfg_.identity, lost ? "renew_deadline" : "stopped");
    setLeader(false, lost ? std::string() : cfg_.identity);
    if (cfg_.onStoppedLeading) cfg_.onStoppedLeading();
  }
}

}  // namespace strait::kube
