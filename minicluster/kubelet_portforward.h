#pragma once
// Port-forward of the minicluster's kubelet API (private to minicluster/):
// /portForward/{ns}/{pod}[/{uid}], every protocol kube::servePortForward speaks.

#include "kube/http_server.h"
#include "minicluster/kubelet_sim.h"
#include "minicluster/runtime_process.h"

namespace strait::minicluster {

// Serves a port-forward session to `pod`. With the process runtime (`procs` non-null) each
// forwarded connection dials localhost:PORT inside the Pod's network namespace (127.0.0.1,
// then ::1); with the simulated runtime every dial fails with a message saying port-forward
// needs the process runtime (the client sees it on its error stream). Blocks until the
// session ends.
void servePodPortForward(const kube::HttpRequest& req, kube::Responder& out, const PodRuntime& pod,
                         ContainerProcesses* procs);

}  // namespace strait::minicluster
