#include "minicluster/strategy.h"

#include <atomic>

#include <algorithm>
#include <random>
#include <set>

#include "kube/quantity.h"
#include "kube/validation.h"
#include "minicluster/rbac_validation.h"

namespace strait::minicluster {
namespace {

using nlohmann::json;

bool is(const ResourceInfo& info, const char* group, const char* resource) {
  return info.group == group && info.resource == resource;
}

void setDefault(json& obj, const char* key, json value) {
  if (!obj.contains(key) || obj[key].is_null()) obj[key] = std::move(value);
}

void defaultContainer(json& c) {
  if (!c.is_object()) return;
  setDefault(c, "terminationMessagePath", "/dev/termination-log");
  setDefault(c, "terminationMessagePolicy", "File");
  setDefault(c, "resources", json::object());
  if (!c.contains("imagePullPolicy") && c.contains("image") && c["image"].is_string()) {
    std::string image = c["image"];
    auto slash = image.rfind('/');
    std::string last = slash == std::string::npos ? image : image.substr(slash + 1);
    bool tagged = last.find(':') != std::string::npos || image.find('@') != std::string::npos;
    bool latest = !tagged || (last.size() >= 7 && last.substr(last.size() - 7) == ":latest");
    c["imagePullPolicy"] = latest ? "Always" : "IfNotPresent";
  }
  if (c.contains("ports") && c["ports"].is_array()) {
    for (auto& p : c["ports"]) {
      if (p.is_object()) setDefault(p, "protocol", "TCP");
    }
  }
}

void defaultPodSpec(json& spec) {
  if (!spec.is_object()) return;
  setDefault(spec, "restartPolicy", "Always");
  setDefault(spec, "terminationGracePeriodSeconds", 30);
  setDefault(spec, "dnsPolicy", "ClusterFirst");
  setDefault(spec, "schedulerName", "default-scheduler");
  setDefault(spec, "securityContext", json::object());
  for (const char* list : {"containers", "initContainers"}) {
    if (spec.contains(list) && spec[list].is_array()) {
      for (auto& c : spec[list]) defaultContainer(c);
    }
  }
}

std::atomic<int64_t> g_defaultTolerationSeconds{300};

// The DefaultTolerationSeconds admission plugin: tolerate not-ready/unreachable for 300 s
// (setDefaultTolerationSeconds changes the 300).
void addDefaultTolerations(json& spec) {
  if (!spec.is_object()) return;
  json& tols = spec["tolerations"];
  if (!tols.is_array()) tols = json::array();
  for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    bool present = std::any_of(tols.begin(), tols.end(), [&](const json& t) {
      return t.is_object() && t.value("key", "") == key &&
             t.value("effect", std::string("NoExecute")) == "NoExecute";
    });
    if (!present) {
      tols.push_back({{"key", key},
                      {"operator", "Exists"},
                      {"effect", "NoExecute"},
                      {"tolerationSeconds", g_defaultTolerationSeconds.load()}});
    }
  }
}

std::string randomServiceIp() {
  static thread_local std::mt19937 rng{std::random_device{}()};
  // 10.96.0.0/12, avoiding .0 and the first address (the kubernetes service).
  uint32_t offset = 2 + rng() % ((1u << 20) - 4);
  uint32_t ip = (10u << 24) | (96u << 16) | offset;
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 255) + "." +
         std::to_string((ip >> 8) & 255) + "." + std::to_string(ip & 255);
}

void defaultService(json& obj) {
  json& spec = obj["spec"];
  if (!spec.is_object()) spec = json::object();
  setDefault(spec, "type", "ClusterIP");
  setDefault(spec, "sessionAffinity", "None");
  std::string type = spec.value("type", "ClusterIP");
  if (type != "ExternalName") {
    if (!spec.contains("clusterIP") || spec["clusterIP"] == "") spec["clusterIP"] = randomServiceIp();
    setDefault(spec, "clusterIPs", json::array({spec["clusterIP"]}));
    setDefault(spec, "ipFamilies", json::array({"IPv4"}));
    setDefault(spec, "ipFamilyPolicy", "SingleStack");
    setDefault(spec, "internalTrafficPolicy", "Cluster");
  }
  if (spec.contains("ports") && spec["ports"].is_array()) {
    static thread_local std::mt19937 rng{std::random_device{}()};
    for (auto& p : spec["ports"]) {
      if (!p.is_object()) continue;
      setDefault(p, "protocol", "TCP");
      if (p.contains("port")) setDefault(p, "targetPort", p["port"]);
      if ((type == "NodePort" || type == "LoadBalancer") && !p.contains("nodePort")) {
        p["nodePort"] = 30000 + static_cast<int>(rng() % 2768);
      }
    }
  }
  if (!obj.contains("status")) obj["status"] = {{"loadBalancer", json::object()}};
}

