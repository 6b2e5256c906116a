#include "reflection/service_import.h"

#include <spdlog/spdlog.h>

#include <vector>

#include "kube/event.h"
#include "kube/json_access.h"
#include "kube/object.h"
#include "peering/names.h"
#include "reflection/service_export.h"
#include "reflection/service_forge.h"

namespace strait::reflection {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace res = kube::resources;

namespace {

struct KindKey {
  std::string kind, ns, name;
};

KindKey splitKey(const std::string& k) {
  const size_t a = k.find('/');
  const size_t b = k.find('/', a + 1);
  return {k.substr(0, a), k.substr(a + 1, b - a - 1), k.substr(b + 1)};
}

const kube::ResourceRef& resourceOf(const std::string& kind) {
  return kind == "Service" ? res::kServices : res::kEndpointSlices;
}

std::string labelSelector() {
  return std::string(peering::kLabelManagedBy) + "=" + std::string(peering::kManagedByValue);
}

// Ports as the API server stores them (protocol TCP and targetPort = port by default), so
// that an unchanged export compares equal to the stored copy.
json defaultedPorts(const json& ports) {
  json out = json::array();
  if (!ports.is_array()) return out;
  for (json p : ports) {
    if (!p.is_object()) continue;
    if (!p.contains("protocol")) p["protocol"] = "TCP";
    if (!p.contains("targetPort") && p.contains("port")) p["targetPort"] = p["port"];
    out.push_back(std::move(p));
  }
  return out;
}

// `existing` with what the import decides replaced by `forged`'s: labels, annotations and,
// for a Service, type, ports and session affinity (its ClusterIP stays the one allocated
// here); for a slice, addressType, ports and endpoints.
json mergedOnto(const json& existing, const json& forged) {
  json out = existing;
  json& meta = out["metadata"];
  meta["labels"] = forged["metadata"].value("labels", json::object());
  json annotations = meta.value("annotations", json::object());
  if (!annotations.is_object()) annotations = json::object();
  const json forgedAnnotations = forged["metadata"].value("annotations", json::object());
  if (forgedAnnotations.is_object()) {
    for (const auto& [k, v] : forgedAnnotations.items()) annotations[k] = v;
  }
  meta["annotations"] = std::move(annotations);
  if (forged.value("kind", "") == "Service") {
    json& spec = out["spec"];
    const json& f = forged["spec"];
    spec.erase("selector");
    spec["type"] = f.value("type", "ClusterIP");
    spec["ports"] = defaultedPorts(f.value("ports", json::array()));
    for (const char* k : {"sessionAffinity", "sessionAffinityConfig"}) {
      if (f.contains(k)) {
        spec[k] = f[k];
      } else if (k == std::string("sessionAffinityConfig")) {
        spec.erase(k);
      }
    }
    if (!f.contains("sessionAffinity")) spec["sessionAffinity"] = "None";
  } else {
    for (const char* k : {"addressType", "ports", "endpoints"}) out[k] = forged.value(k, json());
  }
  return out;
}

}  // namespace

ServiceImporter::ServiceImporter(kube::Client& local, ServiceImporterOptions opts)
    : local_(local), opts_(std::move(opts)) {}

ServiceImporter::~ServiceImporter() { stop(); }

kube::Status ServiceImporter::start() {
  if (opts_.providerId.empty()) {
    return kube::makeError(kube::Code::Invalid, "service importer: providerId is required");
  }
  base::MutexLock l(mu_);
  if (started_) return kube::makeError(kube::Code::Invalid, "service importer: already started");
  started_ = true;
  thread_ = std::jthread([this](std::stop_token st) { run(st); });
  return kube::Status::OK();
}

void ServiceImporter::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  {
    base::MutexLock l(mu_);
    cv_.notify_all();
  }
  thread_.join();
}

void ServiceImporter::markDirty(const std::string& kindKey, Clock::time_point at) {
  auto [it, added] = dirty_.emplace(kindKey, at);
  if (!added && at < it->second) it->second = at;
  cv_.notify_all();
}

void ServiceImporter::handle(const StreamMessage& m) {
  base::MutexLock l(mu_);
  switch (m.type) {
    case StreamMessageType::Export: {
      json obj = m.object;
      // This provider's labels, whatever the message says: a provider cannot write another's.
      json& labels = obj["metadata"]["labels"];
      if (!labels.is_object()) labels = json::object();
      labels[std::string(peering::kLabelManagedBy)] = std::string(peering::kManagedByValue);
      labels[std::string(peering::kLabelImportedFrom)] = opts_.providerId;
      labels[std::string(peering::kLabelOriginUid)] = m.originUid;
      const std::string key = m.kind + "/" + m.ns + "/" + m.name;
      wanted_[key] = Wanted{std::move(obj), m.originUid};
      markDirty(key, Clock::now());
      return;
    }
    case StreamMessageType::Unexport: {
      const std::string key = m.kind + "/" + m.ns + "/" + m.name;
      auto it = wanted_.find(key);
      if (it != wanted_.end() && it->second.originUid == m.originUid) wanted_.erase(it);
      markDirty(key, Clock::now());
      return;
    }
    case StreamMessageType::ExportSynced: {
      std::vector<std::string> uids = m.resyncOriginUids();
      pendingSweep_ = std::set<std::string>(uids.begin(), uids.end());
      cv_.notify_all();
      return;
    }
    default:
      return;
  }
}

