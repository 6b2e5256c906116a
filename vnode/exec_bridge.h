#pragma once
// Private to vnode/: `/exec` and `/attach` of the virtual kubelet API. Bridges the API
// server's WebSocket (v5.channel.k8s.io or v4.channel.k8s.io; channel bytes 0 stdin,
// 1 stdout, 2 stderr, 3 status, 4 resize, 255 close) to a RemoteKubelet Exec call: stdin, stdin close and resize
// go to the provider, stdout and stderr come back, and the provider's exit status is sent on
// channel 3 before the WebSocket closes. A refusal by the provider (the Pod is not found,
// the peering is not active) is sent as a Failure status on channel 3 too, like a kubelet
// reports a failed exec. `/attach` is the same bridge to a RemoteKubelet Attach call (a start
// frame without a command): the container's output from now on, stdin to it.

#include <string>

#include "kube/http_server.h"
#include "peering/kubelet_transport.h"

namespace strait::vnode {

// Serves one exec request for container `container` of Pod `ns`/`pod`. Answers 400 when the
// request is not a WebSocket upgrade offering a supported subprotocol or names no command.
// Blocks until the exec ends; called on a connection thread.
void serveExec(const kube::HttpRequest& req, kube::Responder& out,
               peering::KubeletClient& provider, const std::string& ns, const std::string& pod,
               const std::string& container);

// Serves one attach to `container` of Pod `ns`/`pod`, as serveExec without a command.
void serveAttach(const kube::HttpRequest& req, kube::Responder& out,
                 peering::KubeletClient& provider, const std::string& ns,
                 const std::string& pod, const std::string& container);

}  // namespace strait::vnode
