// ServiceAccount token authentication (see serviceaccount_token_auth.h).
#include "minicluster/serviceaccount_token_auth.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "kube/base64.h"

namespace strait::minicluster {
namespace {

using kube::Code;
using kube::makeError;
using nlohmann::json;

const char* kIssuer = "https://kubernetes.default.svc.cluster.local";

std::optional<std::string> base64UrlDecode(std::string s) {
  for (auto& c : s) {
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  while (s.size() % 4) s += '=';
  return kube::base64Decode(s);
}

using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

KeyPtr publicKeyOf(const std::string& certPem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(certPem.data(), static_cast<int>(certPem.size())),
                                                &BIO_free);
  if (!bio) return KeyPtr(nullptr, &EVP_PKEY_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr),
                                                   &X509_free);
  return KeyPtr(cert ? X509_get_pubkey(cert.get()) : nullptr, &EVP_PKEY_free);
}

kube::Result<ServiceAccountIdentity> verify(const std::string& token, EVP_PKEY* key) {
  auto d1 = token.find('.');
  auto d2 = token.rfind('.');
  if (d1 == std::string::npos || d1 == d2) return makeError(Code::Unauthorized, "not a JWT");
  auto header = base64UrlDecode(token.substr(0, d1));
  auto payload = base64UrlDecode(token.substr(d1 + 1, d2 - d1 - 1));
  auto sig = base64UrlDecode(token.substr(d2 + 1));
  if (!header || !payload || !sig) return makeError(Code::Unauthorized, "malformed JWT");
  json h = json::parse(*header, nullptr, false);
  if (!h.is_object() || h.value("alg", "") != "RS256") return makeError(Code::Unauthorized, "not an RS256 JWT");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  std::string signedPart = token.substr(0, d2);
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key) != 1 ||
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig->data()), sig->size(),
                       reinterpret_cast<const unsigned char*>(signedPart.data()), signedPart.size()) != 1) {
    return makeError(Code::Unauthorized, "bad signature");
  }
  json c = json::parse(*payload, nullptr, false);
  if (!c.is_object() || c.value("iss", "") != kIssuer) return makeError(Code::Unauthorized, "wrong issuer");
  int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  if (!c.contains("exp") || !c["exp"].is_number_integer() || c["exp"].get<int64_t>() < now) {
    return makeError(Code::Unauthorized, "token expired");
  }
  if (c.contains("nbf") && c["nbf"].is_number_integer() && c["nbf"].get<int64_t>() > now + 60) {
    return makeError(Code::Unauthorized, "token not yet valid");
  }
  bool forUs = false;  // the API server's audience, as its authenticator requires
  if (c.contains("aud") && c["aud"].is_array()) {
    for (const auto& a : c["aud"]) forUs |= a.is_string() && a.get<std::string>() == kIssuer;
  } else if (c.contains("aud") && c["aud"].is_string()) {
    forUs = c["aud"].get<std::string>() == kIssuer;
  }
  if (!forUs) return makeError(Code::Unauthorized, "the token is for another audience");
  const json& k = c.value("kubernetes.io", json::object());
  ServiceAccountIdentity id;
  id.ns = k.value("namespace", "");
  id.serviceAccount = k.value("serviceaccount", json::object()).value("name", "");
  id.podName = k.value("pod", json::object()).value("name", "");
  id.podUid = k.value("pod", json::object()).value("uid", "");
  if (id.ns.empty() || id.serviceAccount.empty() ||
      c.value("sub", "") != "system:serviceaccount:" + id.ns + ":" + id.serviceAccount) {
    return makeError(Code::Unauthorized, "no service account in the token");
  }
  return id;
}

class ServiceAccountTokenAuth : public kube::Handler {
 public:
  ServiceAccountTokenAuth(KeyPtr key, Store& store, kube::Handler& inner)
      : key_(std::move(key)), store_(store), inner_(inner) {}

  void handle(const kube::HttpRequest& req, kube::Responder& out) override {
    static const std::string kBearer = "Bearer ";
    std::string auth = req.header("authorization");
    if (!req.user.empty() || auth.rfind(kBearer, 0) != 0) return inner_.handle(req, out);
    auto id = verify(auth.substr(kBearer.size()), key_.get());
    if (id && !id->podName.empty()) {
      // A bound token dies with its Pod.
      auto pod = store_.get("/core/pods/" + id->ns + "/" + id->podName);
      bool alive = false;
      if (pod) {
        json p = json::parse((*pod)->json, nullptr, false);
        alive = !p.is_discarded() && p["metadata"].value("uid", "") == id->podUid;
      }
      if (!alive) id = makeError(Code::Unauthorized, "the token's Pod is gone");
    }
    if (!id) {
      spdlog::debug("event=serviceaccount_token_not_used path={} why=\"{}\"", req.path, id.error().message);
      return inner_.handle(req, out);
    }
    kube::HttpRequest authed = req;
    authed.user = "system:serviceaccount:" + id->ns + ":" + id->serviceAccount;
    authed.groups = {"system:serviceaccounts", "system:serviceaccounts:" + id->ns, "system:authenticated"};
    inner_.handle(authed, out);
  }

 private:
  KeyPtr key_;
  Store& store_;
  kube::Handler& inner_;
};

}  // namespace

kube::Result<ServiceAccountIdentity> verifyServiceAccountToken(const std::string& token,
                                                               const std::string& signerCertPem) {
  KeyPtr key = publicKeyOf(signerCertPem);
  if (!key) return makeError(Code::Invalid, "no public key in the signer certificate");
  return verify(token, key.get());
}

kube::Result<std::unique_ptr<kube::Handler>> newServiceAccountTokenAuth(const std::string& signerCertPem,
                                                                       Store& store, kube::Handler& inner) {
  KeyPtr key = publicKeyOf(signerCertPem);
  if (!key) return makeError(Code::Invalid, "no public key in the signer certificate");
  return std::unique_ptr<kube::Handler>(std::make_unique<ServiceAccountTokenAuth>(std::move(key), store, inner));
}

}  // namespace strait::minicluster
