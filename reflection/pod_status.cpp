#include "reflection/pod_status.h"

#include "kube/json_access.h"
#include "kube/object.h"

namespace strait::reflection {

using kube::hasArray;
using kube::hasObject;
using kube::stringOf;
using nlohmann::json;

bool isTerminalPhase(const std::string& phase) {
  return phase == "Succeeded" || phase == "Failed";
}

std::string podPhase(const json& pod) {
  return hasObject(pod, "status") ? stringOf(pod["status"], "phase") : std::string();
}

namespace {

std::string mapIp(const PodStatusContext& ctx, const std::string& ip) {
  return ctx.mapPodIp ? ctx.mapPodIp(ip) : ip;
}

json containerStatuses(const json& remote, const char* key, int recreations) {
  json out = json::array();
  if (!hasArray(remote, key)) return out;
  for (json cs : remote[key]) {
    if (!cs.is_object()) continue;
    if (recreations > 0) {
      int64_t restarts = 0;
      if (cs.contains("restartCount") && cs["restartCount"].is_number_integer()) {
        restarts = cs["restartCount"].get<int64_t>();
      }
      cs["restartCount"] = restarts + recreations;
    }
    out.push_back(std::move(cs));
  }
  return out;
}

}  // namespace

namespace {

// Ready and ContainersReady of `out` False with reason ProviderUnreachable (the condition of
// `localStatus` kept when it already says so), its containers not ready.
void markUnreachable(json& out, const json& localStatus, const PodStatusContext& ctx) {
  if (!hasArray(out, "conditions")) return;
  for (json& c : out["conditions"]) {
    const std::string type = stringOf(c, "type");
    if (type != "Ready" && type != "ContainersReady") continue;
    bool kept = false;
    if (hasArray(localStatus, "conditions")) {
      for (const json& l : localStatus["conditions"]) {
        if (stringOf(l, "type") == type && stringOf(l, "status") == "False" &&
            stringOf(l, "reason") == "ProviderUnreachable") {
          c = l;
          kept = true;
        }
      }
    }
    if (kept) continue;
    c["status"] = "False";
    c["reason"] = "ProviderUnreachable";
    c["message"] = ctx.unreachableMessage;
    c["lastTransitionTime"] = kube::rfc3339Now();
  }
  if (hasArray(out, "containerStatuses")) {
    for (json& cs : out["containerStatuses"]) {
      if (cs.is_object()) cs["ready"] = false;
    }
  }
}

}  // namespace

json mapRemoteStatus(const json& local, const json& remote, const PodStatusContext& ctx) {
  json localStatus = hasObject(local, "status") ? local["status"] : json::object();
  if (isTerminalPhase(stringOf(localStatus, "phase"))) return localStatus;
  const json remoteStatus = hasObject(remote, "status") ? remote["status"] : json::object();

  json out = json::object();
  for (const char* key : {"phase", "reason", "message", "startTime", "nominatedNodeName"}) {
    if (remoteStatus.contains(key) && remoteStatus[key].is_string()) {
      out[key] = remoteStatus[key];
    }
  }
  if (!out.contains("phase")) out["phase"] = "Pending";
  if (localStatus.contains("qosClass")) out["qosClass"] = localStatus["qosClass"];
  out.erase("nominatedNodeName");  // a provider node name means nothing locally

  json conditions = json::array();
  if (hasArray(localStatus, "conditions")) {
    for (const json& c : localStatus["conditions"]) {
      if (stringOf(c, "type") == "PodScheduled") conditions.push_back(c);
    }
  }
  if (hasArray(remoteStatus, "conditions")) {
    for (const json& c : remoteStatus["conditions"]) {
      if (c.is_object() && stringOf(c, "type") != "PodScheduled") conditions.push_back(c);
    }
  }
  if (!conditions.empty()) out["conditions"] = std::move(conditions);

  json cs = containerStatuses(remoteStatus, "containerStatuses", ctx.recreations);
  if (!cs.empty()) out["containerStatuses"] = std::move(cs);
  json ics = containerStatuses(remoteStatus, "initContainerStatuses", ctx.recreations);
  if (!ics.empty()) out["initContainerStatuses"] = std::move(ics);

  if (!ctx.virtualNodeAddress.empty()) {
    out["hostIP"] = ctx.virtualNodeAddress;
    out["hostIPs"] = json::array({{{"ip", ctx.virtualNodeAddress}}});
  }
  std::string podIp = stringOf(remoteStatus, "podIP");
  if (!podIp.empty()) {
    out["podIP"] = mapIp(ctx, podIp);
    json ips = json::array();
    if (hasArray(remoteStatus, "podIPs")) {
      for (const json& entry : remoteStatus["podIPs"]) {
        std::string ip = stringOf(entry, "ip");
        if (!ip.empty()) ips.push_back({{"ip", mapIp(ctx, ip)}});
      }
    }
    if (ips.empty()) ips.push_back({{"ip", out["podIP"]}});
    out["podIPs"] = std::move(ips);
  }
  if (ctx.providerUnreachable && ctx.providerUnreachable()) markUnreachable(out, localStatus, ctx);
  return out;
}

json lostRemoteStatus(const json& local, const std::string& message) {
  json status = hasObject(local, "status") ? local["status"] : json::object();
  if (isTerminalPhase(stringOf(status, "phase"))) return status;
  const std::string now = kube::rfc3339Now();
  status["phase"] = "Failed";
  status["reason"] = "ProviderPodLost";
  status["message"] = message;
  if (hasArray(status, "conditions")) {
    for (json& c : status["conditions"]) {
      std::string type = stringOf(c, "type");
      if (type == "Ready" || type == "ContainersReady") {
        c["status"] = "False";
        c["reason"] = "PodFailed";
        c["lastTransitionTime"] = now;
      }
    }
  }
  if (hasArray(status, "containerStatuses")) {
    for (json& cs : status["containerStatuses"]) {
      if (!cs.is_object()) continue;
      cs["ready"] = false;
      cs["started"] = false;
      if (hasObject(cs, "state") && hasObject(cs["state"], "terminated")) continue;
      cs["state"] = {{"terminated",
                      {{"exitCode", 137},
                       {"reason", "ProviderPodLost"},
                       {"message", message},
                       {"finishedAt", now}}}};
    }
  }
  return status;
}

}  // namespace strait::reflection
