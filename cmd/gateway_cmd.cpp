// `strait gateway`: the composition root of the WireGuard-compatible tunnel endpoint.
// Reads a wg-quick style file, creates the TUN interface, runs the device and serves the
// WireGuard UAPI socket so that `wg show` / `wg set` work.
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "cmd/cli_util.h"
#include "cmd/commands.h"
#include "cmd/gateway_metrics.h"
#include "tunnel/config.h"
#include "tunnel/device.h"
#include "tunnel/tun.h"
#include "tunnel/uapi.h"

namespace strait::cmd {
namespace {

std::atomic<bool> g_stopGateway{false};
void onGatewaySignal(int) { g_stopGateway = true; }

struct GatewayFlags {
  std::string config;
  std::string interface = "strait0";
  std::string uapiDir = "/var/run/wireguard";
  int timerScale = 1;
  uint32_t handshakeLoad = tunnel::kDefaultUnderLoadHandshakes;
  bool noOffload = false;
  std::string logLevel = "info";
  std::string metricsListen;  // "" = no /metrics
};

int runGateway(const GatewayFlags& f) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("strait"));
  spdlog::set_level(spdlog::level::from_str(f.logLevel));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");

  auto config = tunnel::loadConfigFile(f.config);
  if (!config.ok()) {
    spdlog::error("event=bad_config error=\"{}\"", config.error().message);
    return 2;
  }
  for (const std::string& k : config->ignoredKeys) {
    spdlog::warn("event=config_key_ignored file={} where=\"{}\" reason=\"wg-quick host setting\"",
                 f.config, k);
  }
  tunnel::DeviceOptions options;
  options.timers = tunnel::TimerConfig{}.scaled(f.timerScale);
  options.underLoadHandshakesPerSecond = f.handshakeLoad;
  options.mtu = config->mtu > 0 ? config->mtu : tunnel::kDefaultMtu;
  options.udpOffload = !f.noOffload;
  if (f.timerScale > 1) {
    options.timerTick = std::chrono::milliseconds(std::max(5, 100 / f.timerScale));
    spdlog::warn("event=test_timers scale={} rekey_after_ms={}", f.timerScale,
                 options.timers.rekeyAfterTime.count());
  }

  struct sigaction sa {};
  sa.sa_handler = onGatewaySignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto tun = tunnel::openTun(f.interface, !f.noOffload);
  if (!tun.ok()) {
    spdlog::error("event=tun_failed interface={} error=\"{}\"", f.interface, tun.error().message);
    return 1;
  }
  options.tunVnetHdr = tun->vnetHdr;
  tunnel::Device device(options);
  if (auto st = device.applyConfig(*config); !st.ok()) {
    spdlog::error("event=bad_config file={} error=\"{}\"", f.config, st.error().message);
    close(tun->fd);
    return 2;
  }
  std::vector<tunnel::IpPrefix> routes;
  for (const auto& p : config->peers)
    routes.insert(routes.end(), p.allowedIps.begin(), p.allowedIps.end());
  auto configured = tunnel::configureInterface(f.interface, options.mtu, config->addresses, routes);
  if (!configured.ok()) {
    spdlog::error("event=interface_config_failed interface={} error=\"{}\"", f.interface,
                  configured.error().message);
    close(tun->fd);
    return 1;
  }
  for (const std::string& w : *configured) spdlog::warn("event=interface_config warning=\"{}\"", w);
  if (auto st = device.start(tun->fd); !st.ok()) {
    spdlog::error("event=start_failed error=\"{}\"", st.error().message);
    close(tun->fd);
    return 1;
  }
  tunnel::UapiServer uapi(device, f.interface, f.uapiDir);
  if (auto st = uapi.start(); !st.ok()) {
    spdlog::error("event=uapi_failed error=\"{}\"", st.error().message);
    device.stop();
    close(tun->fd);
    return 1;
  }
  // Declared after the device: the server stops before the device it reads goes.
  metrics::Registry metricsRegistry;
  std::unique_ptr<metrics::MetricsServer> metricsServer;
  if (!f.metricsListen.empty()) {
    addGatewayMetrics(metricsRegistry, device);
    kube::Result<HostPort> hp = parseHostPort(f.metricsListen, true);
    base::Result<std::unique_ptr<metrics::MetricsServer>> ms =
        hp.ok() ? metrics::MetricsServer::start(hp->host, hp->port, metricsRegistry)
                : base::Result<std::unique_ptr<metrics::MetricsServer>>(hp.error());
    if (!ms.ok()) {
      spdlog::error("event=start_failed component=metrics error=\"{}\"", ms.error().message);
      uapi.stop();
      device.stop();
      close(tun->fd);
      return 1;
    }
    metricsServer = std::move(*ms);
    spdlog::info("event=metrics_serving address={}:{}", hp->host, metricsServer->port());
  }
  spdlog::info("event=gateway_up interface={} listen_port={} peers={} tun_offload={}", f.interface,
               device.listenPort(), config->peers.size(), tun->vnetHdr);
  while (!g_stopGateway) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  spdlog::info("event=stopping");
  uapi.stop();
  device.stop();
  tunnel::DeviceCounters c = device.counters();
  spdlog::info(
      "event=counters tx_packets={} rx_packets={} replayed={} auth_failed={} unknown_index={} "
      "bad_mac1={} handshake_refused={} cookie_replies_sent={} cookie_replies_received={} "
      "handshakes_initiated={} handshakes_completed={} not_allowed_source={} no_route={} "
      "staged_dropped={} invalid={}",
      c.txPackets, c.rxPackets, c.replayed, c.authFailed, c.unknownIndex, c.badMac1,
      c.handshakeRefused, c.cookieRepliesSent, c.cookieRepliesReceived, c.handshakesInitiated,
      c.handshakesCompleted, c.notAllowedSource, c.noRoute, c.stagedDropped, c.invalid);
  close(tun->fd);
  return 0;
}

}  // namespace

void addGatewayCommand(CLI::App& app) {
  auto flags = std::make_shared<GatewayFlags>();
  auto* sub = app.add_subcommand("gateway", "run the WireGuard-compatible tunnel endpoint");
  sub->add_option("--config", flags->config, "wg-quick style configuration file")->required();
  sub->add_option("--interface", flags->interface, "TUN interface name (also the UAPI name)")
      ->capture_default_str();
  sub->add_option("--uapi-dir", flags->uapiDir, "directory of the UAPI socket NAME.sock")
      ->capture_default_str();
  sub->add_option("--test-timer-scale", flags->timerScale,
                  "TEST MODE: divide every protocol timer by this factor (1 to 1000)")
      ->capture_default_str()
      ->check(numberRange(1, 1000));
  sub->add_option("--metrics-listen", flags->metricsListen,
                  "HOST:PORT serving Prometheus metrics on /metrics over plain HTTP (PORT 0 = "
                  "any; default: none)")
      ->check(hostPortValidator(true));
  sub->add_option("--handshake-load-threshold", flags->handshakeLoad,
                  "handshake messages per second above which cookie replies are sent (1 to "
                  "1000000)")
      ->capture_default_str()
      ->check(numberRange(1, 1000000));
  sub->add_flag("--no-offload", flags->noOffload, "disable UDP GSO/GRO and TUN offloads");
  sub->add_option("--log-level", flags->logLevel, kLogLevelHelp)
      ->capture_default_str()
      ->check(logLevelValidator());
  sub->callback([flags] { setExitCode(runGateway(*flags)); });
}

}  // namespace strait::cmd
