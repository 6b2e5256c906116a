// Leader election of `strait agent` (see agent_leader.h).
#include "cmd/agent_leader.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>

#include <cstdio>
#include <random>

#include "peering/names.h"

namespace strait::cmd {
namespace {

using json = nlohmann::json;

// The host and the gRPC listen address when its port is fixed: an agent restarted after a
// crash on the same host and port is the same candidate and leads again at once (two agents
// cannot both listen there anyway). With port 0, unique to this process.
std::string hostName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return host[0] ? host : "agent";
}

std::string candidateIdentity(const std::string& listen) {
  std::string id = hostName() + "_";
  size_t colon = listen.rfind(':');
  if (colon != std::string::npos && listen.substr(colon + 1) != "0") return id + listen;
  std::random_device rd;
  char suffix[9];
  std::snprintf(suffix, sizeof(suffix), "%08x", rd());
  return id + std::to_string(getpid()) + "_" + suffix;
}

}  // namespace

kube::Result<std::unique_ptr<AgentLeadership>> AgentLeadership::create(
    std::unique_ptr<kube::Client> client, std::chrono::milliseconds leaseDuration,
    const std::string& listen, const nlohmann::json& ownerReferences) {
  if (leaseDuration < std::chrono::seconds(1)) {
    return kube::makeError(kube::Code::Invalid,
                           "--leader-lease-duration: expected a duration of at least 1s");
  }
  std::unique_ptr<AgentLeadership> l(new AgentLeadership());
  l->client_ = std::move(client);
  l->identity_ = candidateIdentity(listen);
  kube::LeaderElectionConfig cfg;
  cfg.leaseNamespace = std::string(peering::kSystemNamespace);
  cfg.ownerReferences = ownerReferences;
  cfg.leaseName = "strait-agent";
  cfg.identity = l->identity_;
  // client-go's proportions (15s / 10s / 2s).
  cfg.leaseDuration = leaseDuration;
  cfg.renewDeadline = leaseDuration * 2 / 3;
  cfg.retryPeriod = leaseDuration / 7;
  cfg.releaseOnCancel = true;  // a clean stop hands over at once
  AgentLeadership* self = l.get();
  cfg.onStartedLeading = [self](std::stop_token) { self->leading_ = true; };
  cfg.onStoppedLeading = [self] {
    if (self->leading_) self->lost_ = true;
  };
  cfg.onNewLeader = [self](const std::string& holder) {
    if (holder == self->identity_ || self->leading_ || self->standbyLogged_.exchange(true)) return;
    spdlog::info("event=standby leader={} lease={}/strait-agent msg=\"standby: leader is {}\"",
                 holder, peering::kSystemNamespace, holder);
  };
  if (kube::Status s = kube::validate(cfg); !s.ok()) return s.error();
  l->elector_ = std::make_unique<kube::LeaderElector>(*l->client_, std::move(cfg));
  return l;
}

AgentLeadership::~AgentLeadership() { stop(); }

void AgentLeadership::releaseIfHolderDied() {
  const std::string ns(peering::kSystemNamespace);
  kube::Result<json> lease = client_->get(kube::resources::kLeases, ns, "strait-agent");
  if (!lease.ok()) return;
  const std::string holder = lease->value("/spec/holderIdentity"_json_pointer, std::string());
  // "<host>_<pid>_<suffix>": a holder on this host whose process is gone (killed, crashed)
  // renews no more; waiting out its lease would only delay the restart.
  size_t b = holder.rfind('_');
  if (b == std::string::npos || b == 0) return;
  size_t a = holder.rfind('_', b - 1);
  if (a == std::string::npos || holder.substr(0, a) != hostName()) return;
  const std::string pidText = holder.substr(a + 1, b - a - 1);
  if (pidText.empty() || pidText.find_first_not_of("0123456789") != std::string::npos ||
      pidText.size() > 9) {
    return;
  }
  const pid_t pid = static_cast<pid_t>(std::stol(pidText));
  if (pid <= 1 || ::kill(pid, 0) == 0 || errno != ESRCH) return;  // alive, or cannot tell
  (*lease)["spec"]["holderIdentity"] = "";
  kube::Result<json> r = client_->update(kube::resources::kLeases, ns, *lease);
  spdlog::info("event=lease_holder_gone holder={} released={}", holder, r.ok());
}

bool AgentLeadership::waitUntilLeading(const std::atomic<bool>& stop) {
  const std::string ns(peering::kSystemNamespace);
  json nsObject = {{"apiVersion", "v1"},
                   {"kind", "Namespace"},
                   {"metadata",
                    {{"name", ns}, {"labels", {{std::string(peering::kLabelComponent), "system"}}}}}};
  // Retried by the elector's own loop when it fails here (the Lease create then fails too).
  (void)client_->create(kube::resources::kNamespaces, "", nsObject);
  releaseIfHolderDied();
  kube::LeaderElector* elector = elector_.get();
  thread_ = std::jthread([elector](std::stop_token st) { elector->run(st); });
  while (!stop && !leading_) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (leading_) {
    spdlog::info("event=leading identity={} lease={}/strait-agent", identity_, ns);
  }
  return leading_;
}

void AgentLeadership::stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

}  // namespace strait::cmd
