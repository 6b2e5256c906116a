#include "vnode/node_builder.h"

#include "kube/object.h"
#include "kube/validation.h"
#include "reflection/labels.h"

namespace strait::vnode {

using nlohmann::json;

std::string virtualNodeName(const std::string& providerName) {
  return std::string(kNodeNamePrefix) + providerName;
}

std::set<std::string> virtualNodeOwnLabelKeys() {
  return {std::string(kLabelType), std::string(peering::kLabelRemoteCluster),
          "kubernetes.io/hostname", "kubernetes.io/role"};
}

kube::Status validateConfig(const VirtualNodeConfig& c) {
  auto bad = [](const std::string& field, const std::string& msg) {
    return kube::makeError(kube::Code::Invalid, "virtual node config: " + field + ": " + msg,
                           field);
  };
  if (c.providerName.empty()) return bad("providerName", "required");
  if (auto p = kube::validateDns1123Subdomain(virtualNodeName(c.providerName)); !p.empty()) {
    return bad("providerName", "\"" + virtualNodeName(c.providerName) +
                                   "\" is not a valid node name: " + p.front());
  }
  if (c.providerClusterId.empty()) return bad("providerClusterId", "required");
  if (auto p = kube::validateLabelValue(c.providerClusterId); !p.empty()) {
    return bad("providerClusterId", p.front());
  }
  if (c.address.empty()) return bad("address", "required");
  if (c.kubeletPort < 1 || c.kubeletPort > 65535) {
    return bad("kubeletPort", std::to_string(c.kubeletPort) + " is not in 1..65535");
  }
  if (c.taintEffect != "" && c.taintEffect != "NoExecute" && c.taintEffect != "NoSchedule" &&
      c.taintEffect != "PreferNoSchedule") {
    return bad("taintEffect", "\"" + c.taintEffect +
                                  "\" is not one of NoExecute, NoSchedule, PreferNoSchedule, \"\"");
  }
  for (const auto& [k, v] : c.extraLabels) {
    if (!kube::validateLabelKey(k).empty() || !kube::validateLabelValue(v).empty()) {
      return bad("extraLabels", "invalid label " + k + "=" + v);
    }
  }
  return kube::Status::OK();
}

namespace {

// The previous condition of `type`, if any.
const json* previousCondition(const json& previous, const std::string& type) {
  if (!previous.is_object() || !previous.contains("status") ||
      !previous["status"].is_object() || !previous["status"].contains("conditions") ||
      !previous["status"]["conditions"].is_array()) {
    return nullptr;
  }
  for (const json& c : previous["status"]["conditions"]) {
    if (c.is_object() && c.contains("type") && c["type"] == type) return &c;
  }
  return nullptr;
}

json condition(const json& previous, const std::string& type, bool value,
               const std::string& reason, const std::string& message, const std::string& now) {
  const std::string status = value ? "True" : "False";
  std::string transition = now;
  if (const json* p = previousCondition(previous, type)) {
    if (p->contains("status") && (*p)["status"] == status && p->contains("lastTransitionTime") &&
        (*p)["lastTransitionTime"].is_string()) {
      transition = (*p)["lastTransitionTime"].get<std::string>();
    }
  }
  return {{"type", type},
          {"status", status},
          {"reason", reason},
          {"message", message},
          {"lastHeartbeatTime", now},
          {"lastTransitionTime", transition}};
}

bool positive(const ResourceMap& m, const char* key) {
  auto it = m.find(key);
  return it != m.end() && it->second.sign() > 0;
}

}  // namespace

json buildNode(const VirtualNodeConfig& c, const ResourceMap& allocatable,
               const ProviderSummary& provider, const Readiness& readiness,
               const json& previous, std::chrono::system_clock::time_point now,
               const peering::TunnelCondition& tunnel) {
  const std::string name = virtualNodeName(c.providerName);
  const std::string ts = kube::rfc3339(now);
  json node = {{"apiVersion", "v1"}, {"kind", "Node"}};
  json labels = json::object();
  for (const auto& [k, v] : provider.topologyLabels) labels[k] = v;
  for (const auto& [k, v] : c.extraLabels) labels[k] = v;
  labels[std::string(kLabelType)] = std::string(kTypeVirtualKubelet);
  labels[std::string(peering::kLabelRemoteCluster)] = c.providerClusterId;
  labels[std::string(peering::kLabelManagedBy)] = std::string(peering::kManagedByValue);
  labels["kubernetes.io/hostname"] = name;
  labels["kubernetes.io/os"] = c.os;
  labels["kubernetes.io/arch"] = c.arch;
  labels["kubernetes.io/role"] = "agent";
  labels["node.kubernetes.io/exclude-from-external-load-balancers"] = "true";
  json meta = {{"name", name}, {"labels", std::move(labels)}};
  if (previous.is_object()) {
    if (std::string rv = kube::getResourceVersion(previous); !rv.empty()) {
      meta["resourceVersion"] = rv;
    }
    if (std::string uid = kube::getUid(previous); !uid.empty()) meta["uid"] = uid;
  }
  node["metadata"] = std::move(meta);

  json spec = json::object();
  if (!c.taintEffect.empty()) {
    spec["taints"] = json::array({{{"key", std::string(reflection::kVirtualNodeTaintKey)},
                                   {"value", "true"},
                                   {"effect", c.taintEffect}}});
  }
  node["spec"] = std::move(spec);

  const bool hasCapacity = positive(allocatable, "cpu") && positive(allocatable, "memory");
  Readiness r = readiness;
  if (r.ready && !hasCapacity) {
    r.ready = false;
    r.reason = "NoCapacity";
    r.message = "the provider lends no cpu or no memory";
  }
  json resources = peering::ResourceMap(allocatable).empty() ? json::object()
                                                             : kube::formatResourceList(allocatable);
  json status = json::object();
  status["capacity"] = resources;
  status["allocatable"] = resources;
  status["conditions"] = json::array({
      condition(previous, "Ready", r.ready, r.reason, r.message, ts),
      condition(previous, "MemoryPressure", false, "KubeletHasSufficientMemory",
                "the provider reports its own pressure; none on the virtual node", ts),
      condition(previous, "DiskPressure", false, "KubeletHasNoDiskPressure",
                "the provider reports its own pressure; none on the virtual node", ts),
      condition(previous, "PIDPressure", false, "KubeletHasSufficientPID",
                "the provider reports its own pressure; none on the virtual node", ts),
      condition(previous, "NetworkUnavailable", !tunnel.up,
                tunnel.up ? "TunnelUp" : tunnel.reason,
                tunnel.up ? "the tunnel to the provider is up: " + tunnel.message
                          : "pod traffic does not cross to the provider: " + tunnel.message,
                ts),
      condition(previous, "TunnelUp", tunnel.up, tunnel.reason, tunnel.message, ts),
  });
  status["addresses"] = json::array({{{"type", "InternalIP"}, {"address", c.address}},
                                     {{"type", "Hostname"}, {"address", name}}});
  status["daemonEndpoints"] = {{"kubeletEndpoint", {{"Port", c.kubeletPort}}}};
  status["nodeInfo"] = {{"architecture", c.arch},
                        {"bootID", ""},
                        {"containerRuntimeVersion", "strait://" + c.providerClusterId},
                        {"kernelVersion", ""},
                        {"kubeProxyVersion", ""},
                        {"kubeletVersion", c.kubeletVersion},
                        {"machineID", ""},
                        {"operatingSystem", c.os},
                        {"osImage", "Strait virtual node"},
                        {"systemUUID", ""}};
  node["status"] = std::move(status);
  return node;
}

std::string nodeReadyStatus(const json& node) {
  if (const json* c = previousCondition(node, "Ready")) {
    if (c->contains("status") && (*c)["status"].is_string()) return (*c)["status"];
  }
  return {};
}

}  // namespace strait::vnode
