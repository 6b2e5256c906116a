#include "minicluster/pod_security_admission.h"

#include <spdlog/spdlog.h>

#include <optional>

#include "kube/pod_security.h"

namespace strait::minicluster {

using nlohmann::json;

namespace {

// One mode's policy from the namespace labels: level and version.
struct Policy {
  kube::PodSecurityLevel level = kube::PodSecurityLevel::Privileged;
  std::string version = "latest";
};

std::optional<Policy> policyOf(const json& labels, std::string_view levelKey,
                               std::string_view versionKey) {
  if (!labels.is_object()) return std::nullopt;
  auto it = labels.find(std::string(levelKey));
  if (it == labels.end() || !it->is_string()) return std::nullopt;
  Policy p;
  kube::Result<kube::PodSecurityLevel> level = kube::parsePodSecurityLevel(it->get<std::string>());
  if (level.ok()) {
    p.level = *level;
  } else {
    p.level = kube::PodSecurityLevel::Restricted;  // an invalid level reads as the strictest
  }
  auto v = labels.find(std::string(versionKey));
  if (v != labels.end() && v->is_string() && !v->get<std::string>().empty()) {
    p.version = v->get<std::string>();
  }
  return p;
}

const json& member(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

// The Pod template of a workload resource (null when `resource` has none).
const json* podTemplate(const ResourceInfo& info, const json& obj) {
  const std::string gr = info.groupResource();
  const json* t = nullptr;
  if (gr == "deployments.apps" || gr == "replicasets.apps" || gr == "statefulsets.apps" ||
      gr == "daemonsets.apps" || gr == "jobs.batch" || gr == "replicationcontrollers") {
    t = &member(member(obj, "spec"), "template");
  } else if (gr == "cronjobs.batch") {
    t = &member(member(member(member(obj, "spec"), "jobTemplate"), "spec"), "template");
  } else if (gr == "podtemplates") {
    t = &member(obj, "template");
  }
  return t && t->is_object() ? t : nullptr;
}

// A Pod update that changes only images and metadata other than annotations is not
// re-evaluated (upstream ignores such updates too).
bool significantPodUpdate(const json& oldPod, const json& newPod) {
  auto securityView = [](const json& pod) {
    json spec = member(pod, "spec");
    for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
      if (!spec.is_object() || !spec.contains(list) || !spec[list].is_array()) continue;
      for (json& c : spec[list]) {
        if (c.is_object()) c.erase("image");
      }
    }
    return json{{"spec", spec}, {"annotations", member(member(pod, "metadata"), "annotations")}};
  };
  return securityView(oldPod) != securityView(newPod);
}

}  // namespace

kube::Status admitPodSecurity(const Store& store, const AdmissionAttributes& a, const json& obj,
                              std::vector<std::string>* warnings) {
  if (!a.info || !a.subresource.empty() || a.ns.empty()) return kube::Status::OK();
  if (a.operation != "CREATE" && a.operation != "UPDATE") return kube::Status::OK();
  const bool isPod = a.info->group.empty() && a.info->resource == "pods";
  const json* tmpl = isPod ? nullptr : podTemplate(*a.info, obj);
  if (!isPod && !tmpl) return kube::Status::OK();
  if (isPod && a.operation == "UPDATE" && a.oldObject && !significantPodUpdate(*a.oldObject, obj)) {
    return kube::Status::OK();
  }
  auto nsObj = store.get("/core/namespaces//" + a.ns);
  if (!nsObj.ok()) return kube::Status::OK();  // the write path reports a missing namespace
  json ns = json::parse((*nsObj)->json, nullptr, false);
  const json& labels = member(member(ns, "metadata"), "labels");
  std::optional<Policy> enforce =
      policyOf(labels, kube::kPodSecurityEnforceLabel, kube::kPodSecurityEnforceVersionLabel);
  std::optional<Policy> warn =
      policyOf(labels, kube::kPodSecurityWarnLabel, kube::kPodSecurityWarnVersionLabel);
  std::optional<Policy> audit =
      policyOf(labels, kube::kPodSecurityAuditLabel, kube::kPodSecurityAuditVersionLabel);
  if (!enforce && !warn && !audit) return kube::Status::OK();

  const json& meta = isPod ? member(obj, "metadata") : member(*tmpl, "metadata");
  const json& spec = isPod ? member(obj, "spec") : member(*tmpl, "spec");
  auto evaluate = [&](const Policy& p) { return kube::checkPodSecurity(p.level, meta, spec); };
  auto warnAbout = [&](const Policy& p, const std::vector<kube::PodSecurityViolation>& v) {
    if (warnings && !v.empty()) {
      // "violates PodSecurity ..." -> "would violate PodSecurity ..." (upstream's warning).
      std::string message = kube::formatPodSecurityViolations(p.level, p.version, v);
      warnings->push_back("would violate" + message.substr(std::string_view("violates").size()));
    }
  };
  const std::string name = member(member(obj, "metadata"), "name").is_string()
                               ? member(obj, "metadata")["name"].get<std::string>()
                               : a.name;
  if (enforce) {
    std::vector<kube::PodSecurityViolation> v = evaluate(*enforce);
    if (!v.empty()) {
      if (!isPod) {
        warnAbout(*enforce, v);  // workloads: the Pods they create would be refused
      } else {
        kube::Error e = kube::makeError(
            kube::Code::Forbidden, a.info->groupResource() + " \"" + name + "\" is forbidden: " +
                                       kube::formatPodSecurityViolations(enforce->level,
                                                                         enforce->version, v));
        e.name = name;
        e.kind = a.info->resource;
        spdlog::info("event=pod_security_denied namespace={} name={} level={}", a.ns, name,
                     kube::podSecurityLevelName(enforce->level));
        return e;
      }
    }
  }
  // A workload already warned about at the same level by enforce is not warned about twice.
  if (warn && !(enforce && !isPod && warn->level == enforce->level)) {
    warnAbout(*warn, evaluate(*warn));
  }
  if (audit) {
    std::vector<kube::PodSecurityViolation> v = evaluate(*audit);
    if (!v.empty()) {
      spdlog::info("event=pod_security_audit namespace={} resource={} name={} message=\"{}\"",
                   a.ns, a.info->groupResource(), name,
                   kube::formatPodSecurityViolations(audit->level, audit->version, v));
    }
  }
  return kube::Status::OK();
}

}  // namespace strait::minicluster
