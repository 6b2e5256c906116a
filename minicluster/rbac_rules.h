#pragma once
// RBAC policy rules and how they match requests and each other, after upstream
// plugin/pkg/auth/authorizer/rbac (rule matching) and pkg/registry/rbac/validation
// (coverage, rule breakdown and compaction used by escalation prevention). Pure functions.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strait::minicluster {

// One rbac.authorization.k8s.io/v1 PolicyRule.
struct PolicyRule {
  std::vector<std::string> verbs;
  std::vector<std::string> apiGroups;
  std::vector<std::string> resources;
  std::vector<std::string> resourceNames;
  std::vector<std::string> nonResourceURLs;
};

// What a request asks to do, as the authorizer sees it (upstream authorizer.Attributes).
struct AuthorizationAttributes {
  std::string user;
  std::vector<std::string> groups;
  std::string verb;
  bool resourceRequest = false;
  // Resource requests.
  std::string apiGroup;
  std::string resource;
  std::string subresource;
  std::string ns;
  std::string name;
  // Non-resource requests.
  std::string path;
};

// PolicyRule from its JSON form; fields that are absent or not string arrays stay empty.
PolicyRule parsePolicyRule(const nlohmann::json& j);
// The rules of a Role or ClusterRole object ("rules" array).
std::vector<PolicyRule> parsePolicyRules(const nlohmann::json& role);
nlohmann::json toJson(const PolicyRule& r);

// Whether `rule` allows the request (verb, API group, resource incl. "res/sub" and "*/sub",
// resource names; or verb and non-resource URL, "/prefix/*" matching any path below).
bool ruleAllows(const AuthorizationAttributes& a, const PolicyRule& rule);

// Whether the `owner` rules cover every permission of `servant`. On false, `missing` (may be
// null) receives the uncovered permissions, one verb/group/resource/name each.
bool covers(const std::vector<PolicyRule>& owner, const std::vector<PolicyRule>& servant,
            std::vector<PolicyRule>* missing);

// Merges single-group single-resource rules that differ only in verbs (upstream
// CompactRules); other rules are kept as they are.
std::vector<PolicyRule> compactRules(const std::vector<PolicyRule>& rules);

// Upstream's CompactString: {APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}.
std::string compactString(const PolicyRule& r);

// Go's %q of a string and of a []string: "a\"b" and ["a" "b"].
std::string goQuote(const std::string& s);
std::string goQuoteList(const std::vector<std::string>& v);

}  // namespace strait::minicluster
