// metrics.k8s.io/v1beta1 from the kubelets' stats Summaries (see metrics_api.h).
#include "minicluster/metrics_api.h"

#include <spdlog/spdlog.h>

#include <future>
#include <map>
#include <set>

#include "kube/object.h"
#include "kube/time.h"
#include "minicluster/api_handler.h"
#include "minicluster/api_request.h"
#include "minicluster/webhook_client.h"

namespace strait::minicluster {
namespace {

using kube::Code;
using api::listOptions;
using api::reply;
using api::replyError;
using kube::makeError;
using nlohmann::json;

constexpr std::chrono::milliseconds kKubeletTimeout{5000};
const std::string kPrefix = "/apis/metrics.k8s.io";
const std::string kApiVersion = "metrics.k8s.io/v1beta1";
// The shortest interval a usageNanoCores rate spans (stats_summary.h).
constexpr const char* kWindow = "500ms";

std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

json resourceList() {
  return json{{"kind", "APIResourceList"},
              {"apiVersion", "v1"},
              {"groupVersion", kApiVersion},
              {"resources",
               json::array({json{{"name", "nodes"},
                                 {"singularName", ""},
                                 {"namespaced", false},
                                 {"kind", "NodeMetrics"},
                                 {"verbs", {"get", "list"}}},
                            json{{"name", "pods"},
                                 {"singularName", ""},
                                 {"namespaced", true},
                                 {"kind", "PodMetrics"},
                                 {"verbs", {"get", "list"}}}})}};
}

json groupJson() {
  json v = {{"groupVersion", kApiVersion}, {"version", kMetricsVersion}};
  return json{{"name", kMetricsGroup}, {"versions", json::array({v})}, {"preferredVersion", v}};
}

std::optional<uint64_t> number(const json& o, const char* section, const char* field) {
  if (!o.is_object() || !o.contains(section) || !o[section].is_object()) return std::nullopt;
  const json& s = o[section];
  if (!s.contains(field) || !s[field].is_number()) return std::nullopt;
  return s[field].get<uint64_t>();
}

json usageOf(uint64_t nanoCores, uint64_t workingSet) {
  return json{{"cpu", std::to_string(nanoCores) + "n"},
              {"memory", std::to_string(workingSet / 1024) + "Ki"}};
}

json metadataOf(const json& obj) {
  json md = {{"name", kube::getName(obj)},
             {"creationTimestamp", kube::rfc3339Now()}};
  if (!kube::getNamespace(obj).empty()) md["namespace"] = kube::getNamespace(obj);
  const json& src = obj.value("metadata", json::object());
  if (src.contains("labels")) md["labels"] = src["labels"];
  return md;
}

std::string timestampOf(const json& section) {
  if (section.is_object() && section.contains("time") && section["time"].is_string()) {
    return section["time"].get<std::string>();
  }
  return kube::rfc3339Now();
}

// Where a node's kubelet API listens, or why it cannot be reached.
kube::Result<WebhookTarget> kubeletOf(const json& node, const KubeletClientConfig& client) {
  const json status = node.value("status", json::object());
  std::string address;
  for (const auto& a : status.value("addresses", json::array())) {
    if (a.value("type", "") == "InternalIP" && address.empty()) address = a.value("address", "");
  }
  int port = status.value("daemonEndpoints", json::object())
                 .value("kubeletEndpoint", json::object())
                 .value("Port", 0);
  if (address.empty() || port <= 0 || port > 65535) {
    return makeError(Code::Unavailable, "node " + kube::getName(node) + " has no kubelet endpoint");
  }
  WebhookTarget t;
  t.host = address;
  t.port = static_cast<uint16_t>(port);
  t.path = "/stats/summary";
  t.caPem = client.caPem;
  t.clientCertPem = client.certPem;
  t.clientKeyPem = client.keyPem;
  t.verifyName = false;
  return t;
}

// The Summaries of `nodes` (name -> Node object), fetched kMaxParallel at a time; nodes that
// do not answer with one are missing from the result.
std::map<std::string, json> summariesOf(const std::map<std::string, json>& nodes,
                                        const KubeletClientConfig& client) {
  constexpr size_t kMaxParallel = 16;
  auto fetch = [&client](const json& node) -> kube::Result<json> {
    auto t = kubeletOf(node, client);
    if (!t) return t.error();
    auto r = getHttps(*t, kKubeletTimeout);
    if (!r) return r.error();
    if (r->status != 200) {
      return makeError(Code::Unavailable, "HTTP " + std::to_string(r->status) + ": " + r->body);
    }
    json s = json::parse(r->body, nullptr, false);
    if (!s.is_object()) return makeError(Code::Unavailable, "malformed stats summary");
    return s;
  };
  std::map<std::string, json> out;
  auto it = nodes.begin();
  while (it != nodes.end()) {
    std::vector<std::pair<std::string, std::future<kube::Result<json>>>> batch;
    for (; it != nodes.end() && batch.size() < kMaxParallel; ++it) {
      batch.emplace_back(it->first, std::async(std::launch::async, fetch, std::cref(it->second)));
    }
    for (auto& [name, f] : batch) {
      auto s = f.get();
      if (s) {
        out[name] = std::move(*s);
      } else {
        spdlog::debug("event=metrics_scrape_failed node={} error=\"{}\"", name,
                      s.error().message);
      }
    }
  }
  return out;
}

kube::Result<std::vector<json>> listObjects(Rest& rest, Registry& registry, const char* resource,
                                            const std::string& ns, const ListOptions& o) {
  auto info = registry.find("", "v1", resource);
  auto page = rest.list(*info, ns, o);
  if (!page) return page.error();
  std::vector<json> out;
  for (const auto& obj : page->items) out.push_back(json::parse(obj->json));
  return out;
}

kube::Result<json> getObject(Rest& rest, Registry& registry, const char* resource,
                             const std::string& ns, const std::string& name) {
  auto info = registry.find("", "v1", resource);
  auto obj = rest.get(*info, ns, name);
  if (!obj) return obj.error();
  return json::parse((*obj)->json);
}

kube::Error notFound(const char* resource, const std::string& name) {
  kube::Error e = makeError(Code::NotFound, std::string(resource) + ".metrics.k8s.io \"" + name +
                                                "\" not found");
  e.name = name;
  e.kind = resource;
  return e;
}

json listOf(const char* kind, json items) {
  return json{{"kind", kind},
              {"apiVersion", kApiVersion},
              {"metadata", json::object()},
              {"items", std::move(items)}};
}

void serveNodes(const kube::HttpRequest& req, kube::Responder& out, Rest& rest,
                Registry& registry, const KubeletClientConfig& client, const std::string& name) {
  std::map<std::string, json> nodes;
  if (!name.empty()) {
    auto n = getObject(rest, registry, "nodes", "", name);
    if (!n) return replyError(out, notFound("nodes", name));
    nodes[name] = std::move(*n);
  } else {
    auto o = listOptions(req);
    if (!o) return replyError(out, o.error());
    ListOptions lo;
    lo.labelSelector = o->labelSelector;
    lo.fieldSelector = o->fieldSelector;
    auto list = listObjects(rest, registry, "nodes", "", lo);
    if (!list) return replyError(out, list.error());
    for (auto& n : *list) nodes[kube::getName(n)] = std::move(n);
  }
  auto summaries = summariesOf(nodes, client);
  json items = json::array();
  for (const auto& [n, node] : nodes) {
    auto s = summaries.find(n);
    if (s == summaries.end()) continue;
    json m = nodeMetricsOf(node, s->second);
    if (!m.is_null()) items.push_back(std::move(m));
  }
  if (!name.empty()) {
    if (items.empty()) return replyError(out, notFound("nodes", name));
    return reply(out, 200, items[0].dump());
  }
  reply(out, 200, listOf("NodeMetricsList", std::move(items)).dump());
}

void servePods(const kube::HttpRequest& req, kube::Responder& out, Rest& rest, Registry& registry,
               const KubeletClientConfig& client, const std::string& ns, const std::string& name) {
  std::vector<json> pods;
  if (!name.empty()) {
    auto p = getObject(rest, registry, "pods", ns, name);
    if (!p) return replyError(out, notFound("pods", name));
    pods.push_back(std::move(*p));
  } else {
    auto o = listOptions(req);
    if (!o) return replyError(out, o.error());
    ListOptions lo;
    lo.labelSelector = o->labelSelector;
    lo.fieldSelector = o->fieldSelector;
    auto list = listObjects(rest, registry, "pods", ns, lo);
    if (!list) return replyError(out, list.error());
    pods = std::move(*list);
  }
  std::map<std::string, json> nodes;
  for (const auto& p : pods) {
    std::string node = p.value("spec", json::object()).value("nodeName", "");
    if (node.empty() || nodes.count(node)) continue;
    auto n = getObject(rest, registry, "nodes", "", node);
    if (n) nodes[node] = std::move(*n);
  }
  auto summaries = summariesOf(nodes, client);
  // ns/name -> the Pod's entry in its node's Summary.
  std::map<std::string, const json*> stats;
  for (const auto& [n, s] : summaries) {
    if (!s.contains("pods") || !s["pods"].is_array()) continue;
    for (const auto& ps : s["pods"]) {
      const json ref = ps.value("podRef", json::object());
      stats[ref.value("namespace", "") + "/" + ref.value("name", "")] = &ps;
    }
  }
  json items = json::array();
  for (const auto& p : pods) {
    auto it = stats.find(kube::getNamespace(p) + "/" + kube::getName(p));
    if (it == stats.end()) continue;
    json m = podMetricsOf(p, *it->second);
    if (!m.is_null()) items.push_back(std::move(m));
  }
  if (!name.empty()) {
    if (items.empty()) return replyError(out, notFound("pods", name));
    return reply(out, 200, items[0].dump());
  }
  reply(out, 200, listOf("PodMetricsList", std::move(items)).dump());
}

}  // namespace

bool isMetricsApiPath(const std::string& path) {
  return path == kPrefix || path.rfind(kPrefix + "/", 0) == 0;
}

void serveMetricsApi(const kube::HttpRequest& req, kube::Responder& out, Rest& rest,
                     Registry& registry, const KubeletClientConfig& kubelet) {
  auto seg = segments(req.path);  // apis, metrics.k8s.io, v1beta1, ...
  auto notFoundPath = [&] {
    replyError(out, makeError(Code::NotFound, "the server could not find the requested resource"));
  };
  if (seg.size() == 2) {
    json g = groupJson();
    g["kind"] = "APIGroup";
    g["apiVersion"] = "v1";
    return reply(out, 200, g.dump());
  }
  if (seg.size() < 3 || seg[2] != kMetricsVersion) return notFoundPath();
  if (seg.size() == 3) return reply(out, 200, resourceList().dump());
  if (req.method != "GET") {
    return replyError(out, makeError(Code::MethodNotAllowed,
                                     "the server does not allow this method on the requested "
                                     "resource"));
  }
  std::vector<std::string> rest_(seg.begin() + 3, seg.end());
  if (rest_[0] == "nodes" && rest_.size() <= 2) {
    return serveNodes(req, out, rest, registry, kubelet, rest_.size() == 2 ? rest_[1] : "");
  }
  if (rest_[0] == "pods" && rest_.size() == 1) {
    return servePods(req, out, rest, registry, kubelet, "", "");
  }
  if (rest_[0] == "namespaces" && rest_.size() >= 3 && rest_.size() <= 4 && rest_[2] == "pods") {
    return servePods(req, out, rest, registry, kubelet, rest_[1], rest_.size() == 4 ? rest_[3] : "");
  }
  notFoundPath();
}

void addMetricsGroup(json& apiGroupList) {
  if (!apiGroupList.contains("groups") || !apiGroupList["groups"].is_array()) return;
  for (const auto& g : apiGroupList["groups"]) {
    if (g.value("name", "") == kMetricsGroup) return;
  }
  apiGroupList["groups"].push_back(groupJson());
}

void addMetricsAggregatedDiscovery(json& discoveryList) {
  if (!discoveryList.contains("items") || !discoveryList["items"].is_array()) return;
  json resources = json::array();
  const json list = resourceList();
  for (const auto& r : list["resources"]) {
    resources.push_back(json{{"resource", r["name"]},
                             {"responseKind", {{"group", kMetricsGroup},
                                               {"version", kMetricsVersion},
                                               {"kind", r["kind"]}}},
                             {"scope", r["namespaced"].get<bool>() ? "Namespaced" : "Cluster"},
                             {"singularResource", r["name"] == "nodes" ? "node" : "pod"},
                             {"verbs", r["verbs"]}});
  }
  discoveryList["items"].push_back(
      json{{"metadata", {{"name", kMetricsGroup}, {"creationTimestamp", nullptr}}},
           {"versions", json::array({json{{"version", kMetricsVersion},
                                          {"resources", std::move(resources)},
                                          {"freshness", "Current"}}})}});
}

json nodeMetricsOf(const json& node, const json& summary) {
  const json n = summary.value("node", json::object());
  auto cpu = number(n, "cpu", "usageNanoCores");
  auto mem = number(n, "memory", "workingSetBytes");
  if (!cpu || !mem) return nullptr;
  return json{{"kind", "NodeMetrics"},
              {"apiVersion", kApiVersion},
              {"metadata", metadataOf(node)},
              {"timestamp", timestampOf(n.value("cpu", json::object()))},
              {"window", kWindow},
              {"usage", usageOf(*cpu, *mem)}};
}

json podMetricsOf(const json& pod, const json& podStats) {
  json containers = json::array();
  std::string timestamp;
  for (const auto& c : podStats.value("containers", json::array())) {
    auto cpu = number(c, "cpu", "usageNanoCores");
    auto mem = number(c, "memory", "workingSetBytes");
    if (!cpu || !mem) return nullptr;  // as metrics-server: a Pod is complete or absent
    if (timestamp.empty()) timestamp = timestampOf(c.value("cpu", json::object()));
    containers.push_back(json{{"name", c.value("name", "")}, {"usage", usageOf(*cpu, *mem)}});
  }
  if (containers.empty()) return nullptr;
  return json{{"kind", "PodMetrics"},
              {"apiVersion", kApiVersion},
              {"metadata", metadataOf(pod)},
              {"timestamp", timestamp},
              {"window", kWindow},
              {"containers", std::move(containers)}};
}

}  // namespace strait::minicluster
