// What a process-runtime container sees, set up as a kubelet does (see
// runtime_process_kubelets.h): its volumes (runtime_process_volumes.h) kept in sync with
// their ConfigMaps, Secrets and downward values, the resolv.conf and hosts of its dnsPolicy
// (runtime_process_podfiles.h), its environment, and the postStart and preStop hooks.
#include "minicluster/runtime_process_kubelets.h"
#include "minicluster/runtime_process_podfiles.h"

namespace strait::minicluster::process_kubelets {
namespace {

std::string readHostFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

VolumeSources ProcessKubeletsImpl::volumeSources(const ProcPod& p) {
  VolumeSources s;
  std::string ns = p.sim.ns;
  s.get = [this, ns](const std::string& resource, const std::string& name) -> std::optional<json> {
    auto info = registry_.find("", "v1", resource);
    if (!info) return std::nullopt;
    auto o = rest_.get(*info, ns, name);
    if (!o) return std::nullopt;
    json j = json::parse((*o)->json, nullptr, false);
    if (j.is_discarded()) return std::nullopt;
    return j;
  };
  if (auto n = rest_.get(*nodesInfo_, "", p.sim.node)) {
    json node = json::parse((*n)->json, nullptr, false);
    if (!node.is_discarded()) {
      auto alloc = kube::parseResourceList(
          node.value("status", json::object()).value("allocatable", json::object()));
      if (alloc) s.allocatable = *alloc;
    }
  }
  if (!opts_.serviceAccountKeyPem.empty()) {
    json pod = p.sim.pod;
    std::string node = p.sim.node, key = opts_.serviceAccountKeyPem;
    s.token = [pod, node, key](const std::string& audience, int64_t exp) {
      auto t = signServiceAccountToken(pod, node, audience, exp, key);
      return t ? *t : std::string();
    };
  }
  return s;
}

bool ProcessKubeletsImpl::setUpVolumes(ProcPod& p) {
  if (p.volumes.dir().empty()) p.volumes = PodVolumes(p.logDir + "/volumes");
  // Downward values read the status this kubelet writes (podIP, hostIP).
  json pod = p.sim.pod;
  pod["status"]["podIP"] = p.sim.podIP;
  pod["status"]["podIPs"] = json::array({{{"ip", p.sim.podIP}}});
  pod["status"]["hostIP"] = p.sim.hostIP;
  pod["status"]["hostIPs"] = json::array({{{"ip", p.sim.hostIP}}});
  if (auto s = p.volumes.setUp(pod, volumeSources(p)); !s) {
    spdlog::warn("event=volume_mount_failed pod={}/{} error=\"{}\"", p.sim.ns, p.sim.name,
                 s.error().message);
    recorder_.record(p.sim.pod, "Warning", "FailedMount", s.error().message, p.sim.node);
    p.sandboxRetryAt = Steady::now() + 2s;
    return false;
  }
  p.volumesReady = true;
  p.nextVolumeSync = Steady::now() + 2s;
  return true;
}

void ProcessKubeletsImpl::syncVolumes(ProcPod& p) {
  auto now = Steady::now();
  if (!p.volumesReady || now < p.nextVolumeSync) return;
  p.nextVolumeSync = now + 2s;
  json pod = p.sim.pod;
  pod["status"]["podIP"] = p.sim.podIP;
  pod["status"]["podIPs"] = json::array({{{"ip", p.sim.podIP}}});
  pod["status"]["hostIP"] = p.sim.hostIP;
  pod["status"]["hostIPs"] = json::array({{{"ip", p.sim.hostIP}}});
  for (const auto& v : p.volumes.refresh(pod, volumeSources(p))) {
    spdlog::info("event=volume_updated pod={}/{} volume={}", p.sim.ns, p.sim.name, v);
  }
}

std::vector<std::pair<std::string, std::string>> ProcessKubeletsImpl::podFiles(const ProcPod& p) {
  std::vector<std::pair<std::string, std::string>> binds;
  const json& spec = p.sim.pod.value("spec", json::object());
  if (auto resolv = podResolvConfFor(p.sim.pod, readHostFile("/etc/resolv.conf"))) {
    std::ofstream(p.logDir + "/resolv.conf") << *resolv;
    binds.emplace_back(p.logDir + "/resolv.conf", "/etc/resolv.conf");
  }
  if (!p.hostNetwork) {
    std::ofstream(p.logDir + "/hosts") << podHostsFile(p.sim.pod, p.sim.podIP);
    binds.emplace_back(p.logDir + "/hosts", "/etc/hosts");
  } else if (spec.contains("hostAliases")) {
    std::string hosts = readHostFile("/etc/hosts");
    std::string all = podHostsFile(p.sim.pod, p.sim.podIP);
    auto at = all.find("\n# Entries added by HostAliases.");
    if (at != std::string::npos) hosts += all.substr(at);
    std::ofstream(p.logDir + "/hosts") << hosts;
    binds.emplace_back(p.logDir + "/hosts", "/etc/hosts");
  }
  return binds;
}

std::vector<std::pair<std::string, std::string>> ProcessKubeletsImpl::containerEnvironment(
    const ProcPod& p, const json& spec) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      {"HOSTNAME", p.hostNetwork ? p.sim.node : p.sim.name}};
  // The kubernetes Service of default, in every namespace (the kubelet's master service).
  if (auto info = registry_.find("", "v1", "services")) {
    if (auto o = rest_.get(*info, "default", "kubernetes")) {
      json svc = json::parse((*o)->json, nullptr, false);
      std::string ip = svc.is_discarded() ? "" : svc["spec"].value("clusterIP", "");
      const json& ports = svc.is_discarded() ? json::array() : svc["spec"].value("ports", json::array());
      if (!ip.empty() && !ports.empty() && ports[0].is_object()) {
        std::string port = std::to_string(ports[0].value("port", 443));
        env.insert(env.end(), {{"KUBERNETES_SERVICE_HOST", ip},
                               {"KUBERNETES_SERVICE_PORT", port},
                               {"KUBERNETES_SERVICE_PORT_HTTPS", port},
                               {"KUBERNETES_PORT", "tcp://" + ip + ":" + port},
                               {"KUBERNETES_PORT_" + port + "_TCP", "tcp://" + ip + ":" + port},
                               {"KUBERNETES_PORT_" + port + "_TCP_PROTO", "tcp"},
                               {"KUBERNETES_PORT_" + port + "_TCP_PORT", port},
                               {"KUBERNETES_PORT_" + port + "_TCP_ADDR", ip}});
      }
    }
  }
  auto links = serviceEnvironment(p);
  env.insert(env.end(), links.begin(), links.end());
  VolumeSources sources = volumeSources(p);
  json pod = p.sim.pod;
  pod["status"]["podIP"] = p.sim.podIP;
  pod["status"]["podIPs"] = json::array({{{"ip", p.sim.podIP}}});
  pod["status"]["hostIP"] = p.sim.hostIP;
  pod["status"]["hostIPs"] = json::array({{{"ip", p.sim.hostIP}}});
  auto keysOf = [&](bool secret, const std::string& name) -> std::optional<std::map<std::string, std::string>> {
    json vol = secret ? json{{"secret", {{"secretName", name}}}} : json{{"configMap", {{"name", name}}}};
    auto files = volumeFiles(vol, pod, sources);
    if (!files) return std::nullopt;
    std::map<std::string, std::string> out;
    for (const auto& f : *files) out[f.path] = f.data;
    return out;
  };
  for (const auto& ef : spec.value("envFrom", json::array())) {
    bool secret = ef.contains("secretRef");
    const json& ref = ef.value(secret ? "secretRef" : "configMapRef", json::object());
    auto keys = keysOf(secret, ref.value("name", ""));
    if (!keys) continue;
    for (const auto& [k, v] : *keys) env.emplace_back(ef.value("prefix", "") + k, v);
  }
  std::map<std::string, std::string> vars;
  for (const auto& [k, v] : env) vars[k] = v;
  for (const auto& e : spec.value("env", json::array())) {
    std::string name = e.value("name", "");
    std::string value;
    const json& vf = e.value("valueFrom", json::object());
    if (e.contains("value") && e["value"].is_string()) {
      value = expandEnvReferences(e["value"].get<std::string>(), vars);
    } else if (vf.contains("configMapKeyRef") || vf.contains("secretKeyRef")) {
      bool secret = vf.contains("secretKeyRef");
      const json& ref = vf[secret ? "secretKeyRef" : "configMapKeyRef"];
      auto keys = keysOf(secret, ref.value("name", ""));
      auto k = keys ? keys->find(ref.value("key", "")) : std::map<std::string, std::string>::iterator();
      if (!keys || k == keys->end()) continue;
      value = k->second;
    } else if (vf.contains("fieldRef")) {
      auto v = downwardFieldValue(pod, vf["fieldRef"].value("fieldPath", ""));
      if (!v) continue;
      value = *v;
    } else if (vf.contains("resourceFieldRef")) {
      json ref = vf["resourceFieldRef"];
      const json* c = &spec;
      std::string other = ref.value("containerName", "");
      if (!other.empty() && other != spec.value("name", "")) {
        c = nullptr;
        for (const char* list : {"containers", "initContainers"}) {
          for (const auto& x : pod["spec"].value(list, json::array())) {
            if (x.value("name", "") == other) c = &x;
          }
        }
        if (!c) continue;
      }
      auto v = resourceFieldValue(ref, *c, sources.allocatable);
      if (!v) continue;
      value = *v;
    }
    env.emplace_back(name, value);
    vars[name] = value;
  }
  // The last definition of a name wins.
  std::map<std::string, size_t> last;
  for (size_t i = 0; i < env.size(); ++i) last[env[i].first] = i;
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < env.size(); ++i) {
    if (last[env[i].first] == i) out.push_back(env[i]);
  }
  return out;
}

