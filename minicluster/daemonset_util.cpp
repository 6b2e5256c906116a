#include "minicluster/daemonset_util.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "kube/json_access.h"
#include "minicluster/scheduler_plugins.h"
#include "minicluster/strategy.h"

namespace strait::minicluster {
namespace {

using kube::boolOf;
using kube::child;
using kube::childArray;
using kube::stringOf;

using json = nlohmann::json;

void addOrReplaceToleration(json& tolerations, const std::string& key, const std::string& effect) {
  json tol = {{"key", key}, {"operator", "Exists"}, {"effect", effect}};
  for (auto& t : tolerations) {
    if (t.is_object() && t.value("key", "") == key && t.value("effect", "") == effect &&
        t.value("operator", "Equal") == "Exists" && t.value("value", "").empty()) {
      t = tol;
      return;
    }
  }
  tolerations.push_back(std::move(tol));
}

std::vector<sched::Toleration> parseTolerations(const json& tolerations) {
  std::vector<sched::Toleration> out;
  for (const auto& t : tolerations) {
    if (!t.is_object()) continue;
    sched::Toleration tol;
    tol.key = stringOf(t, "key");
    tol.op = stringOf(t, "operator", "Equal");
    tol.value = stringOf(t, "value");
    tol.effect = stringOf(t, "effect");
    out.push_back(std::move(tol));
  }
  return out;
}

}  // namespace

void addDaemonPodTolerations(json& podSpec) {
  if (!podSpec.is_object()) return;
  json& tols = podSpec["tolerations"];
  if (!tols.is_array()) tols = json::array();
  addOrReplaceToleration(tols, "node.kubernetes.io/not-ready", "NoExecute");
  addOrReplaceToleration(tols, "node.kubernetes.io/unreachable", "NoExecute");
  addOrReplaceToleration(tols, "node.kubernetes.io/disk-pressure", "NoSchedule");
  addOrReplaceToleration(tols, "node.kubernetes.io/memory-pressure", "NoSchedule");
  addOrReplaceToleration(tols, "node.kubernetes.io/pid-pressure", "NoSchedule");
  addOrReplaceToleration(tols, "node.kubernetes.io/unschedulable", "NoSchedule");
  if (boolOf(podSpec, "hostNetwork")) {
    addOrReplaceToleration(tols, "node.kubernetes.io/network-unavailable", "NoSchedule");
  }
}

DaemonNodeDecision nodeShouldRunDaemonPod(const json& node, const json& ds) {
  json spec = child(child(child(ds, "spec"), "template"), "spec");
  sched::NodeInfo n = sched::parseNode(node);
  std::string nodeName = stringOf(spec, "nodeName");
  if (!nodeName.empty() && nodeName != n.name) return {};
  for (const auto& [k, v] : child(spec, "nodeSelector").items()) {
    auto it = n.labels.find(k);
    if (!v.is_string() || it == n.labels.end() || it->second != v.get<std::string>()) return {};
  }
  const json& required = child(child(child(spec, "affinity"), "nodeAffinity"),
                               "requiredDuringSchedulingIgnoredDuringExecution");
  const json& terms = childArray(required, "nodeSelectorTerms");
  if (required.contains("nodeSelectorTerms") &&
      !sched::matchesNodeSelectorTerms(terms, n.labels, n.name)) {
    return {};
  }
  addDaemonPodTolerations(spec);
  auto tolerations = parseTolerations(childArray(spec, "tolerations"));
  auto tolerated = [&](const sched::Taint& t) {
    return std::any_of(tolerations.begin(), tolerations.end(),
                       [&](const sched::Toleration& tol) { return tol.tolerates(t); });
  };
  DaemonNodeDecision d{true, true};
  for (const auto& t : n.taints) {
    if (t.effect != "NoSchedule" && t.effect != "NoExecute") continue;
    if (tolerated(t)) continue;
    d.shouldRun = false;
    if (t.effect == "NoExecute") d.shouldContinueRunning = false;
  }
  return d;
}

json newDaemonPod(const json& ds, const std::string& nodeName, const json& ownerRef) {
  const json& tmpl = child(child(ds, "spec"), "template");
  json meta = json::object();
  const json& tmeta = child(tmpl, "metadata");
  for (const char* k : {"labels", "annotations", "finalizers"}) {
    if (tmeta.contains(k)) meta[k] = tmeta.at(k);
  }
  if (!meta.contains("labels") || !meta["labels"].is_object()) meta["labels"] = json::object();
  meta["labels"][kPodTemplateGenerationLabel] = std::to_string(daemonSetTemplateGeneration(ds));
  meta["generateName"] = stringOf(child(ds, "metadata"), "name") + "-";
  meta["namespace"] = stringOf(child(ds, "metadata"), "namespace");
  meta["ownerReferences"] = json::array({ownerRef});
  json spec = child(tmpl, "spec");
  addDaemonPodTolerations(spec);
  json term = {{"matchFields",
                json::array({{{"key", "metadata.name"},
                              {"operator", "In"},
                              {"values", json::array({nodeName})}}})}};
  if (!spec["affinity"].is_object()) spec["affinity"] = json::object();
  if (!spec["affinity"]["nodeAffinity"].is_object()) {
    spec["affinity"]["nodeAffinity"] = json::object();
  }
  spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
      {"nodeSelectorTerms", json::array({term})}};
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}};
}

std::optional<std::string> daemonPodTargetNode(const json& pod) {
  const json& spec = child(pod, "spec");
  if (auto n = stringOf(spec, "nodeName"); !n.empty()) return n;
  const json& required = child(child(child(spec, "affinity"), "nodeAffinity"),
                               "requiredDuringSchedulingIgnoredDuringExecution");
  for (const auto& term : childArray(required, "nodeSelectorTerms")) {
    for (const auto& r : childArray(term, "matchFields")) {
      const json& values = childArray(r, "values");
      if (stringOf(r, "key") == "metadata.name" && stringOf(r, "operator") == "In" &&
          values.size() == 1 && values[0].is_string()) {
        return values[0].get<std::string>();
      }
    }
  }
  return std::nullopt;
}

int64_t daemonSetTemplateGeneration(const json& ds) {
  std::string v = stringOf(child(child(ds, "metadata"), "annotations"),
                           kDaemonSetTemplateGenerationAnnotation);
  if (v.empty() || v.size() > 18 || !std::all_of(v.begin(), v.end(), ::isdigit)) return 0;
  return std::stoll(v);
}

bool isDaemonPodUpdated(const json& pod, int64_t templateGeneration) {
  return stringOf(child(child(pod, "metadata"), "labels"), kPodTemplateGenerationLabel) ==
         std::to_string(templateGeneration);
}

int64_t daemonSetMaxUnavailable(const json& ds, int64_t desired) {
  const json& ru = child(child(child(ds, "spec"), "updateStrategy"), "rollingUpdate");
  int64_t n = 1;
  auto it = ru.find("maxUnavailable");
  if (it != ru.end() && it->is_number_integer()) {
    n = it->get<int64_t>();
  } else if (it != ru.end() && it->is_string()) {
    std::string s = it->get<std::string>();
    if (!s.empty() && s.back() == '%') s.pop_back();
    if (!s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), ::isdigit)) {
      n = (std::stoll(s) * desired + 99) / 100;
    }
  }
  return std::max<int64_t>(n, 1);
}

}  // namespace strait::minicluster
