#pragma once
// The DaemonSet half of the consumer agent's mutating webhook (pure part; webhook_server.h
// serves it at /mutate-daemonsets). DaemonSets tolerating every taint (kube-proxy, CNI and
// log agents: `tolerations: [{operator: Exists}]`) would otherwise get a Pod bound to every
// Strait virtual node, where it never runs and keeps its DaemonSet unready (liqo#1398,
// admiralty#114). On CREATE and UPDATE of a DaemonSet, in every namespace, the webhook adds
// to the template's required node affinity the expression `type NotIn [virtual-kubelet]`
// (the label every Strait virtual node carries): appended to each existing
// nodeSelectorTerm (terms are ORed, so each must exclude virtual nodes), or one new term
// when there is none. Idempotent. A DaemonSet that explicitly selects virtual nodes (a
// nodeSelector or expression naming type=virtual-kubelet, strait.io/remote-cluster-id, or a
// node named strait-*) is left alone. Every answer allows the request (failurePolicy
// Ignore). Pure functions; thread-safe.

#include <nlohmann/json.hpp>

namespace strait::vnode {

// The node selector requirement added to each term: type NotIn [virtual-kubelet].
nlohmann::json virtualNodeExclusion();

// Whether the DaemonSet's template asks for virtual nodes explicitly (see above).
bool selectsVirtualNodes(const nlohmann::json& daemonSet);

// RFC 6902 operations adding the exclusion to `daemonSet` (empty array: nothing to change —
// already excluded, explicitly selecting virtual nodes, or no spec.template.spec).
nlohmann::json daemonSetPatch(const nlohmann::json& daemonSet);

// Answers an admission.k8s.io/v1 AdmissionReview for apps/v1 DaemonSets (CREATE and
// UPDATE). Malformed reviews get an allowing answer without a patch.
nlohmann::json admitDaemonSet(const nlohmann::json& review);

}  // namespace strait::vnode
