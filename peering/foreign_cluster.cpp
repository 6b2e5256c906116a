// ForeignCluster CRD and object helpers.
#include "peering/foreign_cluster.h"

#include <spdlog/spdlog.h>

#include "peering/names.h"

namespace strait::peering {

nlohmann::json foreignClusterCrd() {
  auto col = [](const char* name, const char* type, const char* path, int priority = 0) {
    return nlohmann::json{{"name", name}, {"type", type}, {"jsonPath", path}, {"priority", priority}};
  };
  nlohmann::json version = {
      {"name", std::string(kFcVersion)},
      {"served", true},
      {"storage", true},
      {"schema",
       {{"openAPIV3Schema",
         {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}},
      {"subresources", {{"status", nlohmann::json::object()}}},
      {"additionalPrinterColumns",
       nlohmann::json::array(
           {col("Role", "string", ".spec.role"), col("Cluster-ID", "string", ".spec.clusterID"),
            col("Authenticated", "string",
                ".status.conditions[?(@.type==\"Authenticated\")].status"),
            col("Connected", "string", ".status.conditions[?(@.type==\"Connected\")].status"),
            col("Latency-ms", "integer", ".status.latencyMs"),
            col("Tunnel", "string", ".status.conditions[?(@.type==\"TunnelUp\")].status"),
            col("Remote-CIDR", "string", ".status.network.remoteCIDRSeenHere", 1),
            col("Endpoint", "string", ".spec.endpoint", 1)})}};
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata",
           {{"name", std::string(kFcPlural) + "." + std::string(kFcGroup)},
            {"labels", {{std::string(kLabelComponent), "crd"}}}}},
          {"spec",
           {{"group", std::string(kFcGroup)},
            {"scope", "Cluster"},
            {"names",
             {{"plural", std::string(kFcPlural)},
              {"singular", "foreigncluster"},
              {"kind", std::string(kFcKind)},
              {"listKind", "ForeignClusterList"},
              {"shortNames", {"fc"}}}},
            {"versions", nlohmann::json::array({version})}}}};
}

nlohmann::json ownershipLabels(const std::string& remoteClusterId) {
  return {{std::string(kLabelManagedBy), std::string(kManagedByValue)},
          {std::string(kLabelRemoteCluster), remoteClusterId}};
}

std::string ownershipSelector(const std::string& remoteClusterId) {
  std::string s = std::string(kLabelManagedBy) + "=" + std::string(kManagedByValue);
  if (!remoteClusterId.empty()) s += "," + std::string(kLabelRemoteCluster) + "=" + remoteClusterId;
  return s;
}

nlohmann::json makeForeignCluster(const std::string& name, const std::string& remoteId,
                                  const std::string& remoteName, const std::string& role,
                                  const std::string& endpoint) {
  return {{"apiVersion", std::string(kFcApiVersion)},
          {"kind", std::string(kFcKind)},
          {"metadata", {{"name", name}, {"labels", ownershipLabels(remoteId)}}},
          {"spec",
           {{"clusterID", remoteId},
            {"clusterName", remoteName},
            {"role", role},
            {"endpoint", endpoint},
            {"mode", "push"}}}};
}

bool setCondition(nlohmann::json& fc, const std::string& type, bool status,
                  const std::string& reason, const std::string& message,
                  std::chrono::system_clock::time_point now) {
  if (!fc.contains("status") || !fc["status"].is_object()) fc["status"] = nlohmann::json::object();
  nlohmann::json& conds = fc["status"]["conditions"];
  if (!conds.is_array()) conds = nlohmann::json::array();
  std::string s = status ? "True" : "False";
  for (auto& c : conds) {
    if (c.value("type", "") != type) continue;
    bool changed = c.value("status", "") != s || c.value("reason", "") != reason ||
                   c.value("message", "") != message;
    if (c.value("status", "") != s) c["lastTransitionTime"] = rfc3339(now);
    c["status"] = s;
    c["reason"] = reason;
    c["message"] = message;
    return changed;
  }
  conds.push_back({{"type", type},
                   {"status", s},
                   {"reason", reason},
                   {"message", message},
                   {"lastTransitionTime", rfc3339(now)}});
  return true;
}

std::string conditionStatus(const nlohmann::json& fc, const std::string& type) {
  const nlohmann::json* conds = nullptr;
  if (fc.contains("status") && fc["status"].is_object() && fc["status"].contains("conditions")) {
    conds = &fc["status"]["conditions"];
  }
  if (conds && conds->is_array()) {
    for (const auto& c : *conds) {
      if (c.value("type", "") == type) return c.value("status", "Unknown");
    }
  }
  return "Unknown";
}

std::string conditionMessage(const nlohmann::json& fc, const std::string& type) {
  if (fc.contains("status") && fc["status"].is_object() && fc["status"].contains("conditions") &&
      fc["status"]["conditions"].is_array()) {
    for (const auto& c : fc["status"]["conditions"]) {
      if (c.value("type", "") == type) return c.value("message", "");
    }
  }
  return {};
}

std::string conditionReason(const nlohmann::json& fc, const std::string& type) {
  if (fc.contains("status") && fc["status"].is_object() && fc["status"].contains("conditions") &&
      fc["status"]["conditions"].is_array()) {
    for (const auto& c : fc["status"]["conditions"]) {
      if (c.value("type", "") == type) return c.value("reason", "");
    }
  }
  return {};
}

void patchForeignClusterStatus(kube::Client& client, const std::string& name,
                               const nlohmann::json& status) {
  kube::WriteOptions wo;
  wo.subresource = "status";
  kube::Result<nlohmann::json> r = client.patch(kForeignClusters, "", name, kube::PatchType::Merge,
                                                nlohmann::json{{"status", status}}, wo);
  if (!r.ok() && r.code() != kube::Code::NotFound) {
    spdlog::warn("event=foreigncluster_status_failed name={} error=\"{}\"", name,
                 r.error().message);
  }
}

nlohmann::json peeringConditions(bool authenticated, const std::string& authReason,
                                 const std::string& authMessage, bool connected,
                                 const std::string& connReason, const std::string& connMessage,
                                 const std::string& vnodeReason, const std::string& vnodeMessage,
                                 const nlohmann::json& previousConditions,
                                 std::chrono::system_clock::time_point now,
                                 const TunnelCondition& tunnel) {
  return peeringConditions(authenticated, authReason, authMessage, connected, connReason,
                           connMessage, false, vnodeReason, vnodeMessage, previousConditions, now,
                           tunnel);
}

nlohmann::json peeringConditions(bool authenticated, const std::string& authReason,
                                 const std::string& authMessage, bool connected,
                                 const std::string& connReason, const std::string& connMessage,
                                 bool vnodeReady, const std::string& vnodeReason,
                                 const std::string& vnodeMessage,
                                 const nlohmann::json& previousConditions,
                                 std::chrono::system_clock::time_point now,
                                 const TunnelCondition& tunnel) {
  nlohmann::json obj = {{"status", {{"conditions", previousConditions.is_array()
                                                       ? previousConditions
                                                       : nlohmann::json::array()}}}};
  setCondition(obj, "Authenticated", authenticated, authReason, authMessage, now);
  setCondition(obj, "Connected", connected, connReason, connMessage, now);
  setCondition(obj, "VirtualNodeReady", vnodeReady, vnodeReason, vnodeMessage, now);
  setCondition(obj, "TunnelUp", tunnel.up, tunnel.reason, tunnel.message, now);
  return obj["status"];
}

}  // namespace strait::peering
