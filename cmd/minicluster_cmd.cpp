// `strait minicluster`: the composition root of the embedded Kubernetes API server.
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "cmd/commands.h"
#include "minicluster/apiserver.h"

namespace strait::cmd {
namespace {

int g_exit = 0;
std::atomic<bool> g_stop{false};

void onSignal(int) { g_stop = true; }

struct MiniclusterFlags {
  std::string name = "minicluster";
  std::string listen = "127.0.0.1:6443";
  std::string kubeconfigOut;
  std::string dataDir;
  size_t maxBodyBytes = 3 * 1024 * 1024;
  std::string logLevel = "info";
  size_t watchHistory = 100000;
  std::string tokenAuthFile;
};

int runMinicluster(const MiniclusterFlags& f) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("strait"));
  spdlog::set_level(spdlog::level::from_str(f.logLevel));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  minicluster::ApiServerOptions o;
  o.name = f.name;
  auto colon = f.listen.rfind(':');
  if (colon == std::string::npos) {
    spdlog::error("event=bad_flag flag=--listen value={} error=\"expected HOST:PORT\"", f.listen);
    return 2;
  }
  o.listenHost = f.listen.substr(0, colon);
  try {
    int port = std::stoi(f.listen.substr(colon + 1));
    if (port < 0 || port > 65535) throw std::out_of_range("port");
    o.listenPort = static_cast<uint16_t>(port);
  } catch (...) {
    spdlog::error("event=bad_flag flag=--listen value={} error=\"port must be 0-65535\"",
                  f.listen);
    return 2;
  }
  if (!f.kubeconfigOut.empty()) o.kubeconfigOut = f.kubeconfigOut;
  if (!f.dataDir.empty()) o.dataDir = f.dataDir;
  o.maxBodyBytes = f.maxBodyBytes;
  o.historyLimit = f.watchHistory;
  if (!f.tokenAuthFile.empty()) o.tokenAuthFile = f.tokenAuthFile;

  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto server = minicluster::newApiServer(o);
  if (auto s = server->start(); !s) {
    spdlog::error("event=start_failed error=\"{}\"", s.error().message);
    return 1;
  }
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  spdlog::info("event=stopping");
  server->stop();
  return 0;
}

}  // namespace

int exitCode() { return g_exit; }
void setExitCode(int code) { g_exit = code; }

void addMiniclusterCommand(CLI::App& app) {
  auto flags = std::make_shared<MiniclusterFlags>();
  auto* sub = app.add_subcommand("minicluster",
                                 "run an embedded Kubernetes API server (the test/demo cluster)");
  sub->add_option("--name", flags->name, "cluster name (kubeconfig cluster and context)")
      ->capture_default_str();
  sub->add_option("--listen", flags->listen, "HOST:PORT to serve HTTPS on (PORT 0 = any free)")
      ->capture_default_str();
  sub->add_option("--kubeconfig-out", flags->kubeconfigOut,
                  "write an admin kubeconfig here once serving");
  sub->add_option("--data-dir", flags->dataDir,
                  "keep state here (write-ahead log, snapshots, PKI); default: memory only");
  sub->add_option("--max-body-bytes", flags->maxBodyBytes, "largest accepted request body")
      ->capture_default_str();
  sub->add_option("--watch-history", flags->watchHistory,
                  "watch events kept for resuming watches; older resourceVersions get 410")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--token-auth-file", flags->tokenAuthFile,
                  "CSV of token,user,uid,\"group1,group2\" accepted as bearer tokens");
  sub->add_option("--log-level", flags->logLevel, "trace, debug, info, warn, error")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  sub->callback([flags] { setExitCode(runMinicluster(*flags)); });
}

}  // namespace strait::cmd
