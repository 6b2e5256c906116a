#include "cmd/cli_util.h"

#include <arpa/inet.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "kube/quantity.h"
#include "peering/policy.h"

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

int failWith(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return kExitFailure;
}

int usageError(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return kExitUsage;
}

std::string formatDuration(std::chrono::milliseconds d) {
  long long ms = d.count();
  if (ms == 0) return "0s";
  std::string out;
  for (auto [unit, size] : {std::pair{"h", 3'600'000LL}, std::pair{"m", 60'000LL},
                            std::pair{"s", 1000LL}, std::pair{"ms", 1LL}}) {
    if (ms >= size) {
      out += std::to_string(ms / size) + unit;
      ms %= size;
    }
  }
  return out;
}

namespace {

bool isDnsName(const std::string& host) {
  if (host.empty() || host.size() > 253) return false;
  bool allNumeric = true;
  size_t start = 0;
  while (start <= host.size()) {
    size_t dot = host.find('.', start);
    std::string label =
        host.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
      if (!std::isdigit(static_cast<unsigned char>(c))) allNumeric = false;
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return !allNumeric;  // "999.1.2.3" is neither an IPv4 address nor a name
}

}  // namespace

kube::Result<HostPort> parseHostPort(const std::string& text, bool allowAnyPort) {
  auto bad = [&](const std::string& why) {
    return kube::makeError(kube::Code::Invalid, "\"" + text + "\": " + why);
  };
  const std::string portRange = allowAnyPort ? "1-65535, or 0 for any free port" : "1-65535";
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) return bad("expected HOST:PORT (port " + portRange + ")");
  HostPort hp;
  std::string host = text.substr(0, colon);
  std::string port = text.substr(colon + 1);
  if (host.empty())
    return bad("the host is empty (e.g. 127.0.0.1:" + port + " or 0.0.0.0:" + port + ")");
  if (host.front() == '[') {
    if (host.back() != ']') return bad("an IPv6 host needs its closing ']'");
    hp.host = host.substr(1, host.size() - 2);
    in6_addr a6;
    if (inet_pton(AF_INET6, hp.host.c_str(), &a6) != 1) {
      return bad("\"" + hp.host + "\" is not an IPv6 address");
    }
  } else {
    if (host.find(':') != std::string::npos) {
      return bad("an IPv6 host goes in brackets, e.g. [::1]:" + port);
    }
    hp.host = host;
    in_addr a4;
    if (inet_pton(AF_INET, host.c_str(), &a4) != 1 && !isDnsName(host)) {
      return bad("\"" + host + "\" is not an IP address or a host name");
    }
  }
  bool digits = !port.empty() && port.size() <= 5 &&
                std::all_of(port.begin(), port.end(),
                            [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  long value = digits ? std::stol(port) : -1;
  if (value < 0 || value > 65535 || (value == 0 && !allowAnyPort)) {
    return bad("port \"" + port + "\" is out of range (expected " + portRange + ")");
  }
  hp.port = static_cast<uint16_t>(value);
  return hp;
}

std::string closestName(const std::string& word, const std::vector<std::string>& names) {
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    return row[b.size()];
  };
  std::string best;
  size_t bestDistance = std::max<size_t>(1, (word.size() + 2) / 3) + 1;
  for (const std::string& n : names) {
    size_t d = distance(word, n);
    // A prefix ("off" for "offload") is as good as a near miss.
    if (n.rfind(word, 0) == 0 && !word.empty()) d = std::min<size_t>(d, 1);
    if (d < bestDistance) {
      bestDistance = d;
      best = n;
    }
  }
  return best;
}

CLI::Validator hostPortValidator(bool allowAnyPort) {
  return CLI::Validator(
      [allowAnyPort](std::string& value) -> std::string {
        kube::Result<HostPort> hp = parseHostPort(value, allowAnyPort);
        return hp.ok() ? std::string() : hp.error().message;
      },
      "HOST:PORT");
}

CLI::Validator hostValidator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        in_addr a4;
        in6_addr a6;
        if (inet_pton(AF_INET, value.c_str(), &a4) == 1 ||
            inet_pton(AF_INET6, value.c_str(), &a6) == 1 || isDnsName(value)) {
          return {};
        }
        return "\"" + value + "\" is not an IP address or a host name";
      },
      "HOST");
}

