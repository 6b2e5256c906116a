#pragma once
// The API server's pods/log, pods/exec and pods/attach: the request is checked (pod exists,
// is assigned, container named or defaulted as upstream), then proxied like a real API
// server does to the kubelet of the pod's node at InternalIP:daemonEndpoints.kubeletEndpoint
// .Port over TLS with the API server's kubelet client certificate — log as a streamed GET of
// /containerLogs, exec/attach as an upgrade relayed byte for byte to /exec or /attach.
//
// Thread-safe (stateless apart from the credentials set before serving).

#include <string>

#include "kube/http_server.h"
#include "minicluster/registry.h"
#include "minicluster/rest.h"

namespace strait::minicluster {

// TLS material the API server uses towards kubelets.
struct KubeletClientConfig {
  std::string caPem;    // verifies the kubelet's serving certificate
  std::string certPem;  // client certificate (CN kube-apiserver-kubelet-client)
  std::string keyPem;
};

// Serves GET pods/{name}/log and pods/{name}/exec|attach. `sub` is "log", "exec" or
// "attach". Errors are answered as Status objects.
void servePodStream(const kube::HttpRequest& req, kube::Responder& out, Rest& rest,
                    Registry& registry, const ResourceInfo& pods, const std::string& ns,
                    const std::string& name, const std::string& sub,
                    const KubeletClientConfig& client);

}  // namespace strait::minicluster
