#include "reflection/pod_reflector.h"

#include <spdlog/spdlog.h>

#include "kube/event.h"
#include "kube/json_access.h"
#include "kube/object.h"
#include "reflection/labels.h"
#include "reflection/pod_dependencies.h"
#include "reflection/pod_reconcile.h"

namespace strait::reflection {

using nlohmann::json;
using namespace std::chrono_literals;
namespace res = kube::resources;

PodReflector::PodReflector(kube::Client& local, const kube::Cache& localPods,
                           RemoteObjects& remote, PodReflectorOptions opts)
    : local_(local),
      localPod_([&localPods](const std::string& key) { return localPods.get(key); }),
      remote_(remote),
      opts_(std::move(opts)),
      ownWriter_(opts_.statusWriter ? nullptr : std::make_unique<PodStatusWriter>(local)),
      statusWriter_(opts_.statusWriter ? *opts_.statusWriter : *ownWriter_) {}

PodReflector::PodReflector(kube::Client& local,
                           std::function<kube::ObjectPtr(const std::string& key)> localPod,
                           RemoteObjects& remote, PodReflectorOptions opts)
    : local_(local),
      localPod_(std::move(localPod)),
      remote_(remote),
      opts_(std::move(opts)),
      ownWriter_(opts_.statusWriter ? nullptr : std::make_unique<PodStatusWriter>(local)),
      statusWriter_(opts_.statusWriter ? *opts_.statusWriter : *ownWriter_) {}

void PodReflector::event(const json& local, const std::string& type, const std::string& reason,
                         const std::string& message) {
  kube::EventFields fields;
  fields.involvedObject = {{"apiVersion", "v1"},
                           {"kind", "Pod"},
                           {"namespace", kube::getNamespace(local)},
                           {"name", kube::getName(local)},
                           {"uid", kube::getUid(local)}};
  fields.type = type;
  fields.reason = reason;
  fields.message = message;
  fields.component = "strait-vnode";
  fields.host = opts_.forge.virtualNodeName;
  json ev = kube::makeEvent(fields);
  kube::Result<json> r = local_.create(res::kEvents, kube::getNamespace(local), ev);
  if (!r.ok()) {
    spdlog::warn("event=pod_event_failed pod={}/{} reason={} error=\"{}\"",
                 kube::getNamespace(local), kube::getName(local), reason, r.error().message);
  }
}

HandleResult PodReflector::refuse(const json& local, const std::string& reason,
                                  const std::string& message) {
  json status = kube::hasObject(local, "status") ? local["status"] : json::object();
  if (kube::stringOf(status, "reason") == reason && kube::stringOf(status, "message") == message) {
    return HandleResult::done();  // already said
  }
  spdlog::info("event=pod_offload_refused pod={}/{} reason={} message=\"{}\"",
               kube::getNamespace(local), kube::getName(local), reason, message);
  json updated = local;
  updated["status"] = status;
  updated["status"]["reason"] = reason;
  updated["status"]["message"] = message;
  kube::Result<json> r = kube::updateStatus(local_, res::kPods, kube::getNamespace(local), updated);
  if (!r.ok()) return HandleResult::retry(r.error());
  event(local, "Warning", reason, message);
  return HandleResult::done();
}

kube::Status PodReflector::reflectDependencies(const json& local, const std::string& remoteNs) {
  PodDependencies deps = podDependencies(local);
  ObjectForgeContext ctx{opts_.mapping.consumerId(), remoteNs};
  auto reflectOne = [&](const kube::ResourceRef& r, const std::string& name,
                        auto forge) -> kube::Status {
    kube::Result<json> obj = local_.get(r, kube::getNamespace(local), name);
    if (!obj.ok()) {
      // A missing optional reference is fine; a missing required one makes the remote Pod
      // wait in ContainerCreating exactly as it would locally.
      return kube::isNotFound(obj.error()) ? kube::Status::OK() : kube::Status(obj.error());
    }
    kube::Result<json> forged = forge(*obj, ctx);
    if (!forged.ok()) {
      return forged.code() == kube::Code::Forbidden ? kube::Status::OK()
                                                    : kube::Status(forged.error());
    }
    kube::Result<json> applied = remote_.apply(StreamMessage::apply(*forged, kube::getUid(*obj)));
    return applied.ok() ? kube::Status::OK() : kube::Status(applied.error());
  };
  for (const std::string& cm : deps.configMaps) {
    if (auto s = reflectOne(res::kConfigMaps, cm, forgeRemoteConfigMap); !s.ok()) return s;
  }
  for (const std::string& sec : deps.secrets) {
    if (auto s = reflectOne(res::kSecrets, sec, forgeRemoteSecret); !s.ok()) return s;
  }
  if (!deps.serviceAccount.empty() && deps.serviceAccount != "default") {
    if (auto s = reflectOne(res::kServiceAccounts, deps.serviceAccount, forgeRemoteServiceAccount);
        !s.ok()) {
      return s;
    }
  }
  return kube::Status::OK();
}

HandleResult PodReflector::handle(const std::string& key) {
  kube::ObjectPtr localPtr = localPod_(key);
  const size_t slash = key.find('/');
  if (slash == std::string::npos) {
    return HandleResult::done();  // not a namespaced key: nothing to do
  }
  const std::string ns = key.substr(0, slash);
  const std::string name = key.substr(slash + 1);
  if (!localPtr) statusWriter_.forget(key);
  // The local Pod as decided on: its status the one the writer expects (queued, or written
  // while the cache lags), else the cached one.
  const json* local = localPtr.get();
  json expectedLocal;
  if (localPtr) {
    if (std::optional<json> st = statusWriter_.expected(key, *localPtr)) {
      expectedLocal = *localPtr;
      expectedLocal["status"] = std::move(*st);
      local = &expectedLocal;
    }
  }
  if (localPtr && isDaemonSetPod(*localPtr)) {
    return refuse(*localPtr, "DaemonSetPodNotOffloaded",
                  "DaemonSet pods do not run on virtual node " + opts_.forge.virtualNodeName);
  }
  kube::Result<std::string> remoteNs = opts_.mapping.remoteNamespace(ns);
  if (!remoteNs.ok()) {
    if (localPtr) return refuse(*localPtr, "NamespaceNotOffloadable", remoteNs.error().message);
    return HandleResult::done();
  }

  json remote;
  kube::Result<json> got = remote_.get("Pod", *remoteNs, name);
  if (got.ok()) {
    remote = std::move(*got);
  } else if (kube::isConflict(got.error())) {
    if (localPtr) event(*localPtr, "Warning", "RemoteNameConflict", got.error().message);
    return HandleResult::done();
  } else if (!kube::isNotFound(got.error())) {
    return HandleResult::retry(got.error());
  }

  PodReconcileInput in;
  in.local = local;
  in.remote = remote.is_null() ? nullptr : &remote;
  in.consumerId = opts_.mapping.consumerId();
  in.resyncDone = opts_.resyncDone ? opts_.resyncDone() : true;
  json forged;
  PodForgeContext forgeCtx = opts_.forge;
  forgeCtx.remoteNamespace = *remoteNs;
  if (localPtr && opts_.overrides) {
    kube::Result<PodOverrides> o = opts_.overrides(*localPtr);
    if (!o.ok()) {
      if (o.code() == kube::Code::Unavailable) return HandleResult::retry(o.error());
      return refuse(*localPtr, "OffloadingOverrideInvalid", o.error().message);
    }
    forgeCtx.overrides = std::move(*o);
  }
  if (localPtr) {
    kube::Result<json> f = forgeRemotePod(*localPtr, forgeCtx);
    if (!f.ok()) {
      return refuse(*localPtr,
                    f.error().field == kOverrideFailedField ? "OffloadingOverrideFailed"
                                                            : "OffloadRefused",
                    f.error().message);
    }
    forged = std::move(*f);
    const json st = kube::hasObject(*local, "status") ? (*local)["status"] : json::object();
    in.remoteWasCreated = st.contains("startTime") || !kube::stringOf(st, "podIP").empty();
    if (!remote.is_null()) {
      in.remoteSpecDiffers = mutablePodFields(forged) != mutablePodFields(remote);
      in.localStatusDiffers = mapRemoteStatus(*local, remote, opts_.status) != st;
    }
  }
  PodDecision d = decidePod(in);
  spdlog::debug("event=pod_decision key={} action={} reason=\"{}\"", key, podActionName(d.action),
                d.reason);
  const std::string originUidValue = localPtr ? kube::getUid(*localPtr) : originUid(remote);

  switch (d.action) {
    case PodAction::None:
      return d.requeue ? HandleResult::requeueAfter(1s) : HandleResult::done();
    case PodAction::Conflict:
      if (localPtr) event(*localPtr, "Warning", "RemoteNameConflict", d.reason);
      return HandleResult::done();
    case PodAction::CreateRemote: {
      if (opts_.doesNotFit) {
        if (std::optional<std::string> why = opts_.doesNotFit(*localPtr)) {
          return refuse(*localPtr, "ProviderNodeTooSmall", *why);
        }
      }
      if (kube::Status s = reflectDependencies(*localPtr, *remoteNs); !s.ok()) {
        if (s.error().code == kube::Code::Forbidden) {  // e.g. a remote namespace not ours
          refuse(*localPtr, "ProviderRefused", s.error().message);
          return HandleResult::requeueAfter(10s);
        }
        return HandleResult::retry(s.error());
      }
      kube::Result<json> created = remote_.apply(StreamMessage::apply(forged, originUidValue));
      if (!created.ok()) {
        if (created.code() == kube::Code::Forbidden || created.code() == kube::Code::Invalid) {
          // The provider refused it (quota, admission): say so on the local Pod, try later.
          refuse(*localPtr, "ProviderRefused", created.error().message);
          return HandleResult::requeueAfter(10s);
        }
        return HandleResult::retry(created.error());
      }
      // Status will follow from the remote side; read it back once now.
      return HandleResult::requeueAfter(200ms);
    }
    case PodAction::UpdateRemote: {
      kube::Result<json> applied = remote_.apply(StreamMessage::apply(forged, originUidValue));
      if (!applied.ok()) return HandleResult::retry(applied.error());
      return d.requeue ? HandleResult::requeueAfter(0ms) : HandleResult::done();
    }
    case PodAction::UpdateLocalStatus:
    case PodAction::MarkLocalLost: {
      json status = d.action == PodAction::UpdateLocalStatus
                        ? mapRemoteStatus(*local, remote, opts_.status)
                        : lostRemoteStatus(*local, "the remote pod disappeared from the provider");
      kube::Status s = statusWriter_.want(key, *localPtr, std::move(status));
      if (!s.ok()) return HandleResult::retry(s.error());
      if (d.action == PodAction::MarkLocalLost) {
        event(*localPtr, "Warning", "ProviderPodLost", d.reason);
      }
      return HandleResult::done();
    }
    case PodAction::DeleteRemote: {
      kube::Result<json> r = remote_.remove(StreamMessage::remove(
          "Pod", *remoteNs, name, originUid(remote), d.gracePeriodSeconds));
      if (!r.ok()) return HandleResult::retry(r.error());
      return HandleResult::requeueAfter(d.requeue ? 200ms : 1s);
    }
    case PodAction::DeleteLocal: {
      kube::DeleteOptions o;
      o.gracePeriodSeconds = 0;
      o.preconditionUid = kube::getUid(*localPtr);
      kube::Result<json> r = local_.remove(res::kPods, ns, name, o);
      if (!r.ok() && !kube::isNotFound(r.error()) && !kube::isConflict(r.error())) {
        return HandleResult::retry(r.error());
      }
      return HandleResult::done();
    }
  }
  return HandleResult::done();
}

}  // namespace strait::reflection
