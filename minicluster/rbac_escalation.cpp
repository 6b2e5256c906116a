#include "minicluster/rbac_escalation.h"

#include <algorithm>
#include <set>

#include "minicluster/rbac_validation.h"

namespace strait::minicluster {
namespace {

using nlohmann::json;

bool isPrivileged(const UserInfo& u) {
  return std::find(u.groups.begin(), u.groups.end(), "system:masters") != u.groups.end();
}

std::string nameOf(const json& obj) {
  return obj.value("metadata", json::object()).value("name", "");
}

kube::Error forbidden(const std::string& resource, const std::string& name,
                      const std::string& msg) {
  kube::Error e = kube::makeError(kube::Code::Forbidden, resource + "." + kRbacGroup + " " +
                                                             goQuote(name) + " is forbidden: " +
                                                             msg);
  e.name = name;
  e.kind = resource;
  return e;
}

bool allowedTo(const Authorizer& authz, const UserInfo& u, const std::string& verb,
               const std::string& resource, const std::string& ns, const std::string& name) {
  AuthorizationAttributes a;
  a.user = u.username;
  a.groups = u.groups;
  a.verb = verb;
  a.resourceRequest = true;
  a.apiGroup = kRbacGroup;
  a.resource = resource;
  a.ns = ns;
  a.name = name;
  return authz.authorize(a).allowed();
}

// Empty when `user` holds `rules` in `ns`; otherwise upstream's ConfirmNoEscalation message.
std::string escalationMessage(const Authorizer& authz, const UserInfo& u, const std::string& ns,
                              const std::vector<PolicyRule>& rules) {
  std::vector<std::string> errors;
  auto owner = authz.rulesFor(u.username, u.groups, ns, &errors, nullptr);
  std::vector<PolicyRule> missing;
  if (covers(owner, rules, &missing)) return "";
  std::set<std::string> lines;
  for (const auto& r : compactRules(missing)) lines.insert(compactString(r));
  std::string msg = "user " + goQuote(u.username) + " (groups=" + goQuoteList(u.groups) +
                    ") is attempting to grant RBAC permissions not currently held:";
  for (const auto& l : lines) msg += "\n" + l;
  if (!errors.empty()) {
    msg += "; resolution errors: [";
    for (size_t i = 0; i < errors.size(); ++i) msg += (i ? ", " : "") + errors[i];
    msg += "]";
  }
  return msg;
}

class RbacEscalationAdmission final : public Admission {
 public:
  RbacEscalationAdmission(const Authorizer& authz, Store& store, Admission& next)
      : authz_(authz), store_(store), next_(next) {}

  kube::Status mutate(const AdmissionAttributes& a, json* obj) override {
    return next_.mutate(a, obj);
  }

  kube::Status validate(const AdmissionAttributes& a, const json* obj) override {
    if (obj != nullptr && a.info != nullptr && a.info->group == kRbacGroup &&
        a.subresource.empty() && (a.operation == "CREATE" || a.operation == "UPDATE")) {
      auto s = checkRbacEscalation(authz_, store_, a.user, a.info->resource, a.ns, *obj,
                                   a.operation == "UPDATE" ? a.oldObject : nullptr);
      if (!s) return s;
    }
    return next_.validate(a, obj);
  }

 private:
  const Authorizer& authz_;
  Store& store_;
  Admission& next_;
};

}  // namespace

static kube::Status checkEscalation(const Authorizer& authz, Store& store, const UserInfo& user,
                             const std::string& resource, const std::string& ns,
                             const json& obj, const json* old);

kube::Status checkRbacEscalation(const Authorizer& authz, Store& store, const UserInfo& user,
                                 const std::string& resource, const std::string& ns,
                                 const json& obj, const json* old) {
  if (user.username.empty() || isPrivileged(user)) return kube::Status::OK();
  UserInfo u = user;
  if (std::find(u.groups.begin(), u.groups.end(), "system:authenticated") == u.groups.end()) {
    u.groups.push_back("system:authenticated");
  }
  return checkEscalation(authz, store, u, resource, ns, obj, old);
}

static kube::Status checkEscalation(const Authorizer& authz, Store& store, const UserInfo& user,
                             const std::string& resource, const std::string& ns,
                             const json& obj, const json* old) {
  const std::string name = nameOf(obj);
  if (resource == "roles" || resource == "clusterroles") {
    const std::string scope = resource == "roles" ? ns : "";
    if (old != nullptr && old->value("rules", json::array()) == obj.value("rules", json::array()) &&
        old->value("aggregationRule", json()) == obj.value("aggregationRule", json())) {
      return kube::Status::OK();
    }
    if (allowedTo(authz, user, "escalate", resource, scope, name)) return kube::Status::OK();
    if (resource == "clusterroles" && obj.contains("aggregationRule") &&
        !obj["aggregationRule"].is_null()) {
      std::vector<PolicyRule> full = {PolicyRule{{"*"}, {"*"}, {"*"}, {}, {}},
                                      PolicyRule{{"*"}, {}, {}, {}, {"*"}}};
      if (!escalationMessage(authz, user, "", full).empty()) {
        return forbidden(resource, name,
                         "must have cluster-admin privileges to use the aggregationRule");
      }
    }
    std::string msg = escalationMessage(authz, user, scope, parsePolicyRules(obj));
    if (!msg.empty()) return forbidden(resource, name, msg);
    return kube::Status::OK();
  }
  if (resource != "rolebindings" && resource != "clusterrolebindings") return kube::Status::OK();
  const json ref = obj.value("roleRef", json::object());
  if (old != nullptr && old->value("roleRef", json()) == ref &&
      old->value("subjects", json()) == obj.value("subjects", json())) {
    return kube::Status::OK();
  }
  const std::string refKind = ref.value("kind", "");
  const std::string refName = ref.value("name", "");
  const std::string scope = resource == "rolebindings" ? ns : "";
  const std::string refResource = refKind == "Role" ? "roles" : "clusterroles";
  if (allowedTo(authz, user, "bind", refResource, scope, refName)) return kube::Status::OK();
  std::string key = refKind == "Role"
                        ? std::string("/") + kRbacGroup + "/roles/" + ns + "/" + refName
                        : std::string("/") + kRbacGroup + "/clusterroles//" + refName;
  auto role = store.get(key);
  if (!role) {
    std::string what = refKind == "Role" ? "role" : "clusterrole";
    return forbidden(resource, name,
                     what + "." + kRbacGroup + " " + goQuote(refName) + " not found");
  }
  json roleJson = json::parse((*role)->json, nullptr, false);
  std::string msg = escalationMessage(authz, user, scope, parsePolicyRules(roleJson));
  if (!msg.empty()) return forbidden(resource, name, msg);
  return kube::Status::OK();
}

std::unique_ptr<Admission> newRbacEscalationAdmission(const Authorizer& authorizer, Store& store,
                                                      Admission& next) {
  return std::make_unique<RbacEscalationAdmission>(authorizer, store, next);
}

}  // namespace strait::minicluster
