#pragma once
// `strait agent --health-listen`: the agent's probes over plain HTTP, for a kubelet.
//   /healthz, /livez  200 "ok" while the agent process serves (liveness).
//   /readyz           200 when this cluster's API server answers and, once this agent leads,
//                     its gRPC service is up; 503 naming each failing check otherwise.
//                     A standby (another agent holds the leader Lease) is ready: it is
//                     healthy and takes over when the leader goes.
//   /readyz/leader    as /readyz, but a standby is not ready (503 "standby"): it serves no
//                     gRPC, so a Service must not send it any. The chart's readiness probe.
//
// Thread-safe: setRole() from main while the server thread answers probes.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "kube/client.h"
#include "kube/plain_http_server.h"
#include "kube/status.h"

namespace strait::cmd {

class AgentHealth {
 public:
  enum class Role {
    Standby,   // waiting for the leader Lease (or not yet started)
    Leading,   // holds the Lease and its gRPC service is up
    Stopping,  // shutting down
  };

  // Takes a client of this cluster (a short per-request timeout is applied); starts nothing.
  static kube::Result<std::unique_ptr<AgentHealth>> create(std::unique_ptr<kube::Client> client);
  ~AgentHealth();  // stop()

  // Binds `host`:`port` (0: any free port) and answers probes on a background thread.
  // Unavailable naming the address when it cannot be bound. Call once.
  kube::Status start(const std::string& host, uint16_t port);
  // Stops answering and joins the thread. Idempotent.
  void stop();
  uint16_t port() const;
  void setRole(Role r) { role_ = r; }

  // The answer to GET /readyz (`leaderOnly`: /readyz/leader): HTTP status and body. May
  // block up to a few seconds (one request to the API server).
  std::pair<int, std::string> readiness(bool leaderOnly);

 private:
  explicit AgentHealth(std::unique_ptr<kube::Client> client) : client_(std::move(client)) {}
  kube::PlainHttpServer::Reply answer(const std::string& target);

  std::unique_ptr<kube::Client> client_;
  std::atomic<Role> role_{Role::Standby};
  std::unique_ptr<kube::PlainHttpServer> server_;
};

}  // namespace strait::cmd
