// Pull-mode records and agent duties (see pull.h).
#include "peering/pull.h"

#include <spdlog/spdlog.h>

#include <cctype>
#include <charconv>

#include "peering/encoding.h"
#include "peering/foreign_cluster.h"
#include "peering/link_io.h"
#include "peering/names.h"
#include "peering/token.h"

namespace strait::peering {
namespace {

using json = nlohmann::json;
using kube::Code;
using kube::makeError;
const std::string kSys(kSystemNamespace);

std::string pullRecordName(const std::string& tokenId) { return "strait-pull-" + tokenId; }

std::string secretField(const json& secret, const char* key) {
  auto it = secret.find("data");
  if (it == secret.end() || !it->is_object() || !it->contains(key) || !(*it)[key].is_string()) {
    return {};
  }
  kube::Result<std::string> v = base64Decode((*it)[key].get<std::string>(), key);
  return v.ok() ? *v : std::string();
}

PullTarget targetOf(const json& record) {
  PullTarget t;
  t.consumerEndpoint = record.value("/data/consumerEndpoint"_json_pointer, std::string());
  t.consumerCaFingerprint = record.value("/data/consumerCaFingerprint"_json_pointer, std::string());
  t.consumerId = record.value("/data/consumerID"_json_pointer, std::string());
  return t;
}

}  // namespace

kube::Status validatePullTarget(const PullTarget& t) {
  std::string host, port;
  if (!linkio::splitEndpoint(t.consumerEndpoint, &host, &port)) {
    return makeError(Code::Invalid, "consumer endpoint \"" + t.consumerEndpoint +
                                        "\" is not host:port (the consumer agent's link port)");
  }
  bool hex = t.consumerCaFingerprint.size() == 64;
  for (char c : t.consumerCaFingerprint) hex = hex && std::isxdigit(static_cast<unsigned char>(c)) &&
                                               !std::isupper(static_cast<unsigned char>(c));
  if (!hex) {
    return makeError(Code::Invalid, "consumer CA fingerprint must be 64 lowercase hex digits "
                                    "(SHA-256), got \"" + t.consumerCaFingerprint + "\"");
  }
  return kube::Status::OK();
}

json pullTargetRecord(const std::string& tokenId, int64_t expiresUnix, const PullTarget& target) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", pullRecordName(tokenId)},
            {"namespace", kSys},
            {"labels",
             {{std::string(kLabelManagedBy), std::string(kManagedByValue)},
              {std::string(kLabelComponent), "pull-target"}}}}},
          {"data",
           {{"consumerEndpoint", target.consumerEndpoint},
            {"consumerCaFingerprint", target.consumerCaFingerprint},
            {"tokenID", tokenId},
            {"expires", std::to_string(expiresUnix)}}}};
}

kube::Result<PullTarget> bindPullTarget(kube::Client& client, const std::string& tokenId,
                                        const std::string& consumerId) {
  kube::Result<json> record =
      client.get(kube::resources::kConfigMaps, kSys, pullRecordName(tokenId));
  if (!record.ok()) return record.error();
  (*record)["metadata"]["labels"][std::string(kLabelRemoteCluster)] = consumerId;
  (*record)["data"]["consumerID"] = consumerId;
  kube::Result<json> updated = client.update(kube::resources::kConfigMaps, kSys, *record);
  if (!updated.ok()) return updated.error();
  spdlog::info("event=pull_target_bound consumer={} consumer_endpoint={}", consumerId,
               targetOf(*updated).consumerEndpoint);
  return targetOf(*updated);
}

PullDialers::PullDialers(kube::Client& client, kube::KeyPair chain, std::string localTarget,
                         LinkTiming timing)
    : client_(client),
      chain_(std::move(chain)),
      localTarget_(std::move(localTarget)),
      timing_(timing) {}

PullDialers::~PullDialers() { stop(); }

