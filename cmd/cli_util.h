#pragma once
// Helpers shared by the subcommands' composition roots: durations, API clients, logging, and
// the CLI11 validators every flag of every subcommand uses (so one kind of value is checked,
// and refused with the same words, everywhere).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/status.h"

namespace strait::cmd {

// Exit codes of every subcommand (documented in the top-level --help footer).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;        // the command ran and failed
inline constexpr int kExitUsage = 2;          // bad usage: unknown command or flag, bad value
inline constexpr int kExitInterrupted = 130;  // stopped by Ctrl-C / SIGTERM (strait demo)

// Prints "error: <message>" to stderr and returns kExitFailure.
int failWith(const std::string& message);
// Prints "error: <message>" to stderr and returns kExitUsage (flags that do not go together).
int usageError(const std::string& message);

// "500ms", "30s", "5m", "1h", "2h30m"; a bare number is seconds. nullopt if malformed.
std::optional<std::chrono::milliseconds> parseDuration(const std::string& text);

// "1h", "30m", "45s", "250ms" or a combination ("1h30m"), for messages.
std::string formatDuration(std::chrono::milliseconds d);

// A HOST:PORT flag value: host an IPv4 address, a bracketed IPv6 address ("[::1]:80") or a
// DNS name; port 0..65535. Error text (without the flag name) if malformed.
struct HostPort {
  std::string host;  // without the IPv6 brackets
  uint16_t port = 0;
};
kube::Result<HostPort> parseHostPort(const std::string& text, bool allowAnyPort);

// The closest of `names` to `word` by edit distance, "" when none is close (more than a third
// of the word would change). Pure.
std::string closestName(const std::string& word, const std::vector<std::string>& names);

// CLI11 validators. CLI11 refuses a value a validator rejects as a parse error that starts
// with the flag's name ("--ttl: ..."); main() maps every parse error to kExitUsage.
//
// HOST:PORT as parseHostPort; `allowAnyPort`: port 0 (any free port) accepted.
CLI::Validator hostPortValidator(bool allowAnyPort);
// A host alone: an IPv4 or IPv6 address or a DNS name (no port).
CLI::Validator hostValidator();
// A duration as parseDuration, within [min, max].
CLI::Validator durationValidator(std::chrono::milliseconds min, std::chrono::milliseconds max);
// A number within [min, max] ("\"-5\" is out of range (expected 0 to 1000000)").
CLI::Validator numberRange(double min, double max);
// One of spdlog's level names (kLogLevels).
CLI::Validator logLevelValidator();
// A Kubernetes quantity greater than zero (e.g. 500m, 4, 8Gi).
CLI::Validator positiveQuantityValidator();
// A resource list NAME=QUANTITY,... (peering::parseResourceArg's syntax) with no negative
// quantity and, when cpu, memory or pods are given, none of them zero (a grant of zero of
// any of them runs no Pod).
CLI::Validator resourceListValidator();

// Log levels --log-level accepts, in order.
inline const std::vector<std::string> kLogLevels = {"trace", "debug",    "info", "warn",
                                                    "error", "critical", "off"};
inline constexpr const char* kLogLevelHelp =
    "log level: trace, debug, info, warn, error, critical or off";

// The API server configuration for `path`: the kubeconfig file at `path` (current
// context), or when `path` is empty the in-cluster configuration `inCluster` (a Pod's
// service account). Errors name the file, or when `path` is empty and `inCluster` has no
// host/port (not in a Pod), every source that was tried. Pure apart from reading the files.
kube::Result<kube::RestConfig> restConfigFor(const std::string& path,
                                             const kube::InClusterOptions& inCluster);
// A client for restConfigFor(path, the in-cluster options from $KUBERNETES_SERVICE_HOST/PORT
// and the standard service-account files). Error names the file.
kube::Result<std::unique_ptr<kube::Client>> clientFor(const std::string& path);
// As clientFor, with the client-side rate limit (kube::RestConfig qps/burst; qps <= 0: none).
kube::Result<std::unique_ptr<kube::Client>> clientFor(const std::string& path, double qps,
                                                      int burst);

// spdlog to stderr, "time level key=value" lines, at `level` (one of kLogLevels).
void setupLogging(const std::string& level);

}  // namespace strait::cmd
