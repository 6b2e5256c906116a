#include "cmd/agent_health.h"

#include <chrono>
#include <tuple>

#include "peering/foreign_cluster.h"

namespace strait::cmd {
namespace {

constexpr auto kApiTimeout = std::chrono::seconds(3);

}  // namespace

kube::Result<std::unique_ptr<AgentHealth>> AgentHealth::create(
    std::unique_ptr<kube::Client> client) {
  kube::RestConfig cfg = client->config();
  cfg.timeout = kApiTimeout;  // a probe must answer within the kubelet's timeout
  cfg.maxRetries = 0;
  kube::Result<std::unique_ptr<kube::Client>> probeClient = kube::newClient(cfg);
  if (!probeClient.ok()) return probeClient.error();
  return std::unique_ptr<AgentHealth>(new AgentHealth(std::move(*probeClient)));
}

AgentHealth::~AgentHealth() { stop(); }

kube::Status AgentHealth::start(const std::string& host, uint16_t port) {
  server_ = std::make_unique<kube::PlainHttpServer>(
      "health listener",
      [this](const std::string&, const std::string& target) { return answer(target); });
  kube::Status started = server_->start(host, port);
  if (!started.ok()) server_.reset();
  return started;
}

void AgentHealth::stop() {
  if (server_) server_->stop();
}

uint16_t AgentHealth::port() const { return server_ ? server_->port() : 0; }

// Probes are few and short: the server answers one at a time.
kube::PlainHttpServer::Reply AgentHealth::answer(const std::string& target) {
  std::string path = target.substr(0, target.find('?'));
  kube::PlainHttpServer::Reply reply;
  if (path == "/healthz" || path == "/livez") {
    reply.body = "ok\n";
  } else if (path == "/readyz") {
    std::tie(reply.status, reply.body) = readiness(false);
  } else if (path == "/readyz/leader") {
    std::tie(reply.status, reply.body) = readiness(true);
  } else {
    reply.status = 404;
    reply.body = "not found: the agent serves /healthz, /livez, /readyz and /readyz/leader\n";
  }
  return reply;
}

std::pair<int, std::string> AgentHealth::readiness(bool leaderOnly) {
  std::string report;
  bool ready = true;
  // The API server answers: any answer from it (a missing object included) will do.
  kube::Result<nlohmann::json> probe =
      client_->get(peering::kForeignClusters, "", "strait-readyz-probe");
  if (probe.ok() || probe.error().code == kube::Code::NotFound) {
    report += "[+]apiserver ok\n";
  } else {
    ready = false;
    report += "[-]apiserver failed: " + probe.error().message + "\n";
  }
  switch (role_.load()) {
    case Role::Standby:
      if (leaderOnly) {
        ready = false;
        report += "[-]leader failed: standby (waiting for the leader Lease; serves no gRPC "
                  "until it leads)\n";
      } else {
        report += "[+]grpc ok (standby: waiting for the leader Lease; serves no gRPC until it "
                  "leads)\n";
      }
      break;
    case Role::Leading:
      report += "[+]grpc ok (leader)\n";
      break;
    case Role::Stopping:
      ready = false;
      report += "[-]grpc failed: the agent is stopping\n";
      break;
  }
  report += ready ? "readyz check passed\n" : "readyz check failed\n";
  return {ready ? 200 : 503, report};
}

}  // namespace strait::cmd
