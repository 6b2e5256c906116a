// Late toleration for Pods the webhook missed (see toleration_repair.h).
#include "vnode/toleration_repair.h"

#include <spdlog/spdlog.h>

#include "kube/event.h"
#include "kube/object.h"

namespace strait::vnode {

using nlohmann::json;
namespace res = kube::resources;

namespace {

void recordEvent(kube::Client& local, const json& pod, const std::string& message) {
  kube::EventFields f;
  f.involvedObject = kube::objectReference(pod);
  f.reason = "TolerationAdded";
  f.message = message;
  f.component = "strait-agent";
  kube::Result<json> r = local.create(res::kEvents, kube::getNamespace(pod), kube::makeEvent(f));
  if (!r.ok()) {
    spdlog::warn("event=pod_event_failed pod={}/{} reason=TolerationAdded error=\"{}\"",
                 kube::getNamespace(pod), kube::getName(pod), r.error().message);
  }
}

}  // namespace

kube::Result<int> addMissingTolerations(kube::Client& local, const std::string& ns,
                                        const Offloading& offloading,
                                        const TolerationWebhookConfig& config) {
  if (!offloading.offloaded || config.taintEffect.empty()) return 0;
  // Only Pods not bound to a node yet: a toleration is of no use to a bound one, and an
  // offloaded namespace may hold thousands of bound Pods still Pending (listing them every
  // pass cost the agent tens of MB at each pass).
  kube::ListOptions opts;
  opts.fieldSelector = "status.phase=Pending,spec.nodeName=";
  kube::Result<json> pods = local.list(res::kPods, ns, opts);
  if (!pods.ok()) return pods.error();
  int changed = 0;
  for (const json& pod : pods->value("items", json::array())) {
    if (!pod.is_object() || !pod.contains("spec") || !pod["spec"].is_object()) continue;
    if (pod.contains("metadata") && pod["metadata"].is_object() &&
        pod["metadata"].contains("deletionTimestamp")) {
      continue;
    }
    if (!pod["spec"].value("nodeName", std::string()).empty()) continue;
    // What the webhook would have done, restricted to the part an update may still add.
    json ops = json::array();
    for (const json& op : tolerationPatch(pod, offloading, config)) {
      if (op.value("path", std::string()).rfind("/spec/tolerations", 0) == 0) ops.push_back(op);
    }
    if (ops.empty()) continue;
    kube::Result<json> r =
        local.patch(res::kPods, ns, kube::getName(pod), kube::PatchType::Json, ops);
    if (!r.ok()) {
      spdlog::warn("event=toleration_add_failed pod={}/{} error=\"{}\"", ns, kube::getName(pod),
                   r.error().message);
      continue;
    }
    ++changed;
    spdlog::info("event=toleration_added pod={}/{} reason=created_without_webhook", ns,
                 kube::getName(pod));
    recordEvent(local, pod,
                "added the toleration for Strait's virtual nodes: the Pod was created in an "
                "offloaded namespace while the offloading webhook did not answer");
  }
  return changed;
}

}  // namespace strait::vnode
