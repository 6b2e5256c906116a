// Registry: the built-in table (registry_builtin.cpp) plus resources added by
// CustomResourceDefinitions, and the discovery documents derived from them. OpenAPI documents
// are built by openapi.cpp from a snapshot taken here; Table conversion is tables.cpp's.
//
// Locking: Impl::mu guards the custom resources and the generation counter; built-in data is
// immutable after construction. The OpenAPI cache has its own mutex and is keyed by the
// generation, so documents are rebuilt only after a CRD change.

#include "minicluster/registry.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <regex>
#include <set>
#include <shared_mutex>

#include "base/thread_annotations.h"
#include "minicluster/registry_internal.h"
#include "minicluster/tables.h"

namespace strait::minicluster {


namespace {

using kube::Code;
using kube::makeError;

// --- Kubernetes version priority (apimachinery's CompareKubeAwareVersionStrings). ---

struct ParsedVersion {
  bool kube = false;
  int major = 0;
  int stability = 0;  // 2 GA, 1 beta, 0 alpha
  int minor = 0;
};

ParsedVersion parseVersion(const std::string& v) {
  static const std::regex re("^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$");
  std::smatch m;
  ParsedVersion p;
  if (!std::regex_match(v, m, re)) return p;
  p.kube = true;
  p.major = std::stoi(m[1].str());
  if (m[2].matched) {
    p.stability = m[2].str() == "beta" ? 1 : 0;
    p.minor = std::stoi(m[3].str());
  } else {
    p.stability = 2;
  }
  return p;
}

// True if version a has higher priority than b (sorts first in discovery).
bool higherPriority(const std::string& a, const std::string& b) {
  ParsedVersion pa = parseVersion(a), pb = parseVersion(b);
  if (pa.kube != pb.kube) return pa.kube;
  if (!pa.kube) return a < b;
  if (pa.stability != pb.stability) return pa.stability > pb.stability;
  if (pa.major != pb.major) return pa.major > pb.major;
  return pa.minor > pb.minor;
}

// --- CRD validation helpers. ---

struct FieldErrors {
  std::vector<std::pair<std::string, std::string>> items;  // field, message
  void add(const std::string& field, const std::string& detail) {
    items.emplace_back(field, field + ": " + detail);
  }
  void required(const std::string& field) { add(field, "Required value"); }
  void invalid(const std::string& field, const json& value, const std::string& why) {
    add(field, "Invalid value: " + value.dump() + ": " + why);
  }
  kube::Status status() const {
    if (items.empty()) return kube::Status::OK();
    if (items.size() == 1) return makeError(Code::Invalid, items[0].second, items[0].first);
    std::string msg = "[";
    for (size_t i = 0; i < items.size(); ++i) msg += (i ? ", " : "") + items[i].second;
    return makeError(Code::Invalid, msg + "]", items[0].first);
  }
};

// Reads an optional string member; records a type error if present but not a string.
std::string optString(const json& obj, const char* key, const std::string& path,
                      FieldErrors& errs) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "";
  if (!it->is_string()) {
    errs.invalid(path, *it, "must be a string");
    return "";
  }
  return it->get<std::string>();
}

bool optBool(const json& obj, const char* key, const std::string& path, FieldErrors& errs) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return false;
  if (!it->is_boolean()) {
    errs.invalid(path, *it, "must be a boolean");
    return false;
  }
  return it->get<bool>();
}

