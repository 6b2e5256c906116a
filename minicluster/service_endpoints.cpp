#include "minicluster/service_endpoints.h"

#include "kube/json_access.h"
#include "kube/object.h"

namespace strait::minicluster {

using kube::child;
using kube::childArray;
using kube::intOf;
using kube::stringOf;

using json = nlohmann::json;

std::optional<kube::LabelSelector> serviceSelector(const json& service) {
  const json& sel = child(child(service, "spec"), "selector");
  if (sel.empty()) return std::nullopt;
  kube::LabelSet set;
  for (const auto& [k, v] : sel.items()) {
    if (v.is_string()) set[k] = v.get<std::string>();
  }
  return kube::LabelSelector::fromSet(set);
}

kube::Result<int64_t> findPort(const json& pod, const json& servicePort) {
  const std::string protocol = stringOf(servicePort, "protocol", "TCP");
  auto target = servicePort.find("targetPort");
  if (target == servicePort.end() || target->is_null()) return intOf(servicePort, "port");
  if (target->is_number_integer()) return target->get<int64_t>();
  if (target->is_string()) {
    const std::string name = target->get<std::string>();
    for (const auto& c : childArray(child(pod, "spec"), "containers")) {
      for (const auto& p : childArray(c, "ports")) {
        if (stringOf(p, "name") == name && stringOf(p, "protocol", "TCP") == protocol) {
          return intOf(p, "containerPort");
        }
      }
    }
    // A numeric string is a number (IntOrString parsed from YAML as text).
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) {
      return std::stoll(name);
    }
    return kube::makeError(kube::Code::NotFound, "no suitable port for manifest: " + name);
  }
  return kube::makeError(kube::Code::Invalid, "targetPort is neither a number nor a name");
}

json resolvePorts(const json& service, const json& pod) {
  json out = json::array();
  for (const auto& sp : childArray(child(service, "spec"), "ports")) {
    auto port = findPort(pod, sp);
    if (!port) continue;
    json p = {{"name", stringOf(sp, "name")},
              {"port", *port},
              {"protocol", stringOf(sp, "protocol", "TCP")}};
    if (sp.contains("appProtocol")) p["appProtocol"] = sp["appProtocol"];
    out.push_back(p);
  }
  return out;
}

std::string podIp(const json& pod) {
  const json& st = child(pod, "status");
  std::string ip = stringOf(st, "podIP");
  if (!ip.empty()) return ip;
  const json& ips = childArray(st, "podIPs");
  return ips.empty() ? "" : stringOf(ips[0], "ip");
}

bool podInEndpoints(const json& pod, bool includeTerminating) {
  if (podIp(pod).empty()) return false;
  std::string phase = stringOf(child(pod, "status"), "phase");
  if (phase == "Succeeded" || phase == "Failed") return false;
  if (!includeTerminating && kube::isBeingDeleted(pod)) return false;
  return true;
}

std::vector<std::string> servicesSelecting(const LocalInformer& services, const std::string& ns,
                                           const std::map<std::string, std::string>& labels) {
  std::vector<std::string> keys;
  for (const auto& svc : services.list(ns)) {
    auto sel = serviceSelector(svc->obj());
    if (sel && sel->matches(labels)) keys.push_back(objectKey(svc->ns, svc->name));
  }
  return keys;
}

InformerHandlers podHandlersForServices(const LocalInformer& services, kube::WorkerPool& queue) {
  auto changed = [&services, &queue](const CachedPtr& p) {
    for (const auto& k : servicesSelecting(services, p->ns, kube::getLabels(*p->head()))) {
      queue.add(k);
    }
  };
  InformerHandlers h;
  h.onAdd = changed;
  h.onUpdate = [changed](const CachedPtr& old, const CachedPtr& p) {
    changed(old);
    changed(p);
  };
  h.onDelete = changed;
  return h;
}

}  // namespace strait::minicluster
