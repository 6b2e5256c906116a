// Keeps DaemonSet Pods off virtual nodes (see daemonset_webhook.h).
#include "vnode/daemonset_webhook.h"

#include <string>

#include "kube/base64.h"
#include "kube/json_access.h"
#include "peering/names.h"
#include "vnode/node_builder.h"

namespace strait::vnode {

using nlohmann::json;

namespace {

using kube::member;

bool isStraitNodeName(const json& v) {
  return v.is_string() && v.get<std::string>().rfind(std::string(kNodeNamePrefix), 0) == 0;
}

bool anyValue(const json& values, bool (*pred)(const json&)) {
  if (!values.is_array()) return false;
  for (const json& v : values) {
    if (pred(v)) return true;
  }
  return false;
}

bool isVirtualType(const json& v) { return v == std::string(kTypeVirtualKubelet); }

// A requirement that can only be met by virtual nodes (or names one).
bool requirementSelectsVirtual(const json& r, bool field) {
  std::string key = member(r, "key").is_string() ? member(r, "key").get<std::string>() : "";
  std::string op = member(r, "operator").is_string() ? member(r, "operator").get<std::string>() : "";
  const json& values = member(r, "values");
  if (field) return key == "metadata.name" && op == "In" && anyValue(values, isStraitNodeName);
  if (key == kLabelType) return op == "In" && anyValue(values, isVirtualType);
  if (key == peering::kLabelRemoteCluster) return op == "In" || op == "Exists";
  if (key == "kubernetes.io/hostname") return op == "In" && anyValue(values, isStraitNodeName);
  return false;
}

const json& podSpecOf(const json& ds) { return member(member(member(ds, "spec"), "template"), "spec"); }

}  // namespace

json virtualNodeExclusion() {
  return {{"key", std::string(kLabelType)},
          {"operator", "NotIn"},
          {"values", json::array({std::string(kTypeVirtualKubelet)})}};
}

bool selectsVirtualNodes(const json& ds) {
  const json& spec = podSpecOf(ds);
  const json& selector = member(spec, "nodeSelector");
  if (selector.is_object()) {
    if (isVirtualType(member(selector, std::string(kLabelType).c_str()))) return true;
    if (member(selector, std::string(peering::kLabelRemoteCluster).c_str()).is_string()) return true;
    if (isStraitNodeName(member(selector, "kubernetes.io/hostname"))) return true;
  }
  if (isStraitNodeName(member(spec, "nodeName"))) return true;
  const json& terms = member(member(member(member(spec, "affinity"), "nodeAffinity"),
                                    "requiredDuringSchedulingIgnoredDuringExecution"),
                             "nodeSelectorTerms");
  if (!terms.is_array()) return false;
  for (const json& t : terms) {
    for (const char* part : {"matchExpressions", "matchFields"}) {
      const json& reqs = member(t, part);
      if (!reqs.is_array()) continue;
      for (const json& r : reqs) {
        if (requirementSelectsVirtual(r, std::string(part) == "matchFields")) return true;
      }
    }
  }
  return false;
}

json daemonSetPatch(const json& ds) {
  json ops = json::array();
  const json& spec = podSpecOf(ds);
  if (!spec.is_object() || selectsVirtualNodes(ds)) return ops;
  const json exclusion = virtualNodeExclusion();
  json affinity = member(spec, "affinity").is_object() ? spec["affinity"] : json::object();
  json& na = affinity["nodeAffinity"];
  if (!na.is_object()) na = json::object();
  json& req = na["requiredDuringSchedulingIgnoredDuringExecution"];
  if (!req.is_object()) req = json::object();
  json& terms = req["nodeSelectorTerms"];
  if (!terms.is_array() || terms.empty()) terms = json::array({json::object()});
  bool changed = false;
  for (json& term : terms) {
    if (!term.is_object()) term = json::object();
    json& exprs = term["matchExpressions"];
    if (!exprs.is_array()) exprs = json::array();
    bool present = false;
    for (const json& e : exprs) present = present || e == exclusion;
    if (!present) {
      exprs.push_back(exclusion);
      changed = true;
    }
  }
  if (changed) {
    ops.push_back({{"op", "add"}, {"path", "/spec/template/spec/affinity"}, {"value", affinity}});
  }
  return ops;
}

json admitDaemonSet(const json& review) {
  const json& req = member(review, "request");
  json resp = {{"uid", member(req, "uid").is_string() ? req["uid"].get<std::string>() : ""},
               {"allowed", true}};
  const json& op = member(req, "operation");
  const json& obj = member(req, "object");
  if ((op == "CREATE" || op == "UPDATE") && obj.is_object()) {
    json ops = daemonSetPatch(obj);
    if (!ops.empty()) {
      resp["patchType"] = "JSONPatch";
      resp["patch"] = kube::base64Encode(ops.dump());
    }
  }
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"response", std::move(resp)}};
}

}  // namespace strait::vnode