std::vector<std::string> optStrings(const json& obj, const char* key, const std::string& path,
                                    FieldErrors& errs) {
  std::vector<std::string> out;
  if (!obj.is_object()) return out;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return out;
  if (!it->is_array()) {
    errs.invalid(path, *it, "must be an array of strings");
    return out;
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const json& v = (*it)[i];
    if (!v.is_string()) {
      errs.invalid(path + "[" + std::to_string(i) + "]", v, "must be a string");
      continue;
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

bool isDnsLabel(const std::string& s) {
  static const std::regex re("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
  return s.size() <= 63 && std::regex_match(s, re);
}

bool isDnsSubdomain(const std::string& s) {
  static const std::regex re("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$");
  return s.size() <= 253 && std::regex_match(s, re);
}

const char* kDnsLabelMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string scopeOf(const ResourceInfo& r) { return r.namespaced ? "Namespaced" : "Cluster"; }

json gvkJson(const std::string& g, const std::string& v, const std::string& k) {
  return json{{"group", g}, {"version", v}, {"kind", k}};
}

}  // namespace

// One served version of a CRD.
struct CustomVersion {
  ResourceInfoPtr info;
  json schema;                           // openAPIV3Schema, or null
  std::vector<std::string> selectable;   // extra selectable fields ("spec.color")
};

struct CustomDef {
  std::string group;
  std::vector<CustomVersion> versions;  // served versions, highest priority first
};

struct Registry::Impl {
  std::vector<ResourceInfoPtr> builtin;  // immutable after construction

  mutable std::shared_mutex mu;
  // State below is protected by mu.
  std::map<std::string, CustomDef> customs;  // by CRD name (plural.group)
  uint64_t generation = 0;

  mutable base::Mutex cacheMu;
  mutable uint64_t cacheGeneration GUARDED_BY(cacheMu) = UINT64_MAX;
  // Path -> doc, hash.
  mutable std::map<std::string, std::pair<json, std::string>> cachedDocs GUARDED_BY(cacheMu);

  // Snapshot of every resource, built-in first. Caller holds mu (shared).
  std::vector<ResourceInfoPtr> allLocked() const {
    std::vector<ResourceInfoPtr> out = builtin;
    for (const auto& [name, def] : customs) {
      for (const auto& v : def.versions) out.push_back(v.info);
    }
    return out;
  }

  // Groups in discovery order: core first (legacy), then built-in groups in table order,
  // then custom groups by name. Each with its versions, highest priority first.
  // Caller holds mu (shared).
  std::vector<std::pair<std::string, std::vector<std::string>>> groupsLocked() const {
    std::vector<std::string> order;
    std::map<std::string, std::set<std::string>> versions;
    auto note = [&](const ResourceInfo& r) {
      if (!versions.count(r.group)) order.push_back(r.group);
      versions[r.group].insert(r.version);
    };
    for (const auto& r : builtin) note(*r);
    std::vector<ResourceInfoPtr> custom;
    for (const auto& [name, def] : customs) {
      for (const auto& v : def.versions) custom.push_back(v.info);
    }
    std::stable_sort(custom.begin(), custom.end(),
                     [](const ResourceInfoPtr& a, const ResourceInfoPtr& b) {
                       return a->group < b->group;
                     });
    for (const auto& r : custom) note(*r);
    std::vector<std::pair<std::string, std::vector<std::string>>> out;
    for (const auto& g : order) {
      std::vector<std::string> vs(versions[g].begin(), versions[g].end());
      std::sort(vs.begin(), vs.end(), higherPriority);
      out.emplace_back(g, std::move(vs));
    }
    return out;
  }

  // Resources of one group version, sorted by resource name. Caller holds mu (shared).
  std::vector<ResourceInfoPtr> groupVersionLocked(const std::string& group,
                                                  const std::string& version) const {
    std::vector<ResourceInfoPtr> out;
    for (const auto& r : allLocked()) {
      if (r->group == group && r->version == version) out.push_back(r);
    }
    std::stable_sort(out.begin(), out.end(), [](const ResourceInfoPtr& a, const ResourceInfoPtr& b) {
      return a->resource < b->resource;
    });
    return out;
  }

  const CustomVersion* customVersionLocked(const ResourceInfo& info) const {
    auto it = customs.find(info.groupResource());
    if (it == customs.end()) return nullptr;
    for (const auto& v : it->second.versions) {
      if (v.info->version == info.version) return &v;
    }
    return nullptr;
  }
};

Registry::Registry() : impl_(std::make_unique<Impl>()) {
  for (auto& r : detail::builtinResources()) {
    impl_->builtin.push_back(std::make_shared<const ResourceInfo>(std::move(r)));
  }
}

Registry::~Registry() = default;

ResourceInfoPtr Registry::find(const std::string& group, const std::string& version,
                               const std::string& resource) const {
  for (const auto& r : impl_->builtin) {
    if (r->group == group && r->version == version && r->resource == resource) return r;
  }
  std::shared_lock lock(impl_->mu);
  auto it = impl_->customs.find(group.empty() ? resource : resource + "." + group);
  if (it == impl_->customs.end()) return nullptr;
  for (const auto& v : it->second.versions) {
    if (v.info->version == version) return v.info;
  }
  return nullptr;
}

ResourceInfoPtr Registry::findKind(const std::string& group, const std::string& kind) const {
  for (const auto& r : impl_->builtin) {
    if (r->group == group && r->kind == kind) return r;
  }
  std::shared_lock lock(impl_->mu);
  for (const auto& [name, def] : impl_->customs) {
    if (def.group != group || def.versions.empty()) continue;
    if (def.versions.front().info->kind == kind) return def.versions.front().info;
  }
  return nullptr;
}

std::vector<ResourceInfoPtr> Registry::all() const {
  std::shared_lock lock(impl_->mu);
  return impl_->allLocked();
}

kube::Status Registry::addCustom(const json& crd) {
  FieldErrors errs;
  if (!crd.is_object()) {
    return makeError(Code::Invalid, "CustomResourceDefinition must be a JSON object");
  }
  std::string name;
  if (auto md = crd.find("metadata"); md != crd.end() && md->is_object()) {
    name = optString(*md, "name", "metadata.name", errs);
  }
  auto specIt = crd.find("spec");
  if (specIt == crd.end() || !specIt->is_object()) {
    errs.required("spec");
    return errs.status();
  }
  const json& spec = *specIt;

  std::string group = optString(spec, "group", "spec.group", errs);
  if (group.empty()) {
    if (!spec.contains("group") || spec["group"].is_string()) errs.required("spec.group");
  } else if (!isDnsSubdomain(group)) {
    errs.invalid("spec.group", group, "must be a valid DNS subdomain");
  } else if (group.find('.') == std::string::npos) {
    errs.invalid("spec.group", group, "should be a domain with at least one dot");
  }

  const json emptyObject = json::object();
  const json* names = &emptyObject;
  if (auto it = spec.find("names"); it != spec.end()) {
    if (it->is_object()) {
      names = &*it;
    } else {
      errs.invalid("spec.names", *it, "must be an object");
    }
  }
  std::string plural = optString(*names, "plural", "spec.names.plural", errs);
  std::string singular = optString(*names, "singular", "spec.names.singular", errs);
  std::string kind = optString(*names, "kind", "spec.names.kind", errs);
  std::string listKind = optString(*names, "listKind", "spec.names.listKind", errs);
  auto shortNames = optStrings(*names, "shortNames", "spec.names.shortNames", errs);
  auto categories = optStrings(*names, "categories", "spec.names.categories", errs);
  if (plural.empty()) {
    errs.required("spec.names.plural");
  } else if (!isDnsLabel(plural)) {
    errs.invalid("spec.names.plural", plural, kDnsLabelMsg);
  }
  if (!singular.empty() && !isDnsLabel(singular)) {
    errs.invalid("spec.names.singular", singular, kDnsLabelMsg);
  }
  if (kind.empty()) errs.required("spec.names.kind");
  for (size_t i = 0; i < shortNames.size(); ++i) {
    if (!isDnsLabel(shortNames[i])) {
      errs.invalid("spec.names.shortNames[" + std::to_string(i) + "]", shortNames[i],
                   kDnsLabelMsg);
    }
  }
  if (singular.empty()) singular = lower(kind);
  if (listKind.empty() && !kind.empty()) listKind = kind + "List";

  std::string scope = optString(spec, "scope", "spec.scope", errs);
  if (scope.empty()) {
    errs.required("spec.scope");
  } else if (scope != "Namespaced" && scope != "Cluster") {
    errs.add("spec.scope",
             "Unsupported value: \"" + scope + "\": supported values: \"Cluster\", \"Namespaced\"");
  }

  if (!plural.empty() && !group.empty() && name != plural + "." + group) {
    errs.invalid("metadata.name", name, "must be spec.names.plural+\".\"+spec.group");
  }

  // Versions.
  std::vector<CustomVersion> served;
  auto versIt = spec.find("versions");
  if (versIt == spec.end() || versIt->is_null() ||
      (versIt->is_array() && versIt->empty())) {
    errs.required("spec.versions");
  } else if (!versIt->is_array()) {
    errs.invalid("spec.versions", *versIt, "must be an array");
  } else {
    int storageCount = 0;
    std::set<std::string> seen;
    for (size_t i = 0; i < versIt->size(); ++i) {
      const json& v = (*versIt)[i];
      const std::string path = "spec.versions[" + std::to_string(i) + "]";
      if (!v.is_object()) {
        errs.invalid(path, v, "must be an object");
        continue;
      }
      std::string vname = optString(v, "name", path + ".name", errs);
      if (vname.empty()) {
        errs.required(path + ".name");
      } else if (!isDnsLabel(vname)) {
        errs.invalid(path + ".name", vname, kDnsLabelMsg);
      } else if (!seen.insert(vname).second) {
        errs.add(path + ".name", "Duplicate value: \"" + vname + "\"");
      }
      bool isServed = optBool(v, "served", path + ".served", errs);
      if (optBool(v, "storage", path + ".storage", errs)) ++storageCount;

      auto info = std::make_shared<ResourceInfo>();
      info->group = group;
      info->version = vname;
      info->resource = plural;
      info->kind = kind;
      info->listKind = listKind;
      info->singular = singular;
      info->namespaced = scope != "Cluster";
      info->shortNames = shortNames;
      info->categories = categories;
      info->verbs = {"delete", "deletecollection", "get", "list", "patch", "create", "update",
                     "watch"};
      info->custom = true;
      if (auto sub = v.find("subresources"); sub != v.end() && !sub->is_null()) {
        if (!sub->is_object()) {
          errs.invalid(path + ".subresources", *sub, "must be an object");
        } else {
          if (sub->contains("scale")) info->subresources.push_back("scale");
          if (sub->contains("status")) info->subresources.push_back("status");
        }
      }
      if (auto cols = v.find("additionalPrinterColumns"); cols != v.end() && !cols->is_null()) {
        if (!cols->is_array()) {
          errs.invalid(path + ".additionalPrinterColumns", *cols, "must be an array");
        } else {
          for (size_t c = 0; c < cols->size(); ++c) {
            const json& col = (*cols)[c];
            const std::string cpath = path + ".additionalPrinterColumns[" + std::to_string(c) + "]";
            if (!col.is_object()) {
              errs.invalid(cpath, col, "must be an object");
              continue;
            }
            if (optString(col, "name", cpath + ".name", errs).empty()) {
              errs.required(cpath + ".name");
            }
            if (optString(col, "jsonPath", cpath + ".jsonPath", errs).empty()) {
              errs.required(cpath + ".jsonPath");
            }
          }
          info->printerColumns = *cols;
        }
      }
      CustomVersion cv;
      if (auto sch = v.find("schema"); sch != v.end() && sch->is_object()) {
        if (auto o = sch->find("openAPIV3Schema"); o != sch->end() && !o->is_null()) {
          if (!o->is_object()) {
            errs.invalid(path + ".schema.openAPIV3Schema", *o, "must be an object");
          } else {
            cv.schema = *o;
          }
        }
      }
      if (auto sf = v.find("selectableFields"); sf != v.end() && !sf->is_null()) {
        if (!sf->is_array()) {
          errs.invalid(path + ".selectableFields", *sf, "must be an array");
        } else {
          for (size_t f = 0; f < sf->size(); ++f) {
            const std::string fpath = path + ".selectableFields[" + std::to_string(f) + "]";
            std::string jp = optString((*sf)[f], "jsonPath", fpath + ".jsonPath", errs);
            if (jp.size() < 2 || jp[0] != '.') {
              errs.invalid(fpath + ".jsonPath", jp, "must be a simple path starting with '.'");
              continue;
            }
            cv.selectable.push_back(jp.substr(1));
          }
        }
      }
      if (isServed) {
        cv.info = std::move(info);
        served.push_back(std::move(cv));
      }
    }
    if (storageCount != 1) {
      errs.invalid("spec.versions", *versIt,
                   "must have exactly one version marked as storage version");
    }
  }

  if (!group.empty() && !plural.empty()) {
    for (const auto& r : impl_->builtin) {
      if (r->group == group && r->resource == plural) {
        errs.invalid("spec.names.plural", plural, "conflicts with a built-in resource");
      }
    }
  }
  if (kube::Status st = errs.status(); !st.ok()) return st;

  std::stable_sort(served.begin(), served.end(), [](const CustomVersion& a, const CustomVersion& b) {
    return higherPriority(a.info->version, b.info->version);
  });
  CustomDef def;
  def.group = group;
  def.versions = std::move(served);
  std::unique_lock lock(impl_->mu);
  impl_->customs[name] = std::move(def);
  ++impl_->generation;
  return kube::Status::OK();
}

void Registry::removeCustom(const std::string& crdName) {
  std::unique_lock lock(impl_->mu);
  if (impl_->customs.erase(crdName) > 0) ++impl_->generation;
}

// --- Discovery ---

json Registry::apiVersions() const {
  return json{{"kind", "APIVersions"},
              {"versions", json::array({"v1"})},
              {"serverAddressByClientCIDRs",
               json::array({json{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", ""}}})}};
}

json Registry::apiGroupList() const {
  std::shared_lock lock(impl_->mu);
  json groups = json::array();
  for (const auto& [group, versions] : impl_->groupsLocked()) {
    if (group.empty()) continue;  // core is served at /api
    json vs = json::array();
    for (const auto& v : versions) {
      vs.push_back(json{{"groupVersion", group + "/" + v}, {"version", v}});
    }
    groups.push_back(json{{"name", group}, {"versions", vs}, {"preferredVersion", vs.front()}});
  }
  return json{{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
}

std::optional<json> Registry::apiResourceList(const std::string& group,
                                              const std::string& version) const {
  std::shared_lock lock(impl_->mu);
  auto resources = impl_->groupVersionLocked(group, version);
  if (resources.empty()) return std::nullopt;
  json list = json::array();
  for (const auto& r : resources) {
    json e = {{"name", r->resource},
              {"singularName", r->singular},
              {"namespaced", r->namespaced},
              {"kind", r->kind},
              {"verbs", r->verbs}};
    if (!r->shortNames.empty()) e["shortNames"] = r->shortNames;
    if (!r->categories.empty()) e["categories"] = r->categories;
    list.push_back(std::move(e));
    for (const auto& sub : r->subresources) {
      detail::SubresourceShape s = detail::subresourceShape(*r, sub);
      json se = {{"name", r->resource + "/" + sub},
                 {"singularName", ""},
                 {"namespaced", r->namespaced}};
      if (s.group != r->group || s.version != r->version) {
        se["group"] = s.group;
        se["version"] = s.version;
      }
      se["kind"] = s.kind;
      se["verbs"] = s.verbs;
      list.push_back(std::move(se));
    }
  }
  return json{{"kind", "APIResourceList"},
              {"apiVersion", "v1"},
              {"groupVersion", group.empty() ? version : group + "/" + version},
              {"resources", list}};
}

json Registry::aggregatedDiscovery(bool legacy, const std::string& apiVersion) const {
  std::shared_lock lock(impl_->mu);
  json items = json::array();
  for (const auto& [group, versions] : impl_->groupsLocked()) {
    if (legacy != group.empty()) continue;
    json vs = json::array();
    for (const auto& v : versions) {
      json resources = json::array();
      for (const auto& r : impl_->groupVersionLocked(group, v)) {
        json e = {{"resource", r->resource},
                  {"responseKind", gvkJson(r->group, r->version, r->kind)},
                  {"scope", scopeOf(*r)},
                  {"singularResource", r->singular},
                  {"verbs", r->verbs}};
        if (!r->shortNames.empty()) e["shortNames"] = r->shortNames;
        if (!r->categories.empty()) e["categories"] = r->categories;
        if (!r->subresources.empty()) {
          json subs = json::array();
          for (const auto& sub : r->subresources) {
            detail::SubresourceShape s = detail::subresourceShape(*r, sub);
            subs.push_back(json{{"subresource", sub},
                                {"responseKind", gvkJson(s.group, s.version, s.kind)},
                                {"verbs", s.verbs}});
          }
          e["subresources"] = std::move(subs);
        }
        resources.push_back(std::move(e));
      }
      vs.push_back(json{{"version", v}, {"resources", resources}, {"freshness", "Current"}});
    }
    json metadata = {{"creationTimestamp", nullptr}};
    if (!group.empty()) metadata["name"] = group;
    items.push_back(json{{"metadata", metadata}, {"versions", vs}});
  }
  return json{{"kind", "APIGroupDiscoveryList"},
              {"apiVersion", apiVersion},
              {"metadata", json::object()},
              {"items", items}};
}

// --- OpenAPI (documents built by openapi.cpp) ---

namespace {
std::string gvPathOf(const std::string& group, const std::string& version) {
  return group.empty() ? "api/" + version : "apis/" + group + "/" + version;
}
}  // namespace

json Registry::openApiIndex() const {
  // Snapshot under the registry lock, build outside it.
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  std::map<std::string, std::pair<std::vector<ResourceInfoPtr>, std::map<std::string, json>>> gvs;
  uint64_t generation = 0;
  {
    std::shared_lock lock(impl_->mu);
    generation = impl_->generation;
    groups = impl_->groupsLocked();
    for (const auto& [group, versions] : groups) {
      for (const auto& v : versions) {
        auto& entry = gvs[gvPathOf(group, v)];
        entry.first = impl_->groupVersionLocked(group, v);
        for (const auto& r : entry.first) {
          if (const CustomVersion* cv = impl_->customVersionLocked(*r)) {
            if (!cv->schema.is_null()) entry.second[r->resource] = cv->schema;
          }
        }
      }
    }
  }
  base::MutexLock cacheLock(impl_->cacheMu);
  if (impl_->cacheGeneration != generation) {
    impl_->cachedDocs.clear();
    for (const auto& [path, entry] : gvs) {
      const ResourceInfoPtr& first = entry.first.front();
      json doc = detail::openApiDocumentFor(first->group, first->version, entry.first, entry.second);
      std::string hash = detail::openApiHash(doc);
      impl_->cachedDocs[path] = {std::move(doc), std::move(hash)};
    }
    impl_->cacheGeneration = generation;
  }
  json paths = json::object();
  for (const auto& [path, docHash] : impl_->cachedDocs) {
    paths[path] = json{{"serverRelativeURL", "/openapi/v3/" + path + "?hash=" + docHash.second}};
  }
  return json{{"paths", paths}};
}

std::optional<json> Registry::openApiDocument(const std::string& groupVersionPath) const {
  std::string path = groupVersionPath;
  while (!path.empty() && path.front() == '/') path.erase(0, 1);
  if (path.rfind("openapi/v3/", 0) == 0) path.erase(0, std::string("openapi/v3/").size());
  if (auto q = path.find('?'); q != std::string::npos) path.erase(q);
  (void)openApiIndex();  // refreshes the cache if CRDs changed
  base::MutexLock cacheLock(impl_->cacheMu);
  auto it = impl_->cachedDocs.find(path);
  if (it == impl_->cachedDocs.end()) return std::nullopt;
  return it->second.first;
}

json Registry::openApiV2Document() const {
  std::vector<json> docs;
  const json index = openApiIndex();
  for (auto& [path, ref] : index["paths"].items()) {
    if (auto doc = openApiDocument(path)) docs.push_back(std::move(*doc));
  }
  return detail::openApiV2From(docs);
}

// --- Tables and field selectors ---

json Registry::toTable(const ResourceInfo& info, const std::vector<json>& objects,
                       const json& listMeta, const std::string& includeObject) const {
  long long now = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return makeTable(info, objects, listMeta, includeObject, now);
}

std::map<std::string, std::string> Registry::fieldsOf(const ResourceInfo& info,
                                                      const json& obj) const {
  if (!info.custom) return detail::builtinFieldValues(info, obj);
  std::map<std::string, std::string> out;
  out["metadata.name"] = detail::selectableValue(obj, "metadata.name");
  out["metadata.namespace"] =
      info.namespaced ? detail::selectableValue(obj, "metadata.namespace") : "";
  std::shared_lock lock(impl_->mu);
  if (const CustomVersion* cv = impl_->customVersionLocked(info)) {
    for (const auto& f : cv->selectable) out[f] = detail::selectableValue(obj, f);
  }
  return out;
}

bool Registry::isSelectableField(const ResourceInfo& info, const std::string& field) const {
  if (field == "metadata.name" || field == "metadata.namespace") return true;
  if (!info.custom) {
    auto fields = detail::builtinSelectableFields(info);
    return std::find(fields.begin(), fields.end(), field) != fields.end();
  }
  std::shared_lock lock(impl_->mu);
  const CustomVersion* cv = impl_->customVersionLocked(info);
  return cv != nullptr &&
         std::find(cv->selectable.begin(), cv->selectable.end(), field) != cv->selectable.end();
}

}  // namespace strait::minicluster
