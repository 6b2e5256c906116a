// EndpointSlice controller (upstream pkg/controller/endpointslice): for each Service with a
// selector, discovery.k8s.io/v1 EndpointSlices labelled kubernetes.io/service-name and
// endpointslice.kubernetes.io/managed-by, owned by the Service, one per distinct resolved
// port list (at most 100 endpoints each), each endpoint with conditions ready (ready and not
// terminating), serving (ready) and terminating. A Service selecting nothing gets one empty
// placeholder slice, as upstream. Slices go with their Service (garbage collector).
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
constexpr const char* kServiceNameLabel = "kubernetes.io/service-name";
constexpr const char* kManagedByLabel = "endpointslice.kubernetes.io/managed-by";
constexpr const char* kManagedBy = "endpointslice-controller.k8s.io";
constexpr size_t kMaxEndpointsPerSlice = 100;
constexpr auto kSeeOwnWrite = std::chrono::seconds(2);

struct DesiredSlice {
  std::string addressType;
  json ports;  // null for the placeholder
  json endpoints = json::array();
};

class EndpointSliceController : public Controller {
 public:
  explicit EndpointSliceController(ControllerContext& ctx)
      : ctx_(ctx),
        sliceInfo_(ctx.info("discovery.k8s.io", "endpointslices")),
        services_(ctx.informers.informer("", "services")),
        pods_(ctx.informers.informer("", "pods")),
        slices_(ctx.informers.informer("discovery.k8s.io", "endpointslices")),
        queue_(controllerQueue("endpointslice", 2),
               [this](const std::string& key) { return sync(key); }) {
    slices_.addIndex(kServiceNameLabel, [](const CachedObject& o) {
      auto labels = kube::getLabels(o.obj());
      auto it = labels.find(kServiceNameLabel);
      if (it == labels.end() || labels[kManagedByLabel] != kManagedBy) {
        return std::vector<std::string>{};
      }
      return std::vector<std::string>{objectKey(o.ns, it->second)};
    });
    services_.addHandlers(enqueueHandlers(queue_));
    pods_.addHandlers(podHandlersForServices(services_, queue_));
    InformerHandlers slice;
    auto sliceChanged = [this](const CachedPtr& o) {
      auto labels = kube::getLabels(o->obj());
      if (labels[kManagedByLabel] == kManagedBy && labels.count(kServiceNameLabel)) {
        queue_.add(objectKey(o->ns, labels[kServiceNameLabel]));
      }
    };
    slice.onUpdate = [sliceChanged](const CachedPtr&, const CachedPtr& o) { sliceChanged(o); };
    slice.onDelete = sliceChanged;
    slices_.addHandlers(slice);
  }

  void start() override { queue_.start(); }
  void stop() override { queue_.stop(); }

 private:
  std::vector<DesiredSlice> desired(const CachedObject& svc, const kube::LabelSelector& sel) {
    const bool publishNotReady = boolOf(child(svc.obj(), "spec"), "publishNotReadyAddresses");
    std::map<std::string, DesiredSlice> groups;  // addressType + ports -> slice
    for (const auto& p : pods_.list(svc.ns)) {
      if (!sel.matches(p->stored->labels)) continue;  // string labels, as stored
      const JsonPtr podTree = p->tree();
      const json& pod = *podTree;
      if (!podInEndpoints(pod, true)) continue;
      const std::string ip = podIp(pod);
      const bool terminating = kube::isBeingDeleted(pod);
      const bool podReady = isPodReady(pod);
      json ep = {{"addresses", json::array({ip})},
                 {"conditions",
                  {{"ready", publishNotReady || (podReady && !terminating)},
                   {"serving", podReady},
                   {"terminating", terminating}}},
                 {"targetRef",
                  {{"kind", "Pod"}, {"namespace", p->ns}, {"name", p->name}, {"uid", p->uid}}}};
      std::string node = stringOf(child(pod, "spec"), "nodeName");
      if (!node.empty()) ep["nodeName"] = node;
      json ports = resolvePorts(svc.obj(), pod);
      std::string type = ip.find(':') == std::string::npos ? "IPv4" : "IPv6";
      auto& g = groups[type + ports.dump()];
      g.addressType = type;
      g.ports = ports;
      g.endpoints.push_back(ep);
    }
    std::vector<DesiredSlice> out;
    for (auto& [k, g] : groups) {
      std::sort(g.endpoints.begin(), g.endpoints.end(), [](const json& a, const json& b) {
        return a["addresses"][0].get<std::string>() < b["addresses"][0].get<std::string>();
      });
      for (size_t i = 0; i < g.endpoints.size(); i += kMaxEndpointsPerSlice) {
        DesiredSlice d{g.addressType, g.ports, json::array()};
        size_t end = std::min(g.endpoints.size(), i + kMaxEndpointsPerSlice);
        for (size_t j = i; j < end; ++j) d.endpoints.push_back(g.endpoints[j]);
        out.push_back(std::move(d));
      }
    }
    if (out.empty()) out.push_back(DesiredSlice{"IPv4", json(), json::array()});
    return out;
  }