void PullDialers::tick(std::chrono::system_clock::time_point now) {
  if (now - lastScan_ < std::chrono::milliseconds(500)) return;
  lastScan_ = now;
  kube::ListOptions sel;
  sel.labelSelector = std::string(kLabelComponent) + "=pull-target";
  kube::Result<json> records = client_.list(kube::resources::kConfigMaps, kSys, sel);
  if (!records.ok()) return;  // try again next pass; keep what runs
  int64_t nowUnix =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  std::map<std::string, PullTarget> wanted;
  for (const json& rec : records->value("items", json::array())) {
    std::string name = rec.value("/metadata/name"_json_pointer, std::string());
    PullTarget t = targetOf(rec);
    std::string expires = rec.value("/data/expires"_json_pointer, std::string());
    int64_t exp = 0;
    std::from_chars(expires.data(), expires.data() + expires.size(), exp);
    if (t.consumerId.empty() && exp + 60 < nowUnix) {
      spdlog::info("event=pull_target_expired name={}", name);
      (void)client_.remove(kube::resources::kConfigMaps, kSys, name);
      continue;
    }
    if (!validatePullTarget(t).ok()) {
      spdlog::warn("event=pull_target_invalid name={} error=\"{}\"", name,
                   validatePullTarget(t).error().message);
      continue;
    }
    wanted[name] = t;
  }
  for (auto it = dialers_.begin(); it != dialers_.end();) {
    auto w = wanted.find(it->first);
    // Gone or changed. (Binding alone does not restart it: the Join that binds the record
    // is still relaying over this dialer's connection.)
    if (w == wanted.end() || w->second.consumerEndpoint != it->second.target.consumerEndpoint ||
        w->second.consumerCaFingerprint != it->second.target.consumerCaFingerprint) {
      spdlog::info("event=pull_dialer_stopped name={} consumer={}", it->first,
                   it->second.target.consumerId);
      it->second.dialer->stop();
      it = dialers_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [name, t] : wanted) {
    if (dialers_.count(name)) continue;
    LinkDialer::Options o;
    o.consumerEndpoint = t.consumerEndpoint;
    o.consumerCaFingerprint = t.consumerCaFingerprint;
    o.consumerId = t.consumerId;
    o.chain = chain_;
    o.localTarget = localTarget_;
    o.timing = timing_;
    kube::Result<std::unique_ptr<LinkDialer>> d = LinkDialer::start(std::move(o));
    if (!d.ok()) {
      spdlog::error("event=pull_dialer_failed name={} error=\"{}\"", name, d.error().message);
      continue;
    }
    spdlog::info("event=pull_dialer_started name={} consumer_endpoint={}", name,
                 t.consumerEndpoint);
    dialers_[name] = Entry{t, std::move(*d)};
  }
}

void PullDialers::stop() {
  for (auto& [name, e] : dialers_) e.dialer->stop();
  dialers_.clear();
}

kube::Result<std::string> expectedProviderCa(kube::Client& client, const std::string& providerId) {
  // A forced unpeer by name waiting to be delivered (the ForeignCluster is gone by then).
  kube::Result<json> pending =
      client.get(kube::resources::kSecrets, kSys, "strait-revocation-" + providerId);
  if (pending.ok() && secretField(*pending, "mode") == kModePull) {
    kube::Result<kube::CertificateInfo> ca = kube::certificateInfo(secretField(*pending, "ca.crt"));
    if (ca.ok()) return ca->sha256Fingerprint;
  }
  kube::Result<json> list = client.list(kForeignClusters, "");
  if (!list.ok()) return list.error();
  for (const json& fc : list->value("items", json::array())) {
    if (fc.value("/spec/role"_json_pointer, std::string()) != kRoleProvider ||
        fc.value("/spec/clusterID"_json_pointer, std::string()) != providerId) {
      continue;
    }
    if (fc.value("/spec/mode"_json_pointer, std::string()) != kModePull) {
      return makeError(Code::Forbidden, "the peering with cluster " + providerId +
                                            " is in push mode: this consumer dials it");
    }
    kube::Result<json> cred =
        client.get(kube::resources::kSecrets, kSys, credentialSecretName(providerId));
    if (cred.ok()) {
      kube::Result<kube::CertificateInfo> ca = kube::certificateInfo(secretField(*cred, "ca.crt"));
      if (!ca.ok()) return makeError(Code::Internal, "the credential's CA does not parse");
      return ca->sha256Fingerprint;
    }
    std::string ref = fc.value("/spec/tokenSecretRef"_json_pointer, std::string());
    kube::Result<json> tokenSecret = client.get(kube::resources::kSecrets, kSys, ref);
    if (ref.empty() || !tokenSecret.ok()) {
      return makeError(Code::Forbidden, "the peering with cluster " + providerId +
                                            " has neither a credential nor a token");
    }
    SecretString text(secretField(*tokenSecret, "token"));
    kube::Result<Token> token = parseToken(text.reveal());
    if (!token.ok()) return token.error();
    return token->caFingerprint;
  }
  return makeError(Code::Forbidden,
                   "this cluster has no pull-mode peering with cluster " + providerId);
}

}  // namespace strait::peering
