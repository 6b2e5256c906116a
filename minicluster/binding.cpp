#include "minicluster/binding.h"

#include "kube/object.h"

namespace strait::minicluster {

using kube::Code;
using kube::makeError;

Result<ObjectPtr> bindPod(Rest& rest, const ResourceInfo& pods, const std::string& ns,
                          const std::string& name, const std::string& node,
                          const std::string& expectedUid) {
  return rest.mutate(pods, ns, name, "binding", [&](json& pod) -> kube::Status {
    if (!expectedUid.empty() && kube::getUid(pod) != expectedUid) {
      return makeError(Code::Conflict, "Precondition failed: UID in precondition: " +
                                           expectedUid + ", UID in object meta: " +
                                           kube::getUid(pod));
    }
    std::string current = pod["spec"].value("nodeName", "");
    if (!current.empty()) {
      return makeError(Code::Conflict, "Operation cannot be fulfilled on pods/binding \"" + name +
                                           "\": pod " + name + " is already assigned to node \"" +
                                           current + "\"");
    }
    if (pod["metadata"].contains("deletionTimestamp")) {
      return makeError(Code::Conflict,
                       "pod " + name + " is being deleted, cannot be assigned to a host");
    }
    pod["spec"]["nodeName"] = node;
    json& conds = pod["status"]["conditions"];
    if (!conds.is_array()) conds = json::array();
    json cond = {{"type", "PodScheduled"},
                 {"status", "True"},
                 {"lastProbeTime", nullptr},
                 {"lastTransitionTime", kube::rfc3339Now()}};
    bool replaced = false;
    for (auto& c : conds) {
      if (c.value("type", "") == "PodScheduled") {
        c = cond;
        replaced = true;
      }
    }
    if (!replaced) conds.push_back(cond);
    return kube::Status::OK();
  });
}

}  // namespace strait::minicluster
