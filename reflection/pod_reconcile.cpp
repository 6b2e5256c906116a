#include "reflection/pod_reconcile.h"

#include "kube/json_access.h"
#include "kube/object.h"
#include "reflection/labels.h"
#include "reflection/pod_status.h"

namespace strait::reflection {

using nlohmann::json;

const char* podActionName(PodAction a) {
  switch (a) {
    case PodAction::None: return "None";
    case PodAction::CreateRemote: return "CreateRemote";
    case PodAction::UpdateRemote: return "UpdateRemote";
    case PodAction::UpdateLocalStatus: return "UpdateLocalStatus";
    case PodAction::DeleteRemote: return "DeleteRemote";
    case PodAction::DeleteLocal: return "DeleteLocal";
    case PodAction::MarkLocalLost: return "MarkLocalLost";
    case PodAction::Conflict: return "Conflict";
  }
  return "Unknown";
}

namespace {

PodDecision make(PodAction a, std::string reason, bool requeue = false) {
  PodDecision d;
  d.action = a;
  d.reason = std::move(reason);
  d.requeue = requeue;
  return d;
}

std::optional<int64_t> localGrace(const json& local) {
  if (kube::hasObject(local, "metadata")) {
    const json& m = local["metadata"];
    if (m.contains("deletionGracePeriodSeconds") &&
        m["deletionGracePeriodSeconds"].is_number_integer()) {
      return m["deletionGracePeriodSeconds"].get<int64_t>();
    }
  }
  return std::nullopt;
}

}  // namespace

PodDecision decidePod(const PodReconcileInput& in) {
  const json* local = in.local;
  const json* remote = in.remote;
  if (remote && !isOwnedBy(*remote, in.consumerId)) {
    return make(PodAction::Conflict,
                "remote pod " + kube::getNamespace(*remote) + "/" + kube::getName(*remote) +
                    " exists and was not created by this consumer");
  }
  if (!local) {
    if (!remote) return make(PodAction::None, "neither side exists");
    if (kube::isBeingDeleted(*remote)) return make(PodAction::None, "remote pod is terminating");
    if (!in.resyncDone) {
      return make(PodAction::None, "origin not seen yet; waiting for the local resync");
    }
    return make(PodAction::DeleteRemote, "origin pod is gone");
  }

  const std::string localUid = kube::getUid(*local);
  if (remote && originUid(*remote) != localUid) {
    if (kube::isBeingDeleted(*remote)) {
      return make(PodAction::None, "a previous incarnation is terminating remotely", true);
    }
    PodDecision d = make(PodAction::DeleteRemote,
                         "remote pod mirrors uid " + originUid(*remote) + ", not " + localUid,
                         true);
    d.gracePeriodSeconds = 0;
    return d;
  }

  if (kube::isBeingDeleted(*local)) {
    if (!remote) return make(PodAction::DeleteLocal, "remote pod is gone");
    if (kube::isBeingDeleted(*remote)) {
      return make(PodAction::None, "remote pod is terminating");
    }
    PodDecision d = make(PodAction::DeleteRemote, "local pod is being deleted");
    d.gracePeriodSeconds = localGrace(*local);
    return d;
  }

  const bool localTerminal = isTerminalPhase(podPhase(*local));
  if (!remote) {
    if (localTerminal) return make(PodAction::None, "local pod is terminal");
    if (in.remoteWasCreated) {
      return make(PodAction::MarkLocalLost, "remote pod disappeared while the local one ran");
    }
    return make(PodAction::CreateRemote, "remote pod missing");
  }
  if (localTerminal) {
    // Keep the remote record of a finished Pod until the local one is deleted: logs stay
    // available. Never update it back to life.
    return make(PodAction::None, "local pod is terminal");
  }
  if (in.remoteSpecDiffers && !kube::isBeingDeleted(*remote)) {
    return make(PodAction::UpdateRemote, "local pod changed", in.localStatusDiffers);
  }
  if (in.localStatusDiffers) return make(PodAction::UpdateLocalStatus, "remote status changed");
  return make(PodAction::None, "in sync");
}

}  // namespace strait::reflection
