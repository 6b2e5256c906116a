// HTTPS hosting and registration of the toleration webhook (see webhook_server.h).
#include "vnode/webhook_server.h"

#include <spdlog/spdlog.h>

#include "kube/base64.h"
#include "kube/informer.h"
#include "kube/json_parse.h"
#include "kube/object.h"
#include "vnode/daemonset_webhook.h"
#include "vnode/https_endpoint.h"
#include "vnode/offloading_overrides.h"
#include "vnode/toleration_repair.h"

namespace strait::vnode {

using nlohmann::json;
using namespace std::chrono_literals;
namespace res = kube::resources;

namespace {

const kube::ResourceRef kMutatingWebhookConfigurations{
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", false};
constexpr const char* kPath = "/mutate-pods";
constexpr const char* kDaemonSetPath = "/mutate-daemonsets";
constexpr const char* kOverridePath = "/validate-offloadingoverrides";
const kube::ResourceRef kValidatingWebhookConfigurations{
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", false};

}  // namespace

WebhookServer::WebhookServer(kube::Client& local, WebhookServerOptions opts)
    : local_(local), opts_(std::move(opts)) {}

WebhookServer::~WebhookServer() { stop(); }

std::optional<Offloading> WebhookServer::lookup(const std::string& ns) {
  if (namespaces_) {
    if (kube::ObjectPtr cached = namespaces_->cache().get(ns)) return offloadingOf(*cached);
  }
  kube::Result<json> got = local_.get(res::kNamespaces, "", ns);
  if (!got.ok()) return std::nullopt;
  return offloadingOf(*got);
}

std::string WebhookServer::review(const std::string& body) {
  kube::Result<json> parsed = kube::parseJson(body);
  json answer = admitPod(parsed.ok() ? *parsed : json(),
                         [this](const std::string& ns) { return lookup(ns); }, opts_.tolerations);
  if (answer["response"].contains("patch")) {
    const json& req = parsed->at("request");
    spdlog::debug("event=pod_mutated namespace={} name={}", req.value("namespace", ""),
                  req.contains("object") ? kube::getName(req["object"]) : std::string());
  }
  return answer.dump();
}

std::string WebhookServer::reviewDaemonSet(const std::string& body) {
  kube::Result<json> parsed = kube::parseJson(body);
  json answer = admitDaemonSet(parsed.ok() ? *parsed : json());
  if (answer["response"].contains("patch")) {
    const json& req = parsed->at("request");
    spdlog::info("event=daemonset_kept_off_virtual_nodes namespace={} name={} operation={}",
                 req.value("namespace", ""),
                 req.contains("object") ? kube::getName(req["object"]) : std::string(),
                 req.value("operation", ""));
  }
  return answer.dump();
}

uint16_t WebhookServer::port() const { return server_ ? server_->port() : 0; }

std::string WebhookServer::url() const { return urlFor(kPath); }

std::string WebhookServer::urlFor(const std::string& path) const {
  std::string host = opts_.urlHost;
  if (host.empty()) host = opts_.listenHost == "0.0.0.0" ? "127.0.0.1" : opts_.listenHost;
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  return "https://" + host + ":" + std::to_string(port()) + path;
}

json WebhookServer::clientConfigFor(const std::string& path) const {
  json cc = {{"caBundle", kube::base64Encode(opts_.ca.certPem)}};
  if (opts_.serviceName.empty()) {
    cc["url"] = urlFor(path);
  } else {
    cc["service"] = {{"namespace", opts_.serviceNamespace},
                     {"name", opts_.serviceName},
                     {"path", path},
                     {"port", static_cast<int>(port())}};
  }
  return cc;
}

json WebhookServer::desiredConfiguration() const {
  json webhook = {
      {"name", "tolerations.offloading.strait.io"},
      {"admissionReviewVersions", json::array({"v1"})},
      {"sideEffects", "None"},
      {"failurePolicy", "Ignore"},
      {"timeoutSeconds", 5},
      {"reinvocationPolicy", "Never"},
      {"clientConfig", clientConfigFor(kPath)},
      {"namespaceSelector",
       {{"matchLabels", {{std::string(kLabelOffloaded), "true"}}}}},
      {"rules",
       json::array({{{"apiGroups", json::array({""})},
                     {"apiVersions", json::array({"v1"})},
                     {"operations", json::array({"CREATE"})},
                     {"resources", json::array({"pods"})},
                     {"scope", "Namespaced"}}})}};
  // DaemonSets in every namespace (kube-proxy and CNI agents live in kube-system and
  // tolerate every taint): their Pods never belong on a virtual node.
  json daemonSets = webhook;
  daemonSets["name"] = "daemonsets.offloading.strait.io";
  daemonSets["clientConfig"] = clientConfigFor(kDaemonSetPath);
  daemonSets.erase("namespaceSelector");
  daemonSets["rules"] = json::array({{{"apiGroups", json::array({"apps"})},
                                      {"apiVersions", json::array({"v1"})},
                                      {"operations", json::array({"CREATE", "UPDATE"})},
                                      {"resources", json::array({"daemonsets"})},
                                      {"scope", "Namespaced"}}});
  return {{"apiVersion", "admissionregistration.k8s.io/v1"},
                 {"kind", "MutatingWebhookConfiguration"},
                 {"metadata",
                  {{"name", opts_.configName},
                   {"labels", {{std::string(peering::kLabelManagedBy), std::string(peering::kManagedByValue)}}}}},
          {"webhooks", json::array({webhook, daemonSets})}};
}

json WebhookServer::desiredValidatingConfiguration() const {
  // Refused at creation: an override that does not parse never reaches a Pod. Fail, so that
  // an agent that is down does not let one through (only overrides are affected).
  json webhook = {
      {"name", "offloadingoverrides.offloading.strait.io"},
      {"admissionReviewVersions", json::array({"v1"})},
      {"sideEffects", "None"},
      {"failurePolicy", "Fail"},
      {"timeoutSeconds", 5},
      {"clientConfig", clientConfigFor(kOverridePath)},
      {"rules",
       json::array({{{"apiGroups", json::array({std::string(reflection::kOverrideGroup)})},
                     {"apiVersions", json::array({std::string(reflection::kOverrideVersion)})},
                     {"operations", json::array({"CREATE", "UPDATE"})},
                     {"resources", json::array({std::string(reflection::kOverridePlural)})},
                     {"scope", "Namespaced"}}})}};
  return {{"apiVersion", "admissionregistration.k8s.io/v1"},
          {"kind", "ValidatingWebhookConfiguration"},
          {"metadata",
           {{"name", opts_.configName + "-overrides"},
            {"labels",
             {{std::string(peering::kLabelManagedBy), std::string(peering::kManagedByValue)}}}}},
          {"webhooks", json::array({webhook})}};
}

std::string WebhookServer::reviewOverride(const std::string& body) {
  kube::Result<json> parsed = kube::parseJson(body);
  json answer = admitOffloadingOverride(parsed.ok() ? *parsed : json());
  if (!answer["response"].value("allowed", true)) {
    spdlog::info("event=offloading_override_refused message=\"{}\"",
                 answer["response"]["status"].value("message", ""));
  }
  return answer.dump();
}

namespace {

// The fields of each webhook this server sets, by webhook name (the API server may default
// others).
json essentials(const json& config) {
  json out = json::object();
  for (const json& w : config.value("webhooks", json::array())) {
    if (!w.is_object()) continue;
    out[w.value("name", std::string())] = {
        {"url", w.value("/clientConfig/url"_json_pointer, std::string())},
        {"service", w.value("/clientConfig/service"_json_pointer, json())},
        {"caBundle", w.value("/clientConfig/caBundle"_json_pointer, std::string())},
        {"failurePolicy", w.value("failurePolicy", json())},
        {"namespaceSelector", w.value("namespaceSelector", json())},
        {"rules", w.value("rules", json())}};
  }
  return out;
}

}  // namespace

kube::Status WebhookServer::reconcileConfiguration(bool* changed) {
  const std::pair<const kube::ResourceRef*, json> configs[] = {
      {&kMutatingWebhookConfigurations, desiredConfiguration()},
      {&kValidatingWebhookConfigurations, desiredValidatingConfiguration()}};
  for (const auto& [resource, desired] : configs) {
    json config = desired;
    const std::string name = config["metadata"]["name"];
    kube::Result<json> cur = local_.get(*resource, "", name);
    kube::Result<json> stored = json();
    if (cur.ok()) {
      if (essentials(*cur) == essentials(config)) continue;
      config["metadata"]["resourceVersion"] = (*cur)["metadata"]["resourceVersion"];
      stored = local_.update(*resource, "", config);
    } else if (kube::isNotFound(cur.error())) {
      stored = local_.create(*resource, "", config);
    } else {
      stored = cur.error();
    }
    if (!stored.ok()) return stored.error();
    if (changed) *changed = true;
  }
  return kube::Status::OK();
}

void WebhookServer::queueNamespace(const std::string& ns) {
  {
    base::MutexLock lock(mu_);
    pendingNamespaces_.insert(ns);
  }
  cv_.notify_all();
}

void WebhookServer::resyncLoop() {
  int pass = 0;
  base::UniqueLock lock(mu_);
  while (!stopping_) {
    std::set<std::string> namespaces;
    namespaces.swap(pendingNamespaces_);
    lock.unlock();
    bool changed = false;
    if (kube::Status s = reconcileConfiguration(&changed); !s.ok()) {
      spdlog::warn("event=webhook_configuration_failed configuration={} error=\"{}\"",
                   opts_.configName, s.error().message);
    } else if (changed) {
      spdlog::warn("event=owned_object_restored kind=MutatingWebhookConfiguration name={} url={}",
                   opts_.configName, url());
    }
    // Every offloaded namespace now and then: Pods the webhook missed while it was up, and
    // those of a failed pass.
    if (++pass % 10 == 0) {
      for (const kube::ObjectPtr& ns : namespaces_->cache().list()) {
        namespaces.insert(kube::getName(*ns));
      }
    }
    for (const std::string& ns : namespaces) {
      std::optional<Offloading> o = lookup(ns);
      if (!o || !o->offloaded) continue;
      kube::Result<int> n = addMissingTolerations(local_, ns, *o, opts_.tolerations);
      if (!n.ok()) {
        spdlog::warn("event=toleration_repair_failed namespace={} error=\"{}\"", ns,
                     n.error().message);
      }
    }
    lock.lock();
    const auto deadline = std::chrono::steady_clock::now() + opts_.resyncInterval;
    while (!stopping_ && pendingNamespaces_.empty()) {
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
  }
}

kube::Status WebhookServer::start() {
  if (opts_.ca.certPem.empty() || opts_.ca.keyPem.empty()) {
    return kube::makeError(kube::Code::Invalid, "webhook: the CA is required");
  }
  std::string host = opts_.urlHost.empty() ? opts_.listenHost : opts_.urlHost;
  if (opts_.urlHost.empty() && !opts_.serviceName.empty()) {
    host = opts_.serviceName + "." + opts_.serviceNamespace + ".svc";
  }
  if (host == "0.0.0.0") host = "127.0.0.1";
  const bool isIp = host.find_first_not_of("0123456789.:[]") == std::string::npos;
  std::string bare = host;
  if (!bare.empty() && bare.front() == '[') bare = bare.substr(1, bare.size() - 2);
  kube::Result<kube::KeyPair> cert =
      kube::issueCert(opts_.ca, "strait-webhook", {}, isIp ? std::vector<std::string>{}
                                                           : std::vector<std::string>{bare},
                      isIp ? std::vector<std::string>{bare} : std::vector<std::string>{}, true);
  if (!cert.ok()) return cert.error();

  kube::InformerOptions io{res::kNamespaces, "", std::string(kLabelOffloaded) + "=true", ""};
  namespaces_ = std::make_unique<kube::Informer>(local_, io);
  // A namespace offloaded (or seen offloaded at start): its Pods created without the webhook
  // get the toleration now.
  namespaces_->addHandlers(
      {[this](const kube::ObjectPtr& ns) { queueNamespace(kube::getName(*ns)); },
       [this](const kube::ObjectPtr&, const kube::ObjectPtr& ns) {
         queueNamespace(kube::getName(*ns));
       },
       nullptr});
  namespaces_->start();

  kube::Result<std::unique_ptr<HttpsEndpoint>> server = startHttpsEndpoint(
      opts_.listenHost, opts_.listenPort, cert->certPem + opts_.ca.certPem, cert->keyPem,
      [this](const std::string& method, const std::string& path, const std::string& body) {
        if (method == "POST" && path == kPath) {
          return HttpsReply{200, "application/json", review(body)};
        }
        if (method == "POST" && path == kDaemonSetPath) {
          return HttpsReply{200, "application/json", reviewDaemonSet(body)};
        }
        if (method == "POST" && path == kOverridePath) {
          return HttpsReply{200, "application/json", reviewOverride(body)};
        }
        return HttpsReply{404, "application/json",
                          R"({"message":"not found: POST )" + std::string(kPath) + " or " +
                              kDaemonSetPath + R"( only"})"};
      });
  if (!server.ok()) return server.error();
  server_ = std::move(*server);

  if (kube::Status st = reconcileConfiguration(); !st.ok()) return st;
  spdlog::info("event=webhook_started url={} configuration={}", url(), opts_.configName);
  {
    base::MutexLock lock(mu_);
    stopping_ = false;
  }
  resync_ = std::thread([this] { resyncLoop(); });
  return kube::Status::OK();
}

void WebhookServer::stop() {
  {
    base::MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (resync_.joinable()) resync_.join();
  if (server_) server_->stop();
  if (namespaces_) namespaces_->stop();
}

}  // namespace strait::vnode
