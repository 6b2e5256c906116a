// Cluster identity creation and its Secret form.
#include "peering/identity.h"

#include "peering/names.h"

namespace strait::peering {

std::string newUuid() {
  std::string b = randomBytes(16);
  b[6] = static_cast<char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<char>((b[8] & 0x3f) | 0x80);
  std::string h = hexEncode(b);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

bool validClusterId(const std::string& id) {
  if (id.size() != 36) return false;
  for (size_t i = 0; i < id.size(); ++i) {
    char c = id[i];
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

kube::Result<ClusterIdentity> ClusterIdentity::generate(const std::string& clusterName) {
  ClusterIdentity id;
  id.clusterId = newUuid();
  id.clusterName = clusterName;
  kube::Result<kube::KeyPair> ca = kube::makeCa("strait-ca-" + clusterName + "-" + id.clusterId);
  if (!ca.ok()) return ca.error();
  id.ca = std::move(*ca);
  id.tokenKey = SecretString(randomBytes(32));
  return id;
}

kube::Result<ClusterIdentity> ClusterIdentity::fromSecret(const nlohmann::json& secret) {
  auto bad = [](const std::string& why) {
    return kube::makeError(kube::Code::Invalid, "identity Secret strait-system/strait-identity: " + why);
  };
  if (!secret.is_object() || !secret.contains("data") || !secret["data"].is_object()) {
    return bad("no data");
  }
  const nlohmann::json& data = secret["data"];
  auto field = [&](const char* key) -> kube::Result<std::string> {
    auto it = data.find(key);
    if (it == data.end() || !it->is_string()) return bad(std::string("missing data.") + key);
    return base64Decode(it->get<std::string>(), std::string("data.") + key);
  };
  ClusterIdentity id;
  for (auto [key, out] : {std::pair{"clusterID", &id.clusterId},
                          std::pair{"clusterName", &id.clusterName},
                          std::pair{"ca.crt", &id.ca.certPem}, std::pair{"ca.key", &id.ca.keyPem}}) {
    kube::Result<std::string> v = field(key);
    if (!v.ok()) return v.error();
    *out = std::move(*v);
  }
  kube::Result<std::string> tokenKey = field("token.key");
  if (!tokenKey.ok()) return tokenKey.error();
  if (tokenKey->size() < 32) return bad("data.token.key shorter than 32 bytes");
  id.tokenKey = SecretString(std::move(*tokenKey));
  if (!validClusterId(id.clusterId)) return bad("data.clusterID is not a UUID");
  kube::Result<kube::CertificateInfo> info = kube::certificateInfo(id.ca.certPem);
  if (!info.ok()) return bad(info.error().message);
  return id;
}

nlohmann::json ClusterIdentity::toSecret() const {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"type", "Opaque"},
          {"metadata",
           {{"name", std::string(kIdentitySecret)},
            {"namespace", std::string(kSystemNamespace)},
            {"labels",
             {{std::string(kLabelComponent), "identity"}}}}},
          {"data",
           {{"clusterID", base64Encode(clusterId)},
            {"clusterName", base64Encode(clusterName)},
            {"ca.crt", base64Encode(ca.certPem)},
            {"ca.key", base64Encode(ca.keyPem)},
            {"token.key", base64Encode(tokenKey.reveal())}}}};
}

std::string ClusterIdentity::caFingerprint() const {
  kube::Result<kube::CertificateInfo> info = kube::certificateInfo(ca.certPem);
  return info.ok() ? info->sha256Fingerprint : std::string();
}

}  // namespace strait::peering
