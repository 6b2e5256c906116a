// resolv.conf, /etc/hosts and ServiceAccount tokens of process-runtime Pods (see
// runtime_process_podfiles.h).
#include "minicluster/runtime_process_podfiles.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

#include "kube/base64.h"
#include "minicluster/cluster_dns.h"

namespace strait::minicluster {
namespace {

using kube::Code;
using kube::makeError;
using nlohmann::json;

const char* kIssuer = "https://kubernetes.default.svc.cluster.local";

std::string str(const json& o, const char* k) {
  if (!o.is_object() || !o.contains(k) || !o[k].is_string()) return {};
  return o[k].get<std::string>();
}

struct ResolvConf {
  std::vector<std::string> nameservers, searches;
  std::vector<std::pair<std::string, std::string>> options;  // name, value ("" = none)
};

ResolvConf parseResolvConf(const std::string& text) {
  ResolvConf r;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string word;
    ls >> word;
    if (word.empty() || word[0] == '#' || word[0] == ';') continue;
    std::vector<std::string> rest;
    for (std::string w; ls >> w;) rest.push_back(w);
    if (word == "nameserver" && !rest.empty()) {
      r.nameservers.push_back(rest[0]);
    } else if (word == "search" || word == "domain") {
      r.searches = rest;
    } else if (word == "options") {
      for (const auto& o : rest) {
        auto c = o.find(':');
        r.options.emplace_back(o.substr(0, c), c == std::string::npos ? "" : o.substr(c + 1));
      }
    }
  }
  return r;
}

void appendUnique(std::vector<std::string>& to, const std::string& v) {
  if (std::find(to.begin(), to.end(), v) == to.end()) to.push_back(v);
}

void mergeOption(ResolvConf& r, const std::string& name, const std::string& value) {
  for (auto& o : r.options) {
    if (o.first == name) {
      o.second = value;
      return;
    }
  }
  r.options.emplace_back(name, value);
}

std::string render(const ResolvConf& r) {
  std::string out;
  for (size_t i = 0; i < r.nameservers.size() && i < 3; ++i) out += "nameserver " + r.nameservers[i] + "\n";
  if (!r.searches.empty()) {
    out += "search";
    for (size_t i = 0; i < r.searches.size() && i < 32; ++i) out += " " + r.searches[i];
    out += "\n";
  }
  if (!r.options.empty()) {
    out += "options";
    for (const auto& [k, v] : r.options) out += " " + k + (v.empty() ? "" : ":" + v);
    out += "\n";
  }
  return out;
}

std::string base64Url(const std::string& in) {
  std::string s = kube::base64Encode(in);
  while (!s.empty() && s.back() == '=') s.pop_back();
  for (auto& c : s) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return s;
}

}  // namespace

std::string expandEnvReferences(const std::string& s, const std::map<std::string, std::string>& vars) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '(') {
      auto close = s.find(')', i + 2);
      if (close != std::string::npos) {
        auto v = vars.find(s.substr(i + 2, close - i - 2));
        if (v != vars.end()) {
          out += v->second;
          i = close;
          continue;
        }
      }
    }
    out += s[i];
  }
  return out;
}

std::optional<std::string> podResolvConfFor(const json& pod, const std::string& hostResolvConf) {
  const json& spec = pod.value("spec", json::object());
  bool hostNetwork = spec.value("hostNetwork", false);
  std::string policy = str(spec, "dnsPolicy");
  if (policy.empty()) policy = "ClusterFirst";
  const json& cfg = spec.value("dnsConfig", json::object());
  bool clusterDns = (policy == "ClusterFirst" && !hostNetwork) || policy == "ClusterFirstWithHostNet";
  if (!clusterDns && policy != "None" && cfg.empty() && hostNetwork) return std::nullopt;
  ResolvConf host = parseResolvConf(hostResolvConf);
  ResolvConf r;
  if (clusterDns) {
    std::string ns = pod.value("metadata", json::object()).value("namespace", "default");
    r = parseResolvConf(podResolvConf(ns));
    for (const auto& s : host.searches) appendUnique(r.searches, s);
  } else if (policy != "None") {
    r = host;  // Default, or ClusterFirst of a hostNetwork Pod
  }
  for (const auto& n : cfg.value("nameservers", json::array())) {
    if (n.is_string()) appendUnique(r.nameservers, n.get<std::string>());
  }
  for (const auto& s : cfg.value("searches", json::array())) {
    if (s.is_string()) appendUnique(r.searches, s.get<std::string>());
  }
  for (const auto& o : cfg.value("options", json::array())) {
    if (!o.is_object() || str(o, "name").empty()) continue;
    mergeOption(r, str(o, "name"), str(o, "value"));
  }
  return render(r);
}

