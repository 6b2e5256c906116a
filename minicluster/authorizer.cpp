// The request-to-attributes mapping, the forbidden messages, AlwaysAllow, and the RBAC
// authorizer with its subject-indexed snapshot of the cluster's RBAC objects.
#include "minicluster/authorizer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/thread_annotations.h"
#include "minicluster/store.h"

namespace strait::minicluster {
namespace {

using nlohmann::json;

const char* kRbacPrefix = "/rbac.authorization.k8s.io/";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// The value a field selector requires for metadata.name ("metadata.name=x" or "==x"), or "".
std::string nameFromFieldSelector(const std::string& sel) {
  size_t start = 0;
  while (start <= sel.size()) {
    size_t end = sel.find(',', start);
    if (end == std::string::npos) end = sel.size();
    std::string term = sel.substr(start, end - start);
    for (const char* p : {"metadata.name==", "metadata.name="}) {
      std::string prefix = p;
      if (term.rfind(prefix, 0) == 0) return term.substr(prefix.size());
    }
    start = end + 1;
  }
  return "";
}

class AlwaysAllow final : public Authorizer {
 public:
  AuthorizationResult authorize(const AuthorizationAttributes&) const override {
    return {Decision::Allow, ""};
  }
  std::vector<PolicyRule> rulesFor(const std::string&, const std::vector<std::string>&,
                                   const std::string&, std::vector<std::string>*,
                                   bool*) const override {
    return {PolicyRule{{"*"}, {"*"}, {"*"}, {}, {}}, PolicyRule{{"*"}, {}, {}, {}, {"*"}}};
  }
};

// What one binding grants one subject: its rules (null when the role is missing, then
// `error` says so) and the description used in the allow reason.
struct Grant {
  std::shared_ptr<const std::vector<PolicyRule>> rules;
  std::string description;
  std::string error;
};

// Grants by subject: user names (ServiceAccounts as system:serviceaccount:NS:NAME) and groups.
struct SubjectIndex {
  std::unordered_map<std::string, std::vector<Grant>> users;
  std::unordered_map<std::string, std::vector<Grant>> groups;
};

// An immutable view of the RBAC objects at one store revision.
struct Snapshot {
  SubjectIndex cluster;                                   // ClusterRoleBindings
  std::unordered_map<std::string, SubjectIndex> byNamespace;  // RoleBindings
};

std::string describeSubject(const json& s, const std::string& bindingNs) {
  std::string kind = s.value("kind", "");
  std::string name = s.value("name", "");
  if (kind == "ServiceAccount") {
    std::string ns = s.value("namespace", "");
    return kind + " " + goQuote(name + "/" + (ns.empty() ? bindingNs : ns));
  }
  return kind + " " + goQuote(name);
}

void indexBinding(const json& b, bool clusterBinding, SubjectIndex& index,
                  const std::unordered_map<std::string,
                                           std::shared_ptr<const std::vector<PolicyRule>>>& roles,
                  const std::unordered_map<std::string,
                                           std::shared_ptr<const std::vector<PolicyRule>>>& clusterRoles) {
  if (!b.is_object()) return;
  const json meta = b.value("metadata", json::object());
  const std::string name = meta.value("name", "");
  const std::string ns = clusterBinding ? "" : meta.value("namespace", "");
  const json ref = b.value("roleRef", json::object());
  const std::string refKind = ref.value("kind", "");
  const std::string refName = ref.value("name", "");
  Grant base;
  if (refKind == "ClusterRole") {
    auto it = clusterRoles.find(refName);
    if (it != clusterRoles.end()) {
      base.rules = it->second;
    } else {
      base.error = "clusterrole.rbac.authorization.k8s.io " + goQuote(refName) + " not found";
    }
  } else if (refKind == "Role" && !clusterBinding) {
    auto it = roles.find(ns + "/" + refName);
    if (it != roles.end()) {
      base.rules = it->second;
    } else {
      base.error = "role.rbac.authorization.k8s.io " + goQuote(refName) + " not found";
    }
  } else {
    base.error = "unsupported role reference kind: " + goQuote(refKind);
  }
  const std::string bindingDesc =
      clusterBinding ? "ClusterRoleBinding " + goQuote(name)
                     : "RoleBinding " + goQuote(name + "/" + ns);
  auto subjects = b.find("subjects");
  if (subjects == b.end() || !subjects->is_array()) return;
  for (const auto& s : *subjects) {
    if (!s.is_object()) continue;
    const std::string kind = s.value("kind", "");
    const std::string sname = s.value("name", "");
    if (sname.empty()) continue;
    Grant g = base;
    g.description = bindingDesc + " of " + refKind + " " + goQuote(refName) + " to " +
                    describeSubject(s, ns);
    if (kind == "User") {
      index.users[sname].push_back(std::move(g));
    } else if (kind == "Group") {
      index.groups[sname].push_back(std::move(g));
    } else if (kind == "ServiceAccount") {
      std::string sns = s.value("namespace", "");
      if (sns.empty()) sns = ns;
      if (sns.empty()) continue;
      index.users["system:serviceaccount:" + sns + ":" + sname].push_back(std::move(g));
    }
  }
}

class RbacAuthorizer final : public Authorizer {
 public:
  explicit RbacAuthorizer(Store& store) : store_(store) {}

