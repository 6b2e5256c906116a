// The ledger of Events forwarded to a consumer (see sent_events.h).
#include "reflection/sent_events.h"

#include <algorithm>
#include <tuple>

#include "kube/json_access.h"
#include "kube/object.h"

namespace strait::reflection {

using nlohmann::json;

namespace {

std::string versionOf(const json& e) {
  return kube::stringOf(kube::child(e, "metadata"), "resourceVersion");
}

// Sort key: RFC 3339 timestamps compare as strings when they have the same form (UTC, "Z");
// the resourceVersion breaks ties in creation order.
std::tuple<std::string, std::string, std::string, size_t, std::string> sortKey(const json& e) {
  const std::string created = kube::stringOf(kube::child(e, "metadata"), "creationTimestamp");
  const std::string rv = versionOf(e);
  return {kube::stringOf(e, "lastTimestamp"), kube::stringOf(e, "eventTime"), created, rv.size(),
          rv};
}

}  // namespace

bool SentEvents::sent(const json& event) const {
  const std::string uid = kube::getUid(event);
  if (uid.empty()) return false;
  base::MutexLock l(mu_);
  auto it = versions_.find(uid);
  return it != versions_.end() && it->second == versionOf(event);
}

void SentEvents::record(const json& event) {
  const std::string uid = kube::getUid(event);
  if (uid.empty()) return;
  base::MutexLock l(mu_);
  const std::string v = versionOf(event);
  versions_[uid] = v;
  order_.push_back({uid, v, Clock::now()});
  while (order_.size() > capacity_) {
    const Entry& old = order_.front();
    auto it = versions_.find(old.uid);
    if (it != versions_.end() && it->second == old.version) versions_.erase(it);
    order_.pop_front();
  }
}

void SentEvents::forgetSentAfter(Clock::time_point since) {
  base::MutexLock l(mu_);
  while (!order_.empty() && order_.back().at >= since) {
    const Entry& e = order_.back();
    auto it = versions_.find(e.uid);
    if (it != versions_.end() && it->second == e.version) versions_.erase(it);
    order_.pop_back();
  }
}

size_t SentEvents::size() const {
  base::MutexLock l(mu_);
  return versions_.size();
}

std::vector<json> newestEvents(std::vector<json> events, size_t limit) {
  std::stable_sort(events.begin(), events.end(),
                   [](const json& a, const json& b) { return sortKey(a) < sortKey(b); });
  if (events.size() > limit) events.erase(events.begin(), events.end() - static_cast<long>(limit));
  return events;
}

}  // namespace strait::reflection
