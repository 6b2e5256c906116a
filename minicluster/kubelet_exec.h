#pragma once
// `/exec` of the simulated kubelet API (private to minicluster/): WebSocket stream protocol
// v5.channel.k8s.io / v4.channel.k8s.io around the built-in commands of exec_commands.h.
// Channel bytes: 0 stdin, 1 stdout, 2 stderr, 3 status (metav1.Status JSON), 4 resize,
// 255 close (v5: the client closes stdin). Standard input is read only when the command
// reads it and the client asked for it (v5: until the client closes channel 0).

#include <string>

#include "kube/http_server.h"
#include "minicluster/exec_commands.h"
#include "minicluster/kubelet_sim.h"
#include "minicluster/registry.h"
#include "minicluster/rest.h"

namespace strait::minicluster {

// Serves one exec request for `container` of `pod`. Answers 400 when the request is not a
// WebSocket upgrade offering a supported subprotocol.
void serveExec(const kube::HttpRequest& req, kube::Responder& out, const PodRuntime& pod,
               const std::string& container, Registry& registry, Rest& rest);

// The stream subprotocol of a WebSocket upgrade to /exec or /attach: v5.channel.k8s.io, else
// v4.channel.k8s.io; "" when `req` is no upgrade or offers neither.
std::string kubeletStreamProtocol(const kube::HttpRequest& req);
// The 400 answer's text when kubeletStreamProtocol() is "".
inline constexpr const char* kKubeletStreamUpgradeError =
    "unable to upgrade connection: this kubelet speaks WebSocket with v5.channel.k8s.io or "
    "v4.channel.k8s.io only";
// True when query parameter `a` or `b` (null: not asked) is 1, true or True.
bool kubeletQueryFlag(const kube::HttpRequest& req, const char* a, const char* b = nullptr);

// The environment and files a container of `pod` sees: spec env/envFrom (ConfigMap and
// Secret references resolved through `rest`), HOSTNAME, KUBERNETES_SERVICE_*; ConfigMap and
// Secret volumes at their mount paths, /etc/hostname.
ExecContext execContextFor(const PodRuntime& pod, const std::string& container,
                           Registry& registry, Rest& rest);

}  // namespace strait::minicluster
