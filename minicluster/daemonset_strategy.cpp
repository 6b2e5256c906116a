// The apps/v1 DaemonSet rules of the API server (upstream pkg/registry/apps/daemonset
// strategy.go, pkg/apis/apps/v1 defaults and pkg/apis/apps/validation): defaults on create
// and update, the template generation kept in the annotation
// deprecated.daemonset.template.generation (bumped only when the template changes; the
// controller labels its Pods pod-template-generation with it), and validation of the spec
// with upstream's field paths and messages.
#include <algorithm>
#include <string>

#include "kube/json_access.h"
#include "kube/object.h"
#include "kube/selector.h"
#include "minicluster/strategy.h"

namespace strait::minicluster {
namespace {

using kube::child;
using kube::stringOf;

using nlohmann::json;

void setDefault(json& obj, const char* key, json value) {
  if (!obj.contains(key) || obj[key].is_null()) obj[key] = std::move(value);
}

// Go's %v of a map[string]string, which upstream prints as the invalid value of labels.
std::string goStringMap(const json& labels) {
  std::string out = "map[string]string{";
  bool first = true;
  if (labels.is_object()) {
    for (const auto& [k, v] : labels.items()) {
      out += (first ? "" : ", ") + json(k).dump() + ":" + (v.is_string() ? v.dump() : "\"\"");
      first = false;
    }
  }
  return out + "}";
}

int64_t templateGenerationOf(const json& obj) {
  auto ann = kube::getAnnotations(obj);
  auto it = ann.find(kDaemonSetTemplateGenerationAnnotation);
  if (it == ann.end()) return 0;
  try {
    return std::stoll(it->second);
  } catch (...) {
    return 0;
  }
}

}  // namespace

void defaultDaemonSet(json& obj) {
  json& spec = obj["spec"];
  if (!spec.is_object()) return;
  setDefault(spec, "revisionHistoryLimit", 10);
  setDefault(spec, "updateStrategy", json::object());
  json& strategy = spec["updateStrategy"];
  if (strategy.is_object()) {
    setDefault(strategy, "type", "RollingUpdate");
    if (strategy["type"] == "RollingUpdate") {
      setDefault(strategy, "rollingUpdate", json::object());
      if (strategy["rollingUpdate"].is_object()) {
        setDefault(strategy["rollingUpdate"], "maxUnavailable", 1);
        setDefault(strategy["rollingUpdate"], "maxSurge", 0);
      }
    }
  }
}

void prepareDaemonSetCreate(json& obj) {
  defaultDaemonSet(obj);
  kube::setAnnotation(obj, kDaemonSetTemplateGenerationAnnotation, "1");
  obj["status"] = {{"currentNumberScheduled", 0},
                   {"numberMisscheduled", 0},
                   {"desiredNumberScheduled", 0},
                   {"numberReady", 0}};
}

void prepareDaemonSetUpdate(json& obj, const json& old) {
  defaultDaemonSet(obj);
  int64_t gen = std::max<int64_t>(templateGenerationOf(old), 1);
  const json& tmpl = obj.contains("spec") && obj["spec"].is_object()
                         ? obj["spec"].value("template", json())
                         : json();
  const json& oldTmpl = old.contains("spec") && old["spec"].is_object()
                            ? old["spec"].value("template", json())
                            : json();
  if (tmpl != oldTmpl) ++gen;
  kube::setAnnotation(obj, kDaemonSetTemplateGenerationAnnotation, std::to_string(gen));
}

std::vector<kube::Cause> validateDaemonSetSpec(const json& obj) {
  std::vector<kube::Cause> causes;
  const json spec = obj.value("spec", json::object());
  if (!spec.is_object()) return {{"FieldValueRequired", "spec", "Required value"}};
  const json tmpl = spec.value("template", json());
  if (!spec.contains("selector") || !spec["selector"].is_object()) {
    causes.push_back({"FieldValueRequired", "spec.selector", "Required value"});
  } else {
    auto sel = kube::LabelSelector::fromJson(spec["selector"]);
    if (!sel) {
      causes.push_back({"FieldValueInvalid", "spec.selector",
                        "Invalid value: " + spec["selector"].dump() + ": " + sel.error().message});
    } else if (sel->empty()) {
      causes.push_back({"FieldValueInvalid", "spec.selector",
                        "Invalid value: " + spec["selector"].dump() +
                            ": empty selector is invalid for daemonset"});
    } else if (tmpl.is_object()) {
      json labels = child(child(tmpl, "metadata"), "labels");
      if (!sel->matches(kube::getLabels(tmpl))) {
        causes.push_back({"FieldValueInvalid", "spec.template.metadata.labels",
                          "Invalid value: " + goStringMap(labels) +
                              ": `selector` does not match template `labels`"});
      }
    }
  }
  if (tmpl.is_object()) {
    std::string restart = stringOf(child(tmpl, "spec"), "restartPolicy", "Always");
    if (restart != "Always") {
      causes.push_back({"FieldValueNotSupported", "spec.template.spec.restartPolicy",
                        "Unsupported value: \"" + restart + "\": supported values: \"Always\""});
    }
  }
  const json& strategy = child(spec, "updateStrategy");
  std::string type = stringOf(strategy, "type", "RollingUpdate");
  if (type != "RollingUpdate" && type != "OnDelete") {
    causes.push_back({"FieldValueNotSupported", "spec.updateStrategy.type",
                      "Unsupported value: \"" + type +
                          "\": supported values: \"OnDelete\", \"RollingUpdate\""});
  } else if (type == "RollingUpdate") {
    const json& ru = child(strategy, "rollingUpdate");
    auto isZero = [](const json& v) {
      return v.is_null() || v == 0 || v == "0" || v == "0%";
    };
    if (!ru.empty() && isZero(ru.value("maxUnavailable", json(0))) &&
        isZero(ru.value("maxSurge", json(0)))) {
      causes.push_back({"FieldValueInvalid", "spec.updateStrategy.rollingUpdate.maxUnavailable",
                        "Invalid value: " + ru.value("maxUnavailable", json(0)).dump() +
                            ": may not be 0 when `maxSurge` is 0"});
    }
  }
  return causes;
}

}  // namespace strait::minicluster
