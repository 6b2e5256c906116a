#include "minicluster/kubelet_api.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "kube/object.h"
#include "minicluster/kubelet_attach.h"
#include "minicluster/kubelet_exec.h"
#include "minicluster/kubelet_portforward.h"
#include "minicluster/runtime_process.h"

namespace strait::minicluster {
namespace {

using kube::Handler;
using kube::HttpRequest;
using kube::HttpResponse;
using kube::Responder;

using nlohmann::json;
using SysClock = std::chrono::system_clock;
using Lines = std::vector<std::pair<SysClock::time_point, std::string>>;

constexpr auto kLineInterval = std::chrono::seconds(1);

std::vector<std::string> splitPath(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 1;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::string nanoTimestamp(SysClock::time_point t) {
  std::string s = kube::rfc3339Micro(t);  // ...SS.ffffffZ
  if (!s.empty() && s.back() == 'Z') s.insert(s.size() - 1, "000");
  return s;
}

class KubeletApiHandler : public Handler {
 public:
  KubeletApiHandler(SimulatedKubelets& k, Registry& registry, Rest& rest)
      : kubelets_(k), registry_(registry), rest_(rest) {}

  void handle(const HttpRequest& req, Responder& out) override {
    if (req.path == "/healthz") return text(out, 200, "ok");
    if (req.user.empty()) return text(out, 401, "Unauthorized");
    auto parts = splitPath(req.path);
    if (req.path == "/pods" || req.path == "/pods/") return listPods(out);
    if (parts.size() >= 3 && parts.size() <= 4 && parts[0] == "portForward") {
      // /portForward/{ns}/{pod}, or /portForward/{ns}/{pod}/{uid}
      auto pod = kubelets_.pod(parts[1], parts[2]);
      if (!pod || (parts.size() == 4 && !parts[3].empty() && parts[3] != pod->uid)) {
        return text(out, 404, "pod " + parts[1] + "/" + parts[2] + " not found");
      }
      return servePodPortForward(req, out, *pod, kubelets_.processes());
    }
    if (req.path == "/stats/summary" || req.path == "/stats/summary/") return statsSummary(req, out);
    const bool attach = parts[0] == "attach";
    if (parts.size() >= 4 && (parts[0] == "containerLogs" || parts[0] == "exec" || attach)) {
      // /exec/{ns}/{pod}/{uid}/{container} is accepted too, as by a real kubelet.
      std::string container = parts.back();
      auto pod = kubelets_.pod(parts[1], parts[2]);
      if (!pod) return text(out, 404, "pod " + parts[1] + "/" + parts[2] + " not found");
      const ContainerRuntime* c = nullptr;
      for (const auto& cr : pod->containers) {
        if (cr.name == container) c = &cr;
      }
      auto* procs = kubelets_.processes();
      if (!c && procs && parts[0] == "containerLogs" &&
          procs->sandbox(parts[1], parts[2], container)) {
        return serveProcessLogs(req, out, *pod, container, kubelets_, *procs);  // an init container
      }
      if (!c) {
        return text(out, 404, "container \"" + container + "\" in pod \"" + parts[2] +
                                  "\" is not available");
      }
      if (attach) {
        if (!procs) {
          // No ": " in the text: kubectl would read it as a YAML Status and print nothing.
          return text(out, 400, "attach is not supported by the simulated runtime, whose "
                                "containers are not processes (use --runtime process)");
        }
        return serveProcessAttach(req, out, *pod, container, kubelets_, *procs);
      }
      if (parts[0] == "exec") {
        if (!c->startedAt || c->finishedAt) {
          return text(out, 400, "container " + container + " is not running");
        }
        if (procs) {
          return serveProcessExec(req, out, *pod, container, *procs, registry_, rest_);
        }
        return serveExec(req, out, *pod, container, registry_, rest_);
      }
      if (procs) return serveProcessLogs(req, out, *pod, container, kubelets_, *procs);
      return containerLogs(req, out, *pod, container);
    }
    text(out, 404, "404 page not found");
  }

 private:
  static void text(Responder& out, int code, const std::string& body) {
    HttpResponse r;
    r.status = code;
    r.headers["Content-Type"] = "text/plain; charset=utf-8";
    r.body = body + (body.empty() || body.back() == '\n' ? "" : "\n");
    out.respond(std::move(r));
  }

  // GET /stats/summary: the Summary of the node this request reached (the Host it named);
  // only runtimes whose containers really run have usage to report.
  void statsSummary(const HttpRequest& req, Responder& out) {
    auto* procs = kubelets_.processes();
    if (!procs) {
      return text(out, 404, "stats are not available: the simulated runtime's containers use "
                            "no resources (use --runtime process)");
    }
    std::string host = req.header("host");
    if (auto colon = host.rfind(':'); colon != std::string::npos && host.find(']') == std::string::npos) {
      host = host.substr(0, colon);
    }
    auto summary = procs->statsSummary(host);
    if (!summary) return text(out, kube::httpCode(summary.error().code), summary.error().message);
    HttpResponse r;
    r.headers["Content-Type"] = "application/json";
    r.body = summary->dump();
    out.respond(std::move(r));
  }

  void listPods(Responder& out) {
    json list = {{"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", json::object()},
                 {"items", json::array()}};
    for (const auto& p : kubelets_.pods()) list["items"].push_back(p.pod);
    HttpResponse r;
    r.headers["Content-Type"] = "application/json";
    r.body = list.dump(-1, ' ', false, json::error_handler_t::replace);
    out.respond(std::move(r));
  }

  void containerLogs(const HttpRequest& req, Responder& out, const PodRuntime& pod,
                     const std::string& container) {
    LogOptions o;
    auto truthy = [&](const char* k) {
      std::string v = req.queryParam(k);
      return v == "1" || v == "true" || v == "True";
    };
    o.follow = truthy("follow");
    o.timestamps = truthy("timestamps");
    o.previous = truthy("previous");
    try {
      if (req.hasQuery("tailLines")) o.tailLines = std::stoll(req.queryParam("tailLines"));
      if (req.hasQuery("limitBytes")) o.limitBytes = std::stoll(req.queryParam("limitBytes"));
      if (req.hasQuery("sinceSeconds")) {
        o.since = SysClock::now() - std::chrono::seconds(std::stoll(req.queryParam("sinceSeconds")));
      }
    } catch (...) {
      return text(out, 400, "tailLines, limitBytes and sinceSeconds must be integers");
    }
    if (req.hasQuery("sinceTime")) {
      auto t = kube::parseRfc3339(req.queryParam("sinceTime"));
      if (!t) return text(out, 400, "sinceTime: " + t.error().message);
      o.since = *t;
    }
    auto find = [&](const PodRuntime& p) -> const ContainerRuntime* {
      for (const auto& c : p.containers) {
        if (c.name == container) return &c;
      }
      return nullptr;
    };
    const ContainerRuntime* c = find(pod);
    if (o.previous && !c->prevStartedAt) {
      return text(out, 400, "previous terminated container \"" + container + "\" in pod \"" +
                                pod.name + "\" not found");
    }
    if (!o.previous && !c->startedAt) {
      return text(out, 400, "container \"" + container + "\" in pod \"" + pod.name +
                                "\" is waiting to start: ContainerCreating");
    }
    auto now = SysClock::now();
    Lines lines = syntheticLogLines(pod, *c, o.previous, now);
    std::string body = renderLogLines(lines, o);
    if (!o.follow || o.previous || c->finishedAt) {
      HttpResponse r;
      r.headers["Content-Type"] = "text/plain";
      r.body = std::move(body);
      out.respond(std::move(r));
      return;
    }
    if (!out.startStream(200, {{"Content-Type", "text/plain"}})) return;
    int64_t sent = static_cast<int64_t>(body.size());
    if (!body.empty() && !out.writeChunk(body)) return;
    size_t seen = lines.size();
    auto startedAt = c->startedAt;
    while (!out.clientGone()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      auto cur = kubelets_.pod(pod.ns, pod.name);
      if (!cur || cur->uid != pod.uid) return;  // pod gone: end of stream
      const ContainerRuntime* cc = find(*cur);
      if (!cc || cc->startedAt != startedAt) return;  // restarted: this instance ended
      Lines now2 = syntheticLogLines(*cur, *cc, false, SysClock::now());
      if (now2.size() > seen) {
        Lines fresh(now2.begin() + static_cast<long>(seen), now2.end());
        seen = now2.size();
        LogOptions o2 = o;
        o2.tailLines.reset();
        o2.since.reset();
        if (o.limitBytes) o2.limitBytes = *o.limitBytes - sent;
        std::string chunk = renderLogLines(fresh, o2);
        sent += static_cast<int64_t>(chunk.size());
        if (!chunk.empty() && !out.writeChunk(chunk)) return;
        if (o.limitBytes && sent >= *o.limitBytes) return;
      }
      if (cc->finishedAt) return;
    }
  }

  SimulatedKubelets& kubelets_;
  Registry& registry_;
  Rest& rest_;
};

}  // namespace

Lines syntheticLogLines(const PodRuntime& pod, const ContainerRuntime& c, bool previous,
                        SysClock::time_point now) {
  Lines out;
  auto start = previous ? c.prevStartedAt : c.startedAt;
  auto end = previous ? c.prevFinishedAt : c.finishedAt;
  int exitCode = previous ? c.prevExitCode : c.exitCode;
  if (!start) return out;
  out.emplace_back(*start, "[strait] container " + c.name + " of pod " + pod.ns + "/" + pod.name +
                               " started on node " + pod.node + " (image " + c.image + ")");
  auto last = end ? *end : now;
  int64_t k = 1;
  // Bounded: at most the last 100,000 heartbeats of a long-running container.
  auto span = std::chrono::duration_cast<std::chrono::seconds>(last - *start).count();
  if (span > 100000) k = span - 100000;
  for (auto t = *start + k * kLineInterval; t <= last; t += kLineInterval, ++k) {
    out.emplace_back(t, "[strait] " + pod.ns + "/" + pod.name + "/" + c.name + " heartbeat " +
                            std::to_string(k));
  }
  if (end) out.emplace_back(*end, "[strait] container " + c.name + " exited with code " +
                                      std::to_string(exitCode));
  return out;
}

std::string renderLogLines(const Lines& lines, const LogOptions& o) {
  size_t from = 0;
  if (o.since) {
    while (from < lines.size() && lines[from].first < *o.since) ++from;
  }
  if (o.tailLines && *o.tailLines >= 0 && lines.size() - from > static_cast<size_t>(*o.tailLines)) {
    from = lines.size() - static_cast<size_t>(*o.tailLines);
  }
  std::string out;
  for (size_t i = from; i < lines.size(); ++i) {
    if (o.timestamps) out += nanoTimestamp(lines[i].first) + " ";
    out += lines[i].second + "\n";
  }
  if (o.limitBytes && *o.limitBytes >= 0 && out.size() > static_cast<size_t>(*o.limitBytes)) {
    out.resize(static_cast<size_t>(*o.limitBytes));
  }
  return out;
}

std::unique_ptr<Handler> newKubeletApiHandler(SimulatedKubelets& kubelets, Registry& registry,
                                              Rest& rest) {
  return std::make_unique<KubeletApiHandler>(kubelets, registry, rest);
}

}  // namespace strait::minicluster
