#pragma once
// Pods the toleration webhook never saw: with failurePolicy Ignore, a Pod created in an
// offloaded namespace while the consumer agent was down (or its webhook did not answer in
// time) is admitted unchanged, so it lacks the virtual node's toleration and would stay
// Pending for good when only the virtual node can hold it. This adds the toleration to such
// Pods afterwards (the API server allows appending tolerations to an existing Pod, as
// upstream does; the node affinity the webhook adds for a one-provider offloading cannot be
// added later, so such Pods may still land on any virtual node) and records an Event on each
// Pod saying why.
//
// Blocks on the API server; thread-safe (no state).

#include <string>

#include "kube/client.h"
#include "vnode/offloading.h"
#include "vnode/toleration_webhook.h"

namespace strait::vnode {

// Adds the toleration to every Pending, unscheduled Pod of namespace `ns` (offloaded as
// `offloading`) that the webhook would have given it and that lacks it. Returns how many
// Pods were changed, or the list error. Failures on single Pods are logged and skipped
// (the next call retries them).
kube::Result<int> addMissingTolerations(kube::Client& local, const std::string& ns,
                                        const Offloading& offloading,
                                        const TolerationWebhookConfig& config);

}  // namespace strait::vnode
