#include "minicluster/kubelet_status.h"

#include <openssl/evp.h>

#include <cstdio>

#include "kube/object.h"

namespace strait::minicluster {
namespace {

using nlohmann::json;
using TimePoint = std::chrono::system_clock::time_point;

std::string sha256Hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  std::string out;
  char buf[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof(buf), "%02x", md[i]);
    out += buf;
  }
  return out;
}

// Sets condition `type` in `conds`, keeping lastTransitionTime when the status is unchanged.
void setCondition(json& conds, const json& old, const std::string& type, bool status,
                  const std::string& reason, const std::string& message, const std::string& now) {
  std::string s = status ? "True" : "False";
  std::string transition = now;
  if (old.is_array()) {
    for (const auto& c : old) {
      if (c.is_object() && c.value("type", "") == type && c.value("status", "") == s &&
          c.contains("lastTransitionTime")) {
        transition = c["lastTransitionTime"].is_string() ? c["lastTransitionTime"].get<std::string>()
                                                         : now;
      }
    }
  }
  json c = {{"type", type}, {"status", s}, {"lastProbeTime", nullptr},
            {"lastTransitionTime", transition}};
  if (!reason.empty()) c["reason"] = reason;
  if (!message.empty()) c["message"] = message;
  conds.push_back(c);
}

std::string containerId(const SimPod& p, const SimContainer& c, int restart) {
  return "containerd://" + sha256Hex(p.uid + "/" + c.name + "/" + std::to_string(restart));
}

json terminatedState(const SimPod& p, const SimContainer& c, int restart, TimePoint started,
                     TimePoint finished, int exitCode, const std::string& reason) {
  return {{"terminated",
           {{"exitCode", exitCode},
            {"reason", !reason.empty() ? reason : exitCode == 0 ? "Completed" : "Error"},
            {"startedAt", kube::rfc3339(started)},
            {"finishedAt", kube::rfc3339(finished)},
            {"containerID", containerId(p, c, restart)}}}};
}

}  // namespace

std::string normalizeImage(const std::string& image) {
  std::string out = image;
  auto slash = out.find('/');
  std::string first = slash == std::string::npos ? "" : out.substr(0, slash);
  bool hasRegistry = first.find('.') != std::string::npos || first.find(':') != std::string::npos ||
                     first == "localhost";
  if (slash == std::string::npos) {
    out = "docker.io/library/" + out;
  } else if (!hasRegistry) {
    out = "docker.io/" + out;
  }
  auto lastSlash = out.rfind('/');
  if (out.find('@') == std::string::npos && out.find(':', lastSlash) == std::string::npos) {
    out += ":latest";
  }
  return out;
}

std::string imageIdFor(const std::string& image) {
  std::string n = normalizeImage(image);
  std::string repo = n.substr(0, n.find('@'));
  auto lastSlash = repo.rfind('/');
  auto colon = repo.find(':', lastSlash == std::string::npos ? 0 : lastSlash);
  if (colon != std::string::npos) repo = repo.substr(0, colon);
  return repo + "@sha256:" + sha256Hex(n);
}

