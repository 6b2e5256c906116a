// The ServiceAccount admission plugin (see serviceaccount_admission.h).
#include "minicluster/serviceaccount_admission.h"

#include <optional>
#include <random>

namespace strait::minicluster {
namespace {

using nlohmann::json;

std::string randomSuffix() {
  static const char kChars[] = "bcdfghjklmnpqrstvwxz2456789";  // upstream's utilrand alphabet
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, sizeof(kChars) - 2);
  std::string s;
  for (int i = 0; i < 5; ++i) s += kChars[pick(rng)];
  return s;
}

void mountInto(json& containers, const std::string& volume) {
  if (!containers.is_array()) return;
  for (auto& c : containers) {
    if (!c.is_object()) continue;
    json& mounts = c["volumeMounts"];
    if (!mounts.is_array()) mounts = json::array();
    bool has = false;
    for (const auto& m : mounts) {
      has |= m.is_object() && m.value("mountPath", "") == kServiceAccountMountPath;
    }
    if (!has) {
      mounts.push_back({{"name", volume}, {"readOnly", true}, {"mountPath", kServiceAccountMountPath}});
    }
  }
}

class ServiceAccountAdmission : public Admission {
 public:
  ServiceAccountAdmission(Store& store, Admission& next) : store_(store), next_(next) {}

  kube::Status mutate(const AdmissionAttributes& a, json* obj) override {
    if (obj && a.operation == "CREATE" && a.info && a.info->group.empty() &&
        a.info->resource == "pods" && a.subresource.empty() && obj->is_object()) {
      json& spec = (*obj)["spec"];
      std::string sa = spec.is_object() ? spec.value("serviceAccountName", "") : "";
      if (sa.empty()) sa = spec.is_object() ? spec.value("serviceAccount", "") : "";
      if (sa.empty()) sa = "default";
      std::optional<json> account;
      if (auto o = store_.get("/core/serviceaccounts/" + a.ns + "/" + sa)) {
        json j = json::parse((*o)->json, nullptr, false);
        if (!j.is_discarded()) account = std::move(j);
      }
      admitServiceAccount(*obj, account ? &*account : nullptr, randomSuffix());
    }
    return next_.mutate(a, obj);
  }

  kube::Status validate(const AdmissionAttributes& a, const json* obj) override {
    return next_.validate(a, obj);
  }

 private:
  Store& store_;
  Admission& next_;
};

}  // namespace

void admitServiceAccount(json& pod, const json* serviceAccount, const std::string& suffix) {
  json& spec = pod["spec"];
  if (!spec.is_object()) return;
  std::string sa = spec.value("serviceAccountName", "");
  if (sa.empty()) sa = spec.value("serviceAccount", "");
  if (sa.empty()) sa = "default";
  spec["serviceAccountName"] = sa;
  bool automount = true;
  if (spec.contains("automountServiceAccountToken") && spec["automountServiceAccountToken"].is_boolean()) {
    automount = spec["automountServiceAccountToken"].get<bool>();
  } else if (serviceAccount && serviceAccount->contains("automountServiceAccountToken") &&
             (*serviceAccount)["automountServiceAccountToken"].is_boolean()) {
    automount = (*serviceAccount)["automountServiceAccountToken"].get<bool>();
  }
  if (!automount) return;
  json& volumes = spec["volumes"];
  if (!volumes.is_array()) volumes = json::array();
  std::string name = "kube-api-access-" + suffix;
  volumes.push_back(
      {{"name", name},
       {"projected",
        {{"defaultMode", 420},
         {"sources",
          json::array({{{"serviceAccountToken", {{"expirationSeconds", 3607}, {"path", "token"}}}},
                       {{"configMap",
                         {{"name", "kube-root-ca.crt"},
                          {"items", json::array({{{"key", "ca.crt"}, {"path", "ca.crt"}}})}}}},
                       {{"downwardAPI",
                         {{"items", json::array({{{"path", "namespace"},
                                                  {"fieldRef",
                                                   {{"apiVersion", "v1"},
                                                    {"fieldPath", "metadata.namespace"}}}}})}}}}})}}}});
  mountInto(spec["containers"], name);
  if (spec.contains("initContainers")) mountInto(spec["initContainers"], name);
}

std::unique_ptr<Admission> newServiceAccountAdmission(Store& store, Admission& next) {
  return std::make_unique<ServiceAccountAdmission>(store, next);
}

}  // namespace strait::minicluster
