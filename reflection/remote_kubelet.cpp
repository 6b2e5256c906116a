#include "reflection/remote_kubelet.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>

#include "base/thread_annotations.h"
#include "kube/exec_client.h"
#include "kube/portforward.h"
#include "kube/object.h"
#include "kube/quantity.h"
#include "reflection/labels.h"

namespace strait::reflection {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Requests `stop` once `cancelled()` turns true (polled five times a second) until destroyed.
class StopWhen {
 public:
  StopWhen(std::stop_source& stop, const std::function<bool()>& cancelled) {
    if (!cancelled) return;
    thread_ = std::thread([this, &stop, cancelled] {
      base::UniqueLock lock(mu_);
      for (;;) {
        const auto deadline = std::chrono::steady_clock::now() + 200ms;
        while (!done_) {
          if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) break;
        }
        if (done_) return;
        if (cancelled()) {
          stop.request_stop();
          return;
        }
      }
    });
  }
  ~StopWhen() {
    {
      base::MutexLock lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  base::Mutex mu_;
  std::condition_variable_any cv_;
  bool done_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

std::string failureStatus(const std::string& message) {
  return json{{"kind", "Status"},
              {"apiVersion", "v1"},
              {"metadata", json::object()},
              {"status", "Failure"},
              {"message", message},
              {"reason", "InternalError"},
              {"code", 500}}
      .dump();
}

}  // namespace

kube::Result<std::unique_ptr<RemoteKubelet>> RemoteKubelet::create(RemoteKubeletOptions options) {
  auto invalid = [](const char* field) {
    return kube::makeError(kube::Code::Invalid,
                           std::string("remote kubelet: ") + field + " is required", field);
  };
  if (!options.provider) return invalid("provider");
  if (options.providerConfig.server.empty()) return invalid("providerConfig.server");
  if (!options.authorize) return invalid("authorize");
  if (!options.portForwarder) options.portForwarder = kube::openPortForward;
  return std::unique_ptr<RemoteKubelet>(new RemoteKubelet(std::move(options)));
}

NamespaceMapping RemoteKubelet::mappingOf(const std::string& consumerId) const {
  return NamespaceMapping(consumerId, o_.namingFor ? o_.namingFor(consumerId)
                                                   : NamingStrategy::Default);
}

kube::Result<RemoteKubelet::Target> RemoteKubelet::resolve(const peering::Caller& caller,
                                                           const std::string& ns,
                                                           const std::string& pod) {
  if (kube::Status s = o_.authorize(caller); !s.ok()) return s.error();
  auto notFound = [&] {
    return kube::makeError(kube::Code::NotFound, "pods \"" + pod + "\" not found");
  };
  if (pod.empty()) return kube::makeError(kube::Code::BadRequest, "a pod name is required");
  auto remoteNs = mappingOf(caller.clusterId).remoteNamespace(ns);
  if (!remoteNs) return remoteNs.error();
  auto obj = o_.provider->get(kube::resources::kPods, *remoteNs, pod);
  if (!obj && obj.error().code == kube::Code::NotFound && *remoteNs != ns) {
    // The consumer may have offloaded this namespace with the same-name naming.
    auto same = o_.provider->get(kube::resources::kPods, ns, pod);
    if (same && isOwnedBy(*same, caller.clusterId)) {
      remoteNs = ns;
      obj = std::move(same);
    }
  }
  if (!obj) return obj.error().code == kube::Code::NotFound ? notFound() : obj.error();
  if (!isOwnedBy(*obj, caller.clusterId)) {
    spdlog::warn("event=kubelet_refused consumer={} pod={}/{} reason=not_owned", caller.clusterId,
                 *remoteNs, pod);
    return notFound();
  }
  return Target{*remoteNs, std::move(*obj)};
}

kube::Status RemoteKubelet::logs(const peering::Caller& caller, const v1::LogsRequest& req,
                                 const std::function<bool(std::string_view)>& send,
                                 const std::function<bool()>& cancelled) {
  auto target = resolve(caller, req.namespace_(), req.pod());
  if (!target) return target.error();
  kube::LogOptions lo;
  lo.container = req.container();
  lo.follow = req.follow();
  lo.timestamps = req.timestamps();
  lo.previous = req.previous();
  if (req.has_tail_lines()) lo.tailLines = req.tail_lines();
  if (req.has_since_seconds()) lo.sinceSeconds = req.since_seconds();
  if (req.has_limit_bytes()) lo.limitBytes = req.limit_bytes();
  spdlog::info("event=remote_logs consumer={} pod={}/{} container={} follow={}", caller.clusterId,
               target->remoteNs, req.pod(), req.container(), req.follow());
  std::stop_source stop;
  StopWhen watcher(stop, cancelled);
  return o_.provider->streamLogs(target->remoteNs, req.pod(), lo, send, stop.get_token());
}

kube::Status RemoteKubelet::exec(const peering::Caller& caller, peering::ExecStream& stream) {
  return relayStream(caller, stream, "exec");
}

kube::Status RemoteKubelet::attach(const peering::Caller& caller, peering::ExecStream& stream) {
  return relayStream(caller, stream, "attach");
}

kube::Status RemoteKubelet::relayStream(const peering::Caller& caller,
                                        peering::ExecStream& stream,
                                        const std::string& subresource) {
  const bool attach = subresource == "attach";
  v1::ExecFrame first;
  if (!stream.read(&first) || !first.has_start()) {
    return kube::makeError(kube::Code::BadRequest,
                           subresource + ": the first frame must be a start frame");
  }
  const v1::ExecStart& st = first.start();
  if (!attach && st.command().empty()) {
    return kube::makeError(kube::Code::BadRequest,
                           "you must specify at least one command for the container");
  }
  if (attach && !st.command().empty()) {
    return kube::makeError(kube::Code::BadRequest, "attach runs no command");
  }
  auto target = resolve(caller, st.namespace_(), st.pod());
  if (!target) return target.error();
  kube::ExecRequest er;
  er.subresource = subresource;
  er.ns = target->remoteNs;
  er.pod = st.pod();
  er.container = st.container();
  er.command.assign(st.command().begin(), st.command().end());
  er.stdin = st.stdin();
  er.stdout = st.stdout();
  er.stderr = st.stderr();
  er.tty = st.tty();
  auto opened = kube::openExec(o_.providerConfig, er);
  if (!opened) return opened.error();
  kube::WebSocket& ws = **opened;
  const bool v5 = ws.subprotocol() == kube::kExecProtocolV5;
  spdlog::info("event=remote_{} consumer={} pod={}/{} container={} command={} protocol={}",
               subresource, caller.clusterId, er.ns, er.pod, er.container,
               attach ? "" : er.command.front(), ws.subprotocol());

  // Consumer -> provider: stdin, its end, terminal resizes. Ends when the consumer
  // half-closes or cancels (then the WebSocket is closed so the output side ends too).
  std::mutex mu;
  std::condition_variable cv;
  bool inputDone = false;  // guarded by mu
  std::thread input([&] {
    v1::ExecFrame f;
    while (stream.read(&f)) {
      if (f.has_stdin()) {
        if (!ws.write(std::string(1, '\0') + f.stdin())) break;
      } else if (f.has_stdin_close()) {
        if (v5) ws.write(std::string("\xff\x00", 2));
      } else if (f.has_resize()) {
        json size = {{"Width", f.resize().width()}, {"Height", f.resize().height()}};
        ws.write(std::string(1, '\x04') + size.dump());
      }
    }
    if (stream.cancelled()) ws.close();
    std::lock_guard<std::mutex> lock(mu);
    inputDone = true;
    cv.notify_all();
  });

  // Provider -> consumer: stdout, stderr; the status channel is kept for the exit frame.
  std::string status;
  std::string msg;
  while (ws.read(msg)) {
    if (msg.empty()) continue;
    v1::ExecFrame out;
    switch (static_cast<unsigned char>(msg[0])) {
      case 1: out.set_stdout(msg.substr(1)); break;
      case 2: out.set_stderr(msg.substr(1)); break;
      case 3: status = msg.substr(1); continue;
      default: continue;
    }
    if (!stream.write(out)) break;
  }
  ws.close();
  v1::ExecFrame exit;
  exit.set_exit_status(status.empty()
                           ? failureStatus("the " + subresource +
                                           " stream from the provider ended without a status")
                           : status);
  stream.write(exit);
  {
    // The consumer half-closes once it has the exit frame; do not wait for a silent one.
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, 5s, [&] { return inputDone; })) stream.cancel();
  }
  input.join();
  return kube::Status::OK();
}

