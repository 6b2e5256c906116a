// Cordon, evict and wait for the Pods of virtual nodes (see node_drain.h).
#include "peering/node_drain.h"

#include <map>
#include <set>
#include <thread>

#include "kube/object.h"

namespace strait::peering {
namespace {

using json = nlohmann::json;
using kube::Code;
using kube::makeError;

constexpr auto kRelistInterval = std::chrono::milliseconds(100);

}  // namespace

kube::Result<std::vector<BoundPod>> unfinishedPodsOn(kube::Client& cluster,
                                                     const std::string& node) {
  kube::ListOptions o;
  o.fieldSelector = "spec.nodeName=" + node + ",status.phase!=Succeeded,status.phase!=Failed";
  kube::Result<json> pods = cluster.list(kube::resources::kPods, "", o);
  if (!pods.ok()) return pods.error();
  std::vector<BoundPod> out;
  for (const json& p : pods->value("items", json::array())) {
    if (!p.is_object()) continue;
    out.push_back(BoundPod{kube::getNamespace(p), kube::getName(p), kube::getUid(p),
                           kube::isBeingDeleted(p)});
  }
  return out;
}

kube::Status setUnschedulable(kube::Client& cluster, const std::string& node, bool on) {
  kube::Result<json> r = cluster.patch(kube::resources::kNodes, "", node, kube::PatchType::Merge,
                                       json{{"spec", {{"unschedulable", on}}}});
  if (!r.ok()) return r.error();
  return kube::Status::OK();
}

kube::Result<size_t> evictAndWait(kube::Client& cluster, const std::vector<std::string>& nodes,
                                  std::chrono::steady_clock::time_point deadline) {
  std::set<std::string> evicted;  // uids
  while (true) {
    // Node -> the Pods still there; a node whose list failed counts as not drained.
    std::map<std::string, std::vector<BoundPod>> left;
    std::string listError;
    for (const std::string& n : nodes) {
      kube::Result<std::vector<BoundPod>> pods = unfinishedPodsOn(cluster, n);
      if (!pods.ok()) {
        listError = "listing the pods on " + n + ": " + pods.error().message;
        continue;
      }
      if (!pods->empty()) left[n] = std::move(*pods);
    }
    if (left.empty() && listError.empty()) return evicted.size();
    for (const auto& [node, pods] : left) {
      for (const BoundPod& p : pods) {
        if (p.terminating || evicted.count(p.uid)) continue;
        kube::Result<json> e = kube::evictPod(cluster, p.ns, p.name);
        if (!e.ok() && e.code() != Code::NotFound) {
          return makeError(e.code(), "evicting " + p.ns + "/" + p.name + ": " + e.error().message);
        }
        evicted.insert(p.uid);
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string msg = "pods still on the virtual node(s) after --timeout:";
      for (const auto& [node, pods] : left) {
        for (const BoundPod& p : pods) {
          msg += " " + p.ns + "/" + p.name + " (" + node + (p.terminating ? ", terminating" : "") +
                 ")";
        }
      }
      if (!listError.empty()) msg += (left.empty() ? " " : "; ") + listError;
      return makeError(Code::ServerTimeout, msg);
    }
    std::this_thread::sleep_for(kRelistInterval);
  }
}

}  // namespace strait::peering
