#include "vnode/kubelet_server.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "kube/portforward.h"
#include "kube/time.h"
#include "vnode/exec_bridge.h"
#include "vnode/port_forward_relay.h"

namespace strait::vnode {
namespace {

using nlohmann::json;

void plain(kube::Responder& out, int code, const std::string& msg) {
  kube::HttpResponse r;
  r.status = code;
  r.headers["Content-Type"] = "text/plain; charset=utf-8";
  r.body = msg + "\n";
  out.respond(std::move(r));
}

void fail(kube::Responder& out, const kube::Error& e) {
  plain(out, kube::httpCode(e.code), e.message);
}

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

bool truthy(const std::string& v) { return v == "1" || v == "true" || v == "True" || v == "TRUE"; }

// An optional non-negative integer query parameter; BadRequest naming it when malformed.
kube::Status intParam(const kube::HttpRequest& req, const char* key, bool* has, int64_t* value) {
  if (!req.hasQuery(key)) return kube::Status::OK();
  const std::string v = req.queryParam(key);
  try {
    size_t used = 0;
    long long n = std::stoll(v, &used);
    if (used != v.size() || n < 0) throw std::invalid_argument(v);
    *has = true;
    *value = n;
    return kube::Status::OK();
  } catch (const std::exception&) {
    return kube::makeError(kube::Code::BadRequest, std::string("invalid ") + key + " \"" + v +
                                                       "\": not a non-negative integer");
  }
}

}  // namespace

class KubeletServer::Handler final : public kube::Handler {
 public:
  explicit Handler(const KubeletServerConfig& c) : c_(c) {}

  void handle(const kube::HttpRequest& req, kube::Responder& out) override {
    if (!authorized(req, out)) return;
    std::vector<std::string> seg = segments(req.path);
    if (seg.size() == 1 && seg[0] == "healthz") return plain(out, 200, "ok");
    auto provider = c_.provider ? c_.provider() : nullptr;
    const bool isExec = !seg.empty() && seg[0] == "exec";
    const bool isAttach = !seg.empty() && seg[0] == "attach";
    const bool isPortForward = !seg.empty() && seg[0] == "portForward";
    const bool streams = isExec || isAttach || isPortForward;
    if (req.method != "GET" && !(streams && req.method == "POST")) {
      return plain(out, 405, "method " + req.method + " not allowed on " + req.path);
    }
    if (seg.size() == 1 && seg[0] == "pods") return pods(out, provider.get());
    if (seg.size() == 2 && seg[0] == "stats" && seg[1] == "summary") {
      return stats(out, provider.get());
    }
    if (isPortForward && (seg.size() == 3 || seg.size() == 4)) {  // {ns}/{pod}[/{uid}]
      if (!provider) return noProvider(out);
      const std::string ns = seg[1], pod = seg[2];
      spdlog::info("event=port_forward_session pod={}/{}", ns, pod);
      // Each forwarded connection is one PortForward call to the provider agent.
      return kube::servePortForward(req, out, [provider, ns, pod](uint16_t port) {
        return dialRemotePort(*provider, ns, pod, port);
      });
    }
    if ((seg.size() == 4 || seg.size() == 3) && (seg[0] == "containerLogs" || isExec || isAttach)) {
      if (!provider) return noProvider(out);
      const std::string container = seg.size() == 4 ? seg[3] : "";
      if (isExec) return serveExec(req, out, *provider, seg[1], seg[2], container);
      if (isAttach) return serveAttach(req, out, *provider, seg[1], seg[2], container);
      return logs(req, out, *provider, seg[1], seg[2], container);
    }
    plain(out, 404, "404 page not found");
  }

