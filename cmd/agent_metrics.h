#pragma once
// `strait agent --metrics-listen`: the agent's Prometheus metrics. The peering series are
// computed at scrape time from two watched caches of this cluster — the ForeignClusters (the
// peerings with their state, granted and used resources, as `strait status` shows them) and
// the Pods the agent runs here for its consumers — so a scrape makes no API request. The
// reflection series (stream traffic and errors, reflector work, queue depths, Pods per
// virtual node) are counted by reflection/ through the process-wide sink
// ReflectionExporter installs (reflection/reflection_metrics.h). docs/metrics.md lists every
// metric.
//
// AgentMetrics is not thread-safe: created, started and stopped by main; scrapes run on the
// server's threads. ReflectionExporter is thread-safe.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "kube/client.h"
#include "metrics/registry.h"
#include "reflection/reflection_metrics.h"

namespace strait::kube {
class Informer;
}

namespace strait::cmd {

// The reflection counts as Prometheus series of `registry` (kept alive by the exporter).
// Every stream series a side sends or receives, and the reconnection and error counters,
// exist from construction at 0.
class ReflectionExporter : public reflection::ReflectionMetrics {
 public:
  explicit ReflectionExporter(std::shared_ptr<metrics::Registry> registry);
  // Sets the queue-depth and Pods-per-node gauges from the registered sources (a collect
  // hook of the registry: the constructor registers it).
  void collect();

  void streamMessage(reflection::StreamSide side, reflection::StreamDirection direction,
                     std::string_view type, size_t bytes) override;
  void streamError(reflection::StreamSide side, reflection::StreamError error) override;
  void streamReconnected() override;
  void workHandled(const std::string& kind, reflection::WorkResult result, double seconds) override;
  void queueAdded(const std::string& reflector, const std::string& kind,
                  std::function<size_t()> depth) override;
  void queueRemoved(const std::string& reflector, const std::string& kind) override;
  void podsAdded(const std::string& node, std::function<size_t()> count) override;
  void podsRemoved(const std::string& node) override;

 private:
  struct Traffic {
    metrics::Counter messages;
    metrics::Counter bytes;
  };
  const Traffic& traffic(reflection::StreamSide side, reflection::StreamDirection direction,
                         std::string_view type);
  metrics::Counter errorCounter(reflection::StreamSide side, reflection::StreamError error);
  metrics::Gauge queueGauge(const std::string& reflector, const std::string& kind);
  metrics::Gauge podsGauge(const std::string& node);

  std::shared_ptr<metrics::Registry> registry_;
  metrics::Counter reconnects_;

  std::mutex mu_;  // the handle caches and sources below
  // (side, direction, type) -> its counters, created on first use
  std::map<std::tuple<int, int, std::string>, Traffic> traffic_;
  std::map<std::pair<int, int>, metrics::Counter> errors_;          // (side, error)
  std::map<std::pair<std::string, int>, metrics::Histogram> work_;  // (kind, result)

  std::mutex sourcesMu_;  // held while a source is read, so removal waits for the read
  std::map<std::pair<std::string, std::string>, std::function<size_t()>> queues_;
  std::map<std::string, std::function<size_t()>> pods_;
};

class AgentMetrics {
 public:
  // Takes a client of this cluster; starts nothing.
  explicit AgentMetrics(std::unique_ptr<kube::Client> client);
  ~AgentMetrics();  // stop()
  // Installs the reflection exporter as the process's sink, starts the watches and serves
  // /metrics on `host`:`port` (0: any free port). Unavailable when the address cannot be
  // bound.
  kube::Status start(const std::string& host, uint16_t port);
  // Stops serving and watching and removes the reflection sink. Idempotent.
  void stop();
  uint16_t port() const;
  metrics::Registry& registry() { return *registry_; }

 private:
  void collect();  // sets the gauges from the caches (a collect hook of the registry)

  std::unique_ptr<kube::Client> client_;
  // Shared with the reflection exporter, which the process-wide sink may keep a moment
  // longer than this object.
  std::shared_ptr<metrics::Registry> registry_ = std::make_shared<metrics::Registry>();
  std::shared_ptr<ReflectionExporter> reflection_;
  std::unique_ptr<kube::Informer> foreignClusters_;
  std::unique_ptr<kube::Informer> offloadedPods_;
  std::unique_ptr<metrics::MetricsServer> server_;
};

}  // namespace strait::cmd
