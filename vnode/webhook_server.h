#pragma once
// Serves the toleration webhook (toleration_webhook.h) over HTTPS and registers it with the
// consumer's API server:
//  - a serving certificate for `urlHost` issued by the agent's own CA (no CSR round trip:
//    the API server trusts it through the caBundle);
//  - MutatingWebhookConfiguration `configName` (created or replaced on start): Pods, CREATE,
//    namespaceSelector strait.io/offloaded=true (other namespaces never call out),
//    failurePolicy Ignore (Strait down never blocks Pod creation), sideEffects None,
//    timeoutSeconds 5, url https://<urlHost>:<port>/mutate-pods, caBundle = the CA; and a
//    second webhook, DaemonSets (apps/v1, CREATE and UPDATE) in every namespace, at
//    /mutate-daemonsets (daemonset_webhook.h: keeps daemon Pods off virtual nodes);
//  - ValidatingWebhookConfiguration <configName>-overrides refusing invalid
//    OffloadingOverrides at creation (offloading_overrides.h), failurePolicy Fail;
//  - a Namespace informer (offloaded ones) for lookups, with a GET on a miss (a namespace
//    offloaded a moment ago);
//  - a resync thread that restores the configuration when it was deleted or its URL, CA
//    bundle, rules or failure policy changed (every `resyncInterval`), and gives the
//    toleration to Pending Pods the webhook missed (toleration_repair.h) in each namespace
//    when it becomes offloaded, when the server starts, and every tenth resync.
// Constructor does no I/O; start() does. Thread-safe: requests on the server's connection
// threads; start/stop from one thread.

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "base/thread_annotations.h"
#include "kube/client.h"
#include "kube/pki.h"
#include "vnode/toleration_webhook.h"

namespace strait::kube {
class Informer;
}  // namespace strait::kube

namespace strait::vnode {

class HttpsEndpoint;

struct WebhookServerOptions {
  std::string listenHost = "127.0.0.1";
  uint16_t listenPort = 0;  // 0 = any free port
  // Host in the URL the API server calls; default listenHost (127.0.0.1 for 0.0.0.0).
  std::string urlHost;
  // When set, the configuration names this Service (clientConfig.service: namespace, name,
  // port = the listen port) instead of a URL, as the API server resolves it; the serving
  // certificate then names `urlHost`, default <serviceName>.<serviceNamespace>.svc.
  std::string serviceNamespace, serviceName;
  kube::KeyPair ca;  // signs the serving certificate; its certificate is the caBundle
  TolerationWebhookConfig tolerations;
  std::string configName = "strait-offloading";
  std::chrono::milliseconds resyncInterval{2000};
};

class WebhookServer {
 public:
  // `local` is borrowed and must outlive the server.
  WebhookServer(kube::Client& local, WebhookServerOptions opts);
  ~WebhookServer();  // stop()

  // Certificate, informer, HTTPS server, webhook configuration. Error if any step fails
  // (Invalid for bad options, the API server's error for the configuration). Call once.
  kube::Status start();
  // Stops serving (the configuration stays: with failurePolicy Ignore a stopped agent costs
  // only the call timeout). Idempotent.
  void stop();
  uint16_t port() const;
  std::string url() const;

  // Answers one AdmissionReview body (for tests): the response JSON text.
  std::string review(const std::string& body);
  // The same for the DaemonSet webhook.
  std::string reviewDaemonSet(const std::string& body);
  // The same for the OffloadingOverride validating webhook.
  std::string reviewOverride(const std::string& body);

 private:
  std::optional<Offloading> lookup(const std::string& ns);
  std::string urlFor(const std::string& path) const;
  // clientConfig of the webhook at `path`: a URL, or the Service (see WebhookServerOptions).
  nlohmann::json clientConfigFor(const std::string& path) const;
  nlohmann::json desiredConfiguration() const;
  // ValidatingWebhookConfiguration <configName>-overrides: OffloadingOverrides, CREATE and
  // UPDATE, failurePolicy Fail, at /validate-offloadingoverrides.
  nlohmann::json desiredValidatingConfiguration() const;
  // Creates or updates the configuration unless it already says what this server serves.
  // Sets *changed (if given) when it wrote.
  kube::Status reconcileConfiguration(bool* changed = nullptr);
  void resyncLoop();
  void queueNamespace(const std::string& ns);

  kube::Client& local_;
  const WebhookServerOptions opts_;
  std::unique_ptr<kube::Informer> namespaces_;
  std::unique_ptr<HttpsEndpoint> server_;
  std::thread resync_;
  base::Mutex mu_;
  std::condition_variable_any cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  // Offloaded since the last repair pass.
  std::set<std::string> pendingNamespaces_ GUARDED_BY(mu_);
};

}  // namespace strait::vnode