  static bool sameContent(const json& slice, const DesiredSlice& d, const kube::LabelSet& labels) {
    json ports = slice.contains("ports") ? slice["ports"] : json();
    return stringOf(slice, "addressType") == d.addressType && ports == d.ports &&
           childArray(slice, "endpoints") == d.endpoints && kube::getLabels(slice) == labels;
  }

  kube::Status sync(const std::string& key) {
    auto [ns, name] = splitObjectKey(key);
    auto svc = services_.get(ns, name);
    if (!svc || kube::isBeingDeleted(svc->obj())) return kube::Status::OK();  // GC removes slices
    auto selector = serviceSelector(svc->obj());
    if (!selector) return kube::Status::OK();
    auto want = desired(*svc, *selector);
    kube::LabelSet labels = kube::getLabels(svc->obj());
    labels[kServiceNameLabel] = name;
    labels[kManagedByLabel] = kManagedBy;
    auto existing = slices_.byIndex(kServiceNameLabel, key);
    std::sort(existing.begin(), existing.end(),
              [](const CachedPtr& a, const CachedPtr& b) { return a->name < b->name; });
    std::vector<bool> used(existing.size(), false);
    std::vector<const DesiredSlice*> unplaced;
    // Keep slices that already hold exactly what is wanted.
    for (const auto& d : want) {
      bool placed = false;
      for (size_t i = 0; i < existing.size() && !placed; ++i) {
        if (!used[i] && sameContent(existing[i]->obj(), d, labels)) used[i] = placed = true;
      }
      if (!placed) unplaced.push_back(&d);
    }
    for (const DesiredSlice* d : unplaced) {
      size_t i = 0;
      while (i < existing.size() && used[i]) ++i;
      if (i < existing.size()) {
        used[i] = true;
        auto r = ctx_.rest.mutate(sliceInfo_, ns, existing[i]->name, "", [&](json& obj) {
          fill(obj, *d, labels);
          return kube::Status::OK();
        });
        if (!r && r.error().code != kube::Code::NotFound) return r.error();
        if (r) {
          slices_.waitFor(ns, existing[i]->name, (*r)->rv, kSeeOwnWrite);
          continue;
        }
      }
      json slice = {{"apiVersion", "discovery.k8s.io/v1"},
                    {"kind", "EndpointSlice"},
                    {"metadata",
                     {{"generateName", name + "-"},
                      {"namespace", ns},
                      {"ownerReferences",
                       json::array({{{"apiVersion", "v1"},
                                     {"kind", "Service"},
                                     {"name", name},
                                     {"uid", svc->uid},
                                     {"controller", true},
                                     {"blockOwnerDeletion", true}}})}}}};
      fill(slice, *d, labels);
      auto r = ctx_.rest.create(sliceInfo_, ns, slice, WriteOptions{}, nullptr);
      if (!r) {
        auto code = r.error().code;
        if (code == kube::Code::Forbidden || code == kube::Code::NotFound) return kube::Status::OK();
        return r.error();
      }
      auto created = makeCached(*r);
      if (created) slices_.waitFor(ns, created->name, (*r)->rv, kSeeOwnWrite);
      spdlog::info("event=endpointslice_created service={} slice={} endpoints={}", key,
                   created ? created->name : "", d->endpoints.size());
    }
    for (size_t i = 0; i < existing.size(); ++i) {
      if (used[i]) continue;
      DeleteOptions del;
      del.preconditionUid = existing[i]->uid;
      auto r = ctx_.rest.remove(sliceInfo_, ns, existing[i]->name, del);
      if (!r && r.error().code != kube::Code::NotFound) return r.error();
      slices_.waitFor(ns, existing[i]->name, 0, kSeeOwnWrite);
    }
    return kube::Status::OK();
  }

  static void fill(json& obj, const DesiredSlice& d, const kube::LabelSet& labels) {
    kube::setLabels(obj, labels);
    obj["addressType"] = d.addressType;
    obj["endpoints"] = d.endpoints;
    if (d.ports.is_null()) {
      obj.erase("ports");
    } else {
      obj["ports"] = d.ports;
    }
  }

  ControllerContext& ctx_;
  const ResourceInfo& sliceInfo_;
  LocalInformer& services_;
  LocalInformer& pods_;
  LocalInformer& slices_;
  kube::WorkerPool queue_;
};

}  // namespace

std::unique_ptr<Controller> newEndpointSliceController(ControllerContext& ctx) {
  return std::make_unique<EndpointSliceController>(ctx);
}

}  // namespace strait::minicluster