CLI::Validator durationValidator(std::chrono::milliseconds min, std::chrono::milliseconds max) {
  return CLI::Validator(
      [min, max](std::string& value) -> std::string {
        std::optional<std::chrono::milliseconds> d = parseDuration(value);
        std::string range = "from " + formatDuration(min) + " to " + formatDuration(max);
        if (!d) {
          return "\"" + value + "\" is not a duration (expected e.g. 500ms, 30s, 5m, 1h, " + range +
                 ")";
        }
        if (*d < min || *d > max)
          return "\"" + value + "\" is out of range (expected " + range + ")";
        return {};
      },
      "DURATION");
}

CLI::Validator numberRange(double min, double max) {
  auto show = [](double v) {
    if (v == static_cast<double>(static_cast<long long>(v))) {
      return std::to_string(static_cast<long long>(v));
    }
    std::ostringstream out;
    out << v;
    return out.str();
  };
  const std::string range = show(min) + " to " + show(max);
  return CLI::Validator(
      [min, max, range](std::string& value) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(value, v)) {
          return "\"" + value + "\" is not a number (expected " + range + ")";
        }
        if (v < min || v > max) return "\"" + value + "\" is out of range (expected " + range + ")";
        return {};
      },
      "[" + range + "]");
}

CLI::Validator logLevelValidator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (std::find(kLogLevels.begin(), kLogLevels.end(), value) != kLogLevels.end()) return {};
        std::string list;
        for (const std::string& l : kLogLevels) list += (list.empty() ? "" : ", ") + l;
        return "\"" + value + "\" is not a log level (expected one of " + list + ")";
      },
      "LEVEL");
}

CLI::Validator positiveQuantityValidator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        kube::Result<kube::Quantity> q = kube::Quantity::parse(value);
        if (!q.ok()) return "\"" + value + "\" is not a quantity (e.g. 500m, 4, 8Gi)";
        if (q->sign() <= 0) return "\"" + value + "\" must be greater than zero";
        return {};
      },
      "QUANTITY");
}

CLI::Validator resourceListValidator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        kube::Result<peering::ResourceMap> r = peering::parseResourceArg(value);
        if (!r.ok()) return r.error().message + " (expected e.g. cpu=8,memory=16Gi,pods=110)";
        for (const char* name : {"cpu", "memory", "pods"}) {
          auto it = r->find(name);
          if (it != r->end() && it->second.isZero()) {
            return std::string(name) +
                   "=0 grants no capacity: no Pod could run (expected a quantity above zero)";
          }
        }
        return {};
      },
      "NAME=QUANTITY,...");
}

kube::Result<kube::RestConfig> restConfigFor(const std::string& path,
                                             const kube::InClusterOptions& inCluster) {
  if (!path.empty()) {
    kube::KubeconfigOptions opts;
    opts.paths = {path};
    return kube::loadKubeconfig(opts);
  }
  kube::Result<kube::RestConfig> cfg = kube::inClusterConfig(inCluster);
  if (cfg.ok()) return cfg;
  if (cfg.error().code == kube::Code::NotFound) {
    return kube::makeError(kube::Code::NotFound,
                           "no cluster to talk to: no --kubeconfig given, KUBECONFIG is not set, "
                           "and not running in a Pod (KUBERNETES_SERVICE_HOST and "
                           "KUBERNETES_SERVICE_PORT are not set)");
  }
  return kube::makeError(cfg.error().code, "in-cluster configuration: " + cfg.error().message);
}

kube::Result<std::unique_ptr<kube::Client>> clientFor(const std::string& path) {
  kube::RestConfig defaults;
  return clientFor(path, defaults.qps, defaults.burst);
}

kube::Result<std::unique_ptr<kube::Client>> clientFor(const std::string& path, double qps,
                                                      int burst) {
  kube::InClusterOptions inCluster;
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST")) inCluster.host = host;
  if (const char* port = std::getenv("KUBERNETES_SERVICE_PORT")) inCluster.port = port;
  kube::Result<kube::RestConfig> cfg = restConfigFor(path, inCluster);
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
