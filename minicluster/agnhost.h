#pragma once
// The behaviour of Kubernetes' e2e test image (registry.k8s.io/e2e-test-images/agnhost) that
// process-runtime Pods without a command run, as `strait agnhost ...`:
//   netexec --http-port=P     GET /hostname (the hostname), /echo?msg=M (M), /clientip
//                             (the caller's "ip:port"), /healthz ("ok"), / (the time),
//                             /hostName (as /hostname), /shell?cmd=C (or shellCommand=C:
//                             `sh -c C`, answering {"output": combined output} with 200, or
//                             also {"error": "exit status N"} with 417, as upstream, where
//                             the endpoint is always on), /exit?code=N (ends with code N)
//   serve-hostname --port=P   every GET answers the hostname
// Plain HTTP/1.1 through Boost.Beast, one thread per connection, IPv4 and IPv6.
//
// Both block serving until the process is signalled (SIGTERM ends it, as the image does).

#include <cstdint>
#include <string>

namespace strait::minicluster {

struct AgnhostServer {
  enum class Mode { Netexec, ServeHostname };
  Mode mode = Mode::Netexec;
  uint16_t port = 8080;
};

// Serves until the process ends. Returns 1 (after logging why) only when the port cannot
// be bound.
int runAgnhost(const AgnhostServer& server);

}  // namespace strait::minicluster