 private:
  // Answers 401/403/500 and returns false unless the caller may make `req` (the kubelet's
  // authentication and authorization filter).
  bool authorized(const kube::HttpRequest& req, kube::Responder& out) {
    if (req.user.empty()) {
      plain(out, 401, "Unauthorized");
      return false;
    }
    KubeletRequestAttributes a =
        kubeletRequestAttributes(req.method, req.path, req.user, req.groups, c_.nodeName);
    kube::Result<bool> allowed = c_.authorize(a);
    if (!allowed.ok()) {
      plain(out, 500, authorizationErrorMessage(a));
      return false;
    }
    if (!*allowed) {
      spdlog::info("event=kubelet_api_forbidden node={} user={} verb={} subresource={} path={}",
                   c_.nodeName, a.user, a.verb, a.subresource, req.path);
      plain(out, 403, forbiddenMessage(a));
      return false;
    }
    return true;
  }

  void noProvider(kube::Responder& out) {
    plain(out, 503, "virtual node " + c_.nodeName + ": the peering with its provider is down");
  }
  // A failed call to the provider: a partition (no connection, no answer in time) says so
  // with the node's name; the provider's own refusals keep their code and message.
  void providerFailed(kube::Responder& out, const kube::Error& e) {
    if (e.code == kube::Code::Unavailable || e.code == kube::Code::ServerTimeout) {
      return plain(
          out, 503,
          "virtual node " + c_.nodeName + ": the provider agent cannot be reached: " + e.message);
    }
    fail(out, e);
  }

  void pods(kube::Responder& out, peering::KubeletClient* provider) {
    if (!provider) return noProvider(out);
    v1::ListPodsResponse resp;
    if (kube::Status s = provider->listPods(&resp, c_.callTimeout); !s.ok()) {
      return providerFailed(out, s.error());
    }
    kube::HttpResponse r;
    r.headers["Content-Type"] = "application/json";
    r.body = resp.pod_list_json();
    out.respond(std::move(r));
  }

  void stats(kube::Responder& out, peering::KubeletClient* provider) {
    if (!provider) return noProvider(out);
    v1::StatsSummaryResponse resp;
    if (kube::Status s = provider->statsSummary(&resp, c_.callTimeout); !s.ok()) {
      return providerFailed(out, s.error());
    }
    json summary = json::parse(resp.summary_json(), nullptr, false);
    if (!summary.is_object()) {
      return plain(out, 502, "the provider sent a malformed stats summary");
    }
    summary["node"]["nodeName"] = c_.nodeName;
    addNodeUsage(summary);
    kube::HttpResponse r;
    r.headers["Content-Type"] = "application/json";
    r.body = summary.dump();
    out.respond(std::move(r));
  }

  // The virtual node's own usage is its offloaded Pods' (the provider's Summary carries
  // usage per Pod, already named as this cluster knows them): their sums, known only when
  // every Pod's is (no Pods: zero).
  static void addNodeUsage(json& summary) {
    std::optional<uint64_t> cpu = 0, memory = 0;
    std::string time;
    for (const json& p : summary.value("pods", json::array())) {
      auto figure = [&](const char* section, const char* field) -> std::optional<uint64_t> {
        const json s = p.value(section, json::object());
        if (!s.contains(field) || !s[field].is_number_unsigned()) return std::nullopt;
        if (time.empty()) time = s.value("time", "");
        return s[field].get<uint64_t>();
      };
      auto c = figure("cpu", "usageNanoCores");
      auto m = figure("memory", "workingSetBytes");
      cpu = cpu && c ? std::optional<uint64_t>(*cpu + *c) : std::nullopt;
      memory = memory && m ? std::optional<uint64_t>(*memory + *m) : std::nullopt;
    }
    if (time.empty()) time = kube::rfc3339Now();
    json& node = summary["node"];
    if (cpu && !node.contains("cpu")) node["cpu"] = {{"time", time}, {"usageNanoCores", *cpu}};
    if (memory && !node.contains("memory")) {
      node["memory"] = {{"time", time}, {"workingSetBytes", *memory}};
    }
  }