  AuthorizationResult authorize(const AuthorizationAttributes& a) const override {
    for (const auto& g : a.groups) {
      if (g == "system:masters") return {Decision::Allow, ""};
    }
    auto snap = snapshot();
    std::vector<std::string> errors;
    std::string allowedBy;
    auto visit = [&](const SubjectIndex& index) {
      auto check = [&](const std::vector<Grant>& grants) {
        for (const auto& g : grants) {
          if (!g.rules) {
            errors.push_back(g.error);
            continue;
          }
          for (const auto& r : *g.rules) {
            if (ruleAllows(a, r)) {
              allowedBy = g.description;
              return true;
            }
          }
        }
        return false;
      };
      auto u = index.users.find(a.user);
      if (u != index.users.end() && check(u->second)) return true;
      for (const auto& group : a.groups) {
        auto it = index.groups.find(group);
        if (it != index.groups.end() && check(it->second)) return true;
      }
      return false;
    };
    bool allowed = visit(snap->cluster);
    if (!allowed && a.resourceRequest && !a.ns.empty()) {
      auto it = snap->byNamespace.find(a.ns);
      if (it != snap->byNamespace.end()) allowed = visit(it->second);
    }
    if (allowed) return {Decision::Allow, "RBAC: allowed by " + allowedBy};
    std::string reason;
    if (!errors.empty()) {
      reason = "RBAC: ";
      if (errors.size() > 1) reason += "[";
      for (size_t i = 0; i < errors.size(); ++i) {
        if (i) reason += ", ";
        reason += errors[i];
      }
      if (errors.size() > 1) reason += "]";
    }
    return {Decision::NoOpinion, reason};
  }

  std::vector<PolicyRule> rulesFor(const std::string& user, const std::vector<std::string>& groups,
                                   const std::string& ns, std::vector<std::string>* errors,
                                   bool* incomplete) const override {
    if (incomplete) *incomplete = false;
    auto snap = snapshot();
    std::vector<PolicyRule> out;
    auto collect = [&](const SubjectIndex& index) {
      auto add = [&](const std::vector<Grant>& grants) {
        for (const auto& g : grants) {
          if (!g.rules) {
            if (errors) errors->push_back(g.error);
            continue;
          }
          out.insert(out.end(), g.rules->begin(), g.rules->end());
        }
      };
      auto u = index.users.find(user);
      if (u != index.users.end()) add(u->second);
      for (const auto& group : groups) {
        auto it = index.groups.find(group);
        if (it != index.groups.end()) add(it->second);
      }
    };
    collect(snap->cluster);
    if (!ns.empty()) {
      auto it = snap->byNamespace.find(ns);
      if (it != snap->byNamespace.end()) collect(it->second);
    }
    return out;
  }

 private:
  // The current snapshot: rebuilt when the watch on the RBAC objects reports a change.
  // The store's revision is checked first: while it has not moved no RBAC object can have
  // changed, and the watch (whose empty poll enters the kernel) is left alone. The store
  // publishes a write's event before its revision becomes visible, so a moved revision
  // followed by a poll never misses an RBAC change.
  std::shared_ptr<const Snapshot> snapshot() const {
    const uint64_t rev = store_.revision();
    base::MutexLock lk(mu_);
    if (snap_ && watch_ && rev == checkedRevision_) return snap_;
    checkedRevision_ = rev;
    bool dirty = !snap_;
    if (!watch_ || watch_->ended()) {
      auto w = store_.watch(kRbacPrefix, 0);
      if (!w) {
        // Without a watch every decision reads the store afresh.
        spdlog::warn("event=rbac_watch_failed error=\"{}\"", w.error().message);
        watch_.reset();
        snap_ = build();
        return snap_;
      }
      watch_ = std::move(*w);
      dirty = true;
    }
    while (watch_->next(std::chrono::milliseconds(0))) dirty = true;
    if (dirty) snap_ = build();
    return snap_;
  }

