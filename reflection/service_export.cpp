#include "reflection/service_export.h"

#include <algorithm>
#include <sstream>

#include "kube/json_access.h"
#include "kube/object.h"
#include "kube/validation.h"
#include "peering/names.h"
#include "reflection/stream_messages.h"

namespace strait::reflection {

using kube::hasArray;
using kube::hasObject;
using kube::stringOf;
using nlohmann::json;

namespace {

kube::Error invalid(const std::string& msg, const std::string& field) {
  return kube::makeError(kube::Code::Invalid, msg, field);
}

bool straitKey(const std::string& k) { return k.rfind("strait.io/", 0) == 0; }

json importMeta(const json& obj, const std::string& providerId, const char* kind) {
  json meta = json::object();
  meta["name"] = kube::getName(obj);
  meta["namespace"] = kube::getNamespace(obj);
  json labels = json::object();
  for (const auto& [k, v] : kube::getLabels(obj)) {
    if (!straitKey(k)) labels[k] = v;
  }
  labels[std::string(peering::kLabelManagedBy)] = std::string(peering::kManagedByValue);
  labels[std::string(peering::kLabelImportedFrom)] = providerId;
  labels[std::string(peering::kLabelOriginUid)] = kube::getUid(obj);
  meta["labels"] = std::move(labels);
  json annotations = json::object();
  annotations[std::string(peering::kAnnotationOriginNamespace)] = kube::getNamespace(obj);
  annotations[std::string(peering::kAnnotationOriginName)] = kube::getName(obj);
  meta["annotations"] = std::move(annotations);
  json out = json::object();
  out["apiVersion"] = streamApiVersionOf(kind);
  out["kind"] = kind;
  out["metadata"] = std::move(meta);
  return out;
}

bool hasIdentity(const json& obj) {
  return obj.is_object() && !kube::getName(obj).empty() && !kube::getNamespace(obj).empty() &&
         !kube::getUid(obj).empty();
}

}  // namespace

std::vector<std::string> exportConsumers(const json& service) {
  auto a = kube::getAnnotations(service);
  auto it = a.find(std::string(peering::kAnnotationExportTo));
  std::vector<std::string> ids;
  if (it == a.end()) return ids;
  std::stringstream in(it->second);
  std::string id;
  while (std::getline(in, id, ',')) {
    const auto b = id.find_first_not_of(" \t");
    const auto e = id.find_last_not_of(" \t");
    if (b == std::string::npos) continue;
    ids.push_back(id.substr(b, e - b + 1));
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string exportToValue(std::vector<std::string> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (const std::string& id : ids) {
    if (id.empty()) continue;
    if (!out.empty()) out += ",";
    out += id;
  }
  return out;
}

kube::Result<std::pair<std::string, std::string>> parseServiceRef(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos || text.find('/', slash + 1) != std::string::npos) {
    return invalid("\"" + text.substr(0, 128) + "\" is not NAMESPACE/NAME", "service");
  }
  std::string ns = text.substr(0, slash);
  std::string name = text.substr(slash + 1);
  if (auto p = kube::validateDns1123Label(ns); !p.empty()) {
    return invalid("namespace \"" + ns.substr(0, 64) + "\": " + p.front(), "service");
  }
  if (auto p = kube::validateDns1035Label(name); !p.empty()) {
    return invalid("service name \"" + name.substr(0, 64) + "\": " + p.front(), "service");
  }
  return std::make_pair(std::move(ns), std::move(name));
}

kube::Result<json> forgeExportedService(const json& service, const std::string& providerId) {
  if (!hasIdentity(service) || !hasObject(service, "spec")) {
    return invalid("cannot export Service: not an object with metadata.name, namespace, uid "
                   "and a spec",
                   "metadata");
  }
  const json& spec = service["spec"];
  if (stringOf(spec, "type") == "ExternalName") {
    return invalid("cannot export Service " + kube::getNamespace(service) + "/" +
                       kube::getName(service) +
                       ": type ExternalName has no endpoints to reach through the tunnel",
                   "spec.type");
  }
  json out = importMeta(service, providerId, "Service");
  json s = json::object();
  s["type"] = "ClusterIP";
  if (stringOf(spec, "clusterIP") == "None") {
    s["clusterIP"] = "None";
    s["clusterIPs"] = json::array({"None"});
  }
  json ports = json::array();
  if (hasArray(spec, "ports")) {
    for (const json& p : spec["ports"]) {
      if (!p.is_object()) continue;
      json q = json::object();
      for (const char* k : {"name", "protocol", "port", "appProtocol"}) {
        if (p.contains(k)) q[k] = p[k];
      }
      ports.push_back(std::move(q));
    }
  }
  s["ports"] = std::move(ports);
  for (const char* k : {"sessionAffinity", "sessionAffinityConfig"}) {
    if (spec.contains(k)) s[k] = spec[k];
  }
  out["spec"] = std::move(s);
  return out;
}

kube::Result<json> forgeExportedEndpointSlice(const json& slice, const std::string& providerId) {
  if (!hasIdentity(slice) || stringOf(slice, "kind", "EndpointSlice") != "EndpointSlice") {
    return invalid("cannot export EndpointSlice: not an EndpointSlice with metadata.name, "
                   "namespace and uid",
                   "metadata");
  }
  const std::string service = endpointSliceServiceName(slice);
  if (service.empty()) {
    return invalid(std::string("cannot export EndpointSlice: no ") + kLabelServiceName + " label",
                   "metadata.labels");
  }
  json out = importMeta(slice, providerId, "EndpointSlice");
  json& labels = out["metadata"]["labels"];
  labels = json::object();
  labels[kLabelServiceName] = service;
  labels[kLabelEndpointSliceManagedBy] = std::string(peering::kEndpointSliceManagedByValue);
  labels[std::string(peering::kLabelManagedBy)] = std::string(peering::kManagedByValue);
  labels[std::string(peering::kLabelImportedFrom)] = providerId;
  labels[std::string(peering::kLabelOriginUid)] = kube::getUid(slice);
  out["addressType"] = slice.value("addressType", json("IPv4"));
  out["ports"] = hasArray(slice, "ports") ? slice["ports"] : json::array();
  json endpoints = json::array();
  if (hasArray(slice, "endpoints")) {
    for (const json& e : slice["endpoints"]) {
      if (!e.is_object()) continue;
      const json c = hasObject(e, "conditions") ? e["conditions"] : json::object();
      auto flag = [&](const char* k, bool absent) {
        return c.contains(k) && c[k].is_boolean() ? c[k].get<bool>() : absent;
      };
      const bool ready = flag("ready", true);
      json r = json::object();
      r["addresses"] = hasArray(e, "addresses") ? e["addresses"] : json::array();
      r["conditions"] = json{{"ready", ready},
                             {"serving", flag("serving", ready)},
                             {"terminating", flag("terminating", false)}};
      if (e.contains("hostname")) r["hostname"] = e["hostname"];
      endpoints.push_back(std::move(r));
    }
  }
  out["endpoints"] = std::move(endpoints);
  return out;
}

json mapExportedSliceAddresses(const json& slice,
                               const std::function<std::string(const std::string&)>& mapIp) {
  json out = slice;
  if (!mapIp || !hasArray(out, "endpoints")) return out;
  json kept = json::array();
  for (const json& e : out["endpoints"]) {
    if (!hasArray(e, "addresses")) continue;
    json addresses = json::array();
    for (const json& a : e["addresses"]) {
      if (!a.is_string()) continue;
      std::string mapped = mapIp(a.get<std::string>());
      if (!mapped.empty()) addresses.push_back(std::move(mapped));
    }
    if (addresses.empty()) continue;
    json r = e;
    r["addresses"] = std::move(addresses);
    kept.push_back(std::move(r));
  }
  out["endpoints"] = std::move(kept);
  return out;
}

bool importedFrom(const json& obj, const std::string& providerId) {
  auto labels = kube::getLabels(obj);
  auto m = labels.find(std::string(peering::kLabelManagedBy));
  auto p = labels.find(std::string(peering::kLabelImportedFrom));
  return m != labels.end() && m->second == peering::kManagedByValue && p != labels.end() &&
         p->second == providerId;
}

MirrorAction decideImport(const json& forged, const json& existing, const std::string& providerId) {
  MirrorInput in;
  in.wanted = forged.is_object();
  in.remoteExists = existing.is_object();
  if (in.remoteExists) {
    in.remoteOurs = importedFrom(existing, providerId);
    in.remoteSameOrigin = true;  // a new incarnation of the provider's object is updated in place
    if (in.wanted) {
      in.differs = stringOf(forged, "kind") == "Service" ? serviceNeedsUpdate(forged, existing)
                                                          : endpointSliceNeedsUpdate(forged, existing);
    }
  }
  return decideMirror(in);
}

}  // namespace strait::reflection