ServiceImportCounts ServiceImporter::counts() const {
  base::MutexLock l(mu_);
  ServiceImportCounts c;
  for (const std::string& k : imported_) {
    if (k.rfind("Service/", 0) == 0) {
      ++c.services;
    } else {
      ++c.endpointSlices;
    }
  }
  c.conflicts = conflicts_.size();
  return c;
}

void ServiceImporter::sweep(const std::set<std::string>& live) {
  {
    base::MutexLock l(mu_);
    for (auto it = wanted_.begin(); it != wanted_.end();) {
      if (live.count(it->second.originUid)) {
        ++it;
        continue;
      }
      markDirty(it->first, Clock::now());
      it = wanted_.erase(it);
    }
  }
  // Copies of objects this provider no longer exports (gone while the stream was down).
  kube::ListOptions sel;
  sel.labelSelector =
      labelSelector() + "," + std::string(peering::kLabelImportedFrom) + "=" + opts_.providerId;
  size_t stale = 0;
  for (const char* kind : {"EndpointSlice", "Service"}) {
    kube::Result<json> list = local_.list(resourceOf(kind), "", sel);
    if (!list.ok()) {
      spdlog::warn("event=service_import_sweep_failed provider={} kind={} error=\"{}\"",
                   opts_.providerId, kind, list.error().message);
      base::MutexLock l(mu_);
      pendingSweep_ = live;  // tried again
      return;
    }
    base::MutexLock l(mu_);
    for (const json& o : list->value("items", json::array())) {
      const std::string key =
          std::string(kind) + "/" + kube::getNamespace(o) + "/" + kube::getName(o);
      if (!wanted_.count(key)) {
        markDirty(key, Clock::now());
        ++stale;
      }
    }
  }
  spdlog::info("event=service_import_synced provider={} live={} stale={}", opts_.providerId,
               live.size(), stale);
}

void ServiceImporter::run(std::stop_token st) {
  while (!st.stop_requested()) {
    std::optional<std::set<std::string>> sweepNow;
    std::vector<std::string> due;
    {
      base::UniqueLock l(mu_);
      auto next = Clock::now() + std::chrono::milliseconds(200);
      for (const auto& [k, at] : dirty_) next = std::min(next, at);
      if (!pendingSweep_ && next > Clock::now()) cv_.wait_until(l, next);
      if (st.stop_requested()) return;
      sweepNow.swap(pendingSweep_);
    }
    const bool unreachable = opts_.providerUnreachable && opts_.providerUnreachable();
    if (unreachable != unreachable_) {
      unreachable_ = unreachable;
      spdlog::info("event=service_import_provider_{} provider={}",
                   unreachable ? "unreachable" : "reachable", opts_.providerId);
      base::MutexLock l(mu_);
      for (const auto& [k, w] : wanted_) {
        if (k.rfind("EndpointSlice/", 0) == 0) markDirty(k, Clock::now());
      }
    }
    if (sweepNow) sweep(*sweepNow);
    {
      base::MutexLock l(mu_);
      const auto now = Clock::now();
      for (auto it = dirty_.begin(); it != dirty_.end();) {
        if (it->second <= now) {
          due.push_back(it->first);
          it = dirty_.erase(it);
        } else {
          ++it;
        }
      }
    }
    // Services first: a slice's namespace and Service exist before it.
    std::stable_partition(due.begin(), due.end(),
                          [](const std::string& k) { return k.rfind("Service/", 0) == 0; });
    for (const std::string& k : due) {
      if (st.stop_requested()) return;
      if (!reconcile(k, unreachable)) {
        base::MutexLock l(mu_);
        markDirty(k, Clock::now() + opts_.retry);
      }
    }
    if (opts_.onCounts) {
      const ServiceImportCounts c = counts();
      if (!published_ || *published_ != c) {
        opts_.onCounts(c);
        published_ = c;
      }
    }
  }
}

bool ServiceImporter::ensureNamespace(const std::string& ns) {
  kube::Result<json> cur = local_.get(res::kNamespaces, "", ns);
  if (cur.ok()) return true;
  if (!kube::isNotFound(cur.error())) return false;
  json obj = {{"apiVersion", "v1"},
              {"kind", "Namespace"},
              {"metadata",
               {{"name", ns},
                {"labels",
                 {{std::string(peering::kLabelManagedBy), std::string(peering::kManagedByValue)},
                  {std::string(peering::kLabelImportedFrom), opts_.providerId}}}}}};
  kube::Result<json> r = local_.create(res::kNamespaces, "", obj);
  if (r.ok() || r.code() == kube::Code::AlreadyExists) {
    if (r.ok()) spdlog::info("event=import_namespace_created namespace={}", ns);
    return true;
  }
  spdlog::warn("event=import_namespace_failed namespace={} error=\"{}\"", ns, r.error().message);
  return false;
}