kube::Status RemoteKubelet::portForward(const peering::Caller& caller,
                                        peering::PortForwardStream& stream) {
  v1::PortForwardFrame first;
  if (!stream.read(&first) || !first.has_start()) {
    return kube::makeError(kube::Code::BadRequest,
                           "port-forward: the first frame must be a start frame");
  }
  const v1::PortForwardStart& st = first.start();
  if (st.port() == 0 || st.port() > 65535) {
    return kube::makeError(kube::Code::BadRequest,
                           "port-forward: invalid port " + std::to_string(st.port()));
  }
  auto target = resolve(caller, st.namespace_(), st.pod());
  if (!target) return target.error();
  const auto port = static_cast<uint16_t>(st.port());
  auto opened = o_.portForwarder(o_.providerConfig, target->remoteNs, st.pod(), port);
  if (!opened) return opened.error();
  kube::ByteStream& conn = **opened;
  spdlog::info("event=remote_port_forward consumer={} pod={}/{} port={}", caller.clusterId,
               target->remoteNs, st.pod(), port);
  v1::PortForwardFrame ok;
  ok.set_opened(true);
  if (!stream.write(ok)) return kube::Status::OK();

  // Consumer -> Pod. Ends when the consumer half-closes or cancels (then the connection is
  // closed so the Pod side ends too).
  std::mutex mu;
  std::condition_variable cv;
  bool inputDone = false;  // guarded by mu
  std::thread input([&] {
    v1::PortForwardFrame f;
    while (stream.read(&f)) {
      if (f.has_data()) {
        if (!conn.write(f.data()).ok()) break;
      } else if (f.has_close_write()) {
        conn.closeWrite();
      }
    }
    if (stream.cancelled()) conn.close();
    std::lock_guard<std::mutex> lock(mu);
    inputDone = true;
    cv.notify_all();
  });

  // Pod -> consumer, then the end: close_write (the Pod side closed) or error.
  std::vector<char> buf(64 * 1024);
  v1::PortForwardFrame end;
  for (;;) {
    auto n = conn.read(std::span<char>(buf.data(), buf.size()));
    if (!n) {
      end.set_error(n.error().message);
      break;
    }
    if (*n == 0) {
      end.set_close_write(true);
      break;
    }
    v1::PortForwardFrame data;
    data.set_data(buf.data(), *n);
    if (!stream.write(data)) break;
  }
  stream.write(end);
  {
    // The consumer ends its side once it has seen the end; do not wait for a silent one.
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, 5s, [&] { return inputDone; })) stream.cancel();
  }
  conn.close();
  input.join();
  return kube::Status::OK();
}

