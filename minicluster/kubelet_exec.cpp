#include "minicluster/kubelet_exec.h"

#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <map>

#include "kube/object.h"

namespace strait::minicluster {
namespace {

using kube::HttpRequest;
using kube::HttpResponse;
using kube::Responder;
using kube::WebSocket;

using nlohmann::json;

constexpr char kStdin = 0, kStdout = 1, kStderr = 2, kStatus = 3, kClose = static_cast<char>(255);

std::string base64Decode(const std::string& in) {
  if (in.empty()) return {};
  std::string out(in.size() / 4 * 3 + 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return {};
  size_t pad = 0;
  for (size_t i = in.size(); i > 0 && in[i - 1] == '='; --i) ++pad;
  out.resize(static_cast<size_t>(n) - std::min<size_t>(pad, static_cast<size_t>(n)));
  return out;
}

// Key -> value of a ConfigMap (data, binaryData) or Secret (data decoded, stringData), or
// nullopt when it does not exist.
std::optional<std::map<std::string, std::string>> readKeys(Registry& registry, Rest& rest,
                                                           const std::string& ns, bool secret,
                                                           const std::string& name) {
  auto info = registry.find("", "v1", secret ? "secrets" : "configmaps");
  if (!info) return std::nullopt;
  auto o = rest.get(*info, ns, name);
  if (!o) return std::nullopt;
  json obj = json::parse((*o)->json, nullptr, false);
  if (obj.is_discarded()) return std::nullopt;
  std::map<std::string, std::string> out;
  if (obj.contains("data") && obj["data"].is_object()) {
    for (const auto& [k, v] : obj["data"].items()) {
      if (v.is_string()) out[k] = secret ? base64Decode(v.get<std::string>()) : v.get<std::string>();
    }
  }
  if (!secret && obj.contains("binaryData") && obj["binaryData"].is_object()) {
    for (const auto& [k, v] : obj["binaryData"].items()) {
      if (v.is_string()) out[k] = base64Decode(v.get<std::string>());
    }
  }
  return out;
}

const json* findContainer(const json& pod, const std::string& name) {
  if (!pod.is_object() || !pod.contains("spec") || !pod["spec"].is_object()) return nullptr;
  const json& spec = pod["spec"];  // a reference: the result points into `pod`
  for (const char* list : {"containers", "initContainers"}) {
    if (!spec.contains(list) || !spec[list].is_array()) continue;
    for (const auto& c : spec[list]) {
      if (c.is_object() && c.value("name", "") == name) return &c;
    }
  }
  return nullptr;
}

std::string statusJson(int exitCode, const std::vector<std::string>& argv) {
  json s = {{"metadata", json::object()}};
  if (exitCode == 0) {
    s["status"] = "Success";
  } else {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    s["status"] = "Failure";
    s["message"] = "command terminated with non-zero exit code: error executing command [" + cmd +
                   "], exit code " + std::to_string(exitCode);
    s["reason"] = "NonZeroExitCode";
    s["details"] = {{"causes", json::array({{{"reason", "ExitCode"},
                                             {"message", std::to_string(exitCode)}}})}};
  }
  return s.dump();
}

}  // namespace

std::string kubeletStreamProtocol(const HttpRequest& req) {
  if (req.header("upgrade").empty()) return "";
  const std::string offered = req.header("sec-websocket-protocol");
  for (const char* p : {"v5.channel.k8s.io", "v4.channel.k8s.io"}) {
    if (offered.find(p) != std::string::npos) return p;
  }
  return "";
}

bool kubeletQueryFlag(const HttpRequest& req, const char* a, const char* b) {
  for (const char* k : {a, b}) {
    if (!k) continue;
    std::string v = req.queryParam(k);
    if (v == "1" || v == "true" || v == "True") return true;
  }
  return false;
}

ExecContext execContextFor(const PodRuntime& pod, const std::string& container, Registry& registry,
                           Rest& rest) {
  ExecContext ctx;
  ctx.hostname = pod.name;
  ctx.env = {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
             {"HOSTNAME", pod.name},
             {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
             {"KUBERNETES_SERVICE_PORT", "443"},
             {"KUBERNETES_PORT", "tcp://10.96.0.1:443"}};
  const json* c = findContainer(pod.pod, container);
  std::map<std::string, std::string> files = {{"/etc/hostname", pod.name + "\n"}};
  std::map<std::string, std::vector<std::string>> dirs;
  if (c) {
    if (c->contains("envFrom") && (*c)["envFrom"].is_array()) {
      for (const auto& ef : (*c)["envFrom"]) {
        bool secret = ef.contains("secretRef");
        const json& ref = ef.value(secret ? "secretRef" : "configMapRef", json::object());
        auto keys = readKeys(registry, rest, pod.ns, secret, ref.value("name", ""));
        if (!keys) continue;
        for (const auto& [k, v] : *keys) ctx.env.emplace_back(ef.value("prefix", "") + k, v);
      }
    }
    if (c->contains("env") && (*c)["env"].is_array()) {
      for (const auto& e : (*c)["env"]) {
        std::string name = e.value("name", "");
        if (e.contains("value") && e["value"].is_string()) {
          ctx.env.emplace_back(name, e["value"].get<std::string>());
          continue;
        }
        const json& vf = e.value("valueFrom", json::object());
        if (vf.contains("configMapKeyRef") || vf.contains("secretKeyRef")) {
          bool secret = vf.contains("secretKeyRef");
          const json& ref = vf[secret ? "secretKeyRef" : "configMapKeyRef"];
          auto keys = readKeys(registry, rest, pod.ns, secret, ref.value("name", ""));
          if (keys && keys->count(ref.value("key", ""))) {
            ctx.env.emplace_back(name, keys->at(ref.value("key", "")));
          }
        } else if (vf.contains("fieldRef")) {
          std::string path = vf["fieldRef"].value("fieldPath", "");
          std::string v = path == "metadata.name" ? pod.name
                          : path == "metadata.namespace" ? pod.ns
                          : path == "spec.nodeName" ? pod.node
                          : path == "status.podIP" ? pod.podIP
                          : path == "status.hostIP" ? pod.hostIP
                          : path == "metadata.uid" ? pod.uid : "";
          ctx.env.emplace_back(name, v);
        }
      }
    }
    // Volumes mounted into this container.
    std::map<std::string, json> volumes;
    const json& spec = pod.pod.value("spec", json::object());
    if (spec.contains("volumes") && spec["volumes"].is_array()) {
      for (const auto& v : spec["volumes"]) volumes[v.value("name", "")] = v;
    }
    if (c->contains("volumeMounts") && (*c)["volumeMounts"].is_array()) {
      for (const auto& m : (*c)["volumeMounts"]) {
        auto v = volumes.find(m.value("name", ""));
        if (v == volumes.end()) continue;
        bool secret = v->second.contains("secret");
        if (!secret && !v->second.contains("configMap")) continue;
        const json& src = v->second[secret ? "secret" : "configMap"];
        auto keys = readKeys(registry, rest, pod.ns, secret,
                             src.value(secret ? "secretName" : "name", ""));
        if (!keys) continue;
        std::string mount = m.value("mountPath", "");
        while (mount.size() > 1 && mount.back() == '/') mount.pop_back();
        std::map<std::string, std::string> paths;  // key -> relative path
        if (src.contains("items") && src["items"].is_array()) {
          for (const auto& it : src["items"]) paths[it.value("key", "")] = it.value("path", "");
        } else {
          for (const auto& [k, val] : *keys) paths[k] = k;
        }
        std::string sub = m.value("subPath", "");
        for (const auto& [k, rel] : paths) {
          if (!keys->count(k)) continue;
          if (!sub.empty()) {
            if (rel == sub) files[mount] = keys->at(k);
            continue;
          }
          files[mount + "/" + rel] = keys->at(k);
          dirs[mount].push_back(rel);
        }
      }
    }
  }
  ctx.readFile = [files](const std::string& path) -> std::optional<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  };
  ctx.listDir = [dirs](const std::string& dir) -> std::optional<std::vector<std::string>> {
    std::string d = dir;
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    auto it = dirs.find(d);
    if (it == dirs.end()) return std::nullopt;
    return it->second;
  };
  return ctx;
}

void serveExec(const HttpRequest& req, Responder& out, const PodRuntime& pod,
               const std::string& container, Registry& registry, Rest& rest) {
  auto plain = [&](int code, const std::string& msg) {
    HttpResponse r;
    r.status = code;
    r.headers["Content-Type"] = "text/plain; charset=utf-8";
    r.body = msg;
    out.respond(std::move(r));
  };
  std::vector<std::string> argv = req.queryAll("command");
  if (argv.empty()) return plain(400, "you must specify at least one command for the container");
  const std::string proto = kubeletStreamProtocol(req);
  if (proto.empty()) return plain(400, kKubeletStreamUpgradeError);
  const bool wantIn = kubeletQueryFlag(req, "input", "stdin");
  const bool wantOut = kubeletQueryFlag(req, "output", "stdout");
  const bool wantErr = kubeletQueryFlag(req, "error", "stderr");
  const bool tty = kubeletQueryFlag(req, "tty");
  auto ws = out.acceptWebSocket(proto);
  if (!ws) return;
  std::string input;
  if (wantIn && commandReadsStdin(argv) && proto == "v5.channel.k8s.io") {
    std::string msg;
    while (ws->read(msg)) {
      if (msg.empty()) continue;
      if (msg[0] == kStdin) {
        input.append(msg, 1, std::string::npos);
      } else if (msg[0] == kClose && msg.size() >= 2 && msg[1] == kStdin) {
        break;  // the client closed stdin
      }
    }
  }
  ExecContext ctx = execContextFor(pod, container, registry, rest);
  ExecResult r = runCommand(argv, ctx, input);
  spdlog::debug("event=exec pod={}/{} container={} command={} exit_code={}", pod.ns, pod.name,
                container, argv[0], r.exitCode);
  if (tty) {
    r.out += r.err;
    r.err.clear();
  }
  bool ok = true;
  if (wantOut && !r.out.empty()) ok = ws->write(std::string(1, kStdout) + r.out);
  if (ok && wantErr && !r.err.empty()) ok = ws->write(std::string(1, kStderr) + r.err);
  if (ok) ws->write(std::string(1, kStatus) + statusJson(r.exitCode, argv));
  ws->close();
}

}  // namespace strait::minicluster
