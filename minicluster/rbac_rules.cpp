#include "minicluster/rbac_rules.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace strait::minicluster {
namespace {

using nlohmann::json;
using Strings = std::vector<std::string>;

Strings stringsAt(const json& j, const char* key) {
  Strings out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

bool has(const Strings& set, const std::string& v) {
  return std::find(set.begin(), set.end(), v) != set.end();
}

bool hasAll(const Strings& set, const Strings& want) {
  for (const auto& w : want) {
    if (!has(set, w)) return false;
  }
  return true;
}

bool verbMatches(const PolicyRule& r, const std::string& verb) {
  for (const auto& v : r.verbs) {
    if (v == "*" || v == verb) return true;
  }
  return false;
}

bool groupMatches(const PolicyRule& r, const std::string& group) {
  for (const auto& g : r.apiGroups) {
    if (g == "*" || g == group) return true;
  }
  return false;
}

bool resourceMatches(const PolicyRule& r, const std::string& combined,
                     const std::string& subresource) {
  for (const auto& res : r.resources) {
    if (res == "*" || res == combined) return true;
    if (!subresource.empty() && res.size() > 2 && res.compare(0, 2, "*/") == 0 &&
        res.compare(2, std::string::npos, subresource) == 0) {
      return true;
    }
  }
  return false;
}

bool resourceNameMatches(const PolicyRule& r, const std::string& name) {
  if (r.resourceNames.empty()) return true;
  return has(r.resourceNames, name);
}

bool urlMatches(const std::string& pattern, const std::string& path) {
  if (pattern == "*" || pattern == path) return true;
  if (!pattern.empty() && pattern.back() == '*') {
    return path.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0;
  }
  return false;
}

bool resourceCoversAll(const Strings& set, const Strings& want) {
  if (has(set, "*") || hasAll(set, want)) return true;
  for (const auto& path : want) {
    if (has(set, path)) continue;
    auto slash = path.find('/');
    if (slash == std::string::npos) return false;
    if (!has(set, "*/" + path.substr(slash + 1))) return false;
  }
  return true;
}

bool urlCovers(const std::string& owner, const std::string& sub) {
  if (owner == sub) return true;
  if (owner.empty() || owner.back() != '*') return false;
  size_t n = owner.find_last_not_of('*');
  std::string prefix = n == std::string::npos ? "" : owner.substr(0, n + 1);
  return sub.compare(0, prefix.size(), prefix) == 0;
}

bool urlsCoverAll(const Strings& set, const Strings& want) {
  for (const auto& path : want) {
    bool covered = false;
    for (const auto& o : set) {
      if (urlCovers(o, path)) {
        covered = true;
        break;
      }
    }
    if (!covered) return false;
  }
  return true;
}

bool ruleCovers(const PolicyRule& owner, const PolicyRule& sub) {
  bool verbs = has(owner.verbs, "*") || hasAll(owner.verbs, sub.verbs);
  bool groups = has(owner.apiGroups, "*") || hasAll(owner.apiGroups, sub.apiGroups);
  bool resources = resourceCoversAll(owner.resources, sub.resources);
  bool urls = urlsCoverAll(owner.nonResourceURLs, sub.nonResourceURLs);
  bool names = sub.resourceNames.empty()
                   ? owner.resourceNames.empty()
                   : owner.resourceNames.empty() || hasAll(owner.resourceNames, sub.resourceNames);
  return verbs && groups && resources && names && urls;
}

std::vector<PolicyRule> breakdown(const PolicyRule& r) {
  std::vector<PolicyRule> out;
  for (const auto& g : r.apiGroups) {
    for (const auto& res : r.resources) {
      for (const auto& v : r.verbs) {
        if (r.resourceNames.empty()) {
          out.push_back({{v}, {g}, {res}, {}, {}});
        } else {
          for (const auto& n : r.resourceNames) out.push_back({{v}, {g}, {res}, {n}, {}});
        }
      }
    }
  }
  for (const auto& u : r.nonResourceURLs) {
    for (const auto& v : r.verbs) out.push_back({{v}, {}, {}, {}, {u}});
  }
  return out;
}

}  // namespace

PolicyRule parsePolicyRule(const json& j) {
  PolicyRule r;
  if (!j.is_object()) return r;
  r.verbs = stringsAt(j, "verbs");
  r.apiGroups = stringsAt(j, "apiGroups");
  r.resources = stringsAt(j, "resources");
  r.resourceNames = stringsAt(j, "resourceNames");
  r.nonResourceURLs = stringsAt(j, "nonResourceURLs");
  return r;
}

std::vector<PolicyRule> parsePolicyRules(const json& role) {
  std::vector<PolicyRule> out;
  if (!role.is_object()) return out;
  auto it = role.find("rules");
  if (it == role.end() || !it->is_array()) return out;
  for (const auto& r : *it) out.push_back(parsePolicyRule(r));
  return out;
}

json toJson(const PolicyRule& r) {
  json j = {{"verbs", r.verbs}};
  if (!r.apiGroups.empty()) j["apiGroups"] = r.apiGroups;
  if (!r.resources.empty()) j["resources"] = r.resources;
  if (!r.resourceNames.empty()) j["resourceNames"] = r.resourceNames;
  if (!r.nonResourceURLs.empty()) j["nonResourceURLs"] = r.nonResourceURLs;
  return j;
}

bool ruleAllows(const AuthorizationAttributes& a, const PolicyRule& r) {
  if (a.resourceRequest) {
    std::string combined = a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
    return verbMatches(r, a.verb) && groupMatches(r, a.apiGroup) &&
           resourceMatches(r, combined, a.subresource) && resourceNameMatches(r, a.name);
  }
  if (!verbMatches(r, a.verb)) return false;
  for (const auto& u : r.nonResourceURLs) {
    if (urlMatches(u, a.path)) return true;
  }
  return false;
}

bool covers(const std::vector<PolicyRule>& owner, const std::vector<PolicyRule>& servant,
            std::vector<PolicyRule>* missing) {
  bool all = true;
  for (const auto& s : servant) {
    for (auto& sub : breakdown(s)) {
      bool covered = false;
      for (const auto& o : owner) {
        if (ruleCovers(o, sub)) {
          covered = true;
          break;
        }
      }
      if (!covered) {
        all = false;
        if (missing) missing->push_back(std::move(sub));
      }
    }
  }
  return all;
}

std::vector<PolicyRule> compactRules(const std::vector<PolicyRule>& rules) {
  std::vector<PolicyRule> out;
  using Key = std::tuple<std::string, std::string, bool, std::string>;
  std::map<Key, size_t> simple;  // key -> index into `merged`
  std::vector<PolicyRule> merged;
  for (const auto& r : rules) {
    bool isSimple = r.resourceNames.size() <= 1 && r.nonResourceURLs.empty() &&
                    r.apiGroups.size() == 1 && r.resources.size() == 1;
    if (!isSimple) {
      out.push_back(r);
      continue;
    }
    Key k{r.apiGroups[0], r.resources[0], !r.resourceNames.empty(),
          r.resourceNames.empty() ? "" : r.resourceNames[0]};
    auto it = simple.find(k);
    if (it == simple.end()) {
      simple.emplace(k, merged.size());
      merged.push_back(r);
    } else {
      auto& verbs = merged[it->second].verbs;
      verbs.insert(verbs.end(), r.verbs.begin(), r.verbs.end());
    }
  }
  out.insert(out.end(), merged.begin(), merged.end());
  return out;
}

std::string goQuote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string goQuoteList(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ' ';
    out += goQuote(v[i]);
  }
  return out + "]";
}

std::string compactString(const PolicyRule& r) {
  std::vector<std::string> parts;
  if (!r.apiGroups.empty()) parts.push_back("APIGroups:" + goQuoteList(r.apiGroups));
  if (!r.resources.empty()) parts.push_back("Resources:" + goQuoteList(r.resources));
  if (!r.nonResourceURLs.empty()) {
    parts.push_back("NonResourceURLs:" + goQuoteList(r.nonResourceURLs));
  }
  if (!r.resourceNames.empty()) parts.push_back("ResourceNames:" + goQuoteList(r.resourceNames));
  if (!r.verbs.empty()) parts.push_back("Verbs:" + goQuoteList(r.verbs));
  std::string out = "{";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += ", ";
    out += parts[i];
  }
  return out + "}";
}

}  // namespace strait::minicluster