void ServiceImporter::recordConflict(const json& existing, const std::string& message) {
  kube::EventFields f;
  f.involvedObject = kube::objectReference(existing);
  f.type = "Warning";
  f.reason = "ReflectionConflict";
  f.message = message;
  f.component = "strait-service-import";
  kube::Result<json> r =
      local_.create(res::kEvents, kube::getNamespace(existing), kube::makeEvent(f));
  if (!r.ok()) {
    spdlog::warn("event=reflection_conflict_event_failed object={}/{} error=\"{}\"",
                 kube::getNamespace(existing), kube::getName(existing), r.error().message);
  }
}

bool ServiceImporter::reconcile(const std::string& kindKey, bool unreachable) {
  const KindKey k = splitKey(kindKey);
  const kube::ResourceRef& ref = resourceOf(k.kind);
  json forged;
  {
    base::MutexLock l(mu_);
    auto it = wanted_.find(kindKey);
    if (it != wanted_.end()) forged = it->second.object;
  }
  if (forged.is_object() && k.kind == "EndpointSlice") {
    const std::string svcKey = "Service/" + k.ns + "/" + endpointSliceServiceName(forged);
    {
      base::MutexLock l(mu_);
      // Never a slice for a Service that is not ours (its endpoints would join it); one
      // whose Service is not imported yet waits for it.
      if (conflicts_.count(svcKey)) {
        forged = json();
        markDirty(kindKey, Clock::now() + opts_.conflictRecheck);  // imported once it clears
      } else if (!imported_.count(svcKey)) {
        return false;
      }
    }
  }
  if (forged.is_object() && k.kind == "EndpointSlice") {
    forged = mapExportedSliceAddresses(forged, opts_.mapPodIp);
    if (unreachable) forged = endpointSliceNotReady(forged);
  }
  kube::Result<json> cur = local_.get(ref, k.ns, k.name);
  json existing;
  if (cur.ok()) {
    existing = std::move(*cur);
  } else if (!kube::isNotFound(cur.error())) {
    return false;
  }
  auto setState = [&](bool imported, bool conflict) {
    base::MutexLock l(mu_);
    if (imported) {
      imported_.insert(kindKey);
    } else {
      imported_.erase(kindKey);
    }
    if (conflict) {
      return conflicts_.insert(kindKey).second;
    }
    conflicts_.erase(kindKey);
    return false;
  };
  const MirrorAction action = decideImport(forged, existing, opts_.providerId);
  switch (action) {
    case MirrorAction::None:
      setState(forged.is_object(), false);
      return true;
    case MirrorAction::Conflict: {
      if (setState(false, true)) {
        const std::string message =
            k.kind + " " + k.ns + "/" + k.name + " exported by provider " + opts_.providerId +
            " is not imported: a " + k.kind + " of that name exists here that Strait did not " +
            "import from that provider; it is left as it is";
        spdlog::warn("event=service_import_conflict provider={} object={}", opts_.providerId,
                     kindKey);
        if (k.kind == "Service") {
          recordConflict(existing, message);
        } else if (kube::Result<json> svc =
                       local_.get(res::kServices, k.ns, endpointSliceServiceName(forged));
                   svc.ok()) {
          recordConflict(*svc, message);
        }
      }
      base::MutexLock l(mu_);
      markDirty(kindKey, Clock::now() + opts_.conflictRecheck);
      return true;
    }
    case MirrorAction::Delete: {
      kube::Result<json> r = local_.remove(ref, k.ns, k.name);
      if (!r.ok() && !kube::isNotFound(r.error())) return false;
      setState(false, false);
      spdlog::info("event=service_import_deleted provider={} object={}", opts_.providerId,
                   kindKey);
      return true;
    }
    case MirrorAction::Apply:
      break;
  }
  if (!ensureNamespace(k.ns)) return false;
  kube::Result<json> r = json();
  if (existing.is_object()) {
    json merged = mergedOnto(existing, forged);
    if (merged == existing) {
      setState(true, false);
      return true;
    }
    r = local_.update(ref, k.ns, merged);
  } else {
    if (k.kind == "Service") forged["spec"]["ports"] = defaultedPorts(forged["spec"]["ports"]);
    r = local_.create(ref, k.ns, forged);
  }
  if (!r.ok()) {
    spdlog::info("event=service_import_failed provider={} object={} error=\"{}\"",
                 opts_.providerId, kindKey, r.error().message);
    return false;
  }
  setState(true, false);
  spdlog::info("event=service_imported provider={} object={}", opts_.providerId, kindKey);
  return true;
}

}  // namespace strait::reflection
