#pragma once
// The filter and score plugins of the minicluster scheduler, after kube-scheduler's default
// profile: filters NodeUnschedulable, NodeName, TaintToleration, NodeAffinity (with
// nodeSelector), NodeResourcesFit and PodTopologySpread; scores LeastAllocated,
// BalancedAllocation, TaintToleration (PreferNoSchedule) and preferred node affinity.
// Pure functions over parsed pods and nodes; resource arithmetic in kube::Quantity.
// Values are plain data: safe to share between threads once built.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/quantity.h"
#include "kube/selector.h"
#include "kube/status.h"

namespace strait::minicluster::sched {

using ResourceList = std::map<std::string, kube::Quantity>;
using nlohmann::json;

struct Taint {
  std::string key, value, effect;  // effect: NoSchedule, PreferNoSchedule, NoExecute
  std::string timeAdded;           // RFC 3339, may be empty
};

struct Toleration {
  std::string key, op = "Equal", value, effect;  // empty key + Exists = everything
  std::optional<int64_t> tolerationSeconds;
  bool tolerates(const Taint& t) const;
};

struct SpreadConstraint {
  int64_t maxSkew = 1;
  std::string topologyKey;
  bool doNotSchedule = true;  // whenUnsatisfiable: DoNotSchedule (else ScheduleAnyway)
  kube::LabelSelector selector;
  int64_t minDomains = 1;
};

// What the scheduler reads of a pod, parsed once.
struct PodInfo {
  std::string ns, name, uid, nodeName, schedulerName;
  std::map<std::string, std::string> labels;
  ResourceList requests;  // max(max(init), sum(containers)) + overhead; no "pods" entry
  std::map<std::string, std::string> nodeSelector;
  json requiredTerms = json::array();   // requiredDuringScheduling...nodeSelectorTerms
  json preferredTerms = json::array();  // preferredDuringScheduling... [{weight, preference}]
  std::vector<Toleration> tolerations;
  std::vector<SpreadConstraint> spread;
  bool terminal = false;  // phase Succeeded or Failed
  bool deleting = false;
};

// What the scheduler reads of a node plus what is assigned to it.
struct NodeInfo {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  bool unschedulable = false;
  ResourceList allocatable;  // includes "pods"
  ResourceList requested;    // sum of assigned pods' requests
  int64_t podCount = 0;
  // Assigned pods' namespace + labels, for topology spread counting.
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> podLabels;
};

// Parses a pod. Error (Invalid) naming the field whose quantity does not parse.
kube::Result<PodInfo> parsePod(const json& pod);
// Parses a node (allocatable falls back to capacity).
NodeInfo parseNode(const json& node);
// Effective requests of a pod spec (upstream PodRequests, without "pods").
kube::Result<ResourceList> podRequests(const json& spec);

// Adds/removes a pod's requests on a node (assume / forget).
void addPod(NodeInfo& node, const PodInfo& pod);
void removePod(NodeInfo& node, const PodInfo& pod);

// Outcome of a filter on one node.
struct FilterStatus {
  bool fits = true;
  // Preemption could not help (upstream UnschedulableAndUnresolvable).
  bool unresolvable = false;
  std::vector<std::string> reasons;  // upstream wording, e.g. "Insufficient cpu"
};

FilterStatus filterNodeUnschedulable(const PodInfo& pod, const NodeInfo& node);
FilterStatus filterNodeName(const PodInfo& pod, const NodeInfo& node);
FilterStatus filterTaintToleration(const PodInfo& pod, const NodeInfo& node);
FilterStatus filterNodeAffinity(const PodInfo& pod, const NodeInfo& node);
FilterStatus filterNodeResourcesFit(const PodInfo& pod, const NodeInfo& node);

// PodTopologySpread: counts of matching pods per topology domain, computed once per pod
// over the nodes that pass its node affinity (upstream PreFilter).
struct SpreadState {
  // Per constraint: domain value -> matching pod count.
  std::vector<std::map<std::string, int64_t>> counts;
};
SpreadState prepareTopologySpread(const PodInfo& pod, const std::vector<const NodeInfo*>& nodes);
FilterStatus filterTopologySpread(const PodInfo& pod, const NodeInfo& node, const SpreadState& s);

// All filters in kube-scheduler's order; stops at the first that fails.
FilterStatus runFilters(const PodInfo& pod, const NodeInfo& node, const SpreadState& s);

// Raw scores (0-100 unless noted) and the weighted total of the default profile.
int64_t scoreLeastAllocated(const PodInfo& pod, const NodeInfo& node);
int64_t scoreBalancedAllocation(const PodInfo& pod, const NodeInfo& node);
// Raw count of untolerated PreferNoSchedule taints (normalized later: fewer is better).
int64_t countIntolerablePreferNoSchedule(const PodInfo& pod, const NodeInfo& node);
// Raw sum of matching preferred node-affinity weights (normalized later).
int64_t scoreNodeAffinityRaw(const PodInfo& pod, const NodeInfo& node);
// Raw count of matching pods in the node's domains of ScheduleAnyway constraints.
int64_t scoreTopologySpreadRaw(const PodInfo& pod, const NodeInfo& node, const SpreadState& s);

// Totals for feasible nodes with upstream default weights (fit 1, balanced 1, taint 3,
// node affinity 2, topology spread 2) after each plugin's normalization.
std::vector<int64_t> scoreNodes(const PodInfo& pod, const std::vector<const NodeInfo*>& feasible,
                                const SpreadState& s);

// The FitError message: "0/3 nodes are available: 1 Insufficient memory, 2 Insufficient
// cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming
// pod." (`statuses` has one entry per node that failed a filter).
std::string fitErrorMessage(size_t numNodes, const std::vector<FilterStatus>& statuses);

// Whether a label set matches nodeSelectorTerms (ORed terms, ANDed requirements;
// matchFields metadata.name against `nodeName`).
bool matchesNodeSelectorTerms(const json& terms, const std::map<std::string, std::string>& labels,
                              const std::string& nodeName);

}  // namespace strait::minicluster::sched
