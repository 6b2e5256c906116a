#pragma once
// `strait gateway --metrics-listen`: the tunnel's Prometheus metrics, read from the device's
// snapshot and counters at each scrape. docs/metrics.md lists them.

#include "metrics/registry.h"

namespace strait::tunnel {
class Device;
}

namespace strait::cmd {

// Adds a collect hook to `registry` that sets the gateway metrics from `device` (borrowed:
// it must outlive every exposition of the registry, i.e. its MetricsServer).
void addGatewayMetrics(metrics::Registry& registry, const tunnel::Device& device);

}  // namespace strait::cmd