  std::shared_ptr<const Snapshot> build() const {
    using RuleMap = std::unordered_map<std::string, std::shared_ptr<const std::vector<PolicyRule>>>;
    RuleMap roles, clusterRoles;
    auto parse = [](const ObjectPtr& o) {
      json j = json::parse(o->json, nullptr, false);
      return j.is_discarded() ? json::object() : j;
    };
    for (const auto& o : store_.list(std::string(kRbacPrefix) + "clusterroles/").items) {
      json j = parse(o);
      clusterRoles[j["metadata"].value("name", "")] =
          std::make_shared<const std::vector<PolicyRule>>(parsePolicyRules(j));
    }
    for (const auto& o : store_.list(std::string(kRbacPrefix) + "roles/").items) {
      json j = parse(o);
      roles[j["metadata"].value("namespace", "") + "/" + j["metadata"].value("name", "")] =
          std::make_shared<const std::vector<PolicyRule>>(parsePolicyRules(j));
    }
    auto snap = std::make_shared<Snapshot>();
    for (const auto& o : store_.list(std::string(kRbacPrefix) + "clusterrolebindings/").items) {
      indexBinding(parse(o), true, snap->cluster, roles, clusterRoles);
    }
    for (const auto& o : store_.list(std::string(kRbacPrefix) + "rolebindings/").items) {
      json j = parse(o);
      std::string ns = j.value("metadata", json::object()).value("namespace", "");
      indexBinding(j, false, snap->byNamespace[ns], roles, clusterRoles);
    }
    return snap;
  }

  Store& store_;
  mutable base::Mutex mu_;
  mutable std::unique_ptr<Watch> watch_ GUARDED_BY(mu_);
  mutable std::shared_ptr<const Snapshot> snap_ GUARDED_BY(mu_);
  mutable uint64_t checkedRevision_ GUARDED_BY(mu_) = 0;
};

}  // namespace

kube::Result<AuthorizationMode> parseAuthorizationMode(const std::string& s) {
  if (s == "RBAC") return AuthorizationMode::RBAC;
  if (s == "AlwaysAllow") return AuthorizationMode::AlwaysAllow;
  return kube::makeError(kube::Code::Invalid, "unknown authorization mode \"" + s +
                                                  "\": expected RBAC or AlwaysAllow");
}

std::unique_ptr<Authorizer> newAlwaysAllowAuthorizer() { return std::make_unique<AlwaysAllow>(); }

std::unique_ptr<Authorizer> newRbacAuthorizer(Store& store) {
  return std::make_unique<RbacAuthorizer>(store);
}

AuthorizationAttributes requestAttributes(const kube::HttpRequest& req, const RequestInfo& ri,
                                          const std::string& user,
                                          const std::vector<std::string>& groups) {
  AuthorizationAttributes a;
  a.user = user;
  a.groups = groups;
  if (!ri.isResource) {
    a.resourceRequest = false;
    a.path = req.path;
    a.verb = lower(req.method);
    return a;
  }
  a.resourceRequest = true;
  a.apiGroup = ri.group;
  a.resource = ri.resource;
  a.name = ri.name;
  a.ns = ri.namespace_;
  a.subresource = ri.subresource;
  if (ri.resource == "namespaces" && !ri.name.empty()) a.ns = ri.name;
  const std::string& m = req.method;
  if (m == "GET" || m == "HEAD") {
    a.verb = "get";
  } else if (m == "POST") {
    a.verb = "create";
  } else if (m == "PUT") {
    a.verb = "update";
  } else if (m == "PATCH") {
    a.verb = "patch";
  } else if (m == "DELETE") {
    a.verb = "delete";
  } else {
    a.verb = lower(m);
  }
  if (ri.legacyWatch) {
    a.verb = "watch";
  } else if (a.verb == "get" && a.name.empty()) {
    a.verb = "list";
  } else if (a.verb == "delete" && a.name.empty()) {
    a.verb = "deletecollection";
  }
  if (a.verb == "list") {
    std::string w = req.queryParam("watch");
    if (w == "true" || w == "1") a.verb = "watch";
  }
  if ((a.verb == "list" || a.verb == "watch") && a.name.empty()) {
    a.name = nameFromFieldSelector(req.queryParam("fieldSelector"));
  }
  return a;
}

std::string forbiddenMessage(const AuthorizationAttributes& a) {
  if (!a.resourceRequest) {
    return "User " + goQuote(a.user) + " cannot " + a.verb + " path " + goQuote(a.path);
  }
  std::string resource = a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
  std::string msg = "User " + goQuote(a.user) + " cannot " + a.verb + " resource " +
                    goQuote(resource) + " in API group " + goQuote(a.apiGroup);
  if (!a.ns.empty()) return msg + " in the namespace " + goQuote(a.ns);
  return msg + " at the cluster scope";
}

kube::Error forbiddenError(const AuthorizationAttributes& a, const std::string& reason) {
  std::string msg = forbiddenMessage(a);
  if (!reason.empty()) msg += ": " + reason;
  std::string prefix;
  if (!a.resourceRequest || a.resource.empty()) {
    prefix = "forbidden: ";
  } else {
    std::string gr = a.apiGroup.empty() ? a.resource : a.resource + "." + a.apiGroup;
    prefix = a.name.empty() ? gr + " is forbidden: " : gr + " " + goQuote(a.name) + " is forbidden: ";
  }
  kube::Error e = kube::makeError(kube::Code::Forbidden, prefix + msg);
  e.name = a.resourceRequest ? a.name : "";
  e.kind = a.resourceRequest ? a.resource : "";
  return e;
}

}  // namespace strait::minicluster
