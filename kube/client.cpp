// Client over cpprestsdk's http_client. Pipeline of one request: rate limiter -> credentials
// (token / exec plugin) -> transport (one http_client per TLS identity, keeping connections
// alive) -> status mapping -> retry decision (idempotent only; Retry-After; jittered
// exponential backoff) -> 401 refresh (once, when credentials are dynamic).
//
// Locking: mu_ guards transport_ (swapped when an exec plugin hands out a new client
// certificate); requests hold a shared_ptr to the transport they started with.
#include "kube/client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <random>
#include <thread>

#include "base/thread_annotations.h"
#include "kube/api_error.h"
#include "kube/credentials.h"
#include "kube/json_access.h"
#include "kube/json_parse.h"
#include "kube/rate_limiter.h"
#include "kube/transport.h"

namespace strait::kube {

using nlohmann::json;

std::string pctEncode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

namespace {

class Query {
 public:
  Query& add(std::string_view k, std::string_view v) {
    if (v.empty()) return *this;
    q_ += q_.empty() ? '?' : '&';
    q_ += pctEncode(k);
    q_ += '=';
    q_ += pctEncode(v);
    return *this;
  }
  Query& add(std::string_view k, int64_t v) { return add(k, std::to_string(v)); }
  const std::string& str() const { return q_; }

