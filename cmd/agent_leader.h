#pragma once
// One active agent per cluster: `strait agent` campaigns for the Lease
// strait-system/strait-agent (kube/leader_election.h) before it starts anything. A second
// instance for the same cluster logs "standby: leader is <holder>" once and waits; it runs
// the whole agent (peering, reflection, webhook) only once it holds the Lease, i.e. when the
// leader stopped (released at once) or died (after the lease duration). A leader that can no
// longer renew stops and exits non-zero (as kube-controller-manager does), so that two
// agents never act at the same time. A holder that was a process of this host which no longer
// exists is released at start, so that an agent restarted after a crash does not wait.
//
// Not thread-safe: created, waited on and stopped by main; the elector runs on its own thread.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "kube/client.h"
#include "kube/leader_election.h"

namespace strait::cmd {

class AgentLeadership {
 public:
  // Validates `leaseDuration` (at least 1s: Invalid otherwise) and takes the client. The
  // candidate identity is the host and `listen` (the agent's --listen) when its port is
  // fixed, so that an agent restarted after a crash leads again at once; otherwise unique to
  // the process. `ownerReferences` (an array, or null) go on the Lease it creates. No I/O.
  static kube::Result<std::unique_ptr<AgentLeadership>> create(
      std::unique_ptr<kube::Client> client, std::chrono::milliseconds leaseDuration,
      const std::string& listen, const nlohmann::json& ownerReferences = nullptr);
  ~AgentLeadership();  // stop()

  // Creates the agent namespace if needed, starts campaigning and blocks until this process
  // leads (true) or `stop` is set (false). Call once.
  bool waitUntilLeading(const std::atomic<bool>& stop);
  // True once leadership was lost after it had been gained (the agent must stop).
  bool lost() const { return lost_; }
  // Stops campaigning and releases the Lease if held. Idempotent.
  void stop();
  const std::string& identity() const { return identity_; }

 private:
  AgentLeadership() = default;
  // Clears the Lease's holder when it names a process of this host that no longer exists
  // (so that an agent restarted after a crash takes over at once).
  void releaseIfHolderDied();

  std::unique_ptr<kube::Client> client_;
  std::string identity_;
  std::unique_ptr<kube::LeaderElector> elector_;
  std::jthread thread_;
  std::atomic<bool> leading_{false};
  std::atomic<bool> lost_{false};
  std::atomic<bool> standbyLogged_{false};
};

}  // namespace strait::cmd
