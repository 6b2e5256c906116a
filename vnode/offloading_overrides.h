#pragma once
// The consumer's OffloadingOverride custom resources (reflection/pod_overrides.h) as the
// agent serves them:
//  - offloadingOverrideCrd(): the CustomResourceDefinition (namespaced, strait.io/v1alpha1,
//    short name oo) the agent installs beside the ForeignCluster one;
//  - admitOffloadingOverride(): the validating admission webhook (webhook_server.h serves it
//    at /validate-offloadingoverrides for CREATE and UPDATE): an invalid override is refused
//    at creation with every problem, each naming its field;
//  - OffloadingOverrides: an informer over every namespace's overrides, answering which apply
//    to one local Pod for one provider (its ForeignCluster name and its virtual node's
//    labels), in name order.
// Thread-safe: overridesFor() from any thread; start/stop from one thread.

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/client.h"
#include "kube/selector.h"
#include "reflection/pod_overrides.h"

namespace strait::kube {
class Informer;
}

namespace strait::vnode {

inline const kube::ResourceRef kOffloadingOverrides{"strait.io", "v1alpha1", "offloadingoverrides",
                                                    true};

nlohmann::json offloadingOverrideCrd();

// Creates the CRD (AlreadyExists is fine) and waits up to 30 s until it is served. Blocks.
kube::Status installOffloadingOverrideCrd(kube::Client& client);

// Answers an admission.k8s.io/v1 AdmissionReview for an OffloadingOverride: allowed, or
// refused with code 400 (BadRequest, as kubectl shows the webhook's message then) and
// parsePodOverride's message. Malformed reviews are refused.
nlohmann::json admitOffloadingOverride(const nlohmann::json& review);

class OffloadingOverrides {
 public:
  // `local` is borrowed and must outlive this. No I/O.
  explicit OffloadingOverrides(kube::Client& local);
  ~OffloadingOverrides();  // stop()

  // Starts the informer. Call once.
  void start();
  // Idempotent.
  void stop();

  // The overrides of `localPod`'s namespace that select the Pod and the provider, in name
  // order. Unavailable before the first list; Invalid when an override of the namespace
  // does not parse (one created while the webhook was not answering), naming it.
  kube::Result<reflection::PodOverrides> overridesFor(const nlohmann::json& localPod,
                                                      const std::string& providerName,
                                                      const kube::LabelSet& nodeLabels) const;

 private:
  kube::Client& local_;
  std::unique_ptr<kube::Informer> informer_;
};

}  // namespace strait::vnode
