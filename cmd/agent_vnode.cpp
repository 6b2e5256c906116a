// The consumer half of `strait agent` (see agent_vnode.h).
#include "cmd/agent_vnode.h"

#include "cmd/cli_util.h"
#include "vnode/offloading_overrides.h"
#include "vnode/vkubelet_manager.h"
#include "vnode/webhook_server.h"

namespace strait::cmd {

void addVnodeFlags(CLI::App* sub, VnodeFlags& f) {
  sub->add_option("--vnode-taint-effect", f.taintEffect,
                  "effect of the virtual nodes' taint: NoExecute, NoSchedule, "
                  "PreferNoSchedule or \"\" for none")
      ->capture_default_str()
      ->check(CLI::IsMember({"NoExecute", "NoSchedule", "PreferNoSchedule", ""}));
  sub->add_option("--vnode-stream-grace", f.streamGrace,
                  "a virtual node stays Ready this long after its reflection stream broke (1s to "
                  "24h)")
      ->capture_default_str()
      ->check(durationValidator(std::chrono::seconds(1), std::chrono::hours(24)));
  sub->add_option("--vnode-pod-workers", f.podWorkers,
                  "Pods each virtual node reflects at once (each waits for its provider reply; "
                  "1 to 1024)")
      ->capture_default_str()
      ->check(numberRange(1, 1024));
  sub->add_option("--kubelet-port", f.kubeletPort,
                  "port of the virtual nodes' kubelet API (1 to 65535, or 0 for any free port)")
      ->capture_default_str()
      ->check(numberRange(0, 65535));
  sub->add_option("--vnode-address", f.nodeAddress,
                  "the virtual nodes' InternalIP (where their kubelet API is reached)")
      ->capture_default_str()
      ->check(hostValidator());
  sub->add_option("--webhook-listen", f.webhookListen,
                  "HOST:PORT of the toleration webhook (PORT 0 = any)")
      ->capture_default_str()
      ->check(hostPortValidator(true));
  sub->add_option("--webhook-host", f.webhookHost,
                  "host the API server calls the webhook at (default: the listen host)")
      ->check(hostValidator());
  sub->add_option("--webhook-service", f.webhookService,
                  "NAMESPACE/NAME of the Service in front of the webhook: the configuration "
                  "names it (clientConfig.service, port = the --webhook-listen port) instead "
                  "of a URL, and the certificate names NAME.NAMESPACE.svc unless "
                  "--webhook-host is given")
      ->check([](const std::string& v) -> std::string {
        auto slash = v.find('/');
        if (slash == std::string::npos || slash == 0 || slash + 1 == v.size() ||
            v.find('/', slash + 1) != std::string::npos) {
          return "expected NAMESPACE/NAME, got \"" + v + "\"";
        }
        return "";
      });
  sub->add_flag("--no-webhook", f.noWebhook, "do not serve the toleration webhook");
  sub->add_flag("--no-virtual-nodes", f.noVirtualNodes,
                "run no virtual node for the peerings this cluster consumes (the peerings "
                "themselves stay up)");
}

kube::Result<std::unique_ptr<VnodeRuntime>> VnodeRuntime::create(const VnodeFlags& f,
                                                                 const std::string& kubeconfig) {
  auto bad = [](const std::string& flag, const std::string& why) {
    return kube::makeError(kube::Code::Invalid, flag + ": " + why);
  };
  if (f.taintEffect != "NoExecute" && f.taintEffect != "NoSchedule" &&
      f.taintEffect != "PreferNoSchedule" && !f.taintEffect.empty()) {
    return bad("--vnode-taint-effect", "expected NoExecute, NoSchedule, PreferNoSchedule or \"\"");
  }
  auto grace = parseDuration(f.streamGrace);
  if (!grace || grace->count() <= 0) return bad("--vnode-stream-grace", "expected a duration like 40s");
  if (f.kubeletPort < 0 || f.kubeletPort > 65535) return bad("--kubelet-port", "expected 0..65535");
  size_t colon = f.webhookListen.rfind(':');
  int webhookPort = -1;
  if (colon != std::string::npos) {
    try {
      webhookPort = std::stoi(f.webhookListen.substr(colon + 1));
    } catch (...) {
      webhookPort = -1;
    }
  }
  if (webhookPort < 0 || webhookPort > 65535) return bad("--webhook-listen", "expected HOST:PORT");
  if (f.podWorkers < 1 || f.podWorkers > 1024) return bad("--vnode-pod-workers", "expected 1..1024");
  kube::Result<std::unique_ptr<kube::Client>> client =
      clientFor(kubeconfig, f.kubeQps, f.kubeBurst);
  if (!client.ok()) return client.error();
  std::unique_ptr<VnodeRuntime> rt(new VnodeRuntime());
  rt->flags_ = f;
  rt->client_ = std::move(*client);
  vnode::VirtualKubeletOptions o;
  o.nodeAddress = f.nodeAddress;
  o.kubeletPort = f.kubeletPort;  // 0: any free port, advertised in the Node
  o.taintEffect = f.taintEffect;
  o.streamGrace = *grace;
  o.podWorkers = f.podWorkers;
  rt->manager_ = std::make_unique<vnode::VirtualKubeletManager>(*rt->client_, o);
  return rt;
}

VnodeRuntime::~VnodeRuntime() { stop(); }

peering::PeeringObserver* VnodeRuntime::observer() {
  return flags_.noVirtualNodes ? nullptr : manager_.get();
}

kube::Status VnodeRuntime::startWebhook(const kube::KeyPair& ca) {
  // The virtual kubelets read OffloadingOverrides; the webhook validates them. A
  // provider-only agent (neither) has no use for them, nor the permission to list them.
  if (!flags_.noVirtualNodes || !flags_.noWebhook) {
    if (kube::Status s = vnode::installOffloadingOverrideCrd(*client_); !s.ok()) return s;
  }
  if (flags_.noWebhook) return kube::Status::OK();
  vnode::WebhookServerOptions w;
  size_t colon = flags_.webhookListen.rfind(':');
  w.listenHost = flags_.webhookListen.substr(0, colon);
  w.listenPort = static_cast<uint16_t>(std::stoi(flags_.webhookListen.substr(colon + 1)));
  w.urlHost = flags_.webhookHost;
  if (auto slash = flags_.webhookService.find('/'); slash != std::string::npos) {
    w.serviceNamespace = flags_.webhookService.substr(0, slash);
    w.serviceName = flags_.webhookService.substr(slash + 1);
  }
  w.ca = ca;
  w.tolerations.taintEffect = flags_.taintEffect;
  webhook_ = std::make_unique<vnode::WebhookServer>(*client_, w);
  return webhook_->start();
}

void VnodeRuntime::stop() {
  if (manager_) manager_->stop();
  if (webhook_) webhook_->stop();
}

}  // namespace strait::cmd