json buildPodStatus(const SimPod& p, const json& old, TimePoint now) {
  const std::string nowS = kube::rfc3339(now);
  json oldConds = old.is_object() ? old.value("conditions", json::array()) : json::array();
  json st = json::object();
  bool allRunning = !p.containers.empty();
  bool allTerminated = !p.containers.empty();
  bool allSucceeded = true;
  json statuses = json::array();
  for (const auto& c : p.containers) {
    json cs = {{"name", c.name},
               {"image", normalizeImage(c.image)},
               {"imageID", imageIdFor(c.image)},
               {"restartCount", c.restartCount}};
    bool running = c.startedAt && !c.finishedAt;
    bool terminated = c.startedAt && c.finishedAt;
    if (running) {
      cs["state"] = {{"running", {{"startedAt", kube::rfc3339(*c.startedAt)}}}};
      cs["containerID"] = containerId(p, c, c.restartCount);
    } else if (terminated) {
      cs["state"] = terminatedState(p, c, c.restartCount, *c.startedAt, *c.finishedAt, c.exitCode,
                                    c.terminatedReason);
      cs["containerID"] = containerId(p, c, c.restartCount);
    } else {
      json w = {{"reason", c.waitingReason}};
      if (!c.waitingMessage.empty()) w["message"] = c.waitingMessage;
      cs["state"] = {{"waiting", w}};
    }
    if (c.prevStartedAt && c.prevFinishedAt) {
      cs["lastState"] = terminatedState(p, c, c.restartCount - 1, *c.prevStartedAt,
                                        *c.prevFinishedAt, c.prevExitCode, c.prevTerminatedReason);
    } else {
      cs["lastState"] = json::object();
    }
    cs["ready"] = running && p.stage == PodStage::Running && c.probeReady;
    cs["started"] = running && c.probeStarted;
    allRunning = allRunning && running && c.probeReady;
    allTerminated = allTerminated && terminated;
    if (!terminated || c.exitCode != 0) allSucceeded = false;
    statuses.push_back(cs);
  }
  std::string phase = "Pending";
  if (p.stage == PodStage::Finished && allTerminated) {
    phase = allSucceeded ? "Succeeded" : "Failed";
  } else if (p.stage != PodStage::Creating) {
    phase = "Running";
  }
  if (p.stage == PodStage::Terminating && old.is_object() && old.contains("phase")) {
    phase = old.value("phase", phase);
  }
  bool ready = allRunning && p.stage == PodStage::Running;
  json conds = json::array();
  bool initialized = p.initContainers.empty() || p.stage != PodStage::Creating;
  setCondition(conds, oldConds, "PodReadyToStartContainers", p.stage != PodStage::Creating, "", "",
               nowS);
  setCondition(conds, oldConds, "Initialized", initialized,
               initialized ? "" : "ContainersNotInitialized",
               initialized ? "" : "containers with incomplete status: [" +
                                      (p.initContainers.empty() ? "" : p.initContainers[0]) + "]",
               nowS);
  std::string notReady;
  for (const auto& c : p.containers) {
    if (!(c.startedAt && !c.finishedAt && c.probeReady)) {
      notReady += (notReady.empty() ? "" : " ") + c.name;
    }
  }
  std::string notReadyMsg = "containers with unready status: [" + notReady + "]";
  if (phase == "Succeeded" || phase == "Failed") {
    setCondition(conds, oldConds, "Ready", false, "PodCompleted", "", nowS);
    setCondition(conds, oldConds, "ContainersReady", false, "PodCompleted", "", nowS);
  } else {
    setCondition(conds, oldConds, "Ready", ready, ready ? "" : "ContainersNotReady",
                 ready ? "" : notReadyMsg, nowS);
    setCondition(conds, oldConds, "ContainersReady", ready, ready ? "" : "ContainersNotReady",
                 ready ? "" : notReadyMsg, nowS);
  }
  for (const auto& c : oldConds) {
    if (c.is_object() && c.value("type", "") == "PodScheduled") conds.push_back(c);
  }
  st["phase"] = phase;
  st["conditions"] = conds;
  st["hostIP"] = p.hostIP;
  st["hostIPs"] = json::array({{{"ip", p.hostIP}}});
  if (p.stage != PodStage::Creating && !p.podIP.empty()) {
    st["podIP"] = p.podIP;
    st["podIPs"] = json::array({{{"ip", p.podIP}}});
  }
  st["startTime"] = kube::rfc3339(p.startTime);
  st["containerStatuses"] = statuses;
  if (!p.initContainers.empty()) {
    json inits = json::array();
    for (const auto& name : p.initContainers) {
      json cs = {{"name", name}, {"image", "docker.io/library/busybox:latest"},
                 {"imageID", imageIdFor("busybox")}, {"restartCount", 0},
                 {"ready", p.stage != PodStage::Creating}, {"started", false},
                 {"lastState", json::object()}};
      if (p.stage == PodStage::Creating) {
        cs["state"] = {{"waiting", {{"reason", "PodInitializing"}}}};
      } else {
        cs["state"] = {{"terminated",
                        {{"exitCode", 0}, {"reason", "Completed"},
                         {"startedAt", kube::rfc3339(p.startTime)},
                         {"finishedAt", kube::rfc3339(p.startTime)}}}};
      }
      inits.push_back(cs);
    }
    st["initContainerStatuses"] = inits;
  }
  if (old.is_object() && old.contains("qosClass")) st["qosClass"] = old["qosClass"];
  return st;
}

