// CertificateSigningRequest signer (upstream pkg/controller/certificates/signer): once a
// CSR is Approved (and neither Denied nor Failed), signs it with the cluster CA for the
// signers kubernetes.io/kube-apiserver-client, kubernetes.io/kube-apiserver-client-kubelet
// and kubernetes.io/kubelet-serving, and writes status.certificate. A request its signer
// refuses (usages, subject) gets condition Failed with reason SignerValidationFailure.
// Validity: spec.expirationSeconds capped at one year (upstream cluster-signing-duration).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "kube/base64.h"
#include "kube/json_access.h"
#include "kube/object.h"
#include "kube/pki.h"
#include "minicluster/controller_context.h"

namespace strait::minicluster {
namespace {

using kube::child;
using kube::childArray;
using kube::intOf;
using kube::stringOf;

using json = nlohmann::json;
constexpr long kMaxValiditySeconds = 365L * 24 * 3600;

bool hasTrueCondition(const json& csr, const std::string& type) {
  for (const auto& c : childArray(child(csr, "status"), "conditions")) {
    if (stringOf(c, "type") == type && stringOf(c, "status", "True") == "True") return true;
  }
  return false;
}

// Checks the request against its signer's rules; returns why it is refused, or "".
std::string signerRefusal(const std::string& signer, const std::vector<std::string>& usages,
                          const kube::CsrInfo& info) {
  const bool serving = signer == "kubernetes.io/kubelet-serving";
  const std::string authUsage = serving ? "server auth" : "client auth";
  std::set<std::string> allowed = {"digital signature", "key encipherment", authUsage};
  for (const auto& u : usages) {
    if (!allowed.count(u)) return "usage \"" + u + "\" is not allowed for signer " + signer;
  }
  if (std::find(usages.begin(), usages.end(), authUsage) == usages.end()) {
    return "usages must include \"" + authUsage + "\" for signer " + signer;
  }
  if (serving || signer == "kubernetes.io/kube-apiserver-client-kubelet") {
    if (info.organizations != std::vector<std::string>{"system:nodes"}) {
      return "subject organization is not system:nodes";
    }
    if (info.commonName.rfind("system:node:", 0) != 0) {
      return "subject common name does not begin with system:node:";
    }
  }
  if (serving) {
    if (info.dnsNames.empty() && info.ips.empty()) {
      return "DNS or IP subjectAltName is required";
    }
    if (info.otherSans) return "email and URI subjectAltNames are not allowed";
  } else if (signer == "kubernetes.io/kube-apiserver-client-kubelet" &&
             (!info.dnsNames.empty() || !info.ips.empty() || info.otherSans)) {
    return "subjectAltNames are not allowed";
  }
  return "";
}

class CsrSigner : public Controller {
 public:
  explicit CsrSigner(ControllerContext& ctx)
      : ctx_(ctx),
        csrInfo_(ctx.info("certificates.k8s.io", "certificatesigningrequests")),
        csrs_(ctx.informers.informer("certificates.k8s.io", "certificatesigningrequests")),
        queue_(controllerQueue("csrsigning", 1),
               [this](const std::string& name) { return sync(name); }) {
    csrs_.addHandlers(enqueueHandlers(queue_));
  }

  void start() override { queue_.start(); }
  void stop() override { queue_.stop(); }

 private:
  kube::Status sync(const std::string& name) {
    auto csr = csrs_.get("", name);
    if (!csr) return kube::Status::OK();
    const json& spec = child(csr->obj(), "spec");
    const std::string signer = stringOf(spec, "signerName");
    if (signer != "kubernetes.io/kube-apiserver-client" &&
        signer != "kubernetes.io/kube-apiserver-client-kubelet" &&
        signer != "kubernetes.io/kubelet-serving") {
      return kube::Status::OK();  // another signer's request
    }
    if (!stringOf(child(csr->obj(), "status"), "certificate").empty() ||
        !hasTrueCondition(csr->obj(), "Approved") || hasTrueCondition(csr->obj(), "Denied") ||
        hasTrueCondition(csr->obj(), "Failed")) {
      return kube::Status::OK();
    }
    auto pem = kube::base64Decode(stringOf(spec, "request"));
    std::string refusal;
    kube::Result<kube::CsrInfo> info = kube::makeError(kube::Code::Invalid, "spec.request is not base64");
    if (pem) info = kube::parseCsr(*pem);
    if (!info) {
      refusal = "unable to parse csr \"" + name + "\": " + info.error().message;
    } else {
      std::vector<std::string> usages;
      for (const auto& u : childArray(spec, "usages")) {
        if (u.is_string()) usages.push_back(u.get<std::string>());
      }
      refusal = signerRefusal(signer, usages, *info);
    }
    if (!refusal.empty()) {
      spdlog::info("event=csr_refused name={} signer={} reason=\"{}\"", name, signer, refusal);
      return writeStatus(name, [&](json& st) {
        json cond = {{"type", "Failed"},
                     {"status", "True"},
                     {"reason", "SignerValidationFailure"},
                     {"message", refusal},
                     {"lastUpdateTime", kube::rfc3339Now()},
                     {"lastTransitionTime", kube::rfc3339Now()}};
        st["conditions"].push_back(cond);
      });
    }
    long validity = kMaxValiditySeconds;
    int64_t requested = intOf(spec, "expirationSeconds");
    if (requested > 0) validity = std::min<long>(validity, static_cast<long>(requested));
    auto cert = kube::signCsrFor(ctx_.ca, *pem, signer == "kubernetes.io/kubelet-serving",
                                 std::chrono::seconds(validity));
    if (!cert) return cert.error();
    spdlog::info("event=csr_signed name={} signer={} validity_s={}", name, signer, validity);
    return writeStatus(name, [&](json& st) { st["certificate"] = kube::base64Encode(*cert); });
  }

  kube::Status writeStatus(const std::string& name, const std::function<void(json&)>& fn) {
    auto r = ctx_.rest.mutate(csrInfo_, "", name, "status", [&](json& obj) {
      json& st = obj["status"];
      if (!st.is_object()) st = json::object();
      if (!st.contains("conditions") || !st["conditions"].is_array()) {
        st["conditions"] = json::array();
      }
      fn(st);
      return kube::Status::OK();
    });
    if (!r && r.error().code != kube::Code::NotFound) return r.error();
    return kube::Status::OK();
  }

  ControllerContext& ctx_;
  const ResourceInfo& csrInfo_;
  LocalInformer& csrs_;
  kube::WorkerPool queue_;
};

}  // namespace

std::unique_ptr<Controller> newCsrSigner(ControllerContext& ctx) {
  return std::make_unique<CsrSigner>(ctx);
}

}  // namespace strait::minicluster
