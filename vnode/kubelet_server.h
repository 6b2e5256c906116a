#pragma once
// The kubelet API of one virtual node: the HTTPS server the consumer's API server calls for
// `kubectl logs`, `exec`, `attach`, `port-forward` and friends on Pods bound to the virtual
// node (it dials the Node's InternalIP at status.daemonEndpoints.kubeletEndpoint.Port). Every
// request is forwarded over the peering's mutual-TLS gRPC channel to the provider agent
// (RemoteKubelet, proto/strait/kubelet.proto), which serves it from the provider cluster for
// the mapped remote Pod.
//
//   GET /healthz                                   "ok"
//   GET /pods                                      PodList of this consumer's offloaded Pods
//                                                  as the provider runs them
//   GET /stats/summary                             stats/v1alpha1 Summary (Pods, start times;
//                                                  no usage figures, see remote_kubelet.h)
//   GET /containerLogs/{ns}/{pod}/{container}      follow, tailLines, timestamps,
//                                                  sinceSeconds, limitBytes, previous
//   GET|POST /exec/{ns}/{pod}/{container}          WebSocket v5.channel.k8s.io or
//       ?command=..&input=1&output=1&error=1&tty=1 v4.channel.k8s.io; the exit status on
//                                                  channel 3 as a kubelet sends it
//   GET|POST /attach/{ns}/{pod}/{container}        the same WebSocket protocols, no command:
//       ?input=1&output=1&error=1&tty=1            the container's output from now on, stdin
//   GET|POST /portForward/{ns}/{pod}               SPDY/3.1, its WebSocket tunnel or
//                                                  v4.channel.k8s.io (kube/portforward.h); each
//                                                  forwarded connection is one PortForward call
//
// TLS: the serving certificate given (vnode/serving_cert.h gets one by CSR) and client
// certificates REQUIRED, verified against `clientCaPem` (the consumer cluster's CA, which
// signs the API server's kubelet client certificate): a caller without one never gets a
// TLS session.
//
// Authorization: every request (healthz included, as on a kubelet) is then authorized by
// `authorize` with the caller's user (certificate CN) and groups (O), the verb of its method
// and the nodes subresource of its path (kubelet_authorizer.h: a SubjectAccessReview to the
// consumer's API server, cached). A certificate without a CN is 401 Unauthorized, a denied
// request 403 "Forbidden (user=..., verb=..., resource=nodes, subresource=...)", a failed
// review 500 "Authorization error (...)" — never served.
//
// Thread-safety: start()/stop() from one thread; requests are served on the HTTP server's
// connection threads.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "kube/http_server.h"
#include "kube/pki.h"
#include "kube/status.h"
#include "peering/kubelet_transport.h"
#include "vnode/kubelet_authorizer.h"

namespace strait::vnode {

struct KubeletServerConfig {
  std::string nodeName;  // the virtual node (strait-<provider>)
  std::string listenHost = "127.0.0.1";
  uint16_t port = 0;          // 0 = any free port
  kube::KeyPair servingCert;  // certPem may hold the chain
  std::string clientCaPem;    // client certificates must chain to it
  // The current RemoteKubelet client of the peering (it changes when the certificate is
  // renewed); null while the peering is down (requests then get 503). Called per request,
  // from connection threads.
  std::function<std::shared_ptr<peering::KubeletClient>()> provider;
  std::chrono::milliseconds callTimeout{15000};  // /pods and /stats/summary
  // Decides each authenticated request (KubeletAuthorizer::authorize, bound). Required.
  // Called from connection threads; may block.
  std::function<kube::Result<bool>(const KubeletRequestAttributes&)> authorize;
};

class KubeletServer {
 public:
  // Validates the config (Invalid naming the field). No I/O.
  static kube::Result<std::unique_ptr<KubeletServer>> create(KubeletServerConfig config);
  ~KubeletServer();

  // Binds and serves. Error if the address is taken or the TLS material is bad. Call once.
  kube::Status start();
  // The bound port (after start()).
  uint16_t port() const;
  // Stops serving; open log streams and exec sessions are ended. Idempotent.
  void stop();

 private:
  explicit KubeletServer(KubeletServerConfig config);
  class Handler;
  KubeletServerConfig config_;
  std::unique_ptr<Handler> handler_;
  std::unique_ptr<kube::HttpServer> server_;
};

}  // namespace strait::vnode