void defaultWorkload(json& obj, bool deployment) {
  json& spec = obj["spec"];
  if (!spec.is_object()) return;
  setDefault(spec, "replicas", 1);
  if (deployment) {
    setDefault(spec, "revisionHistoryLimit", 10);
    setDefault(spec, "progressDeadlineSeconds", 600);
    setDefault(spec, "strategy",
               {{"type", "RollingUpdate"},
                {"rollingUpdate", {{"maxSurge", "25%"}, {"maxUnavailable", "25%"}}}});
  }
  if (spec.contains("template") && spec["template"].is_object()) {
    defaultPodSpec(spec["template"]["spec"]);
    setDefault(spec["template"], "metadata", json::object());
  }
}

json specPart(const json& obj) {
  json copy = obj;
  if (copy.is_object()) {
    copy.erase("metadata");
    copy.erase("status");
  }
  return copy;
}

std::string kindLabel(const ResourceInfo& info) {
  // Upstream names the group-qualified kind (Role.rbac.authorization.k8s.io).
  return isRbacResource(info) ? info.kind + "." + info.group : info.kind;
}

}  // namespace

void setDefaultTolerationSeconds(int64_t seconds) { g_defaultTolerationSeconds = seconds; }

bool hasStatusSubresource(const ResourceInfo& info) {
  return std::find(info.subresources.begin(), info.subresources.end(), "status") !=
         info.subresources.end();
}

