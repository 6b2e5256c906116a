#pragma once
// The decision at the heart of the pod reflector's handle(key): given the current local Pod
// and remote Pod (either may be absent), what must happen now. Pure, so every branch is
// unit-tested without a cluster; the reflector reads both sides, calls decidePod, performs
// the action and requeues. Thread-safe (pure).
//
// Safety rules it encodes:
//  - a remote Pod is deleted because its origin is gone only when `resyncDone` (the consumer
//    has listed every local Pod since it (re)connected): a slow start never deletes healthy
//    Pods;
//  - a remote Pod not labelled as ours is never touched (Conflict);
//  - a terminal local Pod is never re-created remotely;
//  - a remote Pod whose origin uid differs from the local Pod's (a previous incarnation of
//    the same name) is deleted first, then the new one created: one remote Pod per local uid.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace strait::reflection {

enum class PodAction {
  None,               // in sync
  CreateRemote,       // forge and create the remote Pod
  UpdateRemote,       // the forged mutable fields differ: update the remote Pod
  UpdateLocalStatus,  // write mapRemoteStatus() to the local Pod's status
  DeleteRemote,       // delete the remote Pod (grace in PodDecision)
  DeleteLocal,        // the local Pod is being deleted and the remote is gone: finish it
                      // (delete with grace 0 and a uid precondition, as the kubelet does)
  MarkLocalLost,      // the remote Pod vanished under a running local Pod: lostRemoteStatus()
  Conflict,           // a remote object of that name is not ours: report, do nothing
};

const char* podActionName(PodAction a);

struct PodDecision {
  PodAction action = PodAction::None;
  std::optional<int64_t> gracePeriodSeconds;  // DeleteRemote: the local Pod's grace
  bool requeue = false;  // act again after this action (e.g. create after a stale delete)
  std::string reason;    // one line for logs and events
};

struct PodReconcileInput {
  const nlohmann::json* local = nullptr;   // nullptr: no local Pod (deleted or not ours)
  const nlohmann::json* remote = nullptr;  // nullptr: no remote Pod
  std::string consumerId;
  bool resyncDone = false;  // the local side has been fully listed since (re)connection
  // Set when the forged remote Pod would differ from `remote` in mutablePodFields().
  bool remoteSpecDiffers = false;
  // Set when mapRemoteStatus(local, remote) differs from the local status.
  bool localStatusDiffers = false;
  // The remote Pod existed for this local uid before (so its absence now means it was lost,
  // not that it has yet to be created).
  bool remoteWasCreated = false;
};

PodDecision decidePod(const PodReconcileInput& in);

}  // namespace strait::reflection