 private:
  std::string q_;
};

void addListOptions(Query& q, const ListOptions& o) {
  q.add("labelSelector", o.labelSelector).add("fieldSelector", o.fieldSelector);
  if (o.limit > 0) q.add("limit", o.limit);
  q.add("continue", o.continueToken)
      .add("resourceVersion", o.resourceVersion)
      .add("resourceVersionMatch", o.resourceVersionMatch);
}

void addWriteOptions(Query& q, const WriteOptions& o) {
  q.add("fieldManager", o.fieldManager);
  if (o.force) q.add("force", "true");
  if (o.dryRun) q.add("dryRun", "All");
}

std::string objectName(const json& obj) { return stringOf(child(obj, "metadata"), "name"); }

const char* contentTypeOf(PatchType t) {
  switch (t) {
    case PatchType::Json: return "application/json-patch+json";
    case PatchType::Merge: return "application/merge-patch+json";
    case PatchType::StrategicMerge: return "application/strategic-merge-patch+json";
    case PatchType::Apply: return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

bool retriableStatus(Code c) {
  return c == Code::TooManyRequests || c == Code::Internal || c == Code::Unavailable ||
         c == Code::ServerTimeout;
}

class ClientImpl : public Client {
 public:
  ClientImpl(RestConfig cfg)
      : cfg_(std::move(cfg)), limiter_(cfg_.qps, cfg_.burst), creds_(cfg_), rng_(std::random_device{}()) {}

  const RestConfig& config() const override { return cfg_; }

  Result<json> get(const ResourceRef& r, std::string_view ns, std::string_view name,
                   const GetOptions& o) override {
    if (name.empty()) return makeError(Code::BadRequest, "get " + r.toString() + ": empty name");
    Query q;
    q.add("resourceVersion", o.resourceVersion);
    return call("GET", resourcePath(r, ns, name, o.subresource) + q.str(), nullptr, "", true);
  }

  Result<json> list(const ResourceRef& r, std::string_view ns, const ListOptions& o) override {
    Query q;
    addListOptions(q, o);
    return call("GET", resourcePath(r, ns) + q.str(), nullptr, "", true);
  }

  Result<json> create(const ResourceRef& r, std::string_view ns, const json& obj,
                      const WriteOptions& o) override {
    Query q;
    addWriteOptions(q, o);
    std::string path;
    if (o.subresource.empty()) {
      path = resourcePath(r, ns);
    } else {
      std::string name = objectName(obj);
      if (name.empty()) {
        return makeError(Code::BadRequest, "create " + r.toString() + "/" + o.subresource +
                                               ": metadata.name is required");
      }
      path = resourcePath(r, ns, name, o.subresource);
    }
    return call("POST", path + q.str(), &obj, "application/json", false);
  }

  Result<json> update(const ResourceRef& r, std::string_view ns, const json& obj,
                      const WriteOptions& o) override {
    std::string name = objectName(obj);
    if (name.empty()) {
      return makeError(Code::BadRequest, "update " + r.toString() + ": metadata.name is required");
    }
    Query q;
    addWriteOptions(q, o);
    return call("PUT", resourcePath(r, ns, name, o.subresource) + q.str(), &obj,
                "application/json", true);
  }

  Result<json> patch(const ResourceRef& r, std::string_view ns, std::string_view name,
                     PatchType type, const json& body, const WriteOptions& o) override {
    if (name.empty()) return makeError(Code::BadRequest, "patch " + r.toString() + ": empty name");
    if (type == PatchType::Apply && o.fieldManager.empty()) {
      return makeError(Code::BadRequest, "patch " + r.toString() + " " + std::string(name) +
                                             ": server-side apply needs a fieldManager");
    }
    Query q;
    addWriteOptions(q, o);
    return call("PATCH", resourcePath(r, ns, name, o.subresource) + q.str(), &body,
                contentTypeOf(type), false);
  }

  Result<json> remove(const ResourceRef& r, std::string_view ns, std::string_view name,
                      const DeleteOptions& o) override {
    if (name.empty()) return makeError(Code::BadRequest, "delete " + r.toString() + ": empty name");
    json body = o.toJson();
    return call("DELETE", resourcePath(r, ns, name), &body, "application/json", true);
  }

  Result<json> removeCollection(const ResourceRef& r, std::string_view ns,
                                const ListOptions& sel, const DeleteOptions& o) override {
    Query q;
    addListOptions(q, sel);
    json body = o.toJson();
    return call("DELETE", resourcePath(r, ns) + q.str(), &body, "application/json", true);
  }

  Status watch(const ResourceRef& r, std::string_view ns, const WatchOptions& o,
               const std::function<bool(WatchEvent&&)>& onEvent,
               std::stop_token stop) override {
    Query q;
    q.add("watch", "true")
        .add("labelSelector", o.labelSelector)
        .add("fieldSelector", o.fieldSelector)
        .add("resourceVersion", o.resourceVersion);
    if (o.allowWatchBookmarks) q.add("allowWatchBookmarks", "true");
    if (o.timeoutSeconds > 0) q.add("timeoutSeconds", o.timeoutSeconds);
    WatchDecoder decoder;
    std::vector<WatchEvent> events;
    bool stoppedByHandler = false;
    Status s = stream(resourcePath(r, ns) + q.str(), stop, [&](std::string_view chunk) {
      events.clear();
      Status fs = decoder.feed(chunk, events);
      for (auto& ev : events) {
        if (!onEvent(std::move(ev))) {
          stoppedByHandler = true;
          return Status(makeError(Code::Ok, ""));  // sentinel: stop without error
        }
      }
      return fs;
    });
    if (stoppedByHandler || stop.stop_requested()) return Status::OK();
    if (!s.ok()) return s;
    return decoder.finish();
  }

  Status streamLogs(std::string_view ns, std::string_view pod, const LogOptions& o,
                    const std::function<bool(std::string_view)>& onData,
                    std::stop_token stop) override {
    Query q;
    q.add("container", o.container);
    if (o.follow) q.add("follow", "true");
    if (o.tailLines) q.add("tailLines", *o.tailLines);
    if (o.sinceSeconds) q.add("sinceSeconds", *o.sinceSeconds);
    if (o.limitBytes) q.add("limitBytes", *o.limitBytes);
    if (o.timestamps) q.add("timestamps", "true");
    if (o.previous) q.add("previous", "true");
    bool stoppedByHandler = false;
    Status s = stream(resourcePath(resources::kPods, ns, pod, "log") + q.str(), stop,
                      [&](std::string_view chunk) {
                        if (!onData(chunk)) {
                          stoppedByHandler = true;
                          return Status(makeError(Code::Ok, ""));
                        }
                        return Status::OK();
                      });
    if (stoppedByHandler || stop.stop_requested()) return Status::OK();
    return s;
  }

  Status validate() {
    auto t = Transport::make(cfg_, cfg_.clientCertPem, cfg_.clientKeyPem);
    if (!t) return t.error();
    base::MutexLock lock(mu_);
    transport_ = std::move(*t);
    return Status::OK();
  }

 private:
  // The transport for these credentials (a new one when the client certificate changed).
  Result<std::shared_ptr<Transport>> transportFor(const Credentials& c) {
    base::MutexLock lock(mu_);
    if (transport_ && transport_->certPem() == c.clientCertPem) return transport_;
    auto t = Transport::make(cfg_, c.clientCertPem, c.clientKeyPem);
    if (!t) return t.error();
    transport_ = std::move(*t);
    return transport_;
  }

  std::chrono::milliseconds backoff(int attempt) {
    base::MutexLock lock(mu_);
    double base = 100.0 * (1 << std::min(attempt, 6));
    std::uniform_real_distribution<double> jitter(0.5, 1.5);
    return std::chrono::milliseconds(static_cast<int64_t>(std::min(base * jitter(rng_), 5000.0)));
  }

  Result<json> call(const std::string& method, const std::string& pathAndQuery,
                    const json* body, const std::string& contentType, bool idempotent) {
    std::string bodyText;
    if (body) bodyText = body->dump(-1, ' ', false, json::error_handler_t::replace);
    bool refreshedAuth = false;
    for (int attempt = 0;; ++attempt) {
      limiter_.accept();
      auto creds = creds_.get();
      if (!creds) return creds.error();
      auto transport = transportFor(*creds);
      if (!transport) return transport.error();
      auto resp = (*transport)->send(method, pathAndQuery, bodyText, contentType, creds->token);
      Error err;
      std::optional<int> retryAfter;
      if (!resp) {
        err = resp.error();
      } else if (resp->status >= 200 && resp->status < 300) {
        if (resp->body.empty()) return json::object();
        auto doc = parseJson(resp->body);
        if (!doc) {
          return makeError(Code::Internal, method + " " + pathAndQuery +
                                               ": response is not JSON: " + doc.error().message);
        }
        return std::move(*doc);
      } else {
        err = errorFromResponse(resp->status, resp->body);
        retryAfter = parseRetryAfter(resp->retryAfter);
        if (err.code == Code::Unauthorized && !refreshedAuth && creds_.invalidate(*creds)) {
          refreshedAuth = true;
          spdlog::info("event=credentials_refresh reason=401 path={}", pathAndQuery);
          --attempt;
          continue;
        }
      }
      bool transportError = !resp;
      bool retriable = attempt < cfg_.maxRetries &&
                       (err.code == Code::TooManyRequests ||
                        (idempotent && (transportError || retriableStatus(err.code))));
      if (!retriable) {
        if (err.message.find(pathAndQuery) == std::string::npos && transportError) {
          err.message = method + " " + cfg_.server + pathAndQuery + ": " + err.message;
        }
        return err;
      }
      auto wait = retryAfter ? std::chrono::milliseconds(*retryAfter * 1000) : backoff(attempt);
      wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.timeout));
      spdlog::debug("event=retry method={} path={} attempt={} code={} wait_ms={}", method,
                    pathAndQuery, attempt + 1, reasonOf(err.code), wait.count());
      std::this_thread::sleep_for(wait);
    }
  }

  // GET a streaming body, handing each chunk to onChunk until the end, an error, or stop.
  // onChunk returning an error with Code::Ok means "stop quietly".
  Status stream(const std::string& pathAndQuery, std::stop_token stop,
                const std::function<Status(std::string_view)>& onChunk) {
    bool refreshedAuth = false;
    for (;;) {
      limiter_.accept();
      auto creds = creds_.get();
      if (!creds) return creds.error();
      auto transport = transportFor(*creds);
      if (!transport) return transport.error();
      Status s = (*transport)->stream(pathAndQuery, creds->token, stop, onChunk);
      if (!s.ok() && s.code() == Code::Unauthorized && !refreshedAuth &&
          creds_.invalidate(*creds)) {
        refreshedAuth = true;
        continue;
      }
      if (!s.ok() && s.code() == Code::Ok) return Status::OK();
      return s;
    }
  }

  const RestConfig cfg_;
  TokenBucket limiter_;
  CredentialSource creds_;
  base::Mutex mu_;
  std::shared_ptr<Transport> transport_ GUARDED_BY(mu_);
  std::mt19937 rng_ GUARDED_BY(mu_);
};

}  // namespace

json DeleteOptions::toJson() const {
  json o = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (gracePeriodSeconds) o["gracePeriodSeconds"] = *gracePeriodSeconds;
  if (!propagationPolicy.empty()) o["propagationPolicy"] = propagationPolicy;
  if (!preconditionUid.empty()) o["preconditions"]["uid"] = preconditionUid;
  if (!preconditionResourceVersion.empty()) {
    o["preconditions"]["resourceVersion"] = preconditionResourceVersion;
  }
  if (dryRun) o["dryRun"] = json::array({"All"});
  return o;
}

std::string resourcePath(const ResourceRef& r, std::string_view ns, std::string_view name,
                         std::string_view subresource) {
  std::string p = r.group.empty() ? "/api/" + r.version : "/apis/" + r.group + "/" + r.version;
  if (r.namespaced && !ns.empty()) p += "/namespaces/" + pctEncode(ns);
  p += "/" + r.resource;
  if (!name.empty()) {
    p += "/" + pctEncode(name);
    if (!subresource.empty()) p += "/" + pctEncode(subresource);
  }
  return p;
}

Result<std::unique_ptr<Client>> newClient(const RestConfig& cfg) {
  if (cfg.server.rfind("https://", 0) != 0 && cfg.server.rfind("http://", 0) != 0) {
    return makeError(Code::Invalid, "server: must start with https:// or http://, got \"" +
                                        cfg.server + "\"");
  }
  auto c = std::make_unique<ClientImpl>(cfg);
  if (auto s = c->validate(); !s) return s.error();
  return std::unique_ptr<Client>(std::move(c));
}

Result<json> updateStatus(Client& c, const ResourceRef& r, std::string_view ns, const json& obj) {
  WriteOptions o;
  o.subresource = "status";
  return c.update(r, ns, obj, o);
}

Result<json> bindPod(Client& c, std::string_view ns, std::string_view name,
                     std::string_view node) {
  json b = {{"apiVersion", "v1"},
            {"kind", "Binding"},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  WriteOptions o;
  o.subresource = "binding";
  return c.create(resources::kPods, ns, b, o);
}

Result<json> evictPod(Client& c, std::string_view ns, std::string_view name,
                      const DeleteOptions& d) {
  json e = {{"apiVersion", "policy/v1"},
            {"kind", "Eviction"},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"deleteOptions", d.toJson()}};
  WriteOptions o;
  o.subresource = "eviction";
  return c.create(resources::kPods, ns, e, o);
}

}  // namespace strait::kube
