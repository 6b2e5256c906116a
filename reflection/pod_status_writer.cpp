// The consumer's Pod status writes, latest wanted status first (see pod_status_writer.h).
#include "reflection/pod_status_writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <string_view>

#include "kube/api_error.h"
#include "kube/json_access.h"
#include "kube/object.h"

namespace strait::reflection {

using nlohmann::json;
namespace res = kube::resources;

namespace {

json statusOf(const json& pod) {
  return kube::hasObject(pod, "status") ? pod["status"] : json::object();
}

// The merge patch that makes the status `known` into `wanted`: every field of `wanted`
// (arrays replace whole), null for the top-level fields only `known` has.
json statusPatch(const std::string& uid, const json& known, const json& wanted) {
  json status = wanted;
  if (known.is_object()) {
    for (const auto& [k, v] : known.items()) {
      if (!status.contains(k)) status[k] = nullptr;
    }
  }
  return {{"metadata", {{"uid", uid}}}, {"status", std::move(status)}};
}

std::optional<uint64_t> numericVersion(const std::string& rv) {
  uint64_t v = 0;
  const char* end = rv.data() + rv.size();
  auto [p, ec] = std::from_chars(rv.data(), end, v);
  if (rv.empty() || ec != std::errc() || p != end) return std::nullopt;
  return v;
}

// Whether a cached Pod at resourceVersion `cachedRv` may not show the last write yet, which
// was wanted when the cache had `base` and produced `written`. Versions compare as numbers
// when both are (etcd's and the minicluster's are); otherwise only `base` is known to be
// older than the write.
bool cacheLags(const std::string& cachedRv, const std::string& base, const std::string& written) {
  std::optional<uint64_t> c = numericVersion(cachedRv);
  std::optional<uint64_t> w = numericVersion(written);
  if (c && w) return *c < *w;
  return cachedRv == base;
}

// The write cannot succeed for this Pod: gone, or another incarnation under its name.
bool isGoneOrReplaced(const kube::Error& e) {
  return kube::isNotFound(e) || kube::isConflict(e) || kube::isInvalid(e);
}

// Whether objects `a` and `b` have the same members, leaving out those named in `skip`.
bool sameMembersExcept(const json& a, const json& b, std::initializer_list<std::string_view> skip) {
  auto skipped = [&](const std::string& k) {
    return std::find(skip.begin(), skip.end(), k) != skip.end();
  };
  for (const auto& [k, v] : a.items()) {
    if (skipped(k)) continue;
    auto other = b.find(k);
    if (other == b.end() || *other != v) return false;
  }
  for (const auto& [k, v] : b.items()) {
    if (!skipped(k) && !a.contains(k)) return false;
  }
  return true;
}

}  // namespace

PodStatusWriter::PodStatusWriter(kube::Client& local, PodStatusWriterOptions opts)
    : local_(local), opts_(std::move(opts)) {
  if (opts_.workers > 0) {
    kube::WorkerPoolOptions po;
    po.name = "pod-status";
    po.workers = opts_.workers;
    po.queue = opts_.queue;
    pool_ = std::make_unique<kube::WorkerPool>(
        po, [this](const std::string& key) { return drain(key); });
  }
}

PodStatusWriter::~PodStatusWriter() { stop(); }

void PodStatusWriter::start() {
  if (pool_) pool_->start();
}

void PodStatusWriter::stop() {
  if (pool_) pool_->stop();
}

kube::Status PodStatusWriter::want(const std::string& key, const json& pod, json status) {
  const std::string uid = kube::getUid(pod);
  const std::string rv = kube::getResourceVersion(pod);
  {
    base::MutexLock l(mu_);
    ++counters_.wanted;
    Entry& e = entries_[key];
    if (e.uid != uid) {  // first want, or a new incarnation: nothing known of it
      e = Entry{};
      e.uid = uid;
    }
    if (!(e.written && cacheLags(rv, e.writtenBase, e.writtenRv))) {
      // The cache shows every write made so far (or none was): it is what the Pod has.
      e.known = statusOf(pod);
    }
    if (e.wanted) ++counters_.coalesced;
    e.wanted = std::move(status);
    e.wantedBase = rv;
    if (e.inFlight && !pool_) return kube::Status::OK();  // its writer writes this next
  }
  if (pool_) {
    pool_->add(key);
    return kube::Status::OK();
  }
  return drain(key);
}

kube::Status PodStatusWriter::drain(const std::string& key) {
  while (true) {
    std::string uid;
    json status;
    json known;
    {
      base::MutexLock l(mu_);
      auto it = entries_.find(key);
      if (it == entries_.end() || !it->second.wanted) return kube::Status::OK();
      Entry& e = it->second;
      e.inFlight = std::move(e.wanted);
      e.inFlightBase = std::move(e.wantedBase);
      e.wanted.reset();
      uid = e.uid;
      status = *e.inFlight;
      known = e.known;
    }
    kube::Result<json> r = json(nullptr);
    if (status != known) {
      const size_t slash = key.find('/');
      kube::WriteOptions o;
      o.subresource = "status";
      r = local_.patch(res::kPods, key.substr(0, slash), key.substr(slash + 1),
                       kube::PatchType::Merge, statusPatch(uid, known, status), o);
    }
    base::MutexLock l(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.uid.empty()) {  // forgotten meanwhile
      entries_.erase(it);
      it = entries_.end();
    }
    const bool same = it != entries_.end() && it->second.uid == uid;
    if (r.ok()) {
      if (status == known) {  // nothing to write: what was known stays known
        if (same) it->second.inFlight.reset();
        continue;
      }
      ++counters_.written;
      if (!same) continue;  // a new incarnation meanwhile: its own wants decide
      Entry& e = it->second;
      e.written = std::move(e.inFlight);
      e.writtenBase = std::move(e.inFlightBase);
      e.writtenRv = kube::getResourceVersion(*r);
      e.inFlight.reset();
      e.known = *e.written;
      continue;
    }
    if (isGoneOrReplaced(r.error())) {
      ++counters_.dropped;
      spdlog::debug("event=pod_status_not_written pod={} uid={} code={} error=\"{}\"", key, uid,
                    kube::reasonOf(r.error().code), r.error().message);
      if (same) entries_.erase(it);
      return kube::Status::OK();
    }
    if (same) {
      Entry& e = it->second;
      if (!e.wanted) {  // nothing newer: this one is written again on the retry
        e.wanted = std::move(e.inFlight);
        e.wantedBase = std::move(e.inFlightBase);
      }
      e.inFlight.reset();
    }
    return kube::Status(r.error());
  }
}

std::optional<json> PodStatusWriter::expected(const std::string& key, const json& pod) {
  base::MutexLock l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  Entry& e = it->second;
  const bool idle = !e.wanted && !e.inFlight;
  if (e.uid != kube::getUid(pod)) {
    if (idle) entries_.erase(it);
    return std::nullopt;
  }
  if (e.wanted) return *e.wanted;
  if (e.inFlight) return *e.inFlight;
  if (e.written && cacheLags(kube::getResourceVersion(pod), e.writtenBase, e.writtenRv)) {
    return *e.written;
  }
  entries_.erase(it);  // the cache has caught up: nothing to remember
  return std::nullopt;
}

bool PodStatusWriter::echoesOwnWrite(const std::string& key, const json& before,
                                     const json& now) {
  if (!before.is_object() || !now.is_object()) return false;
  auto nm = now.find("metadata"), bm = before.find("metadata"), ns = now.find("status");
  if (nm == now.end() || bm == before.end() || ns == now.end() || !nm->is_object() ||
      !bm->is_object()) {
    return false;
  }
  const std::string uid = kube::getUid(now);
  {
    base::MutexLock l(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.uid != uid || uid.empty()) return false;
    const Entry& e = it->second;
    if (!(e.inFlight && *e.inFlight == *ns) && !(e.written && *e.written == *ns)) return false;
  }
  // Nothing but the status and the versions changed.
  if (!sameMembersExcept(before, now, {"status", "metadata"}) ||
      !sameMembersExcept(*bm, *nm, {"resourceVersion", "managedFields"})) {
    return false;
  }
  base::MutexLock l(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end() && it->second.uid == uid && !it->second.wanted &&
      !it->second.inFlight && it->second.written && *it->second.written == *ns) {
    entries_.erase(it);  // the cache shows the last write: nothing left to remember
  }
  return true;
}

void PodStatusWriter::forget(const std::string& key) {
  base::MutexLock l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  if (it->second.inFlight) {  // its writer drops the entry when the write ends
    it->second.wanted.reset();
    it->second.uid.clear();
    return;
  }
  entries_.erase(it);
}

size_t PodStatusWriter::pending() const {
  base::MutexLock l(mu_);
  size_t n = 0;
  for (const auto& [key, e] : entries_) {
    if (e.wanted || e.inFlight) ++n;
  }
  return n;
}

PodStatusWriterCounters PodStatusWriter::counters() const {
  base::MutexLock l(mu_);
  return counters_;
}

}  // namespace strait::reflection
