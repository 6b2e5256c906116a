#include "cmd/agent_metrics.h"

#include <spdlog/spdlog.h>

#include <set>

#include "kube/informer.h"
#include "kube/quantity.h"
#include "peering/foreign_cluster.h"
#include "peering/names.h"

namespace strait::cmd {
namespace {

// The peering's state as one word: connected (heartbeats answered), disconnected
// (authenticated, but silent past --lost-after), or pending (not authenticated yet: joining
// or refused).
std::string peeringState(const nlohmann::json& fc) {
  if (peering::conditionStatus(fc, "Connected") == "True") return "connected";
  if (peering::conditionStatus(fc, "Authenticated") == "True") return "disconnected";
  return "pending";
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Resources reported per peering, with their metric suffix and base unit.
struct ResourceMetric {
  const char* resource;
  const char* suffix;
  bool cores;  // CPU: milli-units / 1000
};
constexpr ResourceMetric kResources[] = {{"cpu", "cpu_cores", true},
                                         {"memory", "memory_bytes", false},
                                         {"ephemeral-storage", "ephemeral_storage_bytes", false},
                                         {"pods", "pods", false}};

// Drops everything but metadata.name/namespace/labels and spec.role/status (the caches hold
// only what the metrics read).
void keepForMetrics(nlohmann::json& o) {
  nlohmann::json slim;
  if (auto m = o.find("metadata"); m != o.end() && m->is_object()) {
    for (const char* k : {"name", "namespace", "labels", "resourceVersion", "uid"}) {
      if (m->contains(k)) slim["metadata"][k] = (*m)[k];
    }
  }
  if (auto s = o.find("spec"); s != o.end() && s->is_object()) {
    for (const char* k : {"role", "clusterName"}) {
      if (s->contains(k)) slim["spec"][k] = (*s)[k];
    }
  }
  if (auto s = o.find("status"); s != o.end() && s->is_object()) {
    for (const char* k : {"conditions", "granted", "used"}) {
      if (s->contains(k)) slim["status"][k] = (*s)[k];
    }
  }
  o = std::move(slim);
}

// What the consumer sends; the provider sends the other ones (stream_messages.h). Their
// series exist from the start.
constexpr const char* kConsumerSends[] = {"APPLY",        "DELETE",      "GET",
                                          "RESYNC_BEGIN", "RESYNC_DONE", "KEEPALIVE"};
constexpr const char* kProviderSends[] = {"STATUS", "GONE",   "EVENT",
                                          "REPLY",  "SYNCED", "KEEPALIVE"};

constexpr const char* kWorkHelp =
    "Time one reflector work item (one handle of a key) took, by reflected kind and result";

}  // namespace

ReflectionExporter::ReflectionExporter(std::shared_ptr<metrics::Registry> registry)
    : registry_(std::move(registry)) {
  using reflection::StreamDirection;
  using reflection::StreamError;
  using reflection::StreamSide;
  reconnects_ = registry_->counter(
      "strait_stream_reconnects_total",
      "Reflection streams this consumer opened again after one ended (all peerings)");
  for (StreamSide side : {StreamSide::Consumer, StreamSide::Provider}) {
    const bool consumer = side == StreamSide::Consumer;
    for (const char* t : kConsumerSends) {
      traffic(side, consumer ? StreamDirection::Sent : StreamDirection::Received, t);
    }
    for (const char* t : kProviderSends) {
      traffic(side, consumer ? StreamDirection::Received : StreamDirection::Sent, t);
    }
    // The consumer dials and sees its stream break; the provider answers requests.
    for (StreamError e : {StreamError::Dial, StreamError::Broken, StreamError::Silent,
                          StreamError::BadMessage, StreamError::RequestFailed}) {
      const bool consumerOnly = e == StreamError::Dial || e == StreamError::Broken;
      if (consumer ? e == StreamError::RequestFailed : consumerOnly) continue;
      errorCounter(side, e);
    }
  }
  registry_->onCollect([this] { collect(); });
}

const ReflectionExporter::Traffic& ReflectionExporter::traffic(
    reflection::StreamSide side, reflection::StreamDirection direction, std::string_view type) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, made] = traffic_.try_emplace(std::tuple<int, int, std::string>(
      static_cast<int>(side), static_cast<int>(direction), std::string(type)));
  if (made) {
    // `type` is a name of the stream's vocabulary or UNKNOWN (countStreamMessage): bounded.
    const metrics::Labels labels = {{"side", reflection::streamSideName(side)},
                                    {"direction", reflection::streamDirectionName(direction)},
                                    {"type", std::string(type)}};
    it->second = {
        registry_->counter("strait_stream_messages_total",
                           "Reflection stream messages by side of the stream, direction and type",
                           labels),
        registry_->counter("strait_stream_bytes_total",
                           "Reflection stream bytes (serialized messages) by side of the "
                           "stream, direction and type",
                           labels)};
  }
  return it->second;  // map nodes do not move
}