std::string podQosClass(const json& pod) {
  const json* spec = pod.contains("spec") ? &pod["spec"] : nullptr;
  if (!spec || !spec->is_object()) return "BestEffort";
  bool any = false;
  bool guaranteed = true;
  for (const char* list : {"containers", "initContainers"}) {
    if (!spec->contains(list) || !(*spec)[list].is_array()) continue;
    for (const auto& c : (*spec)[list]) {
      if (!c.is_object()) continue;
      json res = c.value("resources", json::object());
      json req = res.value("requests", json::object());
      json lim = res.value("limits", json::object());
      if (!req.is_object()) req = json::object();
      if (!lim.is_object()) lim = json::object();
      for (const char* r : {"cpu", "memory"}) {
        bool hasReq = req.contains(r), hasLim = lim.contains(r);
        if (hasReq || hasLim) any = true;
        if (!hasLim) {
          guaranteed = false;
          continue;
        }
        if (hasReq) {
          auto a = kube::Quantity::parse(req[r].is_string() ? req[r].get<std::string>()
                                                            : req[r].dump());
          auto b = kube::Quantity::parse(lim[r].is_string() ? lim[r].get<std::string>()
                                                            : lim[r].dump());
          if (!a || !b || !(*a == *b)) guaranteed = false;
        }
      }
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

static void dropUnknownFields(const ResourceInfo& info, json& obj) {
  for (const auto& path : unknownFields(info, obj)) {
    if (path.rfind("metadata.", 0) == 0) {
      obj["metadata"].erase(path.substr(9));
    } else {
      obj.erase(path);
    }
  }
}

void prepareForCreate(const ResourceInfo& info, json& obj) {
  dropUnknownFields(info, obj);
  json& meta = obj["metadata"];
  if (obj.contains("spec") || info.custom) meta["generation"] = 1;
  if (hasStatusSubresource(info) && !is(info, "", "nodes")) obj.erase("status");

  if (is(info, "", "pods")) {
    json& spec = obj["spec"];
    defaultPodSpec(spec);
    if (spec.is_object()) {
      setDefault(spec, "serviceAccountName", "default");
      setDefault(spec, "serviceAccount", spec["serviceAccountName"]);
      setDefault(spec, "enableServiceLinks", true);
      setDefault(spec, "priority", 0);
      setDefault(spec, "preemptionPolicy", "PreemptLowerPriority");
      addDefaultTolerations(spec);
    }
    obj["status"] = {{"phase", "Pending"}, {"qosClass", podQosClass(obj)}};
  } else if (is(info, "apps", "deployments")) {
    defaultWorkload(obj, true);
    obj["status"] = json::object();
  } else if (is(info, "apps", "replicasets")) {
    defaultWorkload(obj, false);
    obj["status"] = {{"replicas", 0}};
  } else if (is(info, "apps", "daemonsets")) {
    defaultWorkload(obj, false);
    if (obj["spec"].is_object()) obj["spec"].erase("replicas");
    prepareDaemonSetCreate(obj);
  } else if (is(info, "", "services")) {
    defaultService(obj);
  } else if (is(info, "", "namespaces")) {
    json& spec = obj["spec"];
    if (!spec.is_object()) spec = json::object();
    setDefault(spec, "finalizers", json::array({"kubernetes"}));
    obj["status"] = {{"phase", "Active"}};
    meta["labels"]["kubernetes.io/metadata.name"] = meta.value("name", "");
  } else if (is(info, "", "secrets")) {
    setDefault(obj, "type", "Opaque");
  } else if (is(info, "certificates.k8s.io", "certificatesigningrequests")) {
    obj["status"] = json::object();
  } else if (isRbacResource(info)) {
    defaultRbacObject(info, obj);
  }
}

void prepareForUpdate(const ResourceInfo& info, const std::string& subresource, json& obj,
                      const json& old) {
  const json& oldMeta = old["metadata"];
  json& meta = obj["metadata"];
  if (!meta.is_object()) meta = json::object();
  for (const char* k : {"uid", "creationTimestamp", "deletionTimestamp",
                        "deletionGracePeriodSeconds", "namespace", "name", "generateName"}) {
    if (oldMeta.contains(k)) {
      meta[k] = oldMeta[k];
    } else {
      meta.erase(k);
    }
  }
  if (!meta.contains("managedFields") && oldMeta.contains("managedFields")) {
    meta["managedFields"] = oldMeta["managedFields"];
  }
  meta.erase("selfLink");
  if (is(info, "", "namespaces")) {
    meta["labels"]["kubernetes.io/metadata.name"] = oldMeta.value("name", "");
  }

  if (subresource == "binding") return;  // server-built object: nothing to restore
  if (subresource == "status") {
    json status = obj.contains("status") ? obj["status"] : json();
    json labels = meta.contains("labels") ? meta["labels"] : json();
    json annotations = meta.contains("annotations") ? meta["annotations"] : json();
    json finalizers = meta.contains("finalizers") ? meta["finalizers"] : json();
    obj = old;
    if (status.is_null()) {
      obj.erase("status");
    } else {
      obj["status"] = status;
    }
    json& m = obj["metadata"];
    for (auto& [k, v] : {std::pair<const char*, json&>{"labels", labels},
                         std::pair<const char*, json&>{"annotations", annotations},
                         std::pair<const char*, json&>{"finalizers", finalizers}}) {
      if (v.is_null()) {
        m.erase(k);
      } else {
        m[k] = v;
      }
    }
    return;
  }
  if (subresource == "finalize") {
    json finalizers = obj.contains("spec") && obj["spec"].is_object()
                          ? obj["spec"].value("finalizers", json::array())
                          : json::array();
    obj = old;
    obj["spec"]["finalizers"] = finalizers;
    return;
  }
  if (subresource == "approval") {
    json conditions = obj.contains("status") && obj["status"].is_object()
                          ? obj["status"].value("conditions", json::array())
                          : json::array();
    obj = old;
    obj["status"]["conditions"] = conditions;
    return;
  }

  dropUnknownFields(info, obj);
  // Main resource: keep the stored status where status is a subresource.
  if (hasStatusSubresource(info)) {
    if (old.contains("status")) {
      obj["status"] = old["status"];
    } else {
      obj.erase("status");
    }
  }
  if (is(info, "", "pods") && obj.contains("spec")) {
    defaultPodSpec(obj["spec"]);
  } else if (is(info, "apps", "deployments")) {
    defaultWorkload(obj, true);
  } else if (is(info, "apps", "replicasets")) {
    defaultWorkload(obj, false);
  } else if (is(info, "apps", "daemonsets")) {
    defaultWorkload(obj, false);
    if (obj["spec"].is_object()) obj["spec"].erase("replicas");
    prepareDaemonSetUpdate(obj, old);
  } else if (is(info, "", "services")) {
    if (obj.contains("spec") && old.contains("spec") && old["spec"].contains("clusterIP") &&
        (!obj["spec"].contains("clusterIP") || obj["spec"]["clusterIP"] == "")) {
      obj["spec"]["clusterIP"] = old["spec"]["clusterIP"];
      if (old["spec"].contains("clusterIPs")) obj["spec"]["clusterIPs"] = old["spec"]["clusterIPs"];
    }
    defaultService(obj);
  } else if (isRbacResource(info)) {
    defaultRbacObject(info, obj);
  }
  if (oldMeta.contains("generation")) {
    int64_t gen = oldMeta["generation"].is_number() ? oldMeta["generation"].get<int64_t>() : 1;
    if (specPart(obj) != specPart(old)) ++gen;
    meta["generation"] = gen;
  }
}

kube::Status validateObject(const ResourceInfo& info, const json& obj, bool isCreate,
                            const json* old) {
  std::vector<kube::Cause> causes;
  const json& meta = obj["metadata"];
  std::string name = meta.value("name", "");
  auto add = [&](const std::string& field, const std::string& value, const std::string& msg) {
    causes.push_back({"FieldValueInvalid", field, "Invalid value: \"" + value + "\": " + msg});
  };
  auto required = [&](const std::string& field, const std::string& msg = "") {
    causes.push_back({"FieldValueRequired", field, "Required value" + (msg.empty() ? "" : ": " + msg)});
  };
  auto invalid = [&](const std::string& field, const std::string& msg) {
    causes.push_back({"FieldValueInvalid", field, "Invalid value: " + msg});
  };
  if (name.empty()) {
    required("metadata.name", "name or generateName is required");
  } else {
    std::vector<std::string> errs;
    if (is(info, "", "namespaces")) {
      errs = kube::validateDns1123Label(name);
    } else if (is(info, "", "services")) {
      errs = kube::validateDns1035Label(name);
    } else if (isRbacResource(info)) {
      errs = validateRbacName(name);
    } else {
      errs = kube::validateDns1123Subdomain(name);
    }
    for (const auto& e : errs) add("metadata.name", name, e);
  }
  if (meta.contains("labels")) {
    if (!meta["labels"].is_object()) {
      invalid("metadata.labels", "must be a map of strings");
    } else {
      for (auto& [k, v] : meta["labels"].items()) {
        for (const auto& e : kube::validateLabelKey(k)) add("metadata.labels", k, e);
        if (!v.is_string()) {
          add("metadata.labels", k, "label values must be strings");
        } else {
          for (const auto& e : kube::validateLabelValue(v.get<std::string>())) {
            add("metadata.labels", v.get<std::string>(), e);
          }
        }
      }
    }
  }
  if (meta.contains("annotations") && !meta["annotations"].is_null()) {
    if (!meta["annotations"].is_object()) {
      invalid("metadata.annotations", "must be a map of strings");
    } else {
      for (auto& [k, v] : meta["annotations"].items()) {
        if (!v.is_string()) add("metadata.annotations", k, "annotation values must be strings");
      }
    }
  }
  if (meta.contains("finalizers") && !meta["finalizers"].is_null() &&
      !meta["finalizers"].is_array()) {
    invalid("metadata.finalizers", "must be a list of strings");
  }
  auto checkContainers = [&](const json& spec, const std::string& path) {
    if (!spec.is_object() || !spec.contains("containers") || !spec["containers"].is_array() ||
        spec["containers"].empty()) {
      required(path + ".containers");
      return;
    }
    std::set<std::string> names;
    for (size_t i = 0; i < spec["containers"].size(); ++i) {
      const json& c = spec["containers"][i];
      std::string p = path + ".containers[" + std::to_string(i) + "]";
      if (!c.is_object()) {
        invalid(p, "must be an object");
        continue;
      }
      std::string cname = c.value("name", "");
      if (cname.empty()) {
        required(p + ".name");
      } else {
        for (const auto& e : kube::validateDns1123Label(cname)) add(p + ".name", cname, e);
        if (!names.insert(cname).second) {
          causes.push_back({"FieldValueDuplicate", p + ".name", "Duplicate value: \"" + cname + "\""});
        }
      }
      if (!c.contains("image") || !c["image"].is_string() || c["image"] == "") {
        required(p + ".image");
      }
    }
  };
  if (is(info, "", "pods") && isCreate) {
    checkContainers(obj.value("spec", json::object()), "spec");
  } else if (is(info, "apps", "deployments") || is(info, "apps", "replicasets")) {
    const json spec = obj.value("spec", json::object());
    if (!spec.contains("selector") || !spec["selector"].is_object()) {
      required("spec.selector");
    }
    if (!spec.contains("template") || !spec["template"].is_object()) {
      required("spec.template");
    } else {
      checkContainers(spec["template"].value("spec", json::object()), "spec.template.spec");
    }
  } else if (is(info, "apps", "daemonsets")) {
    auto more = validateDaemonSetSpec(obj);
    causes.insert(causes.end(), more.begin(), more.end());
    const json spec = obj.value("spec", json::object());
    if (!spec.is_object() || !spec.contains("template") || !spec["template"].is_object()) {
      required("spec.template");
    } else {
      checkContainers(spec["template"].value("spec", json::object()), "spec.template.spec");
    }
  }
  if (isRbacResource(info)) {
    auto more = validateRbacObject(info, obj);
    causes.insert(causes.end(), more.begin(), more.end());
    if (!isCreate && old != nullptr) {
      more = validateRbacUpdate(info, obj, *old);
      causes.insert(causes.end(), more.begin(), more.end());
    }
  }
  if (causes.empty()) return kube::Status::OK();
  std::string msg = kindLabel(info) + " \"" + name + "\" is invalid: ";
  if (causes.size() > 1) msg += "[";
  for (size_t i = 0; i < causes.size(); ++i) {
    msg += (i ? ", " : "") + causes[i].field + ": " + causes[i].message;
  }
  if (causes.size() > 1) msg += "]";
  auto e = kube::makeError(kube::Code::Invalid, msg);
  e.name = name;
  e.kind = info.kind;
  e.causes = std::move(causes);
  return e;
}

std::vector<std::string> unknownFields(const ResourceInfo& info, const json& obj) {
  std::vector<std::string> out;
  if (!obj.is_object()) return out;
  static const std::set<std::string> metaKnown = {
      "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
      "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
      "annotations", "ownerReferences", "finalizers", "managedFields"};
  if (obj.contains("metadata") && obj["metadata"].is_object()) {
    for (auto& [k, v] : obj["metadata"].items()) {
      if (!metaKnown.count(k)) out.push_back("metadata." + k);
    }
  }
  if (info.custom) return out;
  std::set<std::string> known = {"apiVersion", "kind", "metadata", "spec", "status"};
  const std::string& r = info.resource;
  if (r == "configmaps") known.insert({"data", "binaryData", "immutable"});
  if (r == "secrets") known.insert({"data", "stringData", "type", "immutable"});
  if (r == "serviceaccounts") {
    known.insert({"secrets", "imagePullSecrets", "automountServiceAccountToken"});
  }
  if (r == "endpoints") known.insert("subsets");
  if (r == "endpointslices") known.insert({"addressType", "endpoints", "ports"});
  if (r == "events") {
    known.insert({"involvedObject", "reason", "message", "source", "firstTimestamp",
                  "lastTimestamp", "count", "type", "eventTime", "series", "action", "related",
                  "reportingComponent", "reportingInstance"});
  }
  if (r == "bindings") known.insert("target");
  for (const auto& f : rbacTopLevelFields(info)) known.insert(f);
  if (r == "mutatingwebhookconfigurations" || r == "validatingwebhookconfigurations") {
    known.insert("webhooks");
  }
  for (auto& [k, v] : obj.items()) {
    if (!known.count(k)) out.push_back(k);
  }
  return out;
}

}  // namespace strait::minicluster
