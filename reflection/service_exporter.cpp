#include "reflection/service_exporter.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "kube/informer.h"
#include "kube/object.h"
#include "peering/names.h"
#include "reflection/service_export.h"
#include "reflection/service_forge.h"

namespace strait::reflection {

using json = nlohmann::json;
namespace res = kube::resources;

namespace {

constexpr const char* kServiceIndex = "service";  // EndpointSlices by "ns/service"

std::string sliceServiceKey(const json& slice) {
  const std::string svc = endpointSliceServiceName(slice);
  return svc.empty() ? std::string() : kube::getNamespace(slice) + "/" + svc;
}

}  // namespace

ServiceExporter::ServiceExporter(kube::Client& provider, ServiceExporterOptions opts)
    : provider_(provider), opts_(std::move(opts)) {}

ServiceExporter::~ServiceExporter() { stop(); }

void ServiceExporter::start() {
  kube::InformerOptions so{res::kServices, "", "", ""};
  so.compactCache = true;
  kube::InformerOptions eo{res::kEndpointSlices, "", "", ""};
  eo.compactCache = true;
  services_ = std::make_unique<kube::Informer>(provider_, so);
  slices_ = std::make_unique<kube::Informer>(provider_, eo);
  slices_->addIndex(kServiceIndex, [](const json& s) {
    std::string key = sliceServiceKey(s);
    return key.empty() ? std::vector<std::string>{} : std::vector<std::string>{key};
  });
  services_->addHandlers(
      {[this](const kube::ObjectPtr& s) { onService(*s); },
       [this](const kube::ObjectPtr&, const kube::ObjectPtr& s) { onService(*s); },
       [this](const kube::ObjectPtr& s) { onServiceGone(*s); }});
  slices_->addHandlers({[this](const kube::ObjectPtr& s) { onSlice(*s); },
                        [this](const kube::ObjectPtr&, const kube::ObjectPtr& s) { onSlice(*s); },
                        [this](const kube::ObjectPtr& s) { onSliceGone(*s); }});
  slices_->start();
  services_->start();
  synced_ = std::jthread([this](std::stop_token st) { sendSynced(st); });
}

void ServiceExporter::stop() {
  {
    base::MutexLock l(mu_);
    stopped_ = true;
  }
  synced_.request_stop();
  if (synced_.joinable()) synced_.join();
  if (services_) services_->stop();
  if (slices_) slices_->stop();
}

size_t ServiceExporter::exportedServices() const {
  base::MutexLock l(mu_);
  return servicesSent_.size();
}

bool ServiceExporter::wanted(const json& svc) const {
  auto labels = kube::getLabels(svc);
  auto m = labels.find(std::string(peering::kLabelManagedBy));
  if (m != labels.end() && m->second == peering::kManagedByValue) return false;
  std::vector<std::string> ids = exportConsumers(svc);
  return std::find(ids.begin(), ids.end(), opts_.consumerId) != ids.end();
}

void ServiceExporter::onService(const json& svc) {
  const std::string key = kube::objectKey(svc);
  base::MutexLock l(mu_);
  if (stopped_) return;
  if (!wanted(svc)) {
    unexportServiceLocked(key);
    return;
  }
  kube::Result<json> forged = forgeExportedService(svc, "");
  if (!forged.ok()) {
    spdlog::warn("event=service_not_exported consumer={} service={} error=\"{}\"",
                 opts_.consumerId, key, forged.error().message);
    unexportServiceLocked(key);
    return;
  }
  // The consumer labels the copy with this provider's ID itself: it knows which stream
  // the message came on, and a provider cannot claim another's.
  const bool first = servicesSent_.count(key) == 0;
  opts_.send(StreamMessage::exported(*forged, kube::getUid(svc)));
  servicesSent_[key] = kube::getUid(svc);
  if (first) {
    spdlog::info("event=service_exported consumer={} service={}", opts_.consumerId, key);
    for (const kube::ObjectPtr& s : slices_->cache().byIndex(kServiceIndex, key)) {
      sendSliceLocked(*s);
    }
  }
}

void ServiceExporter::onServiceGone(const json& svc) {
  base::MutexLock l(mu_);
  if (stopped_) return;
  unexportServiceLocked(kube::objectKey(svc));
}

void ServiceExporter::onSlice(const json& slice) {
  base::MutexLock l(mu_);
  if (stopped_) return;
  const std::string key = kube::objectKey(slice);
  const std::string svc = sliceServiceKey(slice);
  if (svc.empty() || servicesSent_.count(svc) == 0) {
    unexportSliceLocked(key);  // moved to a Service not exported
    return;
  }
  sendSliceLocked(slice);
}

void ServiceExporter::onSliceGone(const json& slice) {
  base::MutexLock l(mu_);
  if (stopped_) return;
  unexportSliceLocked(kube::objectKey(slice));
}

void ServiceExporter::sendSliceLocked(const json& slice) {
  kube::Result<json> forged = forgeExportedEndpointSlice(slice, "");
  if (!forged.ok()) {
    spdlog::warn("event=endpointslice_not_exported consumer={} slice={} error=\"{}\"",
                 opts_.consumerId, kube::objectKey(slice), forged.error().message);
    return;
  }
  opts_.send(StreamMessage::exported(*forged, kube::getUid(slice)));
  slicesSent_[kube::objectKey(slice)] = {kube::getUid(slice), sliceServiceKey(slice)};
}

void ServiceExporter::unexportSliceLocked(const std::string& key) {
  auto it = slicesSent_.find(key);
  if (it == slicesSent_.end()) return;
  const size_t slash = key.find('/');
  opts_.send(StreamMessage::unexport("EndpointSlice", key.substr(0, slash),
                                     key.substr(slash + 1), it->second.first));
  slicesSent_.erase(it);
}

void ServiceExporter::unexportServiceLocked(const std::string& key) {
  auto it = servicesSent_.find(key);
  if (it == servicesSent_.end()) return;
  std::vector<std::string> slices;
  for (const auto& [sliceKey, v] : slicesSent_) {
    if (v.second == key) slices.push_back(sliceKey);
  }
  for (const std::string& s : slices) unexportSliceLocked(s);
  const size_t slash = key.find('/');
  opts_.send(StreamMessage::unexport("Service", key.substr(0, slash), key.substr(slash + 1),
                                     it->second));
  servicesSent_.erase(it);
  spdlog::info("event=service_unexported consumer={} service={}", opts_.consumerId, key);
}

void ServiceExporter::sendSynced(std::stop_token st) {
  while (!st.stop_requested() && !(services_->waitForSync(std::chrono::milliseconds(200)) &&
                                   slices_->waitForSync(std::chrono::milliseconds(200)))) {
  }
  base::MutexLock l(mu_);
  if (st.stop_requested() || stopped_) return;
  std::vector<std::string> uids;
  for (const auto& [k, uid] : servicesSent_) uids.push_back(uid);
  for (const auto& [k, v] : slicesSent_) uids.push_back(v.first);
  opts_.send(StreamMessage::exportSynced(uids));
  spdlog::info("event=service_exports_synced consumer={} services={} slices={}",
               opts_.consumerId, servicesSent_.size(), slicesSent_.size());
}

}  // namespace strait::reflection