  void logs(const kube::HttpRequest& req, kube::Responder& out, peering::KubeletClient& provider,
            const std::string& ns, const std::string& pod, const std::string& container) {
    v1::LogsRequest lr;
    lr.set_namespace_(ns);
    lr.set_pod(pod);
    lr.set_container(container);
    lr.set_follow(truthy(req.queryParam("follow")));
    lr.set_timestamps(truthy(req.queryParam("timestamps")));
    lr.set_previous(truthy(req.queryParam("previous")));
    struct Param {
      const char* key;
      void (v1::LogsRequest::*setHas)(bool);
      void (v1::LogsRequest::*setValue)(int64_t);
    };
    for (const Param& p : {Param{"tailLines", &v1::LogsRequest::set_has_tail_lines,
                                 &v1::LogsRequest::set_tail_lines},
                           Param{"sinceSeconds", &v1::LogsRequest::set_has_since_seconds,
                                 &v1::LogsRequest::set_since_seconds},
                           Param{"limitBytes", &v1::LogsRequest::set_has_limit_bytes,
                                 &v1::LogsRequest::set_limit_bytes}}) {
      bool has = false;
      int64_t value = 0;
      if (kube::Status s = intParam(req, p.key, &has, &value); !s.ok()) return fail(out, s.error());
      if (has) {
        (lr.*p.setHas)(true);
        (lr.*p.setValue)(value);
      }
    }
    // The status line waits for the first data (or the refusal), so a refusal keeps its code.
    bool started = false;
    bool clientGone = false;
    kube::Status s = provider.logs(
        lr,
        [&](std::string_view data) {
          if (!started) {
            started = true;
            if (!out.startStream(200, {{"Content-Type", "text/plain"}}))
              return !(clientGone = true);
          }
          if (!out.writeChunk(data)) clientGone = true;
          return !clientGone;
        },
        [&] { return out.clientGone(); });
    if (started || clientGone) return;
    if (!s.ok()) return providerFailed(out, s.error());
    out.startStream(200, {{"Content-Type", "text/plain"}});  // an empty log
  }

  const KubeletServerConfig& c_;
};

kube::Result<std::unique_ptr<KubeletServer>> KubeletServer::create(KubeletServerConfig config) {
  auto invalid = [](const char* field, const char* what) {
    return kube::makeError(kube::Code::Invalid,
                           std::string("kubelet server: ") + field + " " + what, field);
  };
  if (config.nodeName.empty()) return invalid("nodeName", "is required");
  if (config.servingCert.certPem.empty() || config.servingCert.keyPem.empty()) {
    return invalid("servingCert", "needs a certificate and a key");
  }
  if (config.clientCaPem.empty())
    return invalid("clientCaPem", "is required (client certificates are)");
  if (!config.provider) return invalid("provider", "is required");
  if (!config.authorize) return invalid("authorize", "is required (every request is authorized)");
  return std::unique_ptr<KubeletServer>(new KubeletServer(std::move(config)));
}

KubeletServer::KubeletServer(KubeletServerConfig config)
    : config_(std::move(config)), handler_(std::make_unique<Handler>(config_)) {}

KubeletServer::~KubeletServer() { stop(); }

kube::Status KubeletServer::start() {
  if (server_) return kube::makeError(kube::Code::Internal, "kubelet server: started twice");
  kube::HttpServerOptions o;
  o.listenHost = config_.listenHost;
  o.listenPort = config_.port;
  o.tls.certPem = config_.servingCert.certPem;
  o.tls.keyPem = config_.servingCert.keyPem;
  o.tls.clientCaPem = config_.clientCaPem;
  o.tls.requireClientCert = true;
  o.maxBodyBytes = 64 * 1024;
  server_ = kube::newHttpServer(std::move(o), *handler_);
  if (kube::Status s = server_->start(); !s.ok()) {
    server_.reset();
    return s;
  }
  spdlog::info("event=kubelet_api_started node={} address={}:{}", config_.nodeName,
               config_.listenHost, server_->port());
  return kube::Status::OK();
}

uint16_t KubeletServer::port() const { return server_ ? server_->port() : 0; }

void KubeletServer::stop() {
  if (server_) server_->stop();
}

}  // namespace strait::vnode
