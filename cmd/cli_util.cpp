#include "cmd/cli_util.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cctype>

namespace strait::cmd {

std::optional<std::chrono::milliseconds> parseDuration(const std::string& text) {
  if (text.empty()) return std::nullopt;
  long long total = 0;
  size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start || i - start > 9) return std::nullopt;
    long long n = std::stoll(text.substr(start, i - start));
    std::string unit;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) unit += text[i++];
    long long ms;
    if (unit == "ms") {
      ms = n;
    } else if (unit == "s" || (unit.empty() && !any && i == text.size())) {
      ms = n * 1000;
    } else if (unit == "m") {
      ms = n * 60'000;
    } else if (unit == "h") {
      ms = n * 3'600'000;
    } else {
      return std::nullopt;
    }
    total += ms;
    any = true;
  }
  return std::chrono::milliseconds(total);
}

kube::Result<std::unique_ptr<kube::Client>> clientFor(const std::string& path) {
  kube::RestConfig defaults;
  return clientFor(path, defaults.qps, defaults.burst);
}

kube::Result<std::unique_ptr<kube::Client>> clientFor(const std::string& path, double qps,
                                                      int burst) {
  kube::KubeconfigOptions opts;
  opts.paths = {path};
  kube::Result<kube::RestConfig> cfg = kube::loadKubeconfig(opts);
  if (!cfg.ok()) return cfg.error();
  cfg->timeout = std::chrono::seconds(15);
  cfg->qps = qps;
  cfg->burst = burst;
  return kube::newClient(*cfg);
}

void setupLogging(const std::string& level) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("strait"));
  spdlog::set_level(spdlog::level::from_str(level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
}

}  // namespace strait::cmd
