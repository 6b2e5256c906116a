#pragma once
// The Kubernetes REST client used by the virtual kubelet, the reflectors, the agent and the
// CLI. Objects are nlohmann::json; resources are addressed by ResourceRef (group, version,
// plural resource, namespaced). Errors are kube::Error values with codes mirroring the
// server's Status reason (NotFound, AlreadyExists, Conflict, Gone, Forbidden, Unauthorized,
// Invalid with causes, TooManyRequests, ServerTimeout; Unavailable for transport errors).
//
// Behaviour like client-go: HTTPS with CA / client certificates / tls-server-name, bearer
// tokens, token files and exec plugins (re-run after a 401), a QPS/burst token bucket shared
// by all requests, a per-request timeout, kept-alive connections, and jittered retries
// (Retry-After honoured) for idempotent requests (GET, PUT, DELETE) on 429, 5xx and transport
// errors; POST and PATCH are retried only on 429, which means the server did not act.
//
// Thread-safe: one Client is shared by all threads of a process. The implementation
// (cpprestsdk) stays in client.cpp.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "kube/gvk.h"
#include "kube/kubeconfig.h"
#include "kube/status.h"
#include "kube/watch.h"

namespace strait::kube {

// Where a resource lives: /api/v1/... for the core group, /apis/G/V/... otherwise.
struct ResourceRef {
  std::string group;     // "" for core
  std::string version;   // "v1"
  std::string resource;  // lower-case plural: "pods"
  bool namespaced = true;

  static ResourceRef of(const GroupVersionResource& gvr, bool namespaced) {
    return {gvr.group, gvr.version, gvr.resource, namespaced};
  }
  GroupVersionResource gvr() const { return {group, version, resource}; }
  // "pods", "deployments.apps": for logs and error messages.
  std::string toString() const { return group.empty() ? resource : resource + "." + group; }
  auto operator<=>(const ResourceRef&) const = default;
};

// Common built-in resources.
namespace resources {
inline const ResourceRef kPods{"", "v1", "pods", true};
inline const ResourceRef kNodes{"", "v1", "nodes", false};
inline const ResourceRef kNamespaces{"", "v1", "namespaces", false};
inline const ResourceRef kServices{"", "v1", "services", true};
inline const ResourceRef kConfigMaps{"", "v1", "configmaps", true};
inline const ResourceRef kSecrets{"", "v1", "secrets", true};
inline const ResourceRef kServiceAccounts{"", "v1", "serviceaccounts", true};
inline const ResourceRef kEvents{"", "v1", "events", true};
inline const ResourceRef kEndpointSlices{"discovery.k8s.io", "v1", "endpointslices", true};
inline const ResourceRef kLeases{"coordination.k8s.io", "v1", "leases", true};
inline const ResourceRef kDeployments{"apps", "v1", "deployments", true};
}  // namespace resources

struct GetOptions {
  std::string resourceVersion;  // "" = most recent, "0" = any
  std::string subresource;      // e.g. "status", "scale"
};

struct ListOptions {
  std::string labelSelector;
  std::string fieldSelector;
  int64_t limit = 0;  // 0 = no limit
  std::string continueToken;
  std::string resourceVersion;
  std::string resourceVersionMatch;  // NotOlderThan, Exact
};

struct WatchOptions {
  std::string labelSelector;
  std::string fieldSelector;
  std::string resourceVersion;  // changes after this version; "" / "0" = synthetic ADDED first
  bool allowWatchBookmarks = true;
  int timeoutSeconds = 0;  // server-side stream timeout; 0 = the server's default
};

struct WriteOptions {
  std::string subresource;   // "status", "binding", "eviction", "scale"...
  std::string fieldManager;  // required by server-side apply
  bool force = false;        // server-side apply: take over conflicting fields
  bool dryRun = false;       // dryRun=All
};

struct DeleteOptions {
  std::optional<int64_t> gracePeriodSeconds;
  std::string propagationPolicy;  // "", Orphan, Background, Foreground
  std::string preconditionUid;
  std::string preconditionResourceVersion;
  bool dryRun = false;
  // The DeleteOptions JSON body the API server expects.
  nlohmann::json toJson() const;
};

enum class PatchType {
  Json,            // application/json-patch+json (RFC 6902)
  Merge,           // application/merge-patch+json (RFC 7386)
  StrategicMerge,  // application/strategic-merge-patch+json
  Apply,           // application/apply-patch+yaml (server-side apply; needs fieldManager)
};

struct LogOptions {
  std::string container;  // "" = the only container
  bool follow = false;
  std::optional<int64_t> tailLines;
  std::optional<int64_t> sinceSeconds;
  std::optional<int64_t> limitBytes;
  bool timestamps = false;
  bool previous = false;
};

class Client {
 public:
  virtual ~Client() = default;

