#pragma once
// Small helpers shared by the peering subcommands' composition roots.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "kube/client.h"
#include "kube/status.h"

namespace strait::cmd {

// "500ms", "30s", "5m", "1h", "2h30m"; a bare number is seconds. nullopt if malformed.
std::optional<std::chrono::milliseconds> parseDuration(const std::string& text);

// A client for the kubeconfig at `path` (current context). Error names the file.
kube::Result<std::unique_ptr<kube::Client>> clientFor(const std::string& path);
// As clientFor, with the client-side rate limit (kube::RestConfig qps/burst; qps <= 0: none).
kube::Result<std::unique_ptr<kube::Client>> clientFor(const std::string& path, double qps,
                                                      int burst);

// spdlog to stderr, "time level key=value" lines, at `level`.
void setupLogging(const std::string& level);

}  // namespace strait::cmd
