// OffloadingOverride parsing, validation and application (see pod_overrides.h).
#include "reflection/pod_overrides.h"

#include <algorithm>
#include <cmath>

#include "kube/json_access.h"
#include "kube/object.h"
#include "kube/patch.h"
#include "kube/quantity.h"
#include "kube/validation.h"

namespace strait::reflection {

using nlohmann::json;

namespace {

bool straitKey(const std::string& key) { return key.rfind("strait.io/", 0) == 0; }

class Problems {
 public:
  void add(const std::string& field, const std::string& why) {
    if (!text_.empty()) text_ += "; ";
    text_ += field + ": " + why;
  }
  bool empty() const { return text_.empty(); }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

std::map<std::string, std::string> stringMap(const json& v, const std::string& field, bool labels,
                                             Problems& p) {
  std::map<std::string, std::string> out;
  if (v.is_null()) return out;
  if (!v.is_object()) {
    p.add(field, "expected an object of strings");
    return out;
  }
  for (const auto& [k, val] : v.items()) {
    if (!val.is_string()) {
      p.add(field + "." + k, "expected a string");
      continue;
    }
    if (auto e = kube::validateLabelKey(k); !e.empty()) p.add(field + "." + k, e.front());
    if (labels) {
      if (auto e = kube::validateLabelValue(val.get<std::string>()); !e.empty()) {
        p.add(field + "." + k, e.front());
      }
    }
    if (straitKey(k)) p.add(field + "." + k, "strait.io/ keys are Strait's own");
    out[k] = val.get<std::string>();
  }
  return out;
}

std::vector<std::string> stringList(const json& v, const std::string& field, Problems& p) {
  std::vector<std::string> out;
  if (v.is_null()) return out;
  if (!v.is_array()) {
    p.add(field, "expected a list of strings");
    return out;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string() || v[i].get<std::string>().empty()) {
      p.add(field + "[" + std::to_string(i) + "]", "expected a non-empty string");
      continue;
    }
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

std::optional<double> factor(const json& v, const std::string& field, Problems& p) {
  if (v.is_null()) return std::nullopt;
  double f = 0;
  if (v.is_number()) {
    f = v.get<double>();
  } else if (v.is_string()) {
    try {
      size_t used = 0;
      f = std::stod(v.get<std::string>(), &used);
      if (used != v.get<std::string>().size()) f = -1;
    } catch (...) {
      f = -1;
    }
  } else {
    f = -1;
  }
  if (!(f > 0 && f <= 100)) {
    p.add(field, "expected a number above 0 and at most 100, got " + v.dump());
    return std::nullopt;
  }
  return f;
}

void checkTolerations(const json& v, Problems& p) {
  const std::string field = "spec.rules.tolerations";
  if (v.is_null()) return;
  if (!v.is_array()) {
    p.add(field, "expected a list of tolerations");
    return;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    const json& t = v[i];
    if (!t.is_object()) {
      p.add(f, "expected a toleration object");
      continue;
    }
    const std::string op = kube::stringOf(t, "operator", "Equal");
    if (op != "Equal" && op != "Exists") p.add(f + ".operator", "expected Equal or Exists");
    const std::string effect = kube::stringOf(t, "effect");
    if (!effect.empty() && effect != "NoSchedule" && effect != "PreferNoSchedule" &&
        effect != "NoExecute") {
      p.add(f + ".effect", "expected NoSchedule, PreferNoSchedule, NoExecute or empty");
    }
    const std::string key = kube::stringOf(t, "key");
    if (key.empty() && op != "Exists") p.add(f + ".key", "required unless operator is Exists");
    if (!key.empty()) {
      if (auto e = kube::validateLabelKey(key); !e.empty()) p.add(f + ".key", e.front());
    }
    if (op == "Exists" && !kube::stringOf(t, "value").empty()) {
      p.add(f + ".value", "must be empty when operator is Exists");
    }
    if (t.contains("tolerationSeconds") && !t["tolerationSeconds"].is_number_integer()) {
      p.add(f + ".tolerationSeconds", "expected an integer");
    }
  }
}

void checkJsonPatch(const json& v, Problems& p) {
  if (v.is_null()) return;
  if (!v.is_array()) {
    p.add("spec.jsonPatch", "expected a list of RFC 6902 operations");
    return;
  }
  static const std::set<std::string> kOps = {"add", "remove", "replace", "move", "copy", "test"};
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string f = "spec.jsonPatch[" + std::to_string(i) + "]";
    const json& op = v[i];
    if (!op.is_object()) {
      p.add(f, "expected an operation object");
      continue;
    }
    const std::string name = kube::stringOf(op, "op");
    if (!kOps.count(name)) {
      p.add(f + ".op", "\"" + name + "\" is not one of add, remove, replace, move, copy, test");
      continue;
    }
    for (const char* key : {"path", "from"}) {
      const bool needed = std::string(key) == "path" || name == "move" || name == "copy";
      if (!op.contains(key)) {
        if (needed) p.add(f + "." + key, "required");
        continue;
      }
      if (!op[key].is_string()) {
        p.add(f + "." + key, "expected a JSON pointer string");
        continue;
      }
      try {
        json::json_pointer ptr(op[key].get<std::string>());
        (void)ptr;
      } catch (const std::exception& e) {
        p.add(f + "." + key, std::string("not a JSON pointer: ") + e.what());
      }
    }
    if ((name == "add" || name == "replace" || name == "test") && !op.contains("value")) {
      p.add(f + ".value", "required for " + name);
    }
  }
}

// A Pod with the fields every Pod has, to try patches on.
const json& samplePod() {
  static const json pod = json::parse(R"({"apiVersion":"v1","kind":"Pod",
    "metadata":{"name":"sample","namespace":"sample","labels":{},"annotations":{}},
    "spec":{"containers":[{"name":"c","image":"busybox"}]}})");
  return pod;
}

kube::Result<kube::Quantity> scaled(const kube::Quantity& q, double f) {
  const int64_t milli = q.milliValue();
  if (milli % 1000 == 0 && q.value() >= 1000) {
    return kube::Quantity::fromInt(static_cast<int64_t>(std::llround(q.value() * f)), q.format());
  }
  return kube::Quantity::fromMilli(static_cast<int64_t>(std::llround(milli * f)), q.format());
}

kube::Status scaleList(json& container, const char* list, double f) {
  if (!kube::hasObject(container, "resources") || !kube::hasObject(container["resources"], list)) {
    return kube::Status::OK();
  }
  for (auto& [name, value] : container["resources"][list].items()) {
    if (!value.is_string() && !value.is_number()) continue;
    kube::Result<kube::Quantity> q =
        kube::Quantity::parse(value.is_string() ? value.get<std::string>() : value.dump());
    if (!q.ok()) return q.error();
    kube::Result<kube::Quantity> s = scaled(*q, f);
    if (!s.ok()) return s.error();
    value = s->toJson();
  }
  return kube::Status::OK();
}

// The fields no override may change.
json ownership(const json& pod) {
  json out = {{"name", kube::getName(pod)}, {"namespace", kube::getNamespace(pod)}};
  for (const auto& [k, v] : kube::getLabels(pod)) {
    if (straitKey(k)) out["labels"][k] = v;
  }
  for (const auto& [k, v] : kube::getAnnotations(pod)) {
    if (straitKey(k)) out["annotations"][k] = v;
  }
  return out;
}

}  // namespace

kube::Result<PodOverride> parsePodOverride(const json& obj) {
  PodOverride o;
  o.name = kube::getNamespace(obj) + "/" + kube::getName(obj);
  Problems p;
  const json spec = obj.is_object() ? obj.value("spec", json()) : json();
  if (!spec.is_object()) {
    return kube::makeError(kube::Code::Invalid, "spec: required (an object)", "spec");
  }
  static const std::set<std::string> kSpecKeys = {"providers", "podSelector",         "containers",
                                                  "rules",     "strategicMergePatch", "jsonPatch"};
  for (const auto& [k, v] : spec.items()) {
    if (!kSpecKeys.count(k)) p.add("spec." + k, "unknown field");
  }
  const json providers = spec.value("providers", json());
  if (!providers.is_null() && !providers.is_object()) {
    p.add("spec.providers", "expected {names: [...], selector: {...}}");
  } else if (providers.is_object()) {
    for (const std::string& n :
         stringList(providers.value("names", json()), "spec.providers.names", p)) {
      o.providerNames.insert(n);
    }
    if (providers.contains("selector") && !providers["selector"].is_null()) {
      kube::Result<kube::LabelSelector> s = kube::LabelSelector::fromJson(providers["selector"]);
      if (s.ok()) {
        o.providerSelector = *s;
      } else {
        p.add("spec.providers.selector", s.error().message);
      }
    }
  }
  if (spec.contains("podSelector") && !spec["podSelector"].is_null()) {
    kube::Result<kube::LabelSelector> s = kube::LabelSelector::fromJson(spec["podSelector"]);
    if (s.ok()) {
      o.podSelector = *s;
    } else {
      p.add("spec.podSelector", s.error().message);
    }
  }
  for (const std::string& c : stringList(spec.value("containers", json()), "spec.containers", p)) {
    o.containers.insert(c);
  }
  const json rules = spec.value("rules", json());
  if (!rules.is_null() && !rules.is_object()) p.add("spec.rules", "expected an object");
  if (rules.is_object()) {
    static const std::set<std::string> kRuleKeys = {
        "imageRegistry",     "addLabels",   "removeLabels", "addAnnotations",
        "removeAnnotations", "tolerations", "nodeSelector", "resources"};
    for (const auto& [k, v] : rules.items()) {
      if (!kRuleKeys.count(k)) p.add("spec.rules." + k, "unknown rule");
    }
    const json reg = rules.value("imageRegistry", json());
    if (!reg.is_null()) {
      const std::string from = reg.is_object() ? kube::stringOf(reg, "from") : "";
      const std::string to = reg.is_object() ? kube::stringOf(reg, "to") : "";
      if (from.empty()) p.add("spec.rules.imageRegistry.from", "required");
      if (to.empty()) p.add("spec.rules.imageRegistry.to", "required");
      for (const std::string* r : {&from, &to}) {
        if (r->find_first_of(" /@") != std::string::npos) {
          p.add("spec.rules.imageRegistry", "\"" + *r + "\" is not a registry host[:port]");
        }
      }
      o.imageRegistry = std::make_pair(from, to);
    }
    o.addLabels = stringMap(rules.value("addLabels", json()), "spec.rules.addLabels", true, p);
    o.addAnnotations =
        stringMap(rules.value("addAnnotations", json()), "spec.rules.addAnnotations", false, p);
    o.nodeSelector =
        stringMap(rules.value("nodeSelector", json()), "spec.rules.nodeSelector", true, p);
    o.removeLabels = stringList(rules.value("removeLabels", json()), "spec.rules.removeLabels", p);
    o.removeAnnotations =
        stringList(rules.value("removeAnnotations", json()), "spec.rules.removeAnnotations", p);
    for (const std::string& k : o.removeLabels) {
      if (straitKey(k)) p.add("spec.rules.removeLabels", k + ": strait.io/ keys are Strait's own");
    }
    for (const std::string& k : o.removeAnnotations) {
      if (straitKey(k)) {
        p.add("spec.rules.removeAnnotations", k + ": strait.io/ keys are Strait's own");
      }
    }
    checkTolerations(rules.value("tolerations", json()), p);
    if (rules.contains("tolerations") && rules["tolerations"].is_array()) {
      o.tolerations = rules["tolerations"];
    }
    const json res = rules.value("resources", json());
    if (!res.is_null() && !res.is_object()) p.add("spec.rules.resources", "expected an object");
    if (res.is_object()) {
      for (const auto& [k, v] : res.items()) {
        if (k != "requests" && k != "limits") {
          p.add("spec.rules.resources." + k, "unknown field (requests or limits)");
        }
      }
      o.requestsFactor = factor(res.value("requests", json()), "spec.rules.resources.requests", p);
      o.limitsFactor = factor(res.value("limits", json()), "spec.rules.resources.limits", p);
    }
  }
  if (spec.contains("strategicMergePatch") && !spec["strategicMergePatch"].is_null()) {
    const json& smp = spec["strategicMergePatch"];
    if (!smp.is_object()) {
      p.add("spec.strategicMergePatch", "expected an object (a patch of the Pod)");
    } else {
      kube::Result<json> tried =
          kube::applyStrategicMergePatch(samplePod(), smp, *kube::schemaForKind("", "Pod"));
      if (!tried.ok()) {
        p.add("spec.strategicMergePatch", tried.error().message);
      } else {
        o.strategicMergePatch = smp;
      }
    }
  }
  if (spec.contains("jsonPatch") && !spec["jsonPatch"].is_null()) {
    Problems before = p;
    checkJsonPatch(spec["jsonPatch"], p);
    if (p.text() == before.text()) o.jsonPatch = spec["jsonPatch"];
  }
  if (!p.empty()) return kube::makeError(kube::Code::Invalid, p.text());
  return o;
}

bool overrideSelectsProvider(const PodOverride& o, const std::string& providerName,
                             const kube::LabelSet& nodeLabels) {
  if (o.providerNames.empty() && !o.providerSelector) return true;
  if (o.providerNames.count(providerName)) return true;
  return o.providerSelector && o.providerSelector->matches(nodeLabels);
}

bool overrideSelectsPod(const PodOverride& o, const json& localPod) {
  return o.podSelector.matches(kube::getLabels(localPod));
}

std::string rewriteImageRegistry(const std::string& image, const std::string& from,
                                 const std::string& to) {
  std::string registry = "docker.io";
  std::string rest = image;
  const size_t slash = image.find('/');
  if (slash != std::string::npos) {
    const std::string first = image.substr(0, slash);
    if (first.find_first_of(".:") != std::string::npos || first == "localhost") {
      registry = first;
      rest = image.substr(slash + 1);
    }
  }
  if (registry != from) return image;
  if (registry == "docker.io" && rest.find('/') == std::string::npos) rest = "library/" + rest;
  return to + "/" + rest;
}

kube::Status applyPodOverride(json& pod, const PodOverride& o) {
  auto fail = [&](const std::string& why) {
    return kube::makeError(kube::Code::Invalid, "offloading override " + o.name + ": " + why,
                           std::string(kOverrideFailedField));
  };
  if (!pod.is_object() || !kube::hasObject(pod, "spec")) return fail("the Pod has no spec");
  const json owned = ownership(pod);
  json& meta = pod["metadata"];
  for (const auto& [k, v] : o.addLabels) meta["labels"][k] = v;
  for (const std::string& k : o.removeLabels) {
    if (kube::hasObject(meta, "labels")) meta["labels"].erase(k);
  }
  for (const auto& [k, v] : o.addAnnotations) meta["annotations"][k] = v;
  for (const std::string& k : o.removeAnnotations) {
    if (kube::hasObject(meta, "annotations")) meta["annotations"].erase(k);
  }
  json& spec = pod["spec"];
  for (const char* list : {"initContainers", "containers"}) {
    if (!spec.contains(list) || !spec[list].is_array()) continue;
    for (json& c : spec[list]) {
      if (!c.is_object()) continue;
      if (!o.containers.empty() && !o.containers.count(kube::stringOf(c, "name"))) continue;
      if (o.imageRegistry && c.contains("image") && c["image"].is_string()) {
        c["image"] = rewriteImageRegistry(c["image"].get<std::string>(), o.imageRegistry->first,
                                          o.imageRegistry->second);
      }
      if (o.requestsFactor) {
        if (kube::Status s = scaleList(c, "requests", *o.requestsFactor); !s.ok()) {
          return fail("container " + kube::stringOf(c, "name") + " requests: " + s.error().message);
        }
      }
      if (o.limitsFactor) {
        if (kube::Status s = scaleList(c, "limits", *o.limitsFactor); !s.ok()) {
          return fail("container " + kube::stringOf(c, "name") + " limits: " + s.error().message);
        }
      }
    }
  }
  if (!o.tolerations.empty()) {
    if (!spec.contains("tolerations") || !spec["tolerations"].is_array()) {
      spec["tolerations"] = json::array();
    }
    for (const json& t : o.tolerations) {
      if (std::find(spec["tolerations"].begin(), spec["tolerations"].end(), t) ==
          spec["tolerations"].end()) {
        spec["tolerations"].push_back(t);
      }
    }
  }
  for (const auto& [k, v] : o.nodeSelector) spec["nodeSelector"][k] = v;
  if (o.strategicMergePatch.is_object()) {
    kube::Result<json> r =
        kube::applyStrategicMergePatch(pod, o.strategicMergePatch, *kube::schemaForKind("", "Pod"));
    if (!r.ok()) return fail("strategicMergePatch: " + r.error().message);
    pod = std::move(*r);
  }
  if (o.jsonPatch.is_array()) {
    kube::Result<json> r = kube::applyJsonPatch(pod, o.jsonPatch);
    if (!r.ok()) return fail("jsonPatch: " + r.error().message);
    pod = std::move(*r);
  }
  if (ownership(pod) != owned) {
    return fail(
        "it must not change the Pod's name, namespace or strait.io/ labels and "
        "annotations");
  }
  return kube::Status::OK();
}

}  // namespace strait::reflection
