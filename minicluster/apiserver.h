#pragma once
// The minicluster's Kubernetes API server: REST semantics (get/list/watch/create/update/
// patch/delete, subresources, selectors, pagination, dry-run, field validation), discovery,
// OpenAPI, Tables, graceful deletion, finalizers, garbage collection and namespace
// termination, served over HTTPS with client-certificate authentication.
//
// Thread-safe. Constructor does no I/O; start() binds, writes the kubeconfig, and serves.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "kube/status.h"
#include "minicluster/simulation.h"

namespace strait::metrics {
class Registry;
}

namespace strait::minicluster {

class Store;

struct ApiServerOptions {
  std::string name = "minicluster";    // cluster name (kubeconfig cluster/context name)
  std::string listenHost = "127.0.0.1";
  uint16_t listenPort = 0;              // 0 = any free port
  std::optional<std::string> dataDir;   // durable storage + PKI kept here when set
  std::optional<std::string> kubeconfigOut;  // admin kubeconfig written here once serving
  size_t maxBodyBytes = 3 * 1024 * 1024;
  size_t historyLimit = 100000;         // watch history kept before compaction
  // CSV token,user,uid,"groups" for static bearer-token auth (tests of token clients).
  std::optional<std::string> tokenAuthFile;
  // "RBAC" (Roles, ClusterRoles and their bindings are enforced; authorizer.h) or
  // "AlwaysAllow" (every authenticated request is allowed).
  std::string authorizationMode = "RBAC";
  // Scheduler, simulated nodes and their kubelet API, node lifecycle controller.
  SimulationOptions simulation;
  // When set (borrowed; outlives the server), every API request is counted there
  // (request_metrics.h).
  metrics::Registry* metrics = nullptr;
};

class ApiServer {
 public:
  virtual ~ApiServer() = default;
  // Opens storage, makes or loads the CA, starts HTTPS, writes the kubeconfig.
  virtual kube::Status start() = 0;
  // Stops serving and background controllers; idempotent.
  virtual void stop() = 0;
  virtual uint16_t port() const = 0;
  // "https://127.0.0.1:PORT"
  virtual std::string url() const = 0;
  // Paths/PEM for tests and in-process clients.
  virtual std::string caPem() const = 0;
  virtual std::string adminCertPem() const = 0;
  virtual std::string adminKeyPem() const = 0;
  // The backing store (tests: force compaction, inspect revisions).
  virtual Store& store() = 0;
};

std::unique_ptr<ApiServer> newApiServer(ApiServerOptions opts);

}  // namespace strait::minicluster
