// The kubernetes Service and its endpoints (see master_service.h).
#include "minicluster/master_service.h"

namespace strait::minicluster {
namespace {

using kube::Code;
using kube::makeError;
using nlohmann::json;

// Creates `obj`, or lets `update` bring the stored one up to date.
kube::Status ensure(Rest& rest, const ResourceInfo& info, const json& obj,
                    const std::function<void(json&)>& update) {
  std::string name = obj["metadata"]["name"];
  WriteOptions wo;
  auto c = rest.create(info, "default", obj, wo, nullptr);
  if (c) return kube::Status::OK();
  if (c.error().code != Code::AlreadyExists) {
    return makeError(c.error().code, info.resource + "/" + name + ": " + c.error().message);
  }
  auto u = rest.mutate(info, "default", name, "", [&](json& cur) -> kube::Status {
    update(cur);
    return kube::Status::OK();
  });
  if (!u) return makeError(u.error().code, info.resource + "/" + name + ": " + u.error().message);
  return kube::Status::OK();
}

}  // namespace

kube::Status publishKubernetesService(Rest& rest, Registry& registry, const std::string& address,
                                      uint16_t port) {
  auto services = registry.find("", "v1", "services");
  auto endpoints = registry.find("", "v1", "endpoints");
  auto slices = registry.find("discovery.k8s.io", "v1", "endpointslices");
  if (!services || !endpoints || !slices) return makeError(Code::Internal, "services, endpoints or endpointslices not served");
  json labels = {{"component", "apiserver"}, {"provider", "kubernetes"}};
  json svc = {{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata", {{"name", "kubernetes"}, {"namespace", "default"}, {"labels", labels}}},
              {"spec",
               {{"clusterIP", kKubernetesServiceIP},
                {"type", "ClusterIP"},
                {"sessionAffinity", "None"},
                {"ports", json::array({{{"name", "https"},
                                        {"port", 443},
                                        {"protocol", "TCP"},
                                        {"targetPort", port}}})}}}};
  if (auto s = ensure(rest, *services, svc, [&](json& cur) { cur["spec"]["ports"] = svc["spec"]["ports"]; }); !s) {
    return s;
  }
  json subsets = json::array({{{"addresses", json::array({{{"ip", address}}})},
                               {"ports", json::array({{{"name", "https"}, {"port", port}, {"protocol", "TCP"}}})}}});
  json ep = {{"apiVersion", "v1"},
             {"kind", "Endpoints"},
             {"metadata", {{"name", "kubernetes"}, {"namespace", "default"}, {"labels", {{"endpointslice.kubernetes.io/skip-mirror", "true"}}}}},
             {"subsets", subsets}};
  if (auto s = ensure(rest, *endpoints, ep, [&](json& cur) { cur["subsets"] = subsets; }); !s) return s;
  json sliceEndpoints = json::array({{{"addresses", json::array({address})}, {"conditions", {{"ready", true}}}}});
  json slicePorts = json::array({{{"name", "https"}, {"port", port}, {"protocol", "TCP"}}});
  json slice = {{"apiVersion", "discovery.k8s.io/v1"},
                {"kind", "EndpointSlice"},
                {"metadata",
                 {{"name", "kubernetes"},
                  {"namespace", "default"},
                  {"labels", {{"kubernetes.io/service-name", "kubernetes"}}}}},
                {"addressType", "IPv4"},
                {"endpoints", sliceEndpoints},
                {"ports", slicePorts}};
  return ensure(rest, *slices, slice, [&](json& cur) {
    cur["endpoints"] = sliceEndpoints;
    cur["ports"] = slicePorts;
  });
}

}  // namespace strait::minicluster
