#include "minicluster/request_metrics.h"

#include <chrono>

#include "minicluster/api_request.h"
#include "minicluster/request_info.h"

namespace strait::minicluster {
namespace {

// Passes everything to the real responder and notes the status code it answered with.
class RecordingResponder : public kube::Responder {
 public:
  explicit RecordingResponder(kube::Responder& out) : out_(out) {}
  int code() const { return code_; }
  bool longRunning() const { return longRunning_; }

  bool respond(kube::HttpResponse r) override {
    code_ = r.status;
    return out_.respond(std::move(r));
  }
  bool startStream(int status, std::map<std::string, std::string> headers) override {
    code_ = status;
    return out_.startStream(status, std::move(headers));
  }
  bool writeChunk(std::string_view data) override { return out_.writeChunk(data); }
  bool clientGone() override { return out_.clientGone(); }
  std::unique_ptr<kube::WebSocket> acceptWebSocket(const std::string& subprotocol) override {
    auto ws = out_.acceptWebSocket(subprotocol);
    code_ = ws ? 101 : 400;
    longRunning_ = true;
    return ws;
  }
  std::unique_ptr<kube::ByteStream> acceptUpgrade(
      const std::string& protocol, const std::map<std::string, std::string>& headers) override {
    auto s = out_.acceptUpgrade(protocol, headers);
    code_ = s ? 101 : 400;
    longRunning_ = true;
    return s;
  }
  kube::Status proxyUpgrade(const kube::UpstreamTarget& upstream) override {
    kube::Status s = out_.proxyUpgrade(upstream);
    code_ = s.ok() ? 101 : 503;
    longRunning_ = true;
    return s;
  }

 private:
  kube::Responder& out_;
  int code_ = 0;  // 0: the handler answered nothing (the connection is closed)
  bool longRunning_ = false;
};

class RequestMetricsHandler : public kube::Handler {
 public:
  RequestMetricsHandler(metrics::Registry& registry, kube::Handler& next)
      : registry_(registry), next_(next) {}

  void handle(const kube::HttpRequest& req, kube::Responder& out) override {
    const std::string verb = requestVerb(req);
    const RequestInfo ri = parseRequestPath(req.path);
    const std::string resource =
        ri.isResource ? (ri.subresource.empty() ? ri.resource : ri.resource + "/" + ri.subresource)
                      : "";
    metrics::Gauge watchers;
    if (verb == "WATCH") {
      watchers = registry_.gauge("apiserver_longrunning_requests",
                                 "Requests open now that last long (watches)",
                                 {{"verb", verb}, {"resource", resource}});
      watchers.inc();
    }
    const auto start = std::chrono::steady_clock::now();
    RecordingResponder recording(out);
    next_.handle(req, recording);
    watchers.dec();
    registry_
        .counter("apiserver_request_total", "API requests by verb, resource and HTTP status code",
                 {{"verb", recording.longRunning() && verb != "WATCH" ? "CONNECT" : verb},
                  {"resource", resource},
                  {"code", std::to_string(recording.code())}})
        .inc();
    if (verb != "WATCH" && !recording.longRunning()) {
      registry_
          .histogram("apiserver_request_duration_seconds",
                     "API request durations by verb and resource, watches and upgraded "
                     "connections excluded",
                     metrics::durationBuckets(), {{"verb", verb}, {"resource", resource}})
          .observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                       .count());
    }
  }

 private:
  metrics::Registry& registry_;
  kube::Handler& next_;
};

}  // namespace

std::string requestVerb(const kube::HttpRequest& req) {
  const RequestInfo ri = parseRequestPath(req.path);
  if (!ri.isResource) return req.method;
  if (req.method == "GET") {
    if (ri.legacyWatch || api::truthy(req.queryParam("watch"))) return "WATCH";
    return ri.name.empty() ? "LIST" : "GET";
  }
  return req.method;
}

std::unique_ptr<kube::Handler> newRequestMetricsHandler(metrics::Registry& registry,
                                                        kube::Handler& next) {
  return std::make_unique<RequestMetricsHandler>(registry, next);
}

}  // namespace strait::minicluster