std::future<bool> ProcessKubeletsImpl::runHook(const ProcPod& p, const Proc& proc, const json& handler,
                                               std::chrono::seconds timeout) {
  json probe = handler;
  probe["timeoutSeconds"] = std::max<int64_t>(1, timeout.count());
  ProbeTarget t = probeTarget(p, proc);
  return std::async(std::launch::async, [probe, t] {
    if (probe.contains("sleep") && probe["sleep"].is_object()) {
      std::this_thread::sleep_for(std::chrono::seconds(probe["sleep"].value("seconds", 0)));
      return true;
    }
    return runProbe(probe, t);
  });
}

void ProcessKubeletsImpl::startPostStart(ProcPod& p, size_t i) {
  Proc& proc = p.procs[i];
  const json& h = proc.spec.value("lifecycle", json::object()).value("postStart", json());
  if (proc.postStart.valid()) abandoned_.push_back(std::move(proc.postStart));
  if (proc.pid <= 0 || !h.is_object()) return;
  proc.postStart = runHook(p, proc, h, 120s);
}

void ProcessKubeletsImpl::tickHooks(ProcPod& p, size_t i) {
  Proc& proc = p.procs[i];
  if (!proc.postStart.valid() || proc.postStart.wait_for(0ms) != std::future_status::ready) return;
  bool ok = proc.postStart.get();
  if (ok || proc.pid <= 0) return;
  const std::string& name = p.sim.containers[i].name;
  recorder_.record(p.sim.pod, "Warning", "FailedPostStartHook",
                   "PostStartHook failed for container " + name, p.sim.node);
  recorder_.record(p.sim.pod, "Normal", "Killing",
                   "FailedPostStartHook: container " + name + " will be restarted", p.sim.node);
  spdlog::info("event=post_start_hook_failed pod={}/{} container={} action=kill", p.sim.ns,
               p.sim.name, name);
  ::kill(-proc.pid, SIGKILL);  // reaped by the next tick, then restartPolicy applies
}

void ProcessKubeletsImpl::signalTermination(ProcPod& p) {
  for (size_t i = 0; i < p.procs.size(); ++i) {
    Proc& proc = p.procs[i];
    if (proc.pid <= 0 || proc.termSent) continue;
    if (proc.preStop.valid()) {
      if (proc.preStop.wait_for(0ms) != std::future_status::ready) continue;
      if (!proc.preStop.get()) {
        recorder_.record(p.sim.pod, "Warning", "FailedPreStopHook",
                         "PreStopHook failed for container " + p.sim.containers[i].name,
                         p.sim.node);
      }
    }
    ::kill(-proc.pid, SIGTERM);
    proc.termSent = true;
  }
}

}  // namespace strait::minicluster::process_kubelets
