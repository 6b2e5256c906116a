#include "reflection/pod_usage.h"

#include "kube/object.h"

namespace strait::reflection {

using nlohmann::json;
using peering::ResourceMap;

namespace {

ResourceMap requestsOf(const json& pod) {
  return peering::podRequests(json::array({pod}));  // terminal Pods count as nothing
}

}  // namespace

void PodUsage::subtractLocked(const ResourceMap& r) {
  for (const auto& [name, q] : r) {
    auto it = total_.find(name);
    if (it == total_.end()) continue;
    kube::Result<kube::Quantity> left = it->second.sub(q);
    if (!left.ok() || left->sign() <= 0) {
      total_.erase(it);
    } else {
      it->second = *left;
    }
  }
}

void PodUsage::setLocked(const std::string& key, Entry e) {
  auto it = pods_.find(key);
  if (it != pods_.end()) subtractLocked(it->second.requests);
  total_ = peering::addResources(total_, e.requests);
  pods_[key] = std::move(e);
}

void PodUsage::observe(const json& pod) {
  Entry e{requestsOf(pod), true};
  base::MutexLock lock(mu_);
  setLocked(kube::getNamespace(pod) + "/" + kube::getName(pod), std::move(e));
}

void PodUsage::forget(const std::string& key) {
  base::MutexLock lock(mu_);
  auto it = pods_.find(key);
  if (it == pods_.end()) return;
  subtractLocked(it->second.requests);
  pods_.erase(it);
}

kube::Status PodUsage::admit(const std::string& key, const json& pod, const Check& check,
                             bool* reserved) {
  *reserved = false;
  ResourceMap asked = requestsOf(pod);
  base::MutexLock lock(mu_);
  if (pods_.count(key)) return kube::Status::OK();
  if (kube::Status s = check(pod, total_); !s.ok()) return s;
  setLocked(key, Entry{std::move(asked), false});
  *reserved = true;
  return kube::Status::OK();
}

void PodUsage::release(const std::string& key) {
  base::MutexLock lock(mu_);
  auto it = pods_.find(key);
  if (it == pods_.end() || it->second.observed) return;
  subtractLocked(it->second.requests);
  pods_.erase(it);
}

ResourceMap PodUsage::total() const {
  base::MutexLock lock(mu_);
  return total_;
}

size_t PodUsage::size() const {
  base::MutexLock lock(mu_);
  return pods_.size();
}

}  // namespace strait::reflection
