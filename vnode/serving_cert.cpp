#include "vnode/serving_cert.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "kube/base64.h"
#include "kube/object.h"
#include "peering/names.h"

namespace strait::vnode {
namespace {

using nlohmann::json;

const kube::ResourceRef kCsrs{"certificates.k8s.io", "v1", "certificatesigningrequests", false};
constexpr const char* kSigner = "kubernetes.io/kubelet-serving";

// The condition of `type` with status True, or null.
const json* trueCondition(const json& csr, const std::string& type) {
  const json& conds = csr.value("status", json::object()).value("conditions", json::array());
  for (const json& c : conds) {
    if (c.value("type", "") == type && c.value("status", "True") == "True") return &c;
  }
  return nullptr;
}

kube::Status approve(kube::Client& c, const std::string& name) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto csr = c.get(kCsrs, "", name);
    if (!csr) return csr.error();
    if (trueCondition(*csr, "Approved")) return kube::Status::OK();
    json& status = (*csr)["status"];
    if (!status.is_object()) status = json::object();
    if (!status.contains("conditions") || !status["conditions"].is_array()) {
      status["conditions"] = json::array();
    }
    status["conditions"].push_back({{"type", "Approved"},
                                    {"status", "True"},
                                    {"reason", "StraitVirtualKubeletApprove"},
                                    {"message", "approved by the Strait virtual kubelet for "
                                                "its own serving certificate"}});
    kube::WriteOptions wo;
    wo.subresource = "approval";
    auto r = c.update(kCsrs, "", *csr, wo);
    if (r) return kube::Status::OK();
    if (r.error().code != kube::Code::Conflict) return r.error();
  }
  return kube::makeError(kube::Code::Conflict, "approving CSR " + name + ": kept conflicting");
}

}  // namespace

kube::Result<kube::KeyPair> requestServingCertificate(kube::Client& consumer,
                                                      const ServingCertRequest& req) {
  if (req.nodeName.empty()) {
    return kube::makeError(kube::Code::Invalid, "serving certificate: nodeName is required");
  }
  if (req.ips.empty() && req.dnsNames.empty()) {
    return kube::makeError(kube::Code::Invalid,
                           "serving certificate: an IP or DNS subjectAltName is required");
  }
  auto keyAndCsr =
      kube::makeKeyAndCsr("system:node:" + req.nodeName, {"system:nodes"}, req.dnsNames, req.ips);
  if (!keyAndCsr) return keyAndCsr.error();
  json csr = {{"apiVersion", "certificates.k8s.io/v1"},
              {"kind", "CertificateSigningRequest"},
              {"metadata",
               {{"generateName", "csr-"},
                {"labels", {{std::string(peering::kLabelVirtualNode), req.nodeName}}}}},
              {"spec",
               {{"request", kube::base64Encode(keyAndCsr->csrPem)},
                {"signerName", kSigner},
                {"expirationSeconds", req.expiration.count()},
                {"usages", {"digital signature", "key encipherment", "server auth"}}}}};
  auto created = consumer.create(kCsrs, "", csr);
  if (!created) return created.error();
  const std::string name = kube::getName(*created);
  spdlog::info("event=serving_csr_created node={} csr={} approve={}", req.nodeName, name,
               req.approve);
  if (req.approve) {
    if (kube::Status s = approve(consumer, name); !s.ok()) return s.error();
  }
  const auto deadline = std::chrono::steady_clock::now() + req.timeout;
  while (true) {
    auto cur = consumer.get(kCsrs, "", name);
    if (!cur) return cur.error();
    for (const char* bad : {"Denied", "Failed"}) {
      if (const json* c = trueCondition(*cur, bad)) {
        return kube::makeError(kube::Code::Forbidden,
                               "CSR " + name + " " + bad + ": " + c->value("reason", "") + " " +
                                   c->value("message", ""));
      }
    }
    std::string certB64 = cur->value("status", json::object()).value("certificate", "");
    if (!certB64.empty()) {
      auto pem = kube::base64Decode(certB64);
      if (!pem) {
        return kube::makeError(kube::Code::Invalid,
                               "CSR " + name + ": status.certificate is not base64");
      }
      spdlog::info("event=serving_cert_issued node={} csr={}", req.nodeName, name);
      return kube::KeyPair{*pem, keyAndCsr->keyPem};
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return kube::makeError(kube::Code::ServerTimeout,
                             "CSR " + name + ": no certificate issued within " +
                                 std::to_string(req.timeout.count()) + " ms (is a signer for " +
                                 kSigner + " running, and was it approved?)");
    }
    std::this_thread::sleep_for(req.pollInterval);
  }
}

}  // namespace strait::vnode
