#include "kube/kubeconfig.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kube/yaml_json.h"

namespace strait::kube {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

Error invalid(const std::string& where, const std::string& what) {
  return makeError(Code::Invalid, where + ": " + what);
}

Result<std::string> readWholeFile(const std::string& path, const std::string& where) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return makeError(Code::Invalid, where + ": cannot read " + path + ": " +
                                        std::strerror(errno));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Strict standard base64 (RFC 4648 with padding); whitespace between groups is ignored.
std::optional<std::string> decodeBase64(std::string_view in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string clean;
  clean.reserve(in.size());
  for (char c : in) {
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') clean.push_back(c);
  }
  if (clean.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(clean.size() / 4 * 3);
  for (size_t i = 0; i < clean.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      char c = clean[i + j];
      if (c == '=') {
        if (i + 4 != clean.size() || j < 2) return std::nullopt;
        v[j] = 0;
        ++pad;
      } else {
        if (pad > 0) return std::nullopt;  // data after '='
        v[j] = val(c);
        if (v[j] < 0) return std::nullopt;
      }
    }
    uint32_t n = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out.push_back(static_cast<char>((n >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xff));
  }
  return out;
}

// One parsed file: its path (for errors and relative paths) and document.
struct KubeconfigFile {
  std::string path;
  json doc;
};

// A named entry found while merging: the file it came from and its index there.
struct Entry {
  const KubeconfigFile* file = nullptr;
  size_t index = 0;
  const json* body = nullptr;  // the "cluster"/"user"/"context" object
};

std::string whereOf(const Entry& e, const char* list, const char* inner) {
  return e.file->path + ": " + list + "[" + std::to_string(e.index) + "]." + inner;
}

// Collects `list` (clusters/users/contexts) from all files; the first definition wins.
Result<std::map<std::string, Entry>> collect(const std::vector<KubeconfigFile>& files,
                                             const char* list, const char* inner) {
  std::map<std::string, Entry> out;
  for (const auto& f : files) {
    if (!f.doc.contains(list) || f.doc[list].is_null()) continue;
    const json& arr = f.doc[list];
    if (!arr.is_array()) return invalid(f.path + ": " + list, "must be a list");
    for (size_t i = 0; i < arr.size(); ++i) {
      std::string where = f.path + ": " + list + "[" + std::to_string(i) + "]";
      const json& item = arr[i];
      if (!item.is_object()) return invalid(where, "must be a mapping");
      if (!item.contains("name") || !item["name"].is_string()) {
        return invalid(where + ".name", "required string");
      }
      if (item.contains(inner) && !item[inner].is_object() && !item[inner].is_null()) {
        return invalid(where + "." + inner, "must be a mapping");
      }
      std::string name = item["name"];
      if (out.count(name)) continue;
      Entry e{&f, i, item.contains(inner) && item[inner].is_object() ? &item[inner] : nullptr};
      out[name] = e;
    }
  }
  return out;
}

// Reads an optional string field; Invalid when present with another type.
Result<std::string> str(const json* obj, const std::string& where, const char* key) {
  if (!obj || !obj->contains(key) || (*obj)[key].is_null()) return std::string();
  const json& v = (*obj)[key];
  if (!v.is_string()) return invalid(where + "." + key, "must be a string");
  return v.get<std::string>();
}

std::string resolvePath(const std::string& p, const std::string& kubeconfigPath) {
  if (p.empty() || fs::path(p).is_absolute()) return p;
  return (fs::path(kubeconfigPath).parent_path() / p).lexically_normal().string();
}

// PEM from "<key>-data" (base64) or "<key>" (file path), checked for the expected type.
Result<std::string> pemField(const json* obj, const Entry& e, const char* list,
                             const char* inner, const std::string& key, bool isKey) {
  std::string base = whereOf(e, list, inner);
  auto data = str(obj, base, (key + "-data").c_str());
  if (!data) return data.error();
  std::string pem;
  if (!data->empty()) {
    std::string where = base + "." + key + "-data";
    auto decoded = decodeBase64(*data);
    if (!decoded) return invalid(where, "not valid base64");
    pem = std::move(*decoded);
    if (auto s = checkPem(pem, isKey, where); !s) return s.error();
    return pem;
  }
  auto file = str(obj, base, key.c_str());
  if (!file) return file.error();
  if (file->empty()) return std::string();
  std::string where = base + "." + key;
  auto content = readWholeFile(resolvePath(*file, e.file->path), where);
  if (!content) return content.error();
  if (auto s = checkPem(*content, isKey, where + " (" + *file + ")"); !s) return s.error();
  return *content;
}

Result<ExecConfig> parseExec(const json& ex, const std::string& where,
                             const std::string& kubeconfigPath) {
  if (!ex.is_object()) return invalid(where, "must be a mapping");
  ExecConfig c;
  c.source = where;
  auto apiVersion = str(&ex, where, "apiVersion");
  if (!apiVersion) return apiVersion.error();
  c.apiVersion = *apiVersion;
  if (c.apiVersion != "client.authentication.k8s.io/v1" &&
      c.apiVersion != "client.authentication.k8s.io/v1beta1") {
    return invalid(where + ".apiVersion",
                   "must be client.authentication.k8s.io/v1 or v1beta1, got \"" +
                       c.apiVersion + "\"");
  }
  auto command = str(&ex, where, "command");
  if (!command) return command.error();
  if (command->empty()) return invalid(where + ".command", "required");
  c.command = command->find('/') != std::string::npos ? resolvePath(*command, kubeconfigPath)
                                                      : *command;
  if (ex.contains("args") && !ex["args"].is_null()) {
    if (!ex["args"].is_array()) return invalid(where + ".args", "must be a list of strings");
    for (size_t i = 0; i < ex["args"].size(); ++i) {
      if (!ex["args"][i].is_string()) {
        return invalid(where + ".args[" + std::to_string(i) + "]", "must be a string");
      }
      c.args.push_back(ex["args"][i]);
    }
  }
  if (ex.contains("env") && !ex["env"].is_null()) {
    if (!ex["env"].is_array()) return invalid(where + ".env", "must be a list");
    for (size_t i = 0; i < ex["env"].size(); ++i) {
      std::string w = where + ".env[" + std::to_string(i) + "]";
      const json& kv = ex["env"][i];
      if (!kv.is_object()) return invalid(w, "must be a mapping with name and value");
      auto name = str(&kv, w, "name");
      if (!name) return name.error();
      auto value = str(&kv, w, "value");
      if (!value) return value.error();
      if (name->empty()) return invalid(w + ".name", "required");
      c.env.emplace_back(*name, *value);
    }
  }
  auto mode = str(&ex, where, "interactiveMode");
  if (!mode) return mode.error();
  if (!mode->empty()) {
    if (*mode != "Never" && *mode != "IfAvailable" && *mode != "Always") {
      return invalid(where + ".interactiveMode", "must be Never, IfAvailable or Always");
    }
    c.interactiveMode = *mode;
  } else if (c.apiVersion == "client.authentication.k8s.io/v1") {
    return invalid(where + ".interactiveMode", "required for client.authentication.k8s.io/v1");
  }
  if (ex.contains("provideClusterInfo")) {
    if (!ex["provideClusterInfo"].is_boolean()) {
      return invalid(where + ".provideClusterInfo", "must be a boolean");
    }
    c.provideClusterInfo = ex["provideClusterInfo"];
  }
  return c;
}

Result<RestConfig> resolve(const std::vector<KubeconfigFile>& files, const std::string& context) {
  auto clusters = collect(files, "clusters", "cluster");
  if (!clusters) return clusters.error();
  auto users = collect(files, "users", "user");
  if (!users) return users.error();
  auto contexts = collect(files, "contexts", "context");
  if (!contexts) return contexts.error();

  std::string ctxName = context;
  std::string sources;
  for (const auto& f : files) sources += (sources.empty() ? "" : ":") + f.path;
  if (ctxName.empty()) {
    for (const auto& f : files) {
      auto cur = str(&f.doc, f.path, "current-context");
      if (!cur) return cur.error();
      if (!cur->empty()) {
        ctxName = *cur;
        break;
      }
    }
  }
  if (ctxName.empty()) {
    return makeError(Code::NotFound, sources + ": no current-context is set and no context "
                                               "was given");
  }
  auto ci = contexts->find(ctxName);
  if (ci == contexts->end()) {
    return makeError(Code::NotFound, sources + ": context \"" + ctxName + "\" not found");
  }
  const Entry& ctx = ci->second;
  std::string ctxWhere = whereOf(ctx, "contexts", "context");
  auto clusterName = str(ctx.body, ctxWhere, "cluster");
  if (!clusterName) return clusterName.error();
  auto userName = str(ctx.body, ctxWhere, "user");
  if (!userName) return userName.error();
  auto ns = str(ctx.body, ctxWhere, "namespace");
  if (!ns) return ns.error();

  RestConfig rc;
  rc.source = "kubeconfig " + sources + " context=" + ctxName;
  if (!ns->empty()) rc.defaultNamespace = *ns;

  auto cl = clusters->find(*clusterName);
  if (cl == clusters->end()) {
    return makeError(Code::NotFound, ctxWhere + ".cluster: cluster \"" + *clusterName +
                                         "\" not found");
  }
  const Entry& c = cl->second;
  std::string cw = whereOf(c, "clusters", "cluster");
  auto server = str(c.body, cw, "server");
  if (!server) return server.error();
  if (server->empty()) return invalid(cw + ".server", "required");
  if (server->rfind("https://", 0) != 0 && server->rfind("http://", 0) != 0) {
    return invalid(cw + ".server", "must start with https:// or http://, got \"" + *server + "\"");
  }
  rc.server = *server;
  while (!rc.server.empty() && rc.server.back() == '/') rc.server.pop_back();
  auto ca = pemField(c.body, c, "clusters", "cluster", "certificate-authority", false);
  if (!ca) return ca.error();
  rc.caPem = *ca;
  if (c.body && c.body->contains("insecure-skip-tls-verify")) {
    const json& v = (*c.body)["insecure-skip-tls-verify"];
    if (!v.is_boolean()) return invalid(cw + ".insecure-skip-tls-verify", "must be a boolean");
    rc.insecureSkipTlsVerify = v;
  }
  auto sni = str(c.body, cw, "tls-server-name");
  if (!sni) return sni.error();
  rc.tlsServerName = *sni;

  if (userName->empty()) return rc;  // anonymous
  auto us = users->find(*userName);
  if (us == users->end()) {
    return makeError(Code::NotFound, ctxWhere + ".user: user \"" + *userName + "\" not found");
  }
  const Entry& u = us->second;
  std::string uw = whereOf(u, "users", "user");
  auto cert = pemField(u.body, u, "users", "user", "client-certificate", false);
  if (!cert) return cert.error();
  auto key = pemField(u.body, u, "users", "user", "client-key", true);
  if (!key) return key.error();
  if (cert->empty() != key->empty()) {
    return invalid(uw, cert->empty() ? "client-key given without client-certificate"
                                     : "client-certificate given without client-key");
  }
  rc.clientCertPem = *cert;
  rc.clientKeyPem = *key;
  auto token = str(u.body, uw, "token");
  if (!token) return token.error();
  rc.bearerToken = *token;
  auto tokenFile = str(u.body, uw, "tokenFile");
  if (!tokenFile) return tokenFile.error();
  if (!tokenFile->empty() && rc.bearerToken.empty()) {
    rc.bearerTokenFile = resolvePath(*tokenFile, u.file->path);
    auto content = readWholeFile(rc.bearerTokenFile, uw + ".tokenFile");
    if (!content) return content.error();
  }
  if (u.body && u.body->contains("exec") && !(*u.body)["exec"].is_null()) {
    auto ex = parseExec((*u.body)["exec"], uw + ".exec", u.file->path);
    if (!ex) return ex.error();
    rc.exec = std::move(*ex);
  }
  for (const char* unsupported : {"auth-provider", "username", "password"}) {
    if (u.body && u.body->contains(unsupported)) {
      return invalid(uw + "." + unsupported, "not supported (use exec or a token)");
    }
  }
  return rc;
}

Result<KubeconfigFile> parseFile(std::string_view yaml, const std::string& path) {
  auto doc = yamlToJson(yaml);
  if (!doc) return invalid(path, doc.error().message);
  if (doc->is_null()) return KubeconfigFile{path, json::object()};
  if (!doc->is_object()) return invalid(path, "a kubeconfig must be a mapping");
  return KubeconfigFile{path, std::move(*doc)};
}

}  // namespace

Status checkPem(const std::string& pem, bool isKey, const std::string& where) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (!bio) return makeError(Code::Internal, where + ": out of memory");
  bool ok = false;
  if (isKey) {
    EVP_PKEY* k = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    ok = k != nullptr;
    EVP_PKEY_free(k);
  } else {
    X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    ok = x != nullptr;
    X509_free(x);
  }
  BIO_free(bio);
  ERR_clear_error();
  if (!ok) {
    return invalid(where, isKey ? "not a PEM private key" : "not a PEM certificate");
  }
  return Status::OK();
}