  // The config this client was made from (server, default namespace...).
  virtual const RestConfig& config() const = 0;

  // GET one object. `ns` is ignored for cluster-scoped resources.
  virtual Result<nlohmann::json> get(const ResourceRef& r, std::string_view ns,
                                     std::string_view name, const GetOptions& o = {}) = 0;
  // LIST (a *List object with metadata.resourceVersion and metadata.continue). `ns` empty
  // lists across all namespaces.
  virtual Result<nlohmann::json> list(const ResourceRef& r, std::string_view ns,
                                      const ListOptions& o = {}) = 0;
  // POST obj to the collection (or, with o.subresource, to obj's subresource, the object
  // name taken from obj.metadata.name). Returns the created object.
  virtual Result<nlohmann::json> create(const ResourceRef& r, std::string_view ns,
                                        const nlohmann::json& obj, const WriteOptions& o = {}) = 0;
  // PUT obj (name from obj.metadata.name; include metadata.resourceVersion to get Conflict
  // on concurrent changes). o.subresource "status" updates the status only.
  virtual Result<nlohmann::json> update(const ResourceRef& r, std::string_view ns,
                                        const nlohmann::json& obj, const WriteOptions& o = {}) = 0;
  // PATCH with the given type; `patch` is the body (for Apply: the applied configuration).
  virtual Result<nlohmann::json> patch(const ResourceRef& r, std::string_view ns,
                                       std::string_view name, PatchType type,
                                       const nlohmann::json& patch,
                                       const WriteOptions& o = {}) = 0;
  // DELETE one object. Returns the server's answer: the object (still terminating, with
  // deletionTimestamp) or a Success Status.
  virtual Result<nlohmann::json> remove(const ResourceRef& r, std::string_view ns,
                                        std::string_view name, const DeleteOptions& o = {}) = 0;
  // DELETE the collection matching the list options' selectors.
  virtual Result<nlohmann::json> removeCollection(const ResourceRef& r, std::string_view ns,
                                                  const ListOptions& sel,
                                                  const DeleteOptions& o = {}) = 0;

  // WATCH: blocks, calling onEvent for each event in order, until the server ends the stream
  // (returns OK: re-watch from the last resourceVersion), onEvent returns false (OK), `stop`
  // is requested (OK, promptly), or an error: the non-200 answer as an Error (e.g. Gone),
  // BadRequest for a malformed stream, Unavailable when the connection drops. An ERROR event
  // (e.g. 410 Expired) is passed to onEvent like any other. Called from any thread; onEvent
  // runs on the calling thread.
  virtual Status watch(const ResourceRef& r, std::string_view ns, const WatchOptions& o,
                       const std::function<bool(WatchEvent&&)>& onEvent,
                       std::stop_token stop = {}) = 0;

  // pods/log as a stream: onData gets the text as it arrives (with follow, until the
  // container ends, onData returns false or `stop` is requested). Blocks like watch().
  virtual Status streamLogs(std::string_view ns, std::string_view pod, const LogOptions& o,
                            const std::function<bool(std::string_view)>& onData,
                            std::stop_token stop = {}) = 0;
};

// Validates the config (server URL, PEM data) and makes a client; no I/O. Errors:
// Invalid naming the bad field.
Result<std::unique_ptr<Client>> newClient(const RestConfig& cfg);

// Sets how many threads run the I/O of every Client of the process (cpprestsdk's shared
// pool; 40 when not set). Each request's completions are handlers on that pool: with several
// idle threads, every handler wakes one of them, with one thread they run one after the other
// on it (about 190 of the consumer agent's 240 context switches per offloaded Pod were the
// 40 threads'). Call once, from main(), before any request: Invalid (pool unchanged) when
// `threads` is 0 or the pool already runs.
Status setHttpIoThreads(size_t threads);

// Convenience wrappers over Client.
// updateStatus: update() on the status subresource.
Result<nlohmann::json> updateStatus(Client& c, const ResourceRef& r, std::string_view ns,
                                    const nlohmann::json& obj);
// pods/binding: binds pod `name` to `node`.
Result<nlohmann::json> bindPod(Client& c, std::string_view ns, std::string_view name,
                               std::string_view node);
// pods/eviction (policy/v1 Eviction with the delete options).
Result<nlohmann::json> evictPod(Client& c, std::string_view ns, std::string_view name,
                                const DeleteOptions& o = {});
// Percent-encodes everything but RFC 3986 unreserved characters (a path segment or a query
// key/value).
std::string pctEncode(std::string_view s);
// The URL path of a resource: "/api/v1/namespaces/NS/pods/NAME/status" (ns, name,
// subresource may be empty). Percent-encodes the segments.
std::string resourcePath(const ResourceRef& r, std::string_view ns, std::string_view name = {},
                         std::string_view subresource = {});

}  // namespace strait::kube
