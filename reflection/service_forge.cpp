#include "reflection/service_forge.h"

#include "kube/json_access.h"
#include "kube/object.h"
#include "reflection/labels.h"

namespace strait::reflection {

using kube::hasArray;
using kube::hasObject;
using kube::stringOf;
using nlohmann::json;

namespace {

// The spec fields a remote Service keeps as they are (ports and clusterIP have rules).
constexpr const char* kServiceSpecFields[] = {
    "type",          "externalName",          "selector",
    "sessionAffinity", "sessionAffinityConfig", "publishNotReadyAddresses",
    "internalTrafficPolicy", "externalTrafficPolicy", "ipFamilies",
    "ipFamilyPolicy"};

json forgeServicePorts(const json& ports) {
  json out = json::array();
  if (!ports.is_array()) return out;
  for (const json& p : ports) {
    if (!p.is_object()) continue;
    json q = json::object();
    for (const char* k : {"name", "protocol", "port", "targetPort", "appProtocol"}) {
      if (p.contains(k)) q[k] = p[k];
    }
    out.push_back(std::move(q));
  }
  return out;
}

// The part of a Service the forge decides, for comparison.
json reflectedServiceView(const json& svc) {
  json v = json::object();
  v["labels"] = hasObject(svc, "metadata") ? svc["metadata"].value("labels", json::object())
                                           : json::object();
  v["annotations"] = hasObject(svc, "metadata")
                         ? svc["metadata"].value("annotations", json::object())
                         : json::object();
  const json spec = hasObject(svc, "spec") ? svc["spec"] : json::object();
  for (const char* k : kServiceSpecFields) {
    if (spec.contains(k)) v[k] = spec[k];
  }
  v["ports"] = forgeServicePorts(spec.value("ports", json::array()));
  v["headless"] = stringOf(spec, "clusterIP") == "None";
  return v;
}

json reflectedSliceView(const json& slice) {
  json v = json::object();
  v["labels"] = hasObject(slice, "metadata")
                    ? slice["metadata"].value("labels", json::object())
                    : json::object();
  v["annotations"] = hasObject(slice, "metadata")
                         ? slice["metadata"].value("annotations", json::object())
                         : json::object();
  v["addressType"] = slice.value("addressType", json());
  v["ports"] = slice.value("ports", json::array());
  v["endpoints"] = slice.value("endpoints", json::array());
  return v;
}

}  // namespace

bool serviceReflectionDisabled(const json& service) {
  auto a = kube::getAnnotations(service);
  auto it = a.find(std::string(peering::kAnnotationReflection));
  return it != a.end() && it->second == peering::kReflectionDisabled;
}

kube::Result<json> forgeRemoteService(const json& local, const ObjectForgeContext& ctx) {
  if (!hasObject(local, "spec")) {
    return kube::makeError(kube::Code::Invalid, "cannot forge remote Service: no spec", "spec");
  }
  kube::Result<json> out = forgeReflectedMeta(local, ctx, "Service");
  if (!out.ok()) return out;
  const json& spec = local["spec"];
  json remote = json::object();
  for (const char* k : kServiceSpecFields) {
    if (spec.contains(k)) remote[k] = spec[k];
  }
  if (stringOf(spec, "clusterIP") == "None") {
    remote["clusterIP"] = "None";  // headless stays headless
    remote["clusterIPs"] = json::array({"None"});
  }
  if (spec.contains("ports")) remote["ports"] = forgeServicePorts(spec["ports"]);
  (*out)["spec"] = std::move(remote);
  return out;
}

bool serviceNeedsUpdate(const json& forged, const json& remote) {
  return reflectedServiceView(forged) != reflectedServiceView(remote);
}

std::string endpointSliceServiceName(const json& slice) {
  auto labels = kube::getLabels(slice);
  auto it = labels.find(kLabelServiceName);
  return it == labels.end() ? std::string() : it->second;
}

kube::Result<json> forgeRemoteEndpointSlice(const json& local, const ObjectForgeContext& ctx,
                                            const IsVirtualNode& isVirtualNode) {
  if (!local.is_object() || stringOf(local, "kind", "EndpointSlice") != "EndpointSlice") {
    return kube::makeError(kube::Code::Invalid,
                           "cannot forge remote EndpointSlice: not an EndpointSlice", "kind");
  }
  const std::string service = endpointSliceServiceName(local);
  if (service.empty()) {
    return kube::makeError(kube::Code::Invalid,
                           std::string("cannot forge remote EndpointSlice: no ") +
                               kLabelServiceName + " label",
                           "metadata.labels");
  }
  kube::Result<json> out = forgeReflectedMeta(local, ctx, "EndpointSlice");
  if (!out.ok()) return out;
  json& o = *out;
  o["apiVersion"] = "discovery.k8s.io/v1";
  json& labels = o["metadata"]["labels"];
  labels[kLabelServiceName] = service;
  labels[kLabelEndpointSliceManagedBy] = std::string(peering::kEndpointSliceManagedByValue);
  // The local controller's annotations (last-change-trigger-time) say nothing remotely.
  json annotations = json::object();
  for (const char* k : {peering::kAnnotationOriginNamespace.data(),
                        peering::kAnnotationOriginName.data()}) {
    annotations[k] = o["metadata"]["annotations"].value(k, "");
  }
  o["metadata"]["annotations"] = std::move(annotations);
  o["addressType"] = local.value("addressType", json("IPv4"));
  o["ports"] = local.contains("ports") && local["ports"].is_array() ? local["ports"] : json::array();
  json endpoints = json::array();
  if (hasArray(local, "endpoints")) {
    for (const json& e : local["endpoints"]) {
      if (!e.is_object()) continue;
      const std::string node = stringOf(e, "nodeName");
      if (!node.empty() && isVirtualNode && isVirtualNode(node)) continue;
      json r = json::object();
      r["addresses"] = e.value("addresses", json::array());
      json conditions = json::object();
      if (hasObject(e, "conditions")) {
        for (const char* c : {"ready", "serving", "terminating"}) {
          if (e["conditions"].contains(c)) conditions[c] = e["conditions"][c];
        }
      }
      r["conditions"] = std::move(conditions);
      if (e.contains("hostname")) r["hostname"] = e["hostname"];
      endpoints.push_back(std::move(r));
    }
  }
  o["endpoints"] = std::move(endpoints);
  return out;
}

bool endpointSliceHasEndpoints(const json& slice) {
  return hasArray(slice, "endpoints") && !slice["endpoints"].empty();
}

bool endpointSliceNeedsUpdate(const json& forged, const json& remote) {
  return reflectedSliceView(forged) != reflectedSliceView(remote);
}

json endpointSliceNotReady(const json& slice, bool* changed) {
  json out = slice;
  bool flipped = false;
  if (hasArray(out, "endpoints")) {
    for (json& e : out["endpoints"]) {
      if (!e.is_object()) continue;
      json& c = e["conditions"];
      if (!c.is_object()) c = json::object();
      for (const char* k : {"ready", "serving"}) {
        if (!c.contains(k) || c[k] != json(false)) {
          c[k] = false;
          flipped = true;
        }
      }
    }
  }
  if (changed) *changed = flipped;
  return out;
}

namespace {

std::string firstAddress(const json& endpoint) {
  if (!hasArray(endpoint, "addresses") || endpoint["addresses"].empty() ||
      !endpoint["addresses"][0].is_string()) {
    return "";
  }
  return endpoint["addresses"][0].get<std::string>();
}

}  // namespace

json holdEndpointSlice(const json& slice, bool* changed) {
  bool flipped = false;
  json out = endpointSliceNotReady(slice, &flipped);
  const json annotations = hasObject(out, "metadata")
                               ? out["metadata"].value("annotations", json::object())
                               : json::object();
  if (!annotations.is_object() || !annotations.contains(kAnnotationHeldEndpointConditions)) {
    json record = json::object();
    if (hasArray(slice, "endpoints")) {
      for (const json& e : slice["endpoints"]) {
        const std::string address = e.is_object() ? firstAddress(e) : std::string();
        if (address.empty()) continue;
        record[address] = hasObject(e, "conditions") ? e["conditions"] : json::object();
      }
    }
    if (!out["metadata"].is_object()) out["metadata"] = json::object();
    json& a = out["metadata"]["annotations"];
    if (!a.is_object()) a = json::object();
    a[kAnnotationHeldEndpointConditions] = record.dump();
    flipped = true;
  }
  if (changed) *changed = flipped;
  return out;
}

json releaseEndpointSlice(const json& slice, bool* changed) {
  if (changed) *changed = false;
  if (!hasObject(slice, "metadata") || !hasObject(slice["metadata"], "annotations") ||
      !slice["metadata"]["annotations"].contains(kAnnotationHeldEndpointConditions)) {
    return slice;
  }
  json out = slice;
  json& annotations = out["metadata"]["annotations"];
  const json& text = annotations[kAnnotationHeldEndpointConditions];
  const json record =
      text.is_string() ? json::parse(text.get<std::string>(), nullptr, false) : json();
  if (record.is_object() && hasArray(out, "endpoints")) {
    for (json& e : out["endpoints"]) {
      if (!e.is_object()) continue;
      auto it = record.find(firstAddress(e));
      if (it == record.end() || !it->is_object()) continue;
      e["conditions"] = *it;
    }
  }
  annotations.erase(kAnnotationHeldEndpointConditions);
  if (annotations.empty()) out["metadata"].erase("annotations");
  if (changed) *changed = true;
  return out;
}

const char* mirrorActionName(MirrorAction a) {
  switch (a) {
    case MirrorAction::None:
      return "None";
    case MirrorAction::Apply:
      return "Apply";
    case MirrorAction::Delete:
      return "Delete";
    case MirrorAction::Conflict:
      return "Conflict";
  }
  return "Unknown";
}

MirrorAction decideMirror(const MirrorInput& in) {
  if (in.remoteExists && !in.remoteOurs) {
    // Never overwritten nor deleted; only worth a report while the local object wants it.
    return in.wanted ? MirrorAction::Conflict : MirrorAction::None;
  }
  if (!in.wanted) return in.remoteExists ? MirrorAction::Delete : MirrorAction::None;
  if (!in.remoteExists) return MirrorAction::Apply;
  // Ours, but mirroring an earlier incarnation of the local object: delete it first (the
  // reflector then creates the new one).
  if (!in.remoteSameOrigin) return MirrorAction::Delete;
  return in.differs ? MirrorAction::Apply : MirrorAction::None;
}

}  // namespace strait::reflection
