#include "minicluster/pod_proxy.h"

#include <spdlog/spdlog.h>

#include "kube/object.h"
#include "minicluster/api_handler.h"

namespace strait::minicluster {
namespace {

using kube::HttpRequest;
using kube::HttpResponse;
using kube::Responder;
using kube::UpstreamTarget;
using kube::proxyGet;

using kube::Code;
using kube::makeError;

std::string percentEncode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

void replyStatus(Responder& out, const kube::Error& e) {
  HttpResponse r;
  r.status = kube::httpCode(e.code);
  r.headers["Content-Type"] = "application/json";
  r.body = statusBody(e);
  out.respond(std::move(r));
}

std::vector<std::string> names(const json& spec, const char* list) {
  std::vector<std::string> out;
  if (spec.contains(list) && spec[list].is_array()) {
    for (const auto& c : spec[list]) out.push_back(c.value("name", ""));
  }
  return out;
}

std::string goList(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + v[i];
  return s + "]";
}

bool truthy(const std::string& v) { return v == "1" || v == "true" || v == "True" || v == "TRUE"; }

}  // namespace

void servePodStream(const HttpRequest& req, Responder& out, Rest& rest, Registry& registry,
                    const ResourceInfo& pods, const std::string& ns, const std::string& name,
                    const std::string& sub, const KubeletClientConfig& client) {
  if (req.method != "GET" && req.method != "POST") {
    return replyStatus(out, makeError(Code::MethodNotAllowed,
                                      "the server does not allow this method on pods/" + sub));
  }
  auto obj = rest.get(pods, ns, name);
  if (!obj) return replyStatus(out, Rest::notFound(pods, name));
  json pod = json::parse((*obj)->json);
  const json& spec = pod.value("spec", json::object());
  std::string container = req.queryParam("container");
  auto containers = names(spec, "containers");
  auto inits = names(spec, "initContainers");
  if (sub == "portforward") {
    // A port of the Pod's network namespace, no container.
  } else if (container.empty()) {
    if (containers.size() == 1) {
      container = containers[0];
    } else {
      std::string msg = "a container name must be specified for pod " + name + ", choose one of: " +
                        goList(containers);
      if (!inits.empty()) msg += " or one of the init containers: " + goList(inits);
      return replyStatus(out, makeError(Code::BadRequest, msg));
    }
  } else if (std::find(containers.begin(), containers.end(), container) == containers.end() &&
             std::find(inits.begin(), inits.end(), container) == inits.end()) {
    return replyStatus(out, makeError(Code::BadRequest, "container " + container +
                                                            " is not valid for pod " + name));
  }
  std::string nodeName = spec.value("nodeName", "");
  if (nodeName.empty()) {
    return replyStatus(out, makeError(Code::BadRequest,
                                      "pod " + name + " does not have a host assigned"));
  }
  auto nodesInfo = registry.find("", "v1", "nodes");
  auto node = rest.get(*nodesInfo, "", nodeName);
  if (!node) {
    return replyStatus(out, makeError(Code::NotFound, "nodes \"" + nodeName + "\" not found"));
  }
  json n = json::parse((*node)->json);
  const json& status = n.value("status", json::object());
  std::string address;
  if (status.contains("addresses") && status["addresses"].is_array()) {
    for (const auto& a : status["addresses"]) {
      if (a.value("type", "") == "InternalIP" && address.empty()) address = a.value("address", "");
    }
  }
  int port = 0;
  if (status.contains("daemonEndpoints") && status["daemonEndpoints"].is_object()) {
    port = status["daemonEndpoints"].value("kubeletEndpoint", json::object()).value("Port", 0);
  }
  if (address.empty() || port <= 0 || port > 65535) {
    return replyStatus(out, makeError(Code::Unavailable,
                                      "node \"" + nodeName + "\" has no kubelet endpoint "
                                      "(status.addresses InternalIP and "
                                      "daemonEndpoints.kubeletEndpoint.Port)"));
  }
  UpstreamTarget t;
  t.host = address;
  t.port = static_cast<uint16_t>(port);
  t.caPem = client.caPem;
  t.certPem = client.certPem;
  t.keyPem = client.keyPem;
  std::string base = "/" + std::string(sub == "log" ? "containerLogs" : sub) + "/" +
                     percentEncode(ns) + "/" + percentEncode(name) + "/" + percentEncode(container);
  std::string query;
  auto add = [&](const std::string& k, const std::string& v) {
    query += (query.empty() ? "?" : "&") + k + "=" + percentEncode(v);
  };
  if (sub == "portforward") {
    // PodPortForwardOptions.ports (`ports=P1,P2` or repeated) become the kubelet's `port=`;
    // the upgrade (SPDY or WebSocket) is relayed as for exec.
    for (const auto& v : req.queryAll("ports")) {
      size_t i = 0;
      while (i <= v.size()) {
        size_t j = std::min(v.find(',', i), v.size());
        if (j > i) add("port", v.substr(i, j - i));
        i = j + 1;
      }
    }
    t.target = "/portForward/" + percentEncode(ns) + "/" + percentEncode(name) + query;
    auto s = out.proxyUpgrade(t);
    if (!s) replyStatus(out, s.error());
    return;
  }
  if (sub == "log") {
    for (const char* b : {"follow", "timestamps", "previous"}) {
      if (truthy(req.queryParam(b))) add(b, "true");
    }
    for (const char* k : {"tailLines", "sinceSeconds", "sinceTime", "limitBytes"}) {
      if (req.hasQuery(k)) add(k, req.queryParam(k));
    }
    t.target = base + query;
    auto s = proxyGet(t, out, [&](int code, const std::string& body) {
      Code c = code == 404 ? Code::NotFound : code == 401 || code == 403 ? Code::Internal
                                                                         : Code::BadRequest;
      replyStatus(out, makeError(c, body));
    });
    if (!s) replyStatus(out, s.error());
    return;
  }
  for (const auto& c : req.queryAll("command")) add("command", c);
  if (truthy(req.queryParam("stdin"))) add("input", "1");
  if (truthy(req.queryParam("stdout"))) add("output", "1");
  if (truthy(req.queryParam("stderr"))) add("error", "1");
  if (truthy(req.queryParam("tty"))) add("tty", "1");
  t.target = base + query;
  auto s = out.proxyUpgrade(t);
  if (!s) replyStatus(out, s.error());
}

}  // namespace strait::minicluster