std::string podHostsFile(const json& pod, const std::string& podIP) {
  const json& md = pod.value("metadata", json::object());
  const json& spec = pod.value("spec", json::object());
  std::string hostname = str(spec, "hostname");
  if (hostname.empty()) hostname = str(md, "name");
  std::string out =
      "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"
      "::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\n"
      "fe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n";
  std::string sub = str(spec, "subdomain");
  if (!sub.empty()) {
    out += podIP + "\t" + hostname + "." + sub + "." + str(md, "namespace") + ".svc." +
           kClusterDomain + "\t" + hostname + "\n";
  } else {
    out += podIP + "\t" + hostname + "\n";
  }
  const json& aliases = spec.value("hostAliases", json::array());
  if (aliases.is_array() && !aliases.empty()) {
    out += "\n# Entries added by HostAliases.\n";
    for (const auto& a : aliases) {
      std::string line = str(a, "ip");
      for (const auto& h : a.value("hostnames", json::array())) {
        if (h.is_string()) line += "\t" + h.get<std::string>();
      }
      out += line + "\n";
    }
  }
  return out;
}

kube::Result<std::string> signServiceAccountToken(const json& pod, const std::string& nodeName,
                                                  const std::string& audience, int64_t expirationSeconds,
                                                  const std::string& keyPem) {
  const json& md = pod.value("metadata", json::object());
  ServiceAccountTokenClaims c;
  c.ns = str(md, "namespace");
  c.serviceAccount = str(pod.value("spec", json::object()), "serviceAccountName");
  if (c.serviceAccount.empty()) c.serviceAccount = "default";
  c.podName = str(md, "name");
  c.podUid = str(md, "uid");
  c.nodeName = nodeName;
  if (!audience.empty()) c.audiences = {audience};
  c.expirationSeconds = expirationSeconds;
  return signToken(c, keyPem);
}

kube::Result<std::string> signToken(const ServiceAccountTokenClaims& c, const std::string& keyPem) {
  int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  json aud = json::array();
  for (const auto& a : c.audiences) aud.push_back(a);
  if (aud.empty()) aud.push_back(kIssuer);
  json k8s = {{"namespace", c.ns}, {"serviceaccount", {{"name", c.serviceAccount}}}};
  if (!c.podName.empty()) k8s["pod"] = {{"name", c.podName}, {"uid", c.podUid}};
  if (!c.nodeName.empty()) k8s["node"] = {{"name", c.nodeName}};
  json claims = {{"aud", aud},
                 {"iss", kIssuer},
                 {"sub", "system:serviceaccount:" + c.ns + ":" + c.serviceAccount},
                 {"iat", now},
                 {"nbf", now},
                 {"exp", now + std::max<int64_t>(c.expirationSeconds, 600)},
                 {"kubernetes.io", k8s}};
  std::string signingInput = base64Url(json{{"alg", "RS256"}, {"typ", "JWT"}}.dump()) + "." +
                             base64Url(claims.dump());
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(keyPem.data(), static_cast<int>(keyPem.size())),
                                                &BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr, &EVP_PKEY_free);
  if (!key) return makeError(Code::Internal, "cannot read the service account signing key");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  size_t len = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len,
                     reinterpret_cast<const unsigned char*>(signingInput.data()), signingInput.size()) != 1) {
    return makeError(Code::Internal, "cannot sign the service account token");
  }
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(signingInput.data()), signingInput.size()) != 1) {
    return makeError(Code::Internal, "cannot sign the service account token");
  }
  sig.resize(len);
  return signingInput + "." + base64Url(sig);
}

}  // namespace strait::minicluster