json nodeConditions(const json& oldConditions, TimePoint now) {
  const std::string nowS = kube::rfc3339(now);
  struct C {
    const char* type;
    bool status;
    const char* reason;
    const char* message;
  };
  static const C kConds[] = {
      {"MemoryPressure", false, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
      {"DiskPressure", false, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
      {"PIDPressure", false, "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
      {"Ready", true, "KubeletReady", "kubelet is posting ready status"},
  };
  json out = json::array();
  for (const auto& c : kConds) {
    std::string s = c.status ? "True" : "False";
    std::string transition = nowS;
    if (oldConditions.is_array()) {
      for (const auto& o : oldConditions) {
        if (o.is_object() && o.value("type", "") == c.type && o.value("status", "") == s &&
            o.contains("lastTransitionTime") && o["lastTransitionTime"].is_string()) {
          transition = o["lastTransitionTime"];
        }
      }
    }
    out.push_back({{"type", c.type},
                   {"status", s},
                   {"lastHeartbeatTime", nowS},
                   {"lastTransitionTime", transition},
                   {"reason", c.reason},
                   {"message", c.message}});
  }
  return out;
}

json buildNode(const std::string& name, const NodePool& pool, const std::string& podCidr,
               const std::string& hostIP, uint16_t kubeletPort, TimePoint now) {
  json labels = {{"kubernetes.io/hostname", name},
                 {"kubernetes.io/os", "linux"},
                 {"kubernetes.io/arch", "amd64"},
                 {"beta.kubernetes.io/os", "linux"},
                 {"beta.kubernetes.io/arch", "amd64"},
                 {"node.kubernetes.io/instance-type", "strait-simulated"},
                 {"strait.io/pool", pool.namePrefix}};
  for (const auto& [k, v] : pool.labels) labels[k] = v;
  json capacity = kube::formatResourceList(pool.capacity);
  std::string machine = sha256Hex("machine/" + name).substr(0, 32);
  std::string boot = sha256Hex("boot/" + name + "/" + kube::rfc3339(now));
  json node = {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"labels", labels},
        {"annotations", {{"node.alpha.kubernetes.io/ttl", "0"},
                         {"volumes.kubernetes.io/controller-managed-attach-detach", "true"}}}}},
      {"spec", {{"podCIDR", podCidr}, {"podCIDRs", json::array({podCidr})}}},
      {"status",
       {{"capacity", capacity},
        {"allocatable", capacity},
        {"conditions", nodeConditions(json::array(), now)},
        {"addresses", json::array({{{"type", "InternalIP"}, {"address", hostIP}},
                                   {{"type", "Hostname"}, {"address", name}}})},
        {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", kubeletPort}}}}},
        {"nodeInfo",
         {{"machineID", machine},
          {"systemUUID", machine.substr(0, 8) + "-" + machine.substr(8, 4) + "-" +
                             machine.substr(12, 4) + "-" + machine.substr(16, 4) + "-" +
                             machine.substr(20, 12)},
          {"bootID", boot.substr(0, 8) + "-" + boot.substr(8, 4) + "-" + boot.substr(12, 4) + "-" +
                         boot.substr(16, 4) + "-" + boot.substr(20, 12)},
          {"kernelVersion", "6.1.0-strait"},
          {"osImage", "Strait simulated node"},
          {"containerRuntimeVersion", "containerd://1.7.24"},
          {"kubeletVersion", "v1.32.0-strait"},
          {"kubeProxyVersion", "v1.32.0-strait"},
          {"operatingSystem", "linux"},
          {"architecture", "amd64"}}},
        {"images", json::array()}}}};
  if (!pool.taints.empty()) node["spec"]["taints"] = pool.taints;
  return node;
}

json buildLease(const std::string& node, const std::string& nodeUid, TimePoint now) {
  json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", node}, {"namespace", "kube-node-lease"}}},
                {"spec",
                 {{"holderIdentity", node},
                  {"leaseDurationSeconds", 40},
                  {"renewTime", kube::rfc3339Micro(now)}}}};
  if (!nodeUid.empty()) {
    lease["metadata"]["ownerReferences"] = json::array(
        {{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}, {"uid", nodeUid}}});
  }
  return lease;
}

kube::Result<std::string> registerNodeObject(Rest& rest, const ResourceInfo& nodes,
                                             const json& node, TimePoint now) {
  const std::string name = kube::getName(node);
  const json cidr = node["spec"].value("podCIDR", json());
  WriteOptions wo;
  wo.fieldValidation = FieldValidation::Ignore;
  auto created = rest.create(nodes, "", node, wo, nullptr);
  ObjectPtr obj;
  if (created) {
    obj = *created;
  } else if (created.error().code == kube::Code::AlreadyExists) {
    auto r = rest.mutate(nodes, "", name, "", [&](json& cur) -> kube::Status {
      for (const auto& [k, v] : node["metadata"]["labels"].items()) cur["metadata"]["labels"][k] = v;
      cur["spec"]["podCIDR"] = cidr;
      cur["spec"]["podCIDRs"] = json::array({cidr});
      return kube::Status::OK();
    });
    if (!r) return r.error();
    auto s = rest.mutate(nodes, "", name, "status", [&](json& cur) -> kube::Status {
      json conds = cur["status"].value("conditions", json::array());
      cur["status"] = node["status"];
      cur["status"]["conditions"] = nodeConditions(conds, now);
      return kube::Status::OK();
    });
    if (!s) return s.error();
    obj = *s;
  } else {
    return kube::makeError(created.error().code,
                           "registering node " + name + ": " + created.error().message);
  }
  return kube::getUid(json::parse(obj->json, nullptr, false));
}

}  // namespace strait::minicluster
