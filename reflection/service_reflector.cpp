#include "reflection/service_reflector.h"

#include <spdlog/spdlog.h>

#include "kube/event.h"
#include "kube/json_access.h"
#include "kube/object.h"
#include "reflection/labels.h"

namespace strait::reflection {

using nlohmann::json;
using namespace std::chrono_literals;
namespace res = kube::resources;

namespace {

// The remote object as the stream reports it.
struct RemoteRead {
  bool exists = false;
  bool ours = false;
  json object;            // when ours
  std::string conflict;   // when not ours: the provider's description of it
};

kube::Result<RemoteRead> readRemote(RemoteObjects& remote, const std::string& kind,
                                    const std::string& ns, const std::string& name) {
  RemoteRead r;
  kube::Result<json> got = remote.get(kind, ns, name);
  if (got.ok()) {
    r.exists = true;
    r.ours = true;
    r.object = std::move(*got);
    return r;
  }
  if (kube::isNotFound(got.error())) return r;
  if (kube::isConflict(got.error())) {
    r.exists = true;
    r.conflict = got.error().message;
    return r;
  }
  return got.error();
}

std::pair<std::string, std::string> splitKey(const std::string& key) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return {"", ""};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

}  // namespace

ServiceReflectionState::ServiceState ServiceReflectionState::service(const std::string& key) const {
  base::MutexLock l(mu_);
  auto it = services_.find(key);
  return it == services_.end() ? ServiceState::Unknown : it->second;
}

bool ServiceReflectionState::setService(const std::string& key, ServiceState s) {
  base::MutexLock l(mu_);
  if (s == ServiceState::Unknown) {
    // Forgotten: a deleted Service costs nothing.
    return services_.erase(key) > 0;
  }
  auto [it, inserted] = services_.emplace(key, s);
  if (inserted) return true;
  if (it->second == s) return false;
  it->second = s;
  return true;
}

void ServiceReflectionState::setSliceReflected(const std::string& key, bool reflected) {
  base::MutexLock l(mu_);
  if (reflected) {
    slices_.insert(key);
  } else {
    slices_.erase(key);
  }
}

bool ServiceReflectionState::sliceReflected(const std::string& key) const {
  base::MutexLock l(mu_);
  return slices_.count(key) > 0;
}

bool ServiceReflectionState::setConflict(const std::string& kindKey, bool conflict) {
  base::MutexLock l(mu_);
  if (conflict) return conflicts_.insert(kindKey).second;
  conflicts_.erase(kindKey);
  return false;
}

ServiceReflectionCounts ServiceReflectionState::counts() const {
  base::MutexLock l(mu_);
  ServiceReflectionCounts c;
  for (const auto& [k, s] : services_) {
    if (s == ServiceState::Reflected) ++c.services;
  }
  c.endpointSlices = slices_.size();
  c.conflicts = conflicts_.size();
  return c;
}

void recordReflectionConflict(kube::Client& local, const json& service,
                              const std::string& message, const std::string& component) {
  kube::EventFields fields;
  fields.involvedObject = {{"apiVersion", "v1"},
                           {"kind", "Service"},
                           {"namespace", kube::getNamespace(service)},
                           {"name", kube::getName(service)},
                           {"uid", kube::getUid(service)}};
  fields.type = "Warning";
  fields.reason = "ReflectionConflict";
  fields.message = message;
  fields.component = component;
  kube::Result<json> r =
      local.create(res::kEvents, kube::getNamespace(service), kube::makeEvent(fields));
  if (!r.ok()) {
    spdlog::warn("event=reflection_conflict_event_failed service={}/{} error=\"{}\"",
                 kube::getNamespace(service), kube::getName(service), r.error().message);
  }
}

ServiceReflector::ServiceReflector(kube::Client& local, const kube::Cache& localServices,
                                   RemoteObjects& remote, ServiceReflectionState& state,
                                   ServiceReflectorOptions opts)
    : local_(local),
      services_(localServices),
      remote_(remote),
      state_(state),
      opts_(std::move(opts)) {}

bool ServiceReflector::wanted(const json& svc) const {
  return opts_.offloaded && opts_.offloaded(kube::getNamespace(svc)) &&
         !serviceReflectionDisabled(svc) && !kube::isBeingDeleted(svc);
}

HandleResult ServiceReflector::handle(const std::string& key) {
  auto [ns, name] = splitKey(key);
  if (ns.empty()) return HandleResult::done();
  kube::ObjectPtr local = services_.get(key);
  const bool want = local && wanted(*local);
  auto changed = [&](ServiceReflectionState::ServiceState s) {
    // A Service gone locally is forgotten (its slices, gone too, need no state).
    if (!local && s == ServiceReflectionState::ServiceState::NotReflected) {
      s = ServiceReflectionState::ServiceState::Unknown;
    }
    if (state_.setService(key, s) && opts_.enqueueSlices) opts_.enqueueSlices(key);
  };
  kube::Result<std::string> remoteNs = opts_.mapping.remoteNamespace(ns);
  const ServiceReflectionState::ServiceState before = state_.service(key);
  if (!remoteNs.ok() || (!want && before != ServiceReflectionState::ServiceState::Reflected &&
                         before != ServiceReflectionState::ServiceState::Conflict)) {
    // Nothing of it was sent by this process (a copy left from before a restart is swept by
    // the provider after the resync): no need to ask.
    changed(ServiceReflectionState::ServiceState::NotReflected);
    return HandleResult::done();
  }
  kube::Result<RemoteRead> remote = readRemote(remote_, "Service", *remoteNs, name);
  if (!remote.ok()) return HandleResult::retry(remote.error());

  json forged;
  if (want) {
    kube::Result<json> f = forgeRemoteService(*local, {opts_.mapping.consumerId(), *remoteNs});
    if (!f.ok()) {
      spdlog::warn("event=service_not_reflected service={} error=\"{}\"", key, f.error().message);
      changed(ServiceReflectionState::ServiceState::NotReflected);
      return HandleResult::done();
    }
    forged = std::move(*f);
  }
  MirrorInput in;
  in.wanted = want;
  in.remoteExists = remote->exists;
  in.remoteOurs = remote->ours;
  in.remoteSameOrigin = remote->ours && local && originUid(remote->object) == kube::getUid(*local);
  in.differs = want && remote->ours && serviceNeedsUpdate(forged, remote->object);
  const MirrorAction action = decideMirror(in);
  spdlog::debug("event=service_decision key={} action={}", key, mirrorActionName(action));
  const std::string conflictKey = "Service/" + key;
  if (action != MirrorAction::Conflict) state_.setConflict(conflictKey, false);

  switch (action) {
    case MirrorAction::None:
      changed(want ? ServiceReflectionState::ServiceState::Reflected
                   : ServiceReflectionState::ServiceState::NotReflected);
      return HandleResult::done();
    case MirrorAction::Conflict: {
      const std::string message = "Service " + name + " not reflected to namespace " +
                                  *remoteNs + " of the provider: " + remote->conflict;
      if (state_.setConflict(conflictKey, true)) {
        spdlog::warn("event=reflection_conflict kind=Service key={} message=\"{}\"", key, message);
        recordReflectionConflict(local_, *local, message, opts_.component);
      }
      changed(ServiceReflectionState::ServiceState::Conflict);
      return HandleResult::requeueAfter(opts_.conflictRecheck);
    }
    case MirrorAction::Apply: {
      kube::Result<json> r = remote_.apply(StreamMessage::apply(forged, kube::getUid(*local)));
      if (!r.ok()) {
        if (kube::isConflict(r.error())) {
          // Created by someone else since it was read: reported on the next round.
          return HandleResult::requeueAfter(0ms);
        }
        if (r.code() == kube::Code::Forbidden || r.code() == kube::Code::Invalid) {
          spdlog::warn("event=service_refused service={} error=\"{}\"", key, r.error().message);
          return HandleResult::requeueAfter(10s);
        }
        return HandleResult::retry(r.error());
      }
      spdlog::info("event=service_reflected service={} remote_namespace={}", key, *remoteNs);
      changed(ServiceReflectionState::ServiceState::Reflected);
      return HandleResult::done();
    }
    case MirrorAction::Delete: {
      // Not reflected from now on: its slices go first (they are only ever sent while the
      // Service is reflected).
      changed(ServiceReflectionState::ServiceState::NotReflected);
      kube::Result<json> r = remote_.remove(StreamMessage::remove(
          "Service", *remoteNs, name, originUid(remote->object), std::nullopt));
      if (!r.ok()) return HandleResult::retry(r.error());
      spdlog::info("event=service_unreflected service={} remote_namespace={}", key, *remoteNs);
      return want ? HandleResult::requeueAfter(0ms) : HandleResult::done();
    }
  }
  return HandleResult::done();
}

EndpointSliceReflector::EndpointSliceReflector(kube::Client& local,
                                               const kube::Cache& localServices,
                                               const kube::Cache& localSlices,
                                               RemoteObjects& remote,
                                               ServiceReflectionState& state,
                                               ServiceReflectorOptions opts)
    : local_(local),
      services_(localServices),
      slices_(localSlices),
      remote_(remote),
      state_(state),
      opts_(std::move(opts)) {}

HandleResult EndpointSliceReflector::handle(const std::string& key) {
  auto [ns, name] = splitKey(key);
  if (ns.empty()) return HandleResult::done();
  kube::ObjectPtr local = slices_.get(key);
  const std::string service = local ? endpointSliceServiceName(*local) : std::string();
  const std::string serviceKey = ns + "/" + service;
  const ServiceReflectionState::ServiceState svcState =
      service.empty() ? ServiceReflectionState::ServiceState::NotReflected
                      : state_.service(serviceKey);
  kube::ObjectPtr svc = service.empty() ? nullptr : services_.get(serviceKey);
  if (svcState == ServiceReflectionState::ServiceState::Unknown && svc) {
    // The Service has not been looked at yet (e.g. just after a start): deciding now could
    // delete a slice that is about to be wanted again.
    return HandleResult::requeueAfter(200ms);
  }
  kube::Result<std::string> remoteNs = opts_.mapping.remoteNamespace(ns);
  if (!remoteNs.ok()) return HandleResult::done();

  json forged;
  bool want = false;
  if (local && svcState == ServiceReflectionState::ServiceState::Reflected) {
    kube::Result<json> f = forgeRemoteEndpointSlice(
        *local, {opts_.mapping.consumerId(), *remoteNs}, opts_.isVirtualNode);
    if (f.ok() && endpointSliceHasEndpoints(*f)) {
      forged = std::move(*f);
      want = true;
    }
  }
  if (!want && !state_.sliceReflected(key) && svcState != ServiceReflectionState::ServiceState::Conflict) {
    return HandleResult::done();  // never sent by this process (the resync sweeps older ones)
  }
  kube::Result<RemoteRead> remote = readRemote(remote_, "EndpointSlice", *remoteNs, name);
  if (!remote.ok()) return HandleResult::retry(remote.error());

  MirrorInput in;
  in.wanted = want;
  in.remoteExists = remote->exists;
  in.remoteOurs = remote->ours;
  in.remoteSameOrigin = remote->ours && local && originUid(remote->object) == kube::getUid(*local);
  in.differs = want && remote->ours && endpointSliceNeedsUpdate(forged, remote->object);
  const MirrorAction action = decideMirror(in);
  spdlog::debug("event=endpointslice_decision key={} action={}", key, mirrorActionName(action));
  const std::string conflictKey = "EndpointSlice/" + key;
  if (action != MirrorAction::Conflict) state_.setConflict(conflictKey, false);

  switch (action) {
    case MirrorAction::None:
      state_.setSliceReflected(key, want);
      return HandleResult::done();
    case MirrorAction::Conflict: {
      state_.setSliceReflected(key, false);
      const std::string message = "EndpointSlice " + name + " not reflected to namespace " +
                                  *remoteNs + " of the provider: " + remote->conflict;
      if (state_.setConflict(conflictKey, true)) {
        spdlog::warn("event=reflection_conflict kind=EndpointSlice key={} message=\"{}\"", key,
                     message);
        if (svc) recordReflectionConflict(local_, *svc, message, opts_.component);
      }
      return HandleResult::requeueAfter(opts_.conflictRecheck);
    }
    case MirrorAction::Apply: {
      kube::Result<json> r = remote_.apply(StreamMessage::apply(forged, kube::getUid(*local)));
      if (!r.ok()) {
        if (kube::isConflict(r.error())) return HandleResult::requeueAfter(0ms);
        if (r.code() == kube::Code::Forbidden || r.code() == kube::Code::Invalid) {
          spdlog::warn("event=endpointslice_refused slice={} error=\"{}\"", key,
                       r.error().message);
          return HandleResult::requeueAfter(10s);
        }
        return HandleResult::retry(r.error());
      }
      state_.setSliceReflected(key, true);
      return HandleResult::done();
    }
    case MirrorAction::Delete: {
      state_.setSliceReflected(key, false);
      kube::Result<json> r = remote_.remove(StreamMessage::remove(
          "EndpointSlice", *remoteNs, name, originUid(remote->object), std::nullopt));
      if (!r.ok()) return HandleResult::retry(r.error());
      return want ? HandleResult::requeueAfter(0ms) : HandleResult::done();
    }
  }
  return HandleResult::done();
}

}  // namespace strait::reflection
