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

}  // namespace

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
      registry_.gauge("strait_peerings", "Peerings of this cluster by role and state",
                      {{"role", role}, {"state", state}});
    }
  }
  registry_.gauge("strait_offloaded_pods",
                  "Pods this cluster runs for its consumers (all consumers together)");
  registry_.onCollect([this] { collect(); });
  foreignClusters_->start();
  offloadedPods_->start();
  base::Result<std::unique_ptr<metrics::MetricsServer>> server =
      metrics::MetricsServer::start(host, port, registry_);
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
        registry_
            .gauge(std::string("strait_") + kind + "_" + r.suffix, help,
                   {{"cluster", cluster}, {"role", role}})
            .set(v);
      }
    }
  }
  for (const auto& [key, n] : peerings) {
    registry_
        .gauge("strait_peerings", "Peerings of this cluster by role and state",
               {{"role", key.first}, {"state", key.second}})
        .set(n);
  }
  registry_
      .gauge("strait_offloaded_pods",
             "Pods this cluster runs for its consumers (all consumers together)")
      .set(static_cast<double>(offloadedPods_->cache().size()));
}

}  // namespace strait::cmd