void ReflectionExporter::streamMessage(reflection::StreamSide side,
                                       reflection::StreamDirection direction, std::string_view type,
                                       size_t bytes) {
  const Traffic& t = traffic(side, direction, type);
  t.messages.inc();
  t.bytes.inc(static_cast<double>(bytes));
}

metrics::Counter ReflectionExporter::errorCounter(reflection::StreamSide side,
                                                  reflection::StreamError error) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, made] = errors_.try_emplace({static_cast<int>(side), static_cast<int>(error)});
  if (made) {
    it->second = registry_->counter("strait_stream_errors_total",
                                    "Reflection stream errors by side of the stream and reason",
                                    {{"side", reflection::streamSideName(side)},
                                     {"reason", reflection::streamErrorName(error)}});
  }
  return it->second;
}

void ReflectionExporter::streamError(reflection::StreamSide side, reflection::StreamError error) {
  errorCounter(side, error).inc();
}

void ReflectionExporter::streamReconnected() { reconnects_.inc(); }

metrics::Gauge ReflectionExporter::queueGauge(const std::string& reflector,
                                              const std::string& kind) {
  return registry_->gauge("strait_reflection_queue_depth",
                          "Keys ready to be handled in a reflector's work queue (one reflector "
                          "per virtual node, one queue per reflected kind)",
                          {{"reflector", reflector}, {"kind", kind}});
}

metrics::Gauge ReflectionExporter::podsGauge(const std::string& node) {
  return registry_->gauge("strait_virtual_node_pods",
                          "Pods bound to a virtual node of this cluster, i.e. offloaded to the "
                          "provider it stands for",
                          {{"node", node}});
}

void ReflectionExporter::queueAdded(const std::string& reflector, const std::string& kind,
                                    std::function<size_t()> depth) {
  std::lock_guard<std::mutex> lock(sourcesMu_);
  queues_[{reflector, kind}] = std::move(depth);
}

void ReflectionExporter::queueRemoved(const std::string& reflector, const std::string& kind) {
  std::lock_guard<std::mutex> lock(sourcesMu_);
  if (queues_.erase({reflector, kind}) > 0) queueGauge(reflector, kind).set(0);
}

void ReflectionExporter::podsAdded(const std::string& node, std::function<size_t()> count) {
  std::lock_guard<std::mutex> lock(sourcesMu_);
  pods_[node] = std::move(count);
}

void ReflectionExporter::podsRemoved(const std::string& node) {
  std::lock_guard<std::mutex> lock(sourcesMu_);
  if (pods_.erase(node) > 0) podsGauge(node).set(0);
}

void ReflectionExporter::collect() {
  std::lock_guard<std::mutex> lock(sourcesMu_);
  for (const auto& [key, depth] : queues_) {
    queueGauge(key.first, key.second).set(static_cast<double>(depth()));
  }
  for (const auto& [node, count] : pods_) podsGauge(node).set(static_cast<double>(count()));
}

void ReflectionExporter::workHandled(const std::string& kind, reflection::WorkResult result,
                                     double seconds) {
  metrics::Histogram h;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, made] = work_.try_emplace({kind, static_cast<int>(result)});
    if (made) {
      it->second = registry_->histogram(
          "strait_reflection_work_duration_seconds", kWorkHelp, metrics::durationBuckets(),
          {{"kind", kind}, {"result", reflection::workResultName(result)}});
    }
    h = it->second;
  }
  h.observe(seconds);
}

AgentMetrics::AgentMetrics(std::unique_ptr<kube::Client> client) : client_(std::move(client)) {}