json podAsConsumerSees(const json& remotePod, const NamespaceMapping& m) {
  if (!isOwnedBy(remotePod, m.consumerId())) return nullptr;
  auto local = m.localNamespace(kube::getNamespace(remotePod));
  auto annotations = kube::getAnnotations(remotePod);
  auto origin = annotations.find(std::string(kAnnotationOriginNamespace));
  if (!local && origin == annotations.end()) return nullptr;
  json pod = remotePod;
  pod["metadata"]["namespace"] = local ? *local : origin->second;
  pod["metadata"]["uid"] = originUid(remotePod);
  pod["metadata"].erase("resourceVersion");
  pod["metadata"].erase("managedFields");
  return pod;
}

kube::Result<json> RemoteKubelet::callerPods(const peering::Caller& caller) {
  if (kube::Status s = o_.authorize(caller); !s.ok()) return s.error();
  kube::ListOptions lo;
  lo.labelSelector = std::string(kLabelOriginClusterId) + "=" + caller.clusterId;
  auto list = o_.provider->list(kube::resources::kPods, "", lo);
  if (!list) return list.error();
  NamespaceMapping m = mappingOf(caller.clusterId);
  json items = json::array();
  if (list->contains("items") && (*list)["items"].is_array()) {
    for (const json& p : (*list)["items"]) {
      json mine = podAsConsumerSees(p, m);
      if (!mine.is_null()) items.push_back(std::move(mine));
    }
  }
  return json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", json::object()},
              {"items", std::move(items)}};
}

kube::Status RemoteKubelet::listPods(const peering::Caller& caller, v1::ListPodsResponse* resp) {
  auto pods = callerPods(caller);
  if (!pods) return pods.error();
  resp->set_pod_list_json(pods->dump());
  return kube::Status::OK();
}

namespace {

// A CPU quantity in nanocores ("250m", "1", "123456n"); nullopt when malformed.
std::optional<uint64_t> nanoCoresOf(const json& q) {
  if (!q.is_string()) return std::nullopt;
  const std::string s = q.get<std::string>();
  if (!s.empty() && s.back() == 'n') {
    try {
      return std::stoull(s.substr(0, s.size() - 1));
    } catch (...) {
      return std::nullopt;
    }
  }
  auto v = kube::Quantity::parse(s);
  if (!v || v->sign() < 0) return std::nullopt;
  return static_cast<uint64_t>(v->milliValue()) * 1000000ull;
}

std::optional<uint64_t> bytesOf(const json& q) {
  if (!q.is_string()) return std::nullopt;
  auto v = kube::Quantity::parse(q.get<std::string>());
  if (!v || v->sign() < 0) return std::nullopt;
  return static_cast<uint64_t>(v->value());
}

}  // namespace

