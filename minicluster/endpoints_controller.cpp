// Endpoints controller (upstream pkg/controller/endpoint): for each Service with a selector,
// an Endpoints object of the same name listing the selected pods' IPs, ready ones under
// `addresses` and the others under `notReadyAddresses` (all under `addresses` with
// spec.publishNotReadyAddresses), grouped into subsets by their resolved ports. Deleted
// with its Service.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "kube/json_access.h"
#include "kube/object.h"
#include "minicluster/controller_context.h"
#include "minicluster/pod_util.h"
#include "minicluster/service_endpoints.h"

namespace strait::minicluster {
namespace {

using kube::boolOf;
using kube::child;
using kube::childArray;
using kube::stringOf;

using json = nlohmann::json;

bool byIp(const json& a, const json& b) { return stringOf(a, "ip") < stringOf(b, "ip"); }

class EndpointsController : public Controller {
 public:
  explicit EndpointsController(ControllerContext& ctx)
      : ctx_(ctx),
        epInfo_(ctx.info("", "endpoints")),
        services_(ctx.informers.informer("", "services")),
        pods_(ctx.informers.informer("", "pods")),
        endpoints_(ctx.informers.informer("", "endpoints")),
        queue_(controllerQueue("endpoint", 2),
               [this](const std::string& key) { return sync(key); }) {
    services_.addHandlers(enqueueHandlers(queue_));
    pods_.addHandlers(podHandlersForServices(services_, queue_));
    InformerHandlers ep;
    ep.onDelete = [this](const CachedPtr& o) { queue_.add(objectKey(o->ns, o->name)); };
    endpoints_.addHandlers(ep);
  }

  void start() override { queue_.start(); }
  void stop() override { queue_.stop(); }

 private:
  kube::Status sync(const std::string& key) {
    auto [ns, name] = splitObjectKey(key);
    auto svc = services_.get(ns, name);
    if (!svc) {
      if (!endpoints_.get(ns, name)) return kube::Status::OK();
      auto r = ctx_.rest.remove(epInfo_, ns, name, DeleteOptions{});
      if (!r && r.error().code != kube::Code::NotFound) return r.error();
      return kube::Status::OK();
    }
    auto selector = serviceSelector(svc->obj());
    if (!selector || kube::isBeingDeleted(svc->obj())) return kube::Status::OK();
    const bool publishNotReady = boolOf(child(svc->obj(), "spec"), "publishNotReadyAddresses");
    const bool noPorts = childArray(child(svc->obj(), "spec"), "ports").empty();

    // Resolved port list (as JSON text) -> subset being built.
    std::map<std::string, json> subsets;
    for (const auto& p : pods_.list(ns)) {
      if (!selector->matches(p->stored->labels)) continue;  // string labels, as stored
      const JsonPtr podTree = p->tree();
      const json& pod = *podTree;
      if (!podInEndpoints(pod, publishNotReady)) continue;
      json addr = {{"ip", podIp(pod)},
                   {"targetRef",
                    {{"kind", "Pod"}, {"namespace", p->ns}, {"name", p->name}, {"uid", p->uid}}}};
      std::string node = stringOf(child(pod, "spec"), "nodeName");
      if (!node.empty()) addr["nodeName"] = node;
      json ports = resolvePorts(svc->obj(), pod);
      if (ports.empty() && !noPorts) continue;  // no port of the Service exists on this pod
      json& subset = subsets[ports.dump()];
      if (!ports.empty()) {
        for (auto& port : ports) {
          if (port["name"] == "") port.erase("name");
        }
        subset["ports"] = ports;
      }
      bool ready = publishNotReady || isPodReady(pod);
      subset[ready ? "addresses" : "notReadyAddresses"].push_back(addr);
    }
    json list = json::array();
    for (auto& [k, s] : subsets) {
      for (const char* f : {"addresses", "notReadyAddresses"}) {
        if (s.contains(f)) std::sort(s[f].begin(), s[f].end(), byIp);
      }
      list.push_back(s);
    }
    auto labels = kube::getLabels(svc->obj());
    if (stringOf(child(svc->obj(), "spec"), "clusterIP") == "None") {
      labels["service.kubernetes.io/headless"] = "";
    }
    auto cur = endpoints_.get(ns, name);
    if (cur) {
      if (childArray(cur->obj(), "subsets") == list && kube::getLabels(cur->obj()) == labels) {
        return kube::Status::OK();
      }
      auto r = ctx_.rest.mutate(epInfo_, ns, name, "", [&](json& obj) {
        if (list.empty()) {
          obj.erase("subsets");
        } else {
          obj["subsets"] = list;
        }
        kube::setLabels(obj, labels);
        return kube::Status::OK();
      });
      if (r) return kube::Status::OK();
      if (r.error().code != kube::Code::NotFound) return r.error();
    }
    json ep = {{"apiVersion", "v1"}, {"kind", "Endpoints"}, {"metadata", {{"name", name}, {"namespace", ns}}}};
    if (!labels.empty()) kube::setLabels(ep, labels);
    if (!list.empty()) ep["subsets"] = list;
    auto r = ctx_.rest.create(epInfo_, ns, ep, WriteOptions{}, nullptr);
    if (!r) {
      if (r.error().code == kube::Code::AlreadyExists) {
        queue_.addAfter(key, std::chrono::milliseconds(100));  // informer lag: check again
      }
      return benignCreateError(r.error().code) ? kube::Status::OK() : kube::Status(r.error());
    }
    return kube::Status::OK();
  }

  ControllerContext& ctx_;
  const ResourceInfo& epInfo_;
  LocalInformer& services_;
  LocalInformer& pods_;
  LocalInformer& endpoints_;
  kube::WorkerPool queue_;
};

}  // namespace

std::unique_ptr<Controller> newEndpointsController(ControllerContext& ctx) {
  return std::make_unique<EndpointsController>(ctx);
}

}  // namespace strait::minicluster
