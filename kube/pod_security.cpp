#include "kube/pod_security.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

namespace strait::kube {

using nlohmann::json;

namespace {

// ---- JSON access: a missing or mistyped field is unset ----

const json& field(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::string strField(const json& obj, const char* key) {
  const json& v = field(obj, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

bool isTrue(const json& obj, const char* key) {
  const json& v = field(obj, key);
  return v.is_boolean() && v.get<bool>();
}

bool isFalse(const json& obj, const char* key) {
  const json& v = field(obj, key);
  return v.is_boolean() && !v.get<bool>();
}

const json& securityContext(const json& containerOrSpec) {
  return field(containerOrSpec, "securityContext");
}

// Calls `fn` for each container: initContainers, containers, ephemeralContainers (upstream's
// visitContainers order).
void visitContainers(const json& spec, const std::function<void(const json&)>& fn) {
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    const json& cs = field(spec, list);
    if (!cs.is_array()) continue;
    for (const json& c : cs) {
      if (c.is_object()) fn(c);
    }
  }
}

// ---- message helpers (upstream's pluralize / joinQuote) ----

std::string pluralize(const std::string& one, const std::string& many, size_t n) {
  return n == 1 ? one : many;
}

std::string joinQuote(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += ", ";
    out += json(s).dump();
  }
  return out;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::vector<std::string> sorted(const std::set<std::string>& s) { return {s.begin(), s.end()}; }

// "container \"a\"" / "containers \"a\", \"b\"".
std::string containersPhrase(const std::vector<std::string>& names) {
  return pluralize("container", "containers", names.size()) + " " + joinQuote(names);
}

using Result_ = std::optional<PodSecurityViolation>;

PodSecurityViolation violation(std::string check, std::string reason, std::string detail) {
  return PodSecurityViolation{std::move(check), std::move(reason), std::move(detail)};
}

// A Pod in its own user namespace (spec.hostUsers=false): upstream relaxes the checks on
// running as root there.
bool inUserNamespace(const json& spec) { return isFalse(spec, "hostUsers"); }

// ---- baseline ----

Result_ hostNamespaces(const json&, const json& spec) {
  std::vector<std::string> set;
  for (const char* f : {"hostNetwork", "hostPID", "hostIPC"}) {
    if (isTrue(spec, f)) set.push_back(std::string(f) + "=true");
  }
  if (set.empty()) return std::nullopt;
  return violation("hostNamespaces", "host namespaces", join(set, ", "));
}

Result_ privileged(const json&, const json& spec) {
  std::vector<std::string> bad;
  visitContainers(spec, [&](const json& c) {
    if (isTrue(securityContext(c), "privileged")) bad.push_back(strField(c, "name"));
  });
  if (bad.empty()) return std::nullopt;
  return violation("privileged", "privileged",
                   containersPhrase(bad) + " must not set securityContext.privileged=true");
}

const std::set<std::string>& baselineCapabilities() {
  static const std::set<std::string> k = {
      "AUDIT_WRITE", "CHOWN",  "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL",       "MKNOD",
      "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"};
  return k;
}

std::vector<std::string> capabilityList(const json& c, const char* which) {
  std::vector<std::string> out;
  const json& list = field(field(securityContext(c), "capabilities"), which);
  if (!list.is_array()) return out;
  for (const json& v : list) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

Result_ capabilitiesBaseline(const json&, const json& spec) {
  std::vector<std::string> bad;
  std::set<std::string> caps;
  visitContainers(spec, [&](const json& c) {
    bool valid = true;
    for (const std::string& cap : capabilityList(c, "add")) {
      if (!baselineCapabilities().count(cap)) {
        valid = false;
        caps.insert(cap);
      }
    }
    if (!valid) bad.push_back(strField(c, "name"));
  });
  if (bad.empty()) return std::nullopt;
  return violation("capabilities_baseline", "non-default capabilities",
                   containersPhrase(bad) + " must not include " + joinQuote(sorted(caps)) +
                       " in securityContext.capabilities.add");
}

Result_ hostPathVolumes(const json&, const json& spec) {
  std::vector<std::string> bad;
  const json& vols = field(spec, "volumes");
  if (vols.is_array()) {
    for (const json& v : vols) {
      if (field(v, "hostPath").is_object()) bad.push_back(strField(v, "name"));
    }
  }
  if (bad.empty()) return std::nullopt;
  return violation("hostPathVolumes", "hostPath volumes",
                   pluralize("volume", "volumes", bad.size()) + " " + joinQuote(bad));
}

Result_ hostPorts(const json&, const json& spec) {
  std::vector<std::string> bad;
  std::set<std::string> ports;  // sorted as strings, like upstream's sets.String
  visitContainers(spec, [&](const json& c) {
    bool valid = true;
    const json& ps = field(c, "ports");
    if (ps.is_array()) {
      for (const json& p : ps) {
        const json& hp = field(p, "hostPort");
        if (hp.is_number_integer() && hp.get<int64_t>() != 0) {
          valid = false;
          ports.insert(std::to_string(hp.get<int64_t>()));
        }
      }
    }
    if (!valid) bad.push_back(strField(c, "name"));
  });
  if (bad.empty()) return std::nullopt;
  return violation("hostPorts", "hostPort",
                   containersPhrase(bad) + " " + pluralize("uses", "use", bad.size()) + " " +
                       pluralize("hostPort", "hostPorts", ports.size()) + " " +
                       join(sorted(ports), ", "));
}

bool allowedAppArmorType(const std::string& t) {
  return t.empty() || t == "RuntimeDefault" || t == "Localhost";
}

bool allowedAppArmorAnnotation(const std::string& v) {
  return v.empty() || v == "runtime/default" || v.rfind("localhost/", 0) == 0;
}

Result_ appArmorProfile(const json& meta, const json& spec) {
  std::vector<std::string> setters;
  std::set<std::string> values;
  const std::string podType = strField(field(securityContext(spec), "appArmorProfile"), "type");
  if (!allowedAppArmorType(podType)) {
    setters.push_back("pod");
    values.insert(podType);
  }
  std::vector<std::string> bad;
  visitContainers(spec, [&](const json& c) {
    const std::string t = strField(field(securityContext(c), "appArmorProfile"), "type");
    if (!allowedAppArmorType(t)) {
      bad.push_back(strField(c, "name"));
      values.insert(t);
    }
  });
  if (!bad.empty()) setters.push_back(containersPhrase(bad));
  std::vector<std::string> list = sorted(values);
  std::vector<std::string> annotations;
  const json& ann = field(meta, "annotations");
  if (ann.is_object()) {
    for (const auto& [k, v] : ann.items()) {
      if (k.rfind("container.apparmor.security.beta.kubernetes.io/", 0) != 0 || !v.is_string()) {
        continue;
      }
      if (!allowedAppArmorAnnotation(v.get<std::string>())) {
        annotations.push_back(k + "=" + json(v.get<std::string>()).dump());
      }
    }
  }
  std::sort(annotations.begin(), annotations.end());
  if (setters.empty() && annotations.empty()) return std::nullopt;
  std::vector<std::string> parts;
  if (!setters.empty()) {
    parts.push_back(join(setters, " and ") + " must not set AppArmor profile type to " +
                    joinQuote(list));
  }
  if (!annotations.empty()) parts.push_back(join(annotations, ", "));
  const std::string detail = join(parts, "; ");
  const size_t n = list.size() + annotations.size();
  return violation("appArmorProfile",
                   pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", n),
                   detail);
}

Result_ procMountBaseline(const json&, const json& spec) {
  if (inUserNamespace(spec)) return std::nullopt;
  std::vector<std::string> bad;
  std::set<std::string> values;
  visitContainers(spec, [&](const json& c) {
    const std::string pm = strField(securityContext(c), "procMount");
    if (!pm.empty() && pm != "Default") {
      bad.push_back(strField(c, "name"));
      values.insert(pm);
    }
  });
  if (bad.empty()) return std::nullopt;
  return violation("procMount", "procMount",
                   containersPhrase(bad) + " must not set securityContext.procMount to " +
                       joinQuote(sorted(values)));
}

Result_ seLinuxOptions(const json&, const json& spec) {
  static const std::set<std::string> kAllowed = {"", "container_t", "container_init_t",
                                                 "container_kvm_t"};
  std::vector<std::string> setters;
  std::set<std::string> badTypes;
  bool setUser = false, setRole = false;
  auto valid = [&](const json& opts) {
    bool ok = true;
    const std::string type = strField(opts, "type");
    if (!kAllowed.count(type)) {
      ok = false;
      badTypes.insert(type);
    }
    if (!strField(opts, "user").empty()) {
      ok = false;
      setUser = true;
    }
    if (!strField(opts, "role").empty()) {
      ok = false;
      setRole = true;
    }
    return ok;
  };
  const json& podOpts = field(securityContext(spec), "seLinuxOptions");
  if (podOpts.is_object() && !valid(podOpts)) setters.push_back("pod");
  std::vector<std::string> bad;
  visitContainers(spec, [&](const json& c) {
    const json& o = field(securityContext(c), "seLinuxOptions");
    if (o.is_object() && !valid(o)) bad.push_back(strField(c, "name"));
  });
  if (!bad.empty()) setters.push_back(containersPhrase(bad));
  if (setters.empty()) return std::nullopt;
  std::vector<std::string> data;
  if (!badTypes.empty()) {
    data.push_back(pluralize("type", "types", badTypes.size()) + " " +
                   joinQuote(sorted(badTypes)));
  }
  if (setUser) data.push_back("user may not be set");
  if (setRole) data.push_back("role may not be set");
  return violation("seLinuxOptions", "seLinuxOptions",
                   join(setters, " and ") +
                       " set forbidden securityContext.seLinuxOptions: " + join(data, "; "));
}

Result_ seccompBaseline(const json&, const json& spec) {
  std::vector<std::string> setters;
  if (strField(field(securityContext(spec), "seccompProfile"), "type") == "Unconfined") {
    setters.push_back("pod");
  }
  std::vector<std::string> bad;
  visitContainers(spec, [&](const json& c) {
    if (strField(field(securityContext(c), "seccompProfile"), "type") == "Unconfined") {
      bad.push_back(strField(c, "name"));
    }
  });
  if (!bad.empty()) setters.push_back(containersPhrase(bad));
  if (setters.empty()) return std::nullopt;
  return violation("seccompProfile_baseline", "seccompProfile",
                   join(setters, " and ") +
                       " must not set securityContext.seccompProfile.type to \"Unconfined\"");
}

Result_ sysctls(const json&, const json& spec) {
  static const std::set<std::string> kAllowed = {
      "kernel.shm_rmid_forced",         "net.ipv4.ip_local_port_range",
      "net.ipv4.tcp_syncookies",        "net.ipv4.ping_group_range",
      "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports",
      "net.ipv4.tcp_keepalive_time",    "net.ipv4.tcp_fin_timeout",
      "net.ipv4.tcp_keepalive_intvl",   "net.ipv4.tcp_keepalive_probes",
      "net.ipv4.tcp_rmem",              "net.ipv4.tcp_wmem"};
  std::vector<std::string> bad;
  const json& list = field(securityContext(spec), "sysctls");
  if (list.is_array()) {
    for (const json& s : list) {
      const std::string name = strField(s, "name");
      if (!kAllowed.count(name)) bad.push_back(name);
    }
  }
  if (bad.empty()) return std::nullopt;
  return violation("sysctls", "forbidden sysctls", join(bad, ", "));
}

Result_ windowsHostProcess(const json&, const json& spec) {
  std::vector<std::string> setters;
  if (isTrue(field(securityContext(spec), "windowsOptions"), "hostProcess")) {
    setters.push_back("pod");
  }
  std::vector<std::string> bad;
  visitContainers(spec, [&](const json& c) {
    if (isTrue(field(securityContext(c), "windowsOptions"), "hostProcess")) {
      bad.push_back(strField(c, "name"));
    }
  });
  if (!bad.empty()) setters.push_back(containersPhrase(bad));
  if (setters.empty()) return std::nullopt;
  return violation("windowsHostProcess", "hostProcess",
                   join(setters, " and ") +
                       " must not set securityContext.windowsOptions.hostProcess=true");
}

// ---- restricted ----

Result_ allowPrivilegeEscalation(const json&, const json& spec) {
  std::vector<std::string> bad;
  visitContainers(spec, [&](const json& c) {
    if (!isFalse(securityContext(c), "allowPrivilegeEscalation")) {
      bad.push_back(strField(c, "name"));
    }
  });
  if (bad.empty()) return std::nullopt;
  return violation("allowPrivilegeEscalation", "allowPrivilegeEscalation != false",
                   containersPhrase(bad) +
                       " must set securityContext.allowPrivilegeEscalation=false");
}

Result_ capabilitiesRestricted(const json&, const json& spec) {
  std::vector<std::string> missingDropAll, adding;
  std::set<std::string> caps;
  visitContainers(spec, [&](const json& c) {
    std::vector<std::string> drop = capabilityList(c, "drop");
    if (std::find(drop.begin(), drop.end(), "ALL") == drop.end()) {
      missingDropAll.push_back(strField(c, "name"));
    }
    bool forbidden = false;
    for (const std::string& cap : capabilityList(c, "add")) {
      if (cap != "NET_BIND_SERVICE") {
        forbidden = true;
        caps.insert(cap);
      }
    }
    if (forbidden) adding.push_back(strField(c, "name"));
  });
  std::vector<std::string> details;
  if (!missingDropAll.empty()) {
    details.push_back(containersPhrase(missingDropAll) +
                      " must set securityContext.capabilities.drop=[\"ALL\"]");
  }
  if (!adding.empty()) {
    details.push_back(containersPhrase(adding) + " must not include " +
                      joinQuote(sorted(caps)) + " in securityContext.capabilities.add");
  }
  if (details.empty()) return std::nullopt;
  return violation("capabilities_restricted", "unrestricted capabilities", join(details, "; "));
}

Result_ restrictedVolumes(const json&, const json& spec) {
  static const std::set<std::string> kAllowed = {
      "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image",
      "persistentVolumeClaim", "projected", "secret"};
  // Every volume source upstream knows: a source not listed here is "unknown".
  static const std::set<std::string> kKnown = {
      "hostPath",   "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs",
      "iscsi",      "glusterfs",         "rbd",                  "flexVolume", "cinder",
      "cephfs",     "flocker",           "fc",                   "azureFile", "vsphereVolume",
      "quobyte",    "azureDisk",         "photonPersistentDisk", "portworxVolume",
      "scaleIO",    "storageos"};
  std::vector<std::string> bad;
  std::set<std::string> types;
  const json& vols = field(spec, "volumes");
  if (vols.is_array()) {
    for (const json& v : vols) {
      if (!v.is_object()) continue;
      bool allowed = false;
      std::string type;
      for (const auto& [k, val] : v.items()) {
        if (k == "name" || val.is_null()) continue;
        if (kAllowed.count(k)) {
          allowed = true;
          break;
        }
        type = kKnown.count(k) ? k : "unknown";
      }
      if (allowed || type.empty()) continue;
      bad.push_back(strField(v, "name"));
      types.insert(type);
    }
  }
  if (bad.empty()) return std::nullopt;
  return violation("restrictedVolumes", "restricted volume types",
                   pluralize("volume", "volumes", bad.size()) + " " + joinQuote(bad) + " " +
                       pluralize("uses", "use", bad.size()) + " " +
                       pluralize("restricted volume type", "restricted volume types",
                                 types.size()) +
                       " " + joinQuote(sorted(types)));
}

Result_ runAsNonRoot(const json&, const json& spec) {
  if (inUserNamespace(spec)) return std::nullopt;
  std::vector<std::string> setters;
  bool podNonRoot = false;
  const json& psc = securityContext(spec);
  if (isFalse(psc, "runAsNonRoot")) setters.push_back("pod");
  if (isTrue(psc, "runAsNonRoot")) podNonRoot = true;
  std::vector<std::string> explicitBad, implicitBad;
  visitContainers(spec, [&](const json& c) {
    const json& v = field(securityContext(c), "runAsNonRoot");
    if (v.is_boolean()) {
      if (!v.get<bool>()) explicitBad.push_back(strField(c, "name"));
    } else if (!podNonRoot) {
      implicitBad.push_back(strField(c, "name"));
    }
  });
  if (!explicitBad.empty()) setters.push_back(containersPhrase(explicitBad));
  if (!setters.empty()) {
    return violation("runAsNonRoot", "runAsNonRoot != true",
                     join(setters, " and ") + " must not set securityContext.runAsNonRoot=false");
  }
  if (!implicitBad.empty()) {
    return violation("runAsNonRoot", "runAsNonRoot != true",
                     "pod or " + containersPhrase(implicitBad) +
                         " must set securityContext.runAsNonRoot=true");
  }
  return std::nullopt;
}

Result_ runAsUser(const json&, const json& spec) {
  if (inUserNamespace(spec)) return std::nullopt;
  auto isRoot = [](const json& sc) {
    const json& v = field(sc, "runAsUser");
    return v.is_number_integer() && v.get<int64_t>() == 0;
  };
  std::vector<std::string> setters;
  if (isRoot(securityContext(spec))) setters.push_back("pod");
  std::vector<std::string> bad;
  visitContainers(spec, [&](const json& c) {
    if (isRoot(securityContext(c))) bad.push_back(strField(c, "name"));
  });
  if (!bad.empty()) setters.push_back(containersPhrase(bad));
  if (setters.empty()) return std::nullopt;
  return violation("runAsUser", "runAsUser=0", join(setters, " and ") + " must not set runAsUser=0");
}

Result_ seccompRestricted(const json&, const json& spec) {
  auto valid = [](const std::string& t) { return t == "RuntimeDefault" || t == "Localhost"; };
  std::vector<std::string> setters;
  std::set<std::string> values;
  bool podSet = false;
  const json& podProfile = field(securityContext(spec), "seccompProfile");
  if (podProfile.is_object()) {
    const std::string t = strField(podProfile, "type");
    if (!valid(t)) {
      setters.push_back("pod");
      values.insert(t);
    } else {
      podSet = true;
    }
  }
  std::vector<std::string> explicitBad, implicitBad;
  visitContainers(spec, [&](const json& c) {
    const json& p = field(securityContext(c), "seccompProfile");
    if (p.is_object()) {
      const std::string t = strField(p, "type");
      if (!valid(t)) {
        explicitBad.push_back(strField(c, "name"));
        values.insert(t);
      }
    } else if (!podSet) {
      implicitBad.push_back(strField(c, "name"));
    }
  });
  if (!explicitBad.empty()) setters.push_back(containersPhrase(explicitBad));
  if (!setters.empty()) {
    return violation("seccompProfile_restricted", "seccompProfile",
                     join(setters, " and ") + " must not set securityContext.seccompProfile.type to " +
                         joinQuote(sorted(values)));
  }
  if (!implicitBad.empty()) {
    return violation("seccompProfile_restricted", "seccompProfile",
                     "pod or " + containersPhrase(implicitBad) +
                         " must set securityContext.seccompProfile.type to \"RuntimeDefault\" or "
                         "\"Localhost\"");
  }
  return std::nullopt;
}

// ---- the registry ----

struct Check {
  const char* id;
  PodSecurityLevel level;
  const char* overrides;  // the baseline check this restricted one replaces, or nullptr
  Result_ (*fn)(const json& meta, const json& spec);
};

// Sorted by ID as upstream's registry orders them (byte order: "seLinuxOptions" before
// "seccompProfile_*").
const std::vector<Check>& checks() {
  static const std::vector<Check> k = [] {
    std::vector<Check> v = {
        {"allowPrivilegeEscalation", PodSecurityLevel::Restricted, nullptr,
         allowPrivilegeEscalation},
        {"appArmorProfile", PodSecurityLevel::Baseline, nullptr, appArmorProfile},
        {"capabilities_baseline", PodSecurityLevel::Baseline, nullptr, capabilitiesBaseline},
        {"capabilities_restricted", PodSecurityLevel::Restricted, "capabilities_baseline",
         capabilitiesRestricted},
        {"hostNamespaces", PodSecurityLevel::Baseline, nullptr, hostNamespaces},
        {"hostPathVolumes", PodSecurityLevel::Baseline, nullptr, hostPathVolumes},
        {"hostPorts", PodSecurityLevel::Baseline, nullptr, hostPorts},
        {"privileged", PodSecurityLevel::Baseline, nullptr, privileged},
        {"procMount", PodSecurityLevel::Baseline, nullptr, procMountBaseline},
        {"restrictedVolumes", PodSecurityLevel::Restricted, "hostPathVolumes",
         restrictedVolumes},
        {"runAsNonRoot", PodSecurityLevel::Restricted, nullptr, runAsNonRoot},
        {"runAsUser", PodSecurityLevel::Restricted, nullptr, runAsUser},
        {"seLinuxOptions", PodSecurityLevel::Baseline, nullptr, seLinuxOptions},
        {"seccompProfile_baseline", PodSecurityLevel::Baseline, nullptr, seccompBaseline},
        {"seccompProfile_restricted", PodSecurityLevel::Restricted, "seccompProfile_baseline",
         seccompRestricted},
        {"sysctls", PodSecurityLevel::Baseline, nullptr, sysctls},
        {"windowsHostProcess", PodSecurityLevel::Baseline, nullptr, windowsHostProcess},
    };
    std::sort(v.begin(), v.end(),
              [](const Check& a, const Check& b) { return std::string_view(a.id) < b.id; });
    return v;
  }();
  return k;
}

}  // namespace

std::string_view podSecurityLevelName(PodSecurityLevel level) {
  switch (level) {
    case PodSecurityLevel::Privileged:
      return "privileged";
    case PodSecurityLevel::Baseline:
      return "baseline";
    case PodSecurityLevel::Restricted:
      return "restricted";
  }
  return "privileged";
}

Result<PodSecurityLevel> parsePodSecurityLevel(std::string_view name) {
  if (name == "privileged") return PodSecurityLevel::Privileged;
  if (name == "baseline") return PodSecurityLevel::Baseline;
  if (name == "restricted") return PodSecurityLevel::Restricted;
  return makeError(Code::Invalid,
                   "pod security level \"" + std::string(name) +
                       "\" is not one of privileged, baseline, restricted");
}

std::string PodSecurityViolation::message() const {
  return detail.empty() ? reason : reason + " (" + detail + ")";
}

std::vector<PodSecurityViolation> checkPodSecurity(PodSecurityLevel level, const json& podMetadata,
                                                   const json& podSpec) {
  std::vector<PodSecurityViolation> out;
  if (level == PodSecurityLevel::Privileged) return out;
  std::set<std::string> overridden;
  if (level == PodSecurityLevel::Restricted) {
    for (const Check& c : checks()) {
      if (c.overrides) overridden.insert(c.overrides);
    }
  }
  for (const Check& c : checks()) {
    if (c.level == PodSecurityLevel::Restricted && level != PodSecurityLevel::Restricted) continue;
    if (overridden.count(c.id)) continue;
    if (Result_ v = c.fn(podMetadata, podSpec)) out.push_back(std::move(*v));
  }
  return out;
}

std::vector<PodSecurityViolation> checkPodSecurity(PodSecurityLevel level, const json& pod) {
  static const json kEmpty = json::object();
  const json& meta = pod.is_object() && pod.contains("metadata") ? pod["metadata"] : kEmpty;
  const json& spec = pod.is_object() && pod.contains("spec") ? pod["spec"] : kEmpty;
  return checkPodSecurity(level, meta, spec);
}

std::string formatPodSecurityViolations(PodSecurityLevel level, std::string_view version,
                                        const std::vector<PodSecurityViolation>& violations) {
  std::string out = "violates PodSecurity \"" + std::string(podSecurityLevelName(level)) + ":" +
                    (version.empty() ? std::string("latest") : std::string(version)) + "\": ";
  for (size_t i = 0; i < violations.size(); ++i) {
    if (i) out += ", ";
    out += violations[i].message();
  }
  return out;
}

}  // namespace strait::kube