json statsSummaryOf(const json& consumerPods, const std::map<std::string, json>& podMetrics) {
  json pods = json::array();
  for (const json& p : consumerPods.value("items", json::array())) {
    const json status = p.value("status", json::object());
    // The provider's usage of this Pod (metrics.k8s.io PodMetrics), per container.
    std::map<std::string, json> usage;
    std::string time;
    if (auto m = podMetrics.find(kube::getNamespace(p) + "/" + kube::getName(p));
        m != podMetrics.end()) {
      time = m->second.value("timestamp", "");
      for (const json& c : m->second.value("containers", json::array())) {
        usage[c.value("name", "")] = c.value("usage", json::object());
      }
    }
    std::optional<uint64_t> podCpu = 0, podMemory = 0;
    json containers = json::array();
    for (const json& c : status.value("containerStatuses", json::array())) {
      json entry = {{"name", c.value("name", "")}};
      const json running = c.value("state", json::object()).value("running", json::object());
      if (running.contains("startedAt")) entry["startTime"] = running["startedAt"];
      std::optional<uint64_t> cpu, memory;
      if (auto u = usage.find(entry["name"].get<std::string>()); u != usage.end()) {
        cpu = nanoCoresOf(u->second.value("cpu", json()));
        memory = bytesOf(u->second.value("memory", json()));
      }
      if (cpu) entry["cpu"] = {{"time", time}, {"usageNanoCores", *cpu}};
      if (memory) entry["memory"] = {{"time", time}, {"workingSetBytes", *memory}};
      podCpu = podCpu && cpu ? std::optional<uint64_t>(*podCpu + *cpu) : std::nullopt;
      podMemory = podMemory && memory ? std::optional<uint64_t>(*podMemory + *memory) : std::nullopt;
      containers.push_back(std::move(entry));
    }
    json stats = {{"podRef",
                   {{"name", kube::getName(p)},
                    {"namespace", kube::getNamespace(p)},
                    {"uid", kube::getUid(p)}}},
                  {"containers", containers}};
    if (!containers.empty() && podCpu) stats["cpu"] = {{"time", time}, {"usageNanoCores", *podCpu}};
    if (!containers.empty() && podMemory) {
      stats["memory"] = {{"time", time}, {"workingSetBytes", *podMemory}};
    }
    if (status.contains("startTime")) stats["startTime"] = status["startTime"];
    pods.push_back(std::move(stats));
  }
  return json{{"node", {{"nodeName", ""}}}, {"pods", std::move(pods)}};
}

kube::Status RemoteKubelet::statsSummary(const peering::Caller& caller,
                                         v1::StatsSummaryResponse* resp) {
  if (kube::Status s = o_.authorize(caller); !s.ok()) return s.error();
  kube::ListOptions lo;
  lo.labelSelector = std::string(kLabelOriginClusterId) + "=" + caller.clusterId;
  auto list = o_.provider->list(kube::resources::kPods, "", lo);
  if (!list) return list.error();
  // The provider's resource metrics of the same Pods, when it serves metrics.k8s.io
  // (metrics-server, or the minicluster); without them the summary carries no usage.
  std::map<std::string, json> byRemoteName;
  static const kube::ResourceRef kPodMetrics{"metrics.k8s.io", "v1beta1", "pods", true};
  if (auto metrics = o_.provider->list(kPodMetrics, "", lo); metrics) {
    for (const json& m : metrics->value("items", json::array())) {
      byRemoteName[kube::getNamespace(m) + "/" + kube::getName(m)] = m;
    }
  } else {
    spdlog::debug("event=provider_metrics_unavailable consumer={} error=\"{}\"", caller.clusterId,
                  metrics.error().message);
  }
  NamespaceMapping m = mappingOf(caller.clusterId);
  json items = json::array();
  std::map<std::string, json> podMetrics;  // by the consumer's namespace/name
  for (const json& p : list->value("items", json::array())) {
    json mine = podAsConsumerSees(p, m);
    if (mine.is_null()) continue;
    auto it = byRemoteName.find(kube::getNamespace(p) + "/" + kube::getName(p));
    if (it != byRemoteName.end()) {
      podMetrics[kube::getNamespace(mine) + "/" + kube::getName(mine)] = it->second;
    }
    items.push_back(std::move(mine));
  }
  resp->set_summary_json(statsSummaryOf(json{{"items", std::move(items)}}, podMetrics).dump());
  return kube::Status::OK();
}

}  // namespace strait::reflection