AgentMetrics::~AgentMetrics() { stop(); }

uint16_t AgentMetrics::port() const { return server_ ? server_->port() : 0; }

kube::Status AgentMetrics::start(const std::string& host, uint16_t port) {
  kube::InformerOptions fc;
  fc.resource = peering::kForeignClusters;
  fc.transform = keepForMetrics;
  foreignClusters_ = std::make_unique<kube::Informer>(*client_, fc);
  kube::InformerOptions pods;
  pods.resource = kube::resources::kPods;
  pods.labelSelector = std::string(peering::kLabelOriginClusterId);
  pods.transform = keepForMetrics;
  offloadedPods_ = std::make_unique<kube::Informer>(*client_, pods);
  // Every series exists from the first scrape, at 0 until there is something to count.
  for (const char* role : {"provider", "consumer"}) {
    for (const char* state : {"connected", "disconnected", "pending"}) {
      registry_->gauge("strait_peerings", "Peerings of this cluster by role and state",
                       {{"role", role}, {"state", state}});
    }
  }
  registry_->gauge("strait_offloaded_pods",
                   "Pods this cluster runs for its consumers (all consumers together)");
  registry_->onCollect([this] { collect(); });
  reflection_ = std::make_shared<ReflectionExporter>(registry_);
  reflection::setReflectionMetrics(reflection_);
  foreignClusters_->start();
  offloadedPods_->start();
  base::Result<std::unique_ptr<metrics::MetricsServer>> server =
      metrics::MetricsServer::start(host, port, *registry_);
  if (!server.ok()) {
    stop();
    return server.error();
  }
  server_ = std::move(*server);
  spdlog::info("event=metrics_serving address={}:{}", host, server_->port());
  return {};
}

void AgentMetrics::stop() {
  server_.reset();
  if (reflection_ && reflection::reflectionMetrics() == reflection_) {
    reflection::setReflectionMetrics(nullptr);
  }
  if (foreignClusters_) foreignClusters_->stop();
  if (offloadedPods_) offloadedPods_->stop();
}

void AgentMetrics::collect() {
  std::map<std::pair<std::string, std::string>, int> peerings;
  for (const char* role : {"provider", "consumer"}) {
    for (const char* state : {"connected", "disconnected", "pending"}) peerings[{role, state}] = 0;
  }
  for (const kube::ObjectPtr& fc : foreignClusters_->cache().list()) {
    const std::string role = lower(fc->value("/spec/role"_json_pointer, std::string()));
    if (role != "provider" && role != "consumer") continue;
    ++peerings[{role, peeringState(*fc)}];
    const std::string cluster = fc->value("/spec/clusterName"_json_pointer,
                                          fc->value("/metadata/name"_json_pointer, std::string()));
    for (const char* kind : {"granted", "used"}) {
      const nlohmann::json& list = fc->value("/status"_json_pointer, nlohmann::json::object());
      if (!list.is_object() || !list.contains(kind) || !(list)[kind].is_object()) continue;
      for (const ResourceMetric& r : kResources) {
        auto q = list[kind].find(r.resource);
        if (q == list[kind].end() || !q->is_string()) continue;
        kube::Result<kube::Quantity> parsed = kube::Quantity::parse(q->get<std::string>());
        if (!parsed.ok()) continue;
        const double v = r.cores ? static_cast<double>(parsed->milliValue()) / 1000
                                 : static_cast<double>(parsed->value());
        const std::string help = std::string(kind) == "granted"
                                     ? "Resources granted to the consumer in a peering, base units"
                                     : "Resources used by the consumer's Pods in a peering, base "
                                       "units";
        (*registry_)
            .gauge(std::string("strait_") + kind + "_" + r.suffix, help,
                   {{"cluster", cluster}, {"role", role}})
            .set(v);
      }
    }
  }
  for (const auto& [key, n] : peerings) {
    (*registry_)
        .gauge("strait_peerings", "Peerings of this cluster by role and state",
               {{"role", key.first}, {"state", key.second}})
        .set(n);
  }
  (*registry_)
      .gauge("strait_offloaded_pods",
             "Pods this cluster runs for its consumers (all consumers together)")
      .set(static_cast<double>(offloadedPods_->cache().size()));
}

}  // namespace strait::cmd