std::vector<std::string> splitKubeconfigPaths(std::string_view value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(':', start);
    if (end == std::string_view::npos) end = value.size();
    if (end > start) out.emplace_back(value.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

Result<RestConfig> loadKubeconfig(const KubeconfigOptions& opts) {
  std::vector<KubeconfigFile> files;
  for (const auto& p : opts.paths) {
    std::error_code ec;
    if (!fs::exists(p, ec)) continue;  // kubectl skips missing files in KUBECONFIG
    auto text = readWholeFile(p, p);
    if (!text) return text.error();
    auto f = parseFile(*text, p);
    if (!f) return f.error();
    files.push_back(std::move(*f));
  }
  if (files.empty()) {
    std::string list;
    for (const auto& p : opts.paths) list += (list.empty() ? "" : ":") + p;
    return makeError(Code::NotFound, "no kubeconfig file found (looked at \"" + list + "\")");
  }
  return resolve(files, opts.context);
}

Result<RestConfig> parseKubeconfig(std::string_view yaml, const std::string& sourceName,
                                   const std::string& context) {
  auto f = parseFile(yaml, sourceName);
  if (!f) return f.error();
  std::vector<KubeconfigFile> files;
  files.push_back(std::move(*f));
  return resolve(files, context);
}

Result<RestConfig> inClusterConfig(const InClusterOptions& o) {
  if (o.host.empty() || o.port.empty()) {
    return makeError(Code::NotFound, "not running in a cluster: KUBERNETES_SERVICE_HOST and "
                                     "KUBERNETES_SERVICE_PORT must be set");
  }
  RestConfig rc;
  rc.source = "in-cluster";
  bool ipv6 = o.host.find(':') != std::string::npos;
  rc.server = "https://" + (ipv6 ? "[" + o.host + "]" : o.host) + ":" + o.port;
  auto token = readWholeFile(o.tokenFile, "in-cluster token");
  if (!token) return token.error();
  if (token->find_first_not_of(" \r\n\t") == std::string::npos) {
    return invalid("in-cluster token: " + o.tokenFile, "empty");
  }
  rc.bearerTokenFile = o.tokenFile;
  auto ca = readWholeFile(o.caFile, "in-cluster CA");
  if (!ca) return ca.error();
  if (auto s = checkPem(*ca, false, "in-cluster CA: " + o.caFile); !s) return s.error();
  rc.caPem = *ca;
  std::error_code ec;
  if (!o.namespaceFile.empty() && fs::exists(o.namespaceFile, ec)) {
    auto ns = readWholeFile(o.namespaceFile, "in-cluster namespace");
    if (ns) {
      std::string v = *ns;
      while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
      if (!v.empty()) rc.defaultNamespace = v;
    }
  }
  return rc;
}

}  // namespace strait::kube
