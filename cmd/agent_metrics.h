#pragma once
// `strait agent --metrics-listen`: the agent's Prometheus metrics, computed at scrape time
// from two watched caches of this cluster — the ForeignClusters (the peerings with their
// state, granted and used resources, as `strait status` shows them) and the Pods the agent
// runs here for its consumers — so a scrape makes no API request. docs/metrics.md lists
// every metric.
//
// Not thread-safe: created, started and stopped by main; scrapes run on the server's threads.

#include <memory>
#include <string>

#include "kube/client.h"
#include "metrics/registry.h"

namespace strait::kube {
class Informer;
}

namespace strait::cmd {

class AgentMetrics {
 public:
  // Takes a client of this cluster; starts nothing.
  explicit AgentMetrics(std::unique_ptr<kube::Client> client);
  ~AgentMetrics();  // stop()
  // Starts the watches and serves /metrics on `host`:`port` (0: any free port). Unavailable
  // when the address cannot be bound.
  kube::Status start(const std::string& host, uint16_t port);
  // Stops serving and watching. Idempotent.
  void stop();
  uint16_t port() const;
  metrics::Registry& registry() { return registry_; }

 private:
  void collect();  // sets the gauges from the caches (a collect hook of the registry)

  std::unique_ptr<kube::Client> client_;
  metrics::Registry registry_;
  std::unique_ptr<kube::Informer> foreignClusters_;
  std::unique_ptr<kube::Informer> offloadedPods_;
  std::unique_ptr<metrics::MetricsServer> server_;
};

}  // namespace strait::cmd
