#pragma once
// The kubelet API's /attach for Pods of the process runtime (private to minicluster/).
//
//   GET|POST /attach/{ns}/{pod}/{container}?input=1&output=1&error=1&tty=1
//       WebSocket v5.channel.k8s.io or v4.channel.k8s.io, as exec: the container's output
//       from now on (its log file followed: stdout and stderr share it, so everything comes on
//       channel 1, or 2 when only stderr was asked), and with input=1 the client's stdin
//       written to the container's stdin when its spec says `stdin: true` (the pipe or
//       terminal container_stdin.h keeps). The session ends when the client detaches or the
//       container instance ends (a Success status on channel 3 then, as a kubelet sends it).
//       `stdinOnce`: the container's stdin closes when this session's input ends or it
//       detaches.

#include <string>

#include "kube/http_server.h"
#include "minicluster/runtime_process.h"

namespace strait::minicluster {

// Serves one attach to `container` of `pod`. Answers 400 when the request is not a WebSocket
// upgrade with a supported subprotocol or the container is not running. Blocks until the
// session ends; called on a connection thread.
void serveProcessAttach(const kube::HttpRequest& req, kube::Responder& out, const PodRuntime& pod,
                        const std::string& container, SimulatedKubelets& kubelets,
                        const ContainerProcesses& processes);

}  // namespace strait::minicluster
