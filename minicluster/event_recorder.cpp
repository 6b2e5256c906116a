#include "minicluster/event_recorder.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdio>

#include "kube/event.h"
#include "kube/object.h"

namespace strait::minicluster {

using nlohmann::json;

EventRecorder::EventRecorder(Rest& rest, Registry& registry, std::string component)
    : rest_(rest), events_(registry.find("", "v1", "events")), component_(std::move(component)) {}

void EventRecorder::record(const json& object, const std::string& type, const std::string& reason,
                           const std::string& message, const std::string& host) {
  if (!events_) return;
  const json& meta = object.value("metadata", json::object());
  std::string ns = meta.value("namespace", "");
  if (ns.empty()) ns = "default";  // events about cluster-scoped objects live in default
  std::string uid = meta.value("uid", "");
  std::string name = meta.value("name", "");
  std::string now = kube::rfc3339Now();
  std::string key = uid + "\n" + reason + "\n" + message;
  std::string existing;
  {
    base::MutexLock l(mu_);
    auto it = seen_.find(key);
    if (it != seen_.end()) existing = it->second;
  }
  if (!existing.empty()) {
    auto r = rest_.mutate(*events_, ns, existing, "", [&](json& ev) -> kube::Status {
      ev["count"] = ev.value("count", 1) + 1;
      ev["lastTimestamp"] = now;
      return kube::Status::OK();
    });
    if (r) return;
  }
  static std::atomic<uint64_t> seq{0};
  char suffix[32];
  auto ns_since = std::chrono::system_clock::now().time_since_epoch().count();
  std::snprintf(suffix, sizeof(suffix), "%llx", static_cast<unsigned long long>(ns_since) + seq++);
  std::string evName = name + "." + suffix;
  kube::EventFields fields;
  fields.involvedObject = kube::objectReference(object);
  fields.type = type;
  fields.reason = reason;
  fields.message = message;
  fields.component = component_;
  fields.host = host;
  fields.name = evName;
  fields.eventNamespace = ns;
  fields.firstTimestamp = now;
  fields.lastTimestamp = now;
  json ev = kube::makeEvent(fields);
  WriteOptions wo;
  wo.fieldValidation = FieldValidation::Ignore;
  auto r = rest_.create(*events_, ns, std::move(ev), wo, nullptr);
  if (!r) {
    spdlog::debug("event=event_not_recorded object={}/{} reason={} error=\"{}\"", ns, name, reason,
                  r.error().message);
    return;
  }
  base::MutexLock l(mu_);
  if (seen_.size() > 100000) seen_.clear();
  seen_[key] = evName;
}

}  // namespace strait::minicluster
