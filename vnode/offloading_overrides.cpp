// OffloadingOverride CRD, admission and lookup (see offloading_overrides.h).
#include "vnode/offloading_overrides.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "kube/informer.h"
#include "kube/json_access.h"
#include "kube/object.h"
#include "peering/foreign_cluster.h"
#include "peering/names.h"

namespace strait::vnode {

using nlohmann::json;

json offloadingOverrideCrd() {
  json version = {
      {"name", std::string(reflection::kOverrideVersion)},
      {"served", true},
      {"storage", true},
      {"schema",
       {{"openAPIV3Schema",
         {{"type", "object"},
          {"properties",
           {{"spec", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}}}}}},
      {"additionalPrinterColumns",
       json::array(
           {{{"name", "Providers"}, {"type", "string"}, {"jsonPath", ".spec.providers.names"}},
            {{"name", "Age"}, {"type", "date"}, {"jsonPath", ".metadata.creationTimestamp"}}})}};
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata",
           {{"name", std::string(reflection::kOverridePlural) + "." +
                         std::string(reflection::kOverrideGroup)},
            {"labels", {{std::string(peering::kLabelComponent), "crd"}}}}},
          {"spec",
           {{"group", std::string(reflection::kOverrideGroup)},
            {"scope", "Namespaced"},
            {"names",
             {{"plural", std::string(reflection::kOverridePlural)},
              {"singular", "offloadingoverride"},
              {"kind", std::string(reflection::kOverrideKind)},
              {"listKind", "OffloadingOverrideList"},
              {"shortNames", {"oo"}}}},
            {"versions", json::array({version})}}}};
}

kube::Status installOffloadingOverrideCrd(kube::Client& client) {
  kube::Result<json> r = client.create(peering::kCrds, "", offloadingOverrideCrd());
  if (!r.ok() && r.code() != kube::Code::AlreadyExists) return r.error();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (true) {
    kube::Result<json> l = client.list(kOffloadingOverrides, "");
    if (l.ok()) return kube::Status::OK();
    if (std::chrono::steady_clock::now() > deadline) return l.error();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

json admitOffloadingOverride(const json& review) {
  const json req = review.is_object() ? review.value("request", json()) : json();
  json resp = {{"uid", req.is_object() ? kube::stringOf(req, "uid") : std::string()},
               {"allowed", true}};
  std::string message;
  if (!req.is_object() || !kube::hasObject(req, "object")) {
    message = "malformed AdmissionReview: no request.object";
  } else {
    kube::Result<reflection::PodOverride> o = reflection::parsePodOverride(req["object"]);
    if (!o.ok()) message = "invalid OffloadingOverride: " + o.error().message;
  }
  if (!message.empty()) {
    resp["allowed"] = false;
    resp["status"] = {{"code", 400}, {"reason", "BadRequest"}, {"message", message}};
  }
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"response", std::move(resp)}};
}

OffloadingOverrides::OffloadingOverrides(kube::Client& local) : local_(local) {}

OffloadingOverrides::~OffloadingOverrides() { stop(); }

void OffloadingOverrides::start() {
  informer_ = std::make_unique<kube::Informer>(
      local_, kube::InformerOptions{kOffloadingOverrides, "", "", ""});
  informer_->start();
}

void OffloadingOverrides::stop() {
  if (informer_) informer_->stop();
}

kube::Result<reflection::PodOverrides> OffloadingOverrides::overridesFor(
    const json& localPod, const std::string& providerName, const kube::LabelSet& nodeLabels) const {
  if (!informer_ || !informer_->hasSynced()) {
    return kube::makeError(kube::Code::Unavailable, "offloading overrides not listed yet");
  }
  const std::string ns = kube::getNamespace(localPod);
  std::vector<kube::ObjectPtr> objs;
  for (const kube::ObjectPtr& o : informer_->cache().list()) {
    if (kube::getNamespace(*o) == ns) objs.push_back(o);
  }
  std::sort(objs.begin(), objs.end(), [](const kube::ObjectPtr& a, const kube::ObjectPtr& b) {
    return kube::getName(*a) < kube::getName(*b);
  });
  reflection::PodOverrides out;
  for (const kube::ObjectPtr& obj : objs) {
    kube::Result<reflection::PodOverride> o = reflection::parsePodOverride(*obj);
    if (!o.ok()) {
      return kube::makeError(kube::Code::Invalid, "offloading override " + ns + "/" +
                                                      kube::getName(*obj) +
                                                      " is invalid: " + o.error().message);
    }
    if (!reflection::overrideSelectsProvider(*o, providerName, nodeLabels) ||
        !reflection::overrideSelectsPod(*o, localPod)) {
      continue;
    }
    out.push_back(std::make_shared<const reflection::PodOverride>(std::move(*o)));
  }
  return out;
}

}  // namespace strait::vnode
