// RBAC defaults and validation, after upstream pkg/apis/rbac/v1/defaults.go and
// pkg/apis/rbac/validation/validation.go (Kubernetes 1.32).
#include "minicluster/rbac_validation.h"

#include "kube/selector.h"
#include "kube/validation.h"

namespace strait::minicluster {
namespace {

using nlohmann::json;
using kube::Cause;

const json& member(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::string stringMember(const json& obj, const char* key) {
  const json& v = member(obj, key);
  return v.is_string() ? v.get<std::string>() : "";
}

size_t lengthOf(const json& v) { return v.is_array() ? v.size() : 0; }

// Go's %q of a string (what field errors print for string values).
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Go's %#v of a []string: []string{"a", "b"}.
std::string goStrings(const json& v) {
  std::string out = "[]string{";
  bool first = true;
  for (const auto& s : v.is_array() ? v : json::array()) {
    out += (first ? "" : ", ") + quoted(s.is_string() ? s.get<std::string>() : s.dump());
    first = false;
  }
  return out + "}";
}

std::string supported(const std::vector<std::string>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + quoted(values[i]);
  return out;
}

struct Errors {
  std::vector<Cause> list;
  void required(const std::string& field, const std::string& detail = "") {
    list.push_back({"FieldValueRequired", field,
                    "Required value" + (detail.empty() ? "" : ": " + detail)});
  }
  void invalid(const std::string& field, const std::string& printedValue,
               const std::string& detail) {
    list.push_back({"FieldValueInvalid", field, "Invalid value: " + printedValue + ": " + detail});
  }
  void notSupported(const std::string& field, const std::string& value,
                    const std::vector<std::string>& values) {
    list.push_back({"FieldValueNotSupported", field,
                    "Unsupported value: " + quoted(value) + ": supported values: " +
                        supported(values)});
  }
};

void validatePolicyRule(const json& rule, bool namespaced, const std::string& path,
                        Errors& errs) {
  if (lengthOf(member(rule, "verbs")) == 0) {
    errs.required(path + ".verbs", "verbs must contain at least one value");
  }
  const json& urls = member(rule, "nonResourceURLs");
  if (lengthOf(urls) > 0) {
    if (namespaced) {
      errs.invalid(path + ".nonResourceURLs", goStrings(urls),
                   "namespaced rules cannot apply to non-resource URLs");
    }
    if (lengthOf(member(rule, "apiGroups")) > 0 || lengthOf(member(rule, "resources")) > 0 ||
        lengthOf(member(rule, "resourceNames")) > 0) {
      errs.invalid(path + ".nonResourceURLs", goStrings(urls),
                   "rules cannot apply to both regular resources and non-resource URLs");
    }
    return;
  }
  if (lengthOf(member(rule, "apiGroups")) == 0) {
    errs.required(path + ".apiGroups", "resource rules must supply at least one api group");
  }
  if (lengthOf(member(rule, "resources")) == 0) {
    errs.required(path + ".resources", "resource rules must supply at least one resource");
  }
}

void validateRules(const json& obj, bool namespaced, Errors& errs) {
  const json& rules = member(obj, "rules");
  for (size_t i = 0; i < lengthOf(rules); ++i) {
    validatePolicyRule(rules[i], namespaced, "rules[" + std::to_string(i) + "]", errs);
  }
}

void validateSubject(const json& subject, bool namespaced, const std::string& path,
                     Errors& errs) {
  const std::string name = stringMember(subject, "name");
  const std::string kind = stringMember(subject, "kind");
  const std::string apiGroup = stringMember(subject, "apiGroup");
  if (name.empty()) errs.required(path + ".name");
  if (kind == "ServiceAccount") {
    if (!name.empty()) {
      for (const auto& m : kube::validateDns1123Subdomain(name)) {
        errs.invalid(path + ".name", quoted(name), m);
      }
    }
    if (!apiGroup.empty()) errs.notSupported(path + ".apiGroup", apiGroup, {""});
    if (!namespaced && stringMember(subject, "namespace").empty()) {
      errs.required(path + ".namespace");
    }
  } else if (kind == "User" || kind == "Group") {
    if (apiGroup != kRbacGroup) errs.notSupported(path + ".apiGroup", apiGroup, {kRbacGroup});
  } else {
    errs.notSupported(path + ".kind", kind, {"ServiceAccount", "User", "Group"});
  }
}

void validateBinding(const json& obj, bool namespaced, Errors& errs) {
  const json& roleRef = member(obj, "roleRef");
  const std::string apiGroup = stringMember(roleRef, "apiGroup");
  if (apiGroup != kRbacGroup) errs.notSupported("roleRef.apiGroup", apiGroup, {kRbacGroup});
  const std::string kind = stringMember(roleRef, "kind");
  if (namespaced) {
    if (kind != "Role" && kind != "ClusterRole") {
      errs.notSupported("roleRef.kind", kind, {"Role", "ClusterRole"});
    }
  } else if (kind != "ClusterRole") {
    errs.notSupported("roleRef.kind", kind, {"ClusterRole"});
  }
  const std::string name = stringMember(roleRef, "name");
  if (name.empty()) {
    errs.required("roleRef.name");
  } else {
    for (const auto& m : validateRbacName(name)) errs.invalid("roleRef.name", quoted(name), m);
  }
  const json& subjects = member(obj, "subjects");
  for (size_t i = 0; i < lengthOf(subjects); ++i) {
    validateSubject(subjects[i], namespaced, "subjects[" + std::to_string(i) + "]", errs);
  }
}

void validateAggregationRule(const json& obj, Errors& errs) {
  const json& rule = member(obj, "aggregationRule");
  if (rule.is_null()) return;
  const json& selectors = member(rule, "clusterRoleSelectors");
  if (lengthOf(selectors) == 0) {
    errs.required("aggregationRule.clusterRoleSelectors",
                  "at least one clusterRoleSelector required if aggregationRule is non-nil");
    return;
  }
  for (size_t i = 0; i < selectors.size(); ++i) {
    auto sel = kube::LabelSelector::fromJson(selectors[i]);
    if (!sel) {
      errs.invalid("aggregationRule.clusterRoleSelectors[" + std::to_string(i) + "]",
                   selectors[i].dump(), sel.error().message);
    }
  }
}

// Go's %#v of an rbac.RoleRef.
std::string goRoleRef(const json& roleRef) {
  return "rbac.RoleRef{APIGroup:" + quoted(stringMember(roleRef, "apiGroup")) +
         ", Kind:" + quoted(stringMember(roleRef, "kind")) +
         ", Name:" + quoted(stringMember(roleRef, "name")) + "}";
}

}  // namespace

bool isRbacResource(const ResourceInfo& info) { return !info.custom && info.group == kRbacGroup; }

std::vector<std::string> rbacTopLevelFields(const ResourceInfo& info) {
  if (!isRbacResource(info)) return {};
  if (info.resource == "clusterroles") return {"rules", "aggregationRule"};
  if (info.resource == "roles") return {"rules"};
  return {"roleRef", "subjects"};
}

std::vector<std::string> validateRbacName(const std::string& name) {
  std::vector<std::string> out;
  if (name == "." || name == "..") return {"may not be '" + name + "'"};
  for (const char* bad : {"/", "%"}) {
    if (name.find(bad) != std::string::npos) out.push_back(std::string("may not contain '") + bad + "'");
  }
  return out;
}

void defaultRbacObject(const ResourceInfo& info, json& obj) {
  if (!isRbacResource(info) || !obj.is_object()) return;
  if (info.resource == "rolebindings" || info.resource == "clusterrolebindings") {
    json& roleRef = obj["roleRef"];
    if (!roleRef.is_object()) roleRef = json::object();
    if (stringMember(roleRef, "apiGroup").empty()) roleRef["apiGroup"] = kRbacGroup;
    if (obj.contains("subjects") && obj["subjects"].is_array()) {
      for (auto& s : obj["subjects"]) {
        if (!s.is_object() || !stringMember(s, "apiGroup").empty()) continue;
        const std::string kind = stringMember(s, "kind");
        if (kind == "ServiceAccount") {
          s["apiGroup"] = "";
        } else if (kind == "User" || kind == "Group") {
          s["apiGroup"] = kRbacGroup;
        }
      }
    }
  }
}

std::vector<Cause> validateRbacObject(const ResourceInfo& info, const json& obj) {
  Errors errs;
  if (!isRbacResource(info)) return {};
  if (info.resource == "roles") {
    validateRules(obj, true, errs);
  } else if (info.resource == "clusterroles") {
    validateRules(obj, false, errs);
    validateAggregationRule(obj, errs);
  } else if (info.resource == "rolebindings") {
    validateBinding(obj, true, errs);
  } else if (info.resource == "clusterrolebindings") {
    validateBinding(obj, false, errs);
  }
  return std::move(errs.list);
}

std::vector<Cause> validateRbacUpdate(const ResourceInfo& info, const json& obj, const json& old) {
  if (!isRbacResource(info)) return {};
  if (info.resource != "rolebindings" && info.resource != "clusterrolebindings") return {};
  const json& now = member(obj, "roleRef");
  const json& before = member(old, "roleRef");
  auto same = [&](const char* k) { return stringMember(now, k) == stringMember(before, k); };
  if (same("apiGroup") && same("kind") && same("name")) return {};
  Errors errs;
  errs.invalid("roleRef", goRoleRef(now), "cannot change roleRef");
  return std::move(errs.list);
}

}  // namespace strait::minicluster
