#pragma once
// Admission for the minicluster's write path (upstream k8s.io/apiserver admission): the REST
// layer calls mutate() after defaulting and before validation, and validate() after
// validation, for creates, updates (subresources included) and deletes. The implementation
// here calls the MutatingWebhookConfiguration and ValidatingWebhookConfiguration webhooks
// (admission_webhooks.cpp).
//
// Thread-safe: called concurrently from every writer.

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/status.h"
#include "minicluster/registry.h"

namespace strait::minicluster {

class Store;

// Who makes a request (AdmissionReview request.userInfo).
struct UserInfo {
  std::string username;  // "" = the API server's own controllers
  std::vector<std::string> groups;
};

struct AdmissionAttributes {
  std::string operation;  // CREATE, UPDATE, DELETE
  const ResourceInfo* info = nullptr;
  std::string subresource;
  std::string ns;
  std::string name;
  const nlohmann::json* oldObject = nullptr;  // UPDATE and DELETE: the stored object
  bool dryRun = false;
  UserInfo user;
};

class Admission {
 public:
  virtual ~Admission() = default;
  // Lets mutating admission change `obj` (the object being written; null for DELETE).
  // An error refuses the request; its message is what the client sees.
  virtual kube::Status mutate(const AdmissionAttributes& a, nlohmann::json* obj) = 0;
  // Validating admission of the final object (null for DELETE). An error refuses it.
  virtual kube::Status validate(const AdmissionAttributes& a, const nlohmann::json* obj) = 0;
};

// Admission by webhook configurations stored in `store` (read on each request, parsed once
// per resourceVersion). Services named by clientConfig.service are reached at a ready
// address of their Endpoints.
std::unique_ptr<Admission> newWebhookAdmission(Store& store, Registry& registry);

}  // namespace strait::minicluster
